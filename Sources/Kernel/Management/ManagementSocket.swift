import Bluetooth
import HCI

/// A socket on the kernel's management (control) channel with a synchronous request/response
/// helper: send a command, wait (bounded, on readiness) for its Command Complete / Status,
/// skipping the unrelated events the kernel broadcasts meanwhile.
///
/// Blocking by design: management commands are a handful of set-up steps before any I/O loop
/// starts. Call it from a thread that may block (not from a tight actor).
public final class ManagementSocket: Sendable {
    public let socket: HCISocket

    /// The default bound on one command's answer. Powering a controller on runs its whole
    /// init sequence, which takes well under a second on real hardware.
    public static let defaultTimeout: Duration = .seconds(5)

    init(socket: HCISocket) {
        self.socket = socket
    }

    /// Opens the management channel (HCI_CHANNEL_CONTROL, HCI_DEV_NONE). Commands that change
    /// settings need CAP_NET_ADMIN; without it they fail with Permission Denied.
    public static func open() throws(KernelBluetoothError) -> ManagementSocket {
        ManagementSocket(socket: try HCISocket.open(device: nil, channel: .control))
    }

    public func close() { socket.close() }

    public func send(_ packet: ManagementCommandPacket) throws(KernelBluetoothError) {
        let bytes: [UInt8]
        do {
            bytes = try packet.encoded()
        } catch {
            throw .malformedManagementReply(opcode: packet.opcode, error)
        }
        do {
            try socket.send(bytes)
        } catch {
            // Report it as the command that failed, not as a bare socket write.
            if case .system(_, let errno) = error {
                throw .system(operation: .managementCommand(opcode: packet.opcode, index: packet.index), errno: errno)
            }
            throw error
        }
    }

    /// The next event, or `nil` when `timeout` passes first. A packet whose header does not
    /// decode is reported as `.malformedManagementReply` with opcode 0.
    public func receiveEvent(timeout: Duration?) throws(KernelBluetoothError) -> ManagementEventPacket? {
        guard let bytes = try socket.receive(maximumLength: 6 + 65_535, timeout: timeout) else { return nil }
        if bytes.isEmpty {
            throw .system(operation: .hciReceive(channel: .control, device: nil), errno: .notConnected)
        }
        do {
            return try ManagementEventPacket(bytes: bytes)
        } catch {
            throw .malformedManagementReply(opcode: ManagementOpcode(rawValue: 0), error)
        }
    }

    /// Sends `packet` and waits at most `timeout` for its outcome.
    /// - Returns: the Return_Parameters of a successful Command Complete.
    /// - Throws: `.managementFailed` for a failure status, `.system(..., .timedOut)` when the
    ///   kernel does not answer in time, `.malformedManagementReply` for an undecodable answer.
    public func request(_ packet: ManagementCommandPacket, timeout: Duration = defaultTimeout) throws(KernelBluetoothError) -> [UInt8] {
        let operation = KernelOperation.managementCommand(opcode: packet.opcode, index: packet.index)
        let transaction = ManagementTransaction(packet)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        try send(packet)
        while true {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { throw .system(operation: operation, errno: .timedOut) }
            let event: ManagementEventPacket?
            do {
                event = try receiveEvent(timeout: left)
            } catch {
                // An undecodable broadcast is not our answer; keep waiting for it.
                if case .malformedManagementReply = error { continue }
                throw error
            }
            guard let event else { throw .system(operation: operation, errno: .timedOut) }
            let outcome: ManagementTransaction.Outcome?
            do {
                outcome = try transaction.receive(event)
            } catch {
                throw .malformedManagementReply(opcode: packet.opcode, error)
            }
            switch outcome {
            case .none: continue
            case .completed(let parameters)?: return parameters
            case .failed(let status)?:
                throw .managementFailed(opcode: packet.opcode, index: packet.index, status: status)
            }
        }
    }

    /// Sends a typed command to controller `index` and decodes its reply.
    public func request<Command: ManagementCommand>(
        _ command: Command, index: UInt16, timeout: Duration = defaultTimeout
    ) throws(KernelBluetoothError) -> Command.Response {
        let parameters = try request(ManagementCommandPacket(command, index: index), timeout: timeout)
        var reader = ByteReader(parameters)
        do {
            return try Command.parseResponse(&reader)
        } catch {
            throw .malformedManagementReply(opcode: Command.opcode, error)
        }
    }

    public func readControllerInformation(index: UInt16) throws(KernelBluetoothError) -> ManagementControllerInformation {
        try request(ReadControllerInformationCommand(), index: index)
    }

    @discardableResult
    public func setPowered(_ powered: Bool, index: UInt16) throws(KernelBluetoothError) -> ManagementSettings {
        try request(SetPoweredCommand(powered: powered), index: index)
    }

    @discardableResult
    public func setConnectable(_ connectable: Bool, index: UInt16) throws(KernelBluetoothError) -> ManagementSettings {
        try request(SetConnectableCommand(connectable: connectable), index: index)
    }

    @discardableResult
    public func setLowEnergy(_ enabled: Bool, index: UInt16) throws(KernelBluetoothError) -> ManagementSettings {
        try request(SetLowEnergyCommand(enabled: enabled), index: index)
    }

    @discardableResult
    public func setAdvertising(_ mode: ManagementAdvertisingMode, index: UInt16) throws(KernelBluetoothError) -> ManagementSettings {
        try request(SetAdvertisingCommand(mode: mode), index: index)
    }

    /// Makes adapter `index` ready for LE without bluetoothd: LE switched on (needed on dual-mode
    /// controllers; LE-only ones have it on already), then powered on. Steps already in the
    /// wanted state are skipped (an adapter already ready needs no privilege: reading the
    /// settings is open to any process). Returns the final Current_Settings.
    /// - Throws: `.managementFailed(…, .notSupported)` when the controller has no LE;
    ///   `.adapterNotReady` when a change is needed and the kernel refuses it (no CAP_NET_ADMIN).
    public func prepareForLowEnergy(index: UInt16) throws(KernelBluetoothError) -> ManagementSettings {
        let information = try readControllerInformation(index: index)
        guard information.supportedSettings.contains(.lowEnergy) else {
            throw .managementFailed(opcode: .setLowEnergy, index: index, status: .notSupported)
        }
        var settings = information.currentSettings
        do throws(KernelBluetoothError) {
            if !settings.contains(.lowEnergy) { settings = try setLowEnergy(true, index: index) }
            if !settings.contains(.powered) { settings = try setPowered(true, index: index) }
        } catch {
            // Reading needs no privilege, changing does: say what is off and what to run.
            if case .managementFailed(_, _, .permissionDenied) = error {
                throw .adapterNotReady(
                    index: index, poweredOff: !information.currentSettings.contains(.powered),
                    leDisabled: !information.currentSettings.contains(.lowEnergy))
            }
            throw error
        }
        return settings
    }
}
