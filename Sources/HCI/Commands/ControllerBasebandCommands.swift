import Bluetooth

/// HCI_Set_Event_Mask: which events the controller may generate.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.3.1
public struct SetEventMaskCommand: HCICommand {
    public static let opcode = HCIOpcode.setEventMask
    /// Event_Mask (8 octets).
    public var eventMask: HCIEventMask

    /// The spec's default mask (0x00001FFFFFFFFFFF).
    public static let defaultMask = HCIEventMask(rawValue: 0x0000_1FFF_FFFF_FFFF)

    public init(eventMask: HCIEventMask) { self.eventMask = eventMask }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        eventMask = HCIEventMask(rawValue: try r.uint64())
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) { writer.writeUInt64LE(eventMask.rawValue) }

    public var description: String { "\(Self.opcode.displayName): mask \(eventMask)" }
}

/// HCI_Reset: resets the controller (and the link manager / baseband).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.3.2
public struct ResetCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.reset
    public init() {}
}
