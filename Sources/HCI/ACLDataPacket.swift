import Bluetooth

/// Packet_Boundary_Flag of an ACL data packet (2 bits).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.2
public struct ACLPacketBoundaryFlag: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0b11 }

    /// 0b00: first non-automatically-flushable packet of a higher-layer message (host to controller).
    public static let firstNonFlushable = ACLPacketBoundaryFlag(rawValue: 0b00)
    /// 0b01: continuing fragment.
    public static let continuingFragment = ACLPacketBoundaryFlag(rawValue: 0b01)
    /// 0b10: first automatically flushable packet (the first fragment on LE).
    public static let firstFlushable = ACLPacketBoundaryFlag(rawValue: 0b10)
    /// 0b11: a complete L2CAP PDU, automatically flushable (deprecated).
    public static let complete = ACLPacketBoundaryFlag(rawValue: 0b11)

    /// Whether this packet starts an L2CAP PDU.
    public var isStart: Bool { rawValue != 0b01 }

    public var description: String {
        switch rawValue {
        case 0b00: return "start (non-flushable)"
        case 0b01: return "continuation"
        case 0b10: return "start"
        default: return "complete"
        }
    }
}

/// Broadcast_Flag of an ACL data packet (2 bits).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.2
public struct ACLBroadcastFlag: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0b11 }

    /// 0b00: point-to-point (the only value on LE).
    public static let pointToPoint = ACLBroadcastFlag(rawValue: 0b00)
    /// 0b01: BR/EDR broadcast.
    public static let brEdrBroadcast = ACLBroadcastFlag(rawValue: 0b01)
}

/// An HCI ACL data packet: Handle (12 bits), PB flag, BC flag, Data_Total_Length, data.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.2
public struct ACLDataPacket: Hashable, Sendable, CustomStringConvertible {
    static let context = "HCI ACL data packet"
    /// Octets before the data.
    public static let headerLength = 4

    /// Connection_Handle (0x0000–0x0EFF).
    public var handle: UInt16
    public var packetBoundary: ACLPacketBoundaryFlag
    public var broadcast: ACLBroadcastFlag
    public var data: [UInt8]

    public init(handle: UInt16, packetBoundary: ACLPacketBoundaryFlag, broadcast: ACLBroadcastFlag = .pointToPoint, data: [UInt8]) {
        self.handle = handle
        self.packetBoundary = packetBoundary
        self.broadcast = broadcast
        self.data = data
    }

    /// Parses a whole packet (after the H4 indicator): Data_Total_Length must equal the octets
    /// that follow the header exactly.
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        let headerOffset = reader.offset
        let field = try reader.hciUInt16(c)
        handle = field & 0x0FFF
        guard handle <= ConnectionHandleRange.max else {
            throw HCIError.malformed(context: c, reason: .invalidValue(field: "Handle", value: Int(handle)), offset: headerOffset)
        }
        packetBoundary = ACLPacketBoundaryFlag(rawValue: UInt8(field >> 12 & 0b11))
        broadcast = ACLBroadcastFlag(rawValue: UInt8(field >> 14))
        let lengthOffset = reader.offset
        let length = Int(try reader.hciUInt16(c))
        guard reader.remainingCount == length else {
            let reason: HCIError.MalformedReason =
                reader.remainingCount < length
                ? .truncated(needed: length, available: reader.remainingCount)
                : .trailingBytes(count: reader.remainingCount - length)
            throw HCIError.malformed(context: c, reason: reason, offset: lengthOffset)
        }
        data = Array(reader.readRemaining())
    }

    public var encodedLength: Int { Self.headerLength + data.count }

    /// Throws when the handle is over 0x0EFF or the data over 65535 octets.
    public func write(to writer: inout ByteWriter) throws(HCIError) {
        guard handle <= ConnectionHandleRange.max else {
            throw HCIError.invalidArgument(context: Self.context, reason: "handle \(hciHexString(handle, 4)) over 0x0eff")
        }
        guard data.count <= Int(UInt16.max) else {
            throw HCIError.invalidArgument(context: Self.context, reason: "\(data.count) data octets, at most 65535")
        }
        writer.writeUInt16LE(handle | UInt16(packetBoundary.rawValue) << 12 | UInt16(broadcast.rawValue) << 14)
        writer.writeUInt16LE(UInt16(data.count))
        writer.writeBytes(data)
    }

    public var description: String {
        "ACL Data: handle \(handle) \(packetBoundary)\(broadcast == .pointToPoint ? "" : " broadcast \(broadcast.rawValue)")"
            + " dlen \(data.count) \(Hex.encode(data))"
    }
}
