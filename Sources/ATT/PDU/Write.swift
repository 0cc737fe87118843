import Bluetooth

/// ATT_WRITE_REQ: write a value and expect a response.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.5.1
public struct WriteRequest: HandleValuePDU {
    public static let opcode = ATTOpcode.writeRequest

    /// Attribute Handle. A server answers Invalid Handle for 0x0000.
    public var handle: UInt16
    /// Attribute Value (0 to ATT_MTU − 3 octets).
    public var value: [UInt8]

    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }

    public static var rejectsZeroHandle: Bool { false }
}

/// ATT_WRITE_RSP: the write succeeded. No parameters.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.5.2
public struct WriteResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.writeResponse

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

/// ATT_WRITE_CMD: write a value, no response.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.5.3
public struct WriteCommand: HandleValuePDU {
    public static let opcode = ATTOpcode.writeCommand

    /// Attribute Handle. A server ignores a command it cannot perform.
    public var handle: UInt16
    /// Attribute Value (0 to ATT_MTU − 3 octets).
    public var value: [UInt8]

    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }

    public static var rejectsZeroHandle: Bool { false }
}

/// ATT_SIGNED_WRITE_CMD: a Write Command followed by a 12-octet Authentication Signature
/// (Sign Counter, then the 64-bit MAC).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.5.4; Vol 3, Part H, §2.4.5 (signing)
public struct SignedWriteCommand: ATTPDUCodable {
    public static let opcode = ATTOpcode.signedWriteCommand

    /// Attribute Handle.
    public var handle: UInt16
    /// Attribute Value (0 to ATT_MTU − 15 octets).
    public var value: [UInt8]
    /// SignCounter: first 4 octets of the Authentication Signature.
    public var signCounter: UInt32
    /// MAC: last 8 octets of the Authentication Signature, as a little-endian number (the 64
    /// most significant bits of the AES-CMAC, least significant octet first on the wire).
    public var mac: UInt64

    public init(handle: UInt16, value: [UInt8], signCounter: UInt32, mac: UInt64) {
        self.handle = handle
        self.value = value
        self.signCounter = signCounter
        self.mac = mac
    }

    /// Octets of the Authentication Signature.
    public static let signatureLength = 12

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        handle = try reader.readUInt16LE(op, "Attribute Handle")
        let valueCount = reader.remainingCount - Self.signatureLength
        guard valueCount >= 0 else {
            throw ATTError.malformed(opcode: op, field: "Authentication Signature", offset: reader.offset,
                                     reason: .truncated(needed: Self.signatureLength, available: reader.remainingCount))
        }
        value = Array(try reader.readBytes(valueCount, op, "Attribute Value"))
        signCounter = try reader.readUInt32LE(op, "Authentication Signature")
        mac = try reader.readUInt64LE(op, "Authentication Signature")
    }

    public var encodedLength: Int { 3 + value.count + Self.signatureLength }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(handle)
        writer.writeBytes(value)
        writer.writeUInt32LE(signCounter)
        writer.writeUInt64LE(mac)
    }

    /// The 12 octets of the Authentication Signature as on the wire.
    public var signature: [UInt8] {
        var writer = ByteWriter(capacity: 12)
        writer.writeUInt32LE(signCounter)
        writer.writeUInt64LE(mac)
        return writer.bytes
    }

    /// The message the MAC covers, in wire order: opcode ‖ handle ‖ value ‖ SignCounter (LE).
    /// (The signing algorithm of Vol 3 Part H §2.4.5 processes it most significant octet first.)
    public var signedMessage: [UInt8] {
        var writer = ByteWriter(capacity: 7 + value.count)
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(handle)
        writer.writeBytes(value)
        writer.writeUInt32LE(signCounter)
        return writer.bytes
    }
}
