import Bluetooth
import HCI

/// A signaling command body: the Data field of one command of a known Code.
public protocol L2CAPSignalingCommandBody: Hashable, Sendable {
    static var code: L2CAPSignalingCode { get }
    /// Parses the whole Data field (the reader holds exactly Length octets).
    init(parsing reader: inout ByteReader) throws(L2CAPError)
    /// Octets of the Data field.
    var encodedLength: Int { get }
    func write(to writer: inout ByteWriter) throws(L2CAPError)
}

/// One signaling command as carried in an LE C-frame (CID 0x0005): Code, Identifier, Length,
/// Data. On LE-U a C-frame holds exactly one command, so Length must account for every octet
/// after the header, and Identifier 0x00 is never valid.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4 (Figure 4.3)
public struct L2CAPSignalingPacket: Hashable, Sendable, CustomStringConvertible {
    static let context = "L2CAP signaling packet"
    /// Code, Identifier and Length.
    public static let headerLength = 4

    public var code: L2CAPSignalingCode
    /// Matches a response to its request; 0x01–0xFF.
    public var identifier: UInt8
    public var data: ArraySlice<UInt8>

    public init(code: L2CAPSignalingCode, identifier: UInt8, data: ArraySlice<UInt8>) {
        self.code = code
        self.identifier = identifier
        self.data = data
    }

    /// A packet carrying `command`.
    public init(identifier: UInt8, command: LESignalingCommand) throws(L2CAPError) {
        var writer = ByteWriter(capacity: command.encodedLength)
        try command.write(to: &writer)
        self.init(code: command.code, identifier: identifier, data: writer.bytes[...])
    }

    /// Parses a whole C-frame payload: the reader is consumed to its end.
    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        code = L2CAPSignalingCode(rawValue: try reader.l2capUInt8(c))
        let identifierOffset = reader.offset
        identifier = try reader.l2capUInt8(c)
        let lengthOffset = reader.offset
        let length = Int(try reader.l2capUInt16(c))
        guard identifier != 0 else {
            throw L2CAPError.malformed(
                context: c, reason: .invalidValue(field: "Identifier", value: 0), offset: identifierOffset)
        }
        guard reader.remainingCount == length else {
            let reason: HCIError.MalformedReason =
                reader.remainingCount < length
                ? .truncated(needed: length, available: reader.remainingCount)
                : .trailingBytes(count: reader.remainingCount - length)
            throw L2CAPError.malformed(context: "\(code)", reason: reason, offset: lengthOffset)
        }
        data = reader.readRemaining()
    }

    /// Parses a C-frame payload from bytes.
    public init(bytes: ArraySlice<UInt8>) throws(L2CAPError) {
        var reader = ByteReader(bytes)
        try self.init(parsing: &reader)
    }

    /// The typed command; throws for an unknown Code or a Data field that does not fit it.
    public func command() throws(L2CAPError) -> LESignalingCommand {
        try LESignalingCommand(code: code, data: data)
    }

    public var encodedLength: Int { Self.headerLength + data.count }

    /// Throws for Identifier 0x00 or Data over 65535 octets.
    public func write(to writer: inout ByteWriter) throws(L2CAPError) {
        guard identifier != 0 else {
            throw L2CAPError.invalidArgument(context: Self.context, reason: "Identifier 0x00 is never used")
        }
        guard data.count <= Int(UInt16.max) else {
            throw L2CAPError.invalidArgument(context: Self.context, reason: "\(data.count) data octets, at most 65535")
        }
        writer.writeUInt8(code.rawValue)
        writer.writeUInt8(identifier)
        writer.writeUInt16LE(UInt16(data.count))
        writer.writeBytes(data)
    }

    /// The encoded packet.
    public func encode() throws(L2CAPError) -> [UInt8] {
        var writer = ByteWriter(capacity: encodedLength)
        try write(to: &writer)
        return writer.bytes
    }

    public var description: String {
        "\(code) id \(identifier) len \(data.count) \(Hex.encode(data))"
    }
}
