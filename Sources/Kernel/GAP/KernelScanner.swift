import Bluetooth
import HCI
import Host
import Synchronization
import SystemSupport

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
        /// The reader thread could not be started (`pthread_create`'s error).
        case readerThread(String)

        public var description: String {
            switch self {
            case .refused(let opcode, let status): return "the controller refused \(opcode): \(status)"
            case .readerThread(let error): return "scanning: cannot start the reader thread: \(error)"
            }
        }
    }

    /// Starts scanning on adapter `index` with `options` and returns the merged scan events.
    /// The stream ends with a ``KernelBluetoothError`` (the socket) or a ``Failure``; ending
    /// the iteration disables the scan and closes the socket. One reader thread per scan, which
    /// wakes at least every 250 ms to notice the end. `ended` runs once the socket is closed
    /// (after the observer saw the disabling command).
    public static func scan(
        adapter index: UInt16, options: LEScanParameters, observer: PacketObserver? = nil,
        ended: (@Sendable () -> Void)? = nil
    ) throws(KernelBluetoothError) -> AsyncThrowingStream<ScanEvent, any Error> {
        let filter = HCIFilter(packetTypes: [.event], events: [
            CommandCompleteEvent.eventCode, CommandStatusEvent.eventCode, HCIEventCode(rawValue: 0x3E),
        ])
        let socket = try HCISocket.openRaw(device: index, filter: filter)
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
        let mode = options.reportMode
        let limit = options.maximumDevices
        return AsyncThrowingStream { continuation in
            let stop = Mutex(false)
            let reader: @Sendable () -> Void = {
                var aggregator = ScanAggregator(mode: mode, maximumDevices: limit)
                while !stop.withLock({ $0 }) {
                    let packet: [UInt8]?
                    do {
                        packet = try socket.receive(timeout: .milliseconds(250))
                    } catch {
                        continuation.finish(throwing: error)
                        return
                    }
                    guard let packet, packet.first == HCIPacketType.event.rawValue else { continue }
                    observer?(.event, packet.dropFirst(), false)
                    guard let event = try? HCIEvent(bytes: Array(packet.dropFirst())) else { continue }
                    if case .commandComplete(let complete) = event, let status = complete.status, status != .success {
                        continuation.finish(throwing: Failure.refused(opcode: complete.opcode, status: status))
                        return
                    }
                    guard case .leMeta(let meta) = event else { continue }
                    for scanEvent in aggregator.receive(meta) { continuation.yield(scanEvent) }
                }
            }
            continuation.onTermination = { _ in
                stop.withLock { $0 = true }
                let disable = (try? HCICommandPacket(LESetScanEnableCommand(leScanEnable: false)).encode()) ?? []
                observer?(.command, disable[...], true)
                try? socket.send([HCIPacketType.command.rawValue] + disable)
                socket.close()
                ended?()
            }
            do {
                try DetachedThread.start(reader)
            } catch {
                // onTermination (above) disables the scan and closes the socket.
                continuation.finish(throwing: Failure.readerThread("\(error)"))
            }
        }
    }
}
