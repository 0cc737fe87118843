import Bluetooth

/// HCI_Disconnect: terminates a connection. Answered by HCI_Command_Status, then
/// HCI_Disconnection_Complete.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.1.6
public struct DisconnectCommand: HCICommand {
    public static let opcode = HCIOpcode.disconnect
    public static var completion: HCICommandCompletion { .commandStatus }

    /// The only Reason values the spec allows for this command.
    public static let permittedReasons: Set<HCIStatus> = [
        .authenticationFailure, .remoteUserTerminatedConnection,
        .remoteDeviceTerminatedConnectionDueToLowResources, .remoteDeviceTerminatedConnectionDueToPowerOff,
        .unsupportedRemoteFeature, .pairingWithUnitKeyNotSupported, .unacceptableConnectionParameters,
    ]

    public var connectionHandle: UInt16
    public var reason: HCIStatus

    public init(connectionHandle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection) {
        self.connectionHandle = connectionHandle
        self.reason = reason
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        connectionHandle = try r.connectionHandle()
        let at = r.offset
        reason = try r.status()
        guard Self.permittedReasons.contains(reason) else {
            throw r.invalidValue("Reason", Int(reason.rawValue), at: at)
        }
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(connectionHandle, in: Self.opcode, offset: 0)
        guard Self.permittedReasons.contains(reason) else {
            throw .malformed(
                context: Self.opcode.description, reason: .invalidValue(field: "Reason", value: Int(reason.rawValue)),
                offset: 2)
        }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt8(reason.rawValue)
    }

    public var description: String {
        "\(Self.opcode.displayName): \(CommandFormat.handle(connectionHandle)), reason \(reason)"
    }
}
