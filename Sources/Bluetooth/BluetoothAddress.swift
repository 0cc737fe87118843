/// A 48-bit Bluetooth device address (BD_ADDR).
///
/// `rawValue` holds the address as it is written for people: the most significant octet is the
/// first of `AA:BB:CC:DD:EE:FF`. On the wire (HCI, L2CAP, AD) the octets are little-endian.
public struct BluetoothAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64

    public init?(rawValue: UInt64) {
        guard rawValue >> 48 == 0 else { return nil }
        self.rawValue = rawValue
    }

    /// Octets most significant first, as shown to people.
    public init(bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) {
        rawValue = UInt64(bytes.0) << 40 | UInt64(bytes.1) << 32 | UInt64(bytes.2) << 24
            | UInt64(bytes.3) << 16 | UInt64(bytes.4) << 8 | UInt64(bytes.5)
    }

    /// Parses `AA:BB:CC:DD:EE:FF` (or with `-`), either case. `nil` for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        let groups = parts.count == 6 ? parts : text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.count == 6 else { return nil }
        var value: UInt64 = 0
        for group in groups {
            guard group.count == 2, let octet = UInt8(group, radix: 16) else { return nil }
            value = value << 8 | UInt64(octet)
        }
        rawValue = value
    }

    public static let zero = BluetoothAddress(uncheckedRawValue: 0)
    /// `FF:FF:FF:FF:FF:FF`.
    public static let any = BluetoothAddress(uncheckedRawValue: 0xFFFF_FFFF_FFFF)

    @usableFromInline
    internal init(uncheckedRawValue: UInt64) { rawValue = uncheckedRawValue }

    /// Reads six little-endian octets.
    @inlinable
    public init(parsingLittleEndian reader: inout ByteReader) throws(ByteReaderError) {
        let low = try reader.readUInt32LE()
        let high = try reader.readUInt16LE()
        self.init(uncheckedRawValue: UInt64(high) << 32 | UInt64(low))
    }

    /// Writes six little-endian octets.
    @inlinable
    public func write(littleEndian writer: inout ByteWriter) {
        writer.writeLE(rawValue, octets: 6)
    }

    /// Octets in wire (little-endian) order.
    public var littleEndianBytes: [UInt8] {
        (0..<6).map { UInt8(truncatingIfNeeded: rawValue >> ($0 * 8)) }
    }

    /// Upper-case `AA:BB:CC:DD:EE:FF`.
    public var description: String { format(uppercase: true) }

    /// `AA:BB:CC:DD:EE:FF` in the chosen case (Wireshark prints lower case).
    public func format(uppercase: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity(17)
        writeText(to: &out, uppercase: uppercase)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `format(uppercase:)`'s text.
    @inlinable
    public func writeText(to text: inout [UInt8], uppercase: Bool = true) {
        text.appendRegion(17) { p in
            writeText(at: p, uppercase: uppercase)
            return 17
        }
    }

    /// Writes `format(uppercase:)`'s 17 octets at `p` (room the caller has reserved).
    @inlinable
    public func writeText(at p: UnsafeMutablePointer<UInt8>, uppercase: Bool) {
        let digits = uppercase ? TextDigits.upperText.utf8Start : TextDigits.lowerText.utf8Start
        for index in 0..<6 {
            let octet = UInt8(truncatingIfNeeded: rawValue >> ((5 - index) * 8))
            p[3 * index] = digits[Int(octet >> 4)]
            p[3 * index + 1] = digits[Int(octet & 0x0F)]
            if index < 5 { p[3 * index + 2] = UInt8(ascii: ":") }
        }
    }

    /// The sub-type a random address's two most significant bits give (Core 5.4 Vol 6 Part B §1.3.2).
    public var randomAddressKind: RandomAddressKind {
        switch rawValue >> 46 {
        case 0b11: return .staticAddress
        case 0b01: return .resolvablePrivate
        case 0b00: return .nonResolvablePrivate
        default: return .reserved
        }
    }

    public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Public or random device address (the LE `Address_Type` of a peer).
public enum AddressType: UInt8, Hashable, Sendable, CustomStringConvertible {
    case `public` = 0x00
    case random = 0x01

    public var description: String { self == .public ? "public" : "random" }
}

/// Sub-types of a random device address (Core 5.4 Vol 6 Part B §1.3.2).
public enum RandomAddressKind: String, Hashable, Sendable {
    case staticAddress = "static"
    case resolvablePrivate = "resolvable"
    case nonResolvablePrivate = "non-resolvable"
    /// Top bits `10`: not a valid random address.
    case reserved = "reserved"
}

extension BluetoothAddress {
    /// The address `offset` above this one: its low 24 bits count (and wrap), the upper 24 (a
    /// public address's company, a random address's kind bits) stay.
    public func adding(_ offset: Int) -> BluetoothAddress {
        let high = rawValue & 0xFFFF_FF00_0000
        let low = (rawValue &+ UInt64(bitPattern: Int64(offset))) & 0x0000_00FF_FFFF
        return BluetoothAddress(rawValue: high | low) ?? self
    }
}
