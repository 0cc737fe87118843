import Bluetooth

/// The PDUs that are an Attribute Handle and an Attribute Value after the opcode: Write Request
/// and Write Command (§3.4.5.1, §3.4.5.3), Handle Value Notification and Indication (§3.4.7.1,
/// §3.4.7.2). One parser and encoder for all four.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.5 and §3.4.7
public protocol HandleValuePDU: ATTPDUCodable {
    /// Attribute Handle.
    var handle: UInt16 { get set }
    /// Attribute Value (0 to ATT_MTU − 3 octets).
    var value: [UInt8] { get set }
    init(handle: UInt16, value: [UInt8])
    /// Whether handle 0x0000 makes the PDU malformed (PDUs a server sends); for requests and
    /// commands the decoder keeps it and the server refuses it (Invalid Handle / ignore).
    static var rejectsZeroHandle: Bool { get }
}

extension HandleValuePDU {
    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        let handle = Self.rejectsZeroHandle
            ? try reader.readNonZeroHandle(op, "Attribute Handle") : try reader.readUInt16LE(op, "Attribute Handle")
        self.init(handle: handle, value: reader.readValue())
    }

    public var encodedLength: Int { 3 + value.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(handle)
        writer.writeBytes(value)
    }
}

/// The PDUs that are only an Attribute Value after the opcode: Read Response and Read Blob
/// Response (§3.4.4.4, §3.4.4.6). One parser and encoder for both.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4
public protocol ValuePDU: ATTPDUCodable {
    /// Attribute Value (or part of it).
    var value: [UInt8] { get set }
    init(value: [UInt8])
}

extension ValuePDU {
    public init(parsing reader: inout ByteReader) throws(ATTError) {
        try reader.readOpcode(Self.opcode)
        self.init(value: reader.readValue())
    }

    public var encodedLength: Int { 1 + value.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeBytes(value)
    }
}
