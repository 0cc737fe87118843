import Bluetooth
import HCI
import Host
import Synchronization

/// Legacy scanning on the kernel path, through a raw HCI socket: the scan commands go in as on
/// any controller and the LE Meta events come back through the socket's filter, so bluetoothd
/// may keep running. The reports are merged by the host's ``ScanAggregator``, as on the
/// user-space host.
public enum KernelScanner {
    /// Sees every packet that crosses the socket (our commands, the events it lets through),
    /// without the H4 indicator: `sent` for ours. `--record` writes them as an H4 btsnoop.
    public typealias PacketObserver = @Sendable (_ type: HCIPacketType, _ packet: ArraySlice<UInt8>, _ sent: Bool) -> Void

    /// A scan that ended without a socket error.
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// The controller answered a scan command with a failure status.
        case refused(opcode: HCIOpcode, status: HCIStatus)

        public var description: String {
            switch self {
            case .refused(let opcode, let status): return "the controller refused \(opcode): \(status)"
            }
        }
    }

    /// Starts scanning on adapter `index` with `options` and returns the merged scan events.
    /// The stream ends with a ``KernelBluetoothError`` (the socket) or a ``Failure``; ending
    /// the iteration disables the scan and closes the socket. Readiness-driven: the socket's
    /// packets are read as they arrive (no thread, no timed wake-ups). `ended` runs once the
    /// socket is closed (after the observer saw the disabling command).
    public static func scan(
        adapter index: UInt16, options: LEScanParameters, observer: PacketObserver? = nil,
        ended: (@Sendable () -> Void)? = nil
    ) throws(KernelBluetoothError) -> AsyncThrowingStream<ScanEvent, any Error> {
        let filter = HCIFilter(packetTypes: [.event], events: [
            CommandCompleteEvent.eventCode, CommandStatusEvent.eventCode, HCIEventCode(rawValue: 0x3E),
        ])
        let socket = try HCISocket.openRaw(device: index, filter: filter)
        return try scan(socket: socket, options: options, observer: observer, ended: ended)
    }

    /// Scans through an open raw socket (tests pass one end of a socketpair), which the scan
    /// owns from now on: it is closed when the scan ends, or here when the commands cannot be sent.
    static func scan(
        socket: HCISocket, options: LEScanParameters, observer: PacketObserver?, ended: (@Sendable () -> Void)?
    ) throws(KernelBluetoothError) -> AsyncThrowingStream<ScanEvent, any Error> {
        do {
            let parameters = try HCICommandPacket(LESetScanParametersCommand(
                leScanType: options.active ? .active : .passive, leScanInterval: options.interval,
                leScanWindow: options.window)).encode()
            let enable = try HCICommandPacket(
                LESetScanEnableCommand(leScanEnable: true, filterDuplicates: options.filterDuplicates)).encode()
            for command in [parameters, enable] {
                observer?(.command, command[...], true)
                try socket.send([HCIPacketType.command.rawValue] + command)
            }
        } catch let error as KernelBluetoothError {
            socket.close()
            throw error
        } catch {
            // The two commands have fixed-size parameters: encoding cannot fail.
            socket.close()
            preconditionFailure("scan command encoding failed: \(error)")
        }
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ScanEvent.self, throwing: (any Error).self)
        // Touched only on the reader's serial queue; the mutex makes that checkable.
        let aggregator = Mutex(ScanAggregator(mode: options.reportMode, maximumDevices: options.maximumDevices))
        let operation = KernelOperation.hciReceive(channel: socket.channel, device: socket.device)
        let reader = socket.makeReader(
            maximumLength: 65_542, label: "KernelScanner",
            onDatagram: { packet in
                guard packet.first == HCIPacketType.event.rawValue else { return }
                observer?(.event, packet.dropFirst(), false)
                guard let event = try? HCIEvent(bytes: Array(packet.dropFirst())) else { return }
                if case .commandComplete(let complete) = event, let status = complete.status, status != .success {
                    continuation.finish(throwing: Failure.refused(opcode: complete.opcode, status: status))
                    return
                }
                guard case .leMeta(let meta) = event else { return }
                for scanEvent in aggregator.withLock({ $0.receive(meta) }) { continuation.yield(scanEvent) }
            },
            onEnd: { error in
                if let error {
                    continuation.finish(throwing: KernelBluetoothError.system(operation: operation, errno: error))
                } else {
                    continuation.finish()
                }
            })
        guard let reader else {
            // Unreachable: nothing else closes the socket before the scan has started.
            continuation.finish(throwing: KernelBluetoothError.closed(operation: operation))
            ended?()
            return stream
        }
        continuation.onTermination = { _ in
            // Reading stops first (the observer sees no packet after this), then the scan is
            // disabled and the socket closed, then `ended`.
            reader.stop {
                let disable = (try? HCICommandPacket(LESetScanEnableCommand(leScanEnable: false)).encode()) ?? []
                observer?(.command, disable[...], true)
                try? socket.send([HCIPacketType.command.rawValue] + disable)
                socket.close(then: { ended?() })
            }
        }
        reader.start()
        return stream
    }
}
