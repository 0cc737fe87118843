import Bluetooth

/// ATT_PREPARE_WRITE_REQ: queue part of a value at an offset for a later Execute Write.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.6.1
public struct PrepareWriteRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.prepareWriteRequest

    /// Attribute Handle. A server answers Invalid Handle for 0x0000.
    public var handle: UInt16
    /// Value Offset.
    public var offset: UInt16
    /// Part Attribute Value (0 to ATT_MTU − 5 octets).
    public var value: [UInt8]

    public init(handle: UInt16, offset: UInt16, value: [UInt8]) {
        self.handle = handle
        self.offset = offset
        self.value = value
    }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        handle = try reader.readUInt16LE(op, "Attribute Handle")
        offset = try reader.readUInt16LE(op, "Value Offset")
        value = reader.readValue()
    }

    public var encodedLength: Int { 5 + value.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(handle)
        writer.writeUInt16LE(offset)
        writer.writeBytes(value)
    }
}

/// ATT_PREPARE_WRITE_RSP: echoes the queued part (the client compares it with what it sent).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.6.2
public struct PrepareWriteResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.prepareWriteResponse

    /// Attribute Handle (never 0x0000: it echoes a request the server accepted).
    public var handle: UInt16
    /// Value Offset.
    public var offset: UInt16
    /// Part Attribute Value.
    public var value: [UInt8]

    public init(handle: UInt16, offset: UInt16, value: [UInt8]) {
        self.handle = handle
        self.offset = offset
        self.value = value
    }

    /// The response that echoes `request`.
    public init(echoing request: PrepareWriteRequest) {
        self.init(handle: request.handle, offset: request.offset, value: request.value)
    }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        handle = try reader.readNonZeroHandle(op, "Attribute Handle")
        offset = try reader.readUInt16LE(op, "Value Offset")
        value = reader.readValue()
    }

    public var encodedLength: Int { 5 + value.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(handle)
        writer.writeUInt16LE(offset)
        writer.writeBytes(value)
    }
}

/// ATT_EXECUTE_WRITE_REQ: write or cancel all prepared values.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.6.3
public struct ExecuteWriteRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.executeWriteRequest

    /// The Flags field. Open: a reserved value keeps its value (a server answers Invalid PDU,
    /// see `ATTPDU.validate()`).
    public struct Flags: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// 0x00: cancel all prepared writes.
        public static let cancelAll = Flags(rawValue: 0x00)
        /// 0x01: immediately write all pending prepared values.
        public static let writeAll = Flags(rawValue: 0x01)

        public var isDefined: Bool { rawValue <= 0x01 }

        public var description: String {
            switch rawValue {
            case 0x00: return "cancel all"
            case 0x01: return "write all"
            default: return "reserved 0x" + hex2(rawValue)
            }
        }
    }

    /// Flags.
    public var flags: Flags

    public init(flags: Flags) { self.flags = flags }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        flags = Flags(rawValue: try reader.readUInt8(op, "Flags"))
        try reader.expectEnd(op, "Flags")
    }

    public var encodedLength: Int { 2 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt8(flags.rawValue)
    }
}

/// ATT_EXECUTE_WRITE_RSP: the queued writes were performed or cancelled. No parameters.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.6.4
public struct ExecuteWriteResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.executeWriteResponse

    public init() {}

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        try reader.readOpcode(Self.opcode)
        try reader.expectEnd(Self.opcode, "Opcode")
    }

    public var encodedLength: Int { 1 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
    }
}
