import Bluetooth

/// One HCI packet of any type, as carried after an H4 packet indicator. Commands are kept raw
/// (opcode and parameters) so this codec does not depend on the command definitions; SCO and
/// ISO packets are kept raw (header included) after their length is checked.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4; Vol 4, Part A, §2
public enum HCIPacket: Hashable, Sendable, CustomStringConvertible {
    /// An HCI command packet: Opcode and its parameters (Parameter_Total_Length checked).
    case command(opcode: HCIOpcode, parameters: [UInt8])
    case event(HCIEvent)
    case acl(ACLDataPacket)
    /// A synchronous data packet, header included.
    case sco([UInt8])
    /// An ISO data packet, header included.
    case iso([UInt8])

    /// Parses a packet of `type` (the bytes after the H4 indicator); lengths are checked strictly
    /// and the reader is consumed to its end.
    public init(type: HCIPacketType, parsing reader: inout ByteReader) throws(HCIError) {
        switch type {
        case .command:
            let c = "HCI command packet"
            let opcode = HCIOpcode(rawValue: try reader.hciUInt16(c))
            let lengthOffset = reader.offset
            let length = Int(try reader.hciUInt8(c))
            try Self.checkLength(length, reader: reader, context: c, offset: lengthOffset)
            self = .command(opcode: opcode, parameters: Array(reader.readRemaining()))
        case .event:
            self = .event(try HCIEvent(parsing: &reader))
        case .acl:
            self = .acl(try ACLDataPacket(parsing: &reader))
        case .sco:
            let c = "HCI SCO data packet"
            let all = reader.remaining
            _ = try reader.hciUInt16(c)
            let lengthOffset = reader.offset
            let length = Int(try reader.hciUInt8(c))
            try Self.checkLength(length, reader: reader, context: c, offset: lengthOffset)
            _ = reader.readRemaining()
            self = .sco(Array(all))
        case .iso:
            let c = "HCI ISO data packet"
            let all = reader.remaining
            _ = try reader.hciUInt16(c)
            let lengthOffset = reader.offset
            let length = Int(try reader.hciUInt16(c) & 0x3FFF)
            try Self.checkLength(length, reader: reader, context: c, offset: lengthOffset)
            _ = reader.readRemaining()
            self = .iso(Array(all))
        }
    }

    /// Parses bytes that begin with the H4 packet indicator.
    public init(h4 bytes: ArraySlice<UInt8>) throws(HCIError) {
        var reader = ByteReader(bytes)
        let indicator = try reader.hciUInt8("H4 packet")
        guard let type = HCIPacketType(rawValue: indicator) else { throw HCIError.unknownPacketType(indicator) }
        var body: ByteReader
        do { body = try reader.subReader(reader.remainingCount) } catch { throw HCIError(error, context: "H4 packet") }
        try self.init(type: type, parsing: &body)
    }

    public init(h4 bytes: [UInt8]) throws(HCIError) {
        try self.init(h4: bytes[...])
    }

    private static func checkLength(_ length: Int, reader: ByteReader, context: String, offset: Int) throws(HCIError) {
        guard reader.remainingCount == length else {
            let reason: HCIError.MalformedReason =
                reader.remainingCount < length
                ? .truncated(needed: length, available: reader.remainingCount)
                : .trailingBytes(count: reader.remainingCount - length)
            throw HCIError.malformed(context: context, reason: reason, offset: offset)
        }
    }

    public var packetType: HCIPacketType {
        switch self {
        case .command: return .command
        case .event: return .event
        case .acl: return .acl
        case .sco: return .sco
        case .iso: return .iso
        }
    }

    /// Writes the packet without the H4 indicator.
    public func write(to writer: inout ByteWriter) throws(HCIError) {
        switch self {
        case .command(let opcode, let parameters):
            guard parameters.count <= 255 else {
                throw HCIError.invalidArgument(context: "HCI command \(opcode)", reason: "\(parameters.count) parameter octets, at most 255")
            }
            writer.writeUInt16LE(opcode.rawValue)
            writer.writeUInt8(UInt8(parameters.count))
            writer.writeBytes(parameters)
        case .event(let event): try event.write(to: &writer)
        case .acl(let packet): try packet.write(to: &writer)
        case .sco(let bytes), .iso(let bytes): writer.writeBytes(bytes)
        }
    }

    /// The packet with its H4 indicator first.
    public func h4Encoded() throws(HCIError) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.writeUInt8(packetType.rawValue)
        try write(to: &writer)
        return writer.bytes
    }

    /// One line, btmon-like.
    public var description: String {
        switch self {
        case .command(let opcode, let parameters):
            return "Command: \(opcode) (\(hciHexString(opcode.ogf, 2))|\(hciHexString(opcode.ocf, 4))) plen \(parameters.count)"
                + (parameters.isEmpty ? "" : " " + Hex.encode(parameters))
        case .event(let event): return "Event: \(event)"
        case .acl(let packet): return packet.description
        case .sco(let bytes): return "SCO Data: \(Hex.encode(bytes))"
        case .iso(let bytes): return "ISO Data: \(Hex.encode(bytes))"
        }
    }
}
