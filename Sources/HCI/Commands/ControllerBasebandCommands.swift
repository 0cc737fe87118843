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

/// The 248-octet Local_Name field: UTF-8, ended by a NUL when shorter. Kept whole so what follows
/// the NUL (often stale bytes in controller replies) survives a round trip.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.3.11
public struct HCILocalName: Hashable, Sendable, CustomStringConvertible {
    public static let octetCount = 248
    /// Exactly 248 octets.
    public let octets: [UInt8]

    /// `nil` unless `octets` has exactly 248 elements.
    public init?(octets: [UInt8]) {
        guard octets.count == Self.octetCount else { return nil }
        self.octets = octets
    }

    /// The name, NUL-padded; text longer than 248 octets of UTF-8 is cut at a character boundary.
    public init(_ name: String) {
        var bytes: [UInt8] = []
        for character in name {
            let utf8 = Array(String(character).utf8)
            if bytes.count + utf8.count > Self.octetCount { break }
            bytes += utf8
        }
        octets = bytes + [UInt8](repeating: 0, count: Self.octetCount - bytes.count)
    }

    /// The octets before the first NUL, decoded as UTF-8 (invalid sequences replaced).
    public var name: String {
        String(decoding: octets.prefix { $0 != 0 }, as: UTF8.self)
    }

    public var description: String { "\"\(name)\"" }
}

/// HCI_Write_Local_Name.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.3.11
public struct WriteLocalNameCommand: HCICommand {
    public static let opcode = HCIOpcode.writeLocalName
    public var localName: HCILocalName

    public init(localName: HCILocalName) { self.localName = localName }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        // 248 octets read, so the initializer cannot fail.
        localName = HCILocalName(octets: try r.bytes(HCILocalName.octetCount))!
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) { writer.writeBytes(localName.octets) }

    public var description: String { "\(Self.opcode.displayName): \(localName)" }
}

/// HCI_Read_Local_Name.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.3.12
public struct ReadLocalNameCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.readLocalName
    public init() {}

    /// Status, Local_Name (248 octets).
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var localName: HCILocalName

        public init(status: HCIStatus = .success, localName: HCILocalName) {
            self.status = status
            self.localName = localName
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(reader, context: "\(ReadLocalNameCommand.opcode) return parameters")
            status = try r.status()
            localName = HCILocalName(octets: try r.bytes(HCILocalName.octetCount))!
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeBytes(localName.octets)
        }

        public var description: String { "\(status), name \(localName)" }
    }
}

/// HCI_Write_LE_Host_Support: tells a dual-mode controller the host supports LE.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.3.79
public struct WriteLEHostSupportCommand: HCICommand {
    public static let opcode = HCIOpcode.writeLEHostSupport
    public var leSupportedHost: Bool
    /// The second octet (formerly Simultaneous_LE_Host); the spec says to send 0x00. Kept as sent.
    public var unused: UInt8

    public init(leSupportedHost: Bool, unused: UInt8 = 0) {
        self.leSupportedHost = leSupportedHost
        self.unused = unused
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        leSupportedHost = try r.bool("LE_Supported_Host")
        unused = try r.uint8()
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(leSupportedHost ? 1 : 0)
        writer.writeUInt8(unused)
    }

    public var description: String {
        "\(Self.opcode.displayName): LE host \(leSupportedHost ? "supported" : "not supported")"
    }
}
