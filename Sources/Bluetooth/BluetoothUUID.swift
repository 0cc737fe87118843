/// A Bluetooth UUID: 16-, 32- or 128-bit.
///
/// Shorter forms are aliases inside the Bluetooth Base UUID
/// `00000000-0000-1000-8000-00805F9B34FB` (Core 5.4 Vol 3 Part B §2.5.1): equality and hashing
/// compare the 128-bit value, while the case keeps the width used on the wire.
public enum BluetoothUUID: Sendable, CustomStringConvertible {
    case bit16(UInt16)
    case bit32(UInt32)
    case bit128(UInt128)

    /// `00000000-0000-1000-8000-00805F9B34FB`.
    public static let baseUUID: UInt128 = 0x0000_0000_0000_1000_8000_0080_5F9B_34FB

    /// The full 128-bit value.
    @inlinable
    public var uuid128: UInt128 {
        switch self {
        case .bit16(let v): return BluetoothUUID.baseUUID | UInt128(v) << 96
        case .bit32(let v): return BluetoothUUID.baseUUID | UInt128(v) << 96
        case .bit128(let v): return v
        }
    }

    /// Octets on the wire: 2, 4 or 16.
    @inlinable
    public var byteWidth: Int {
        switch self {
        case .bit16: return 2
        case .bit32: return 4
        case .bit128: return 16
        }
    }

    /// The shortest form this UUID has (16-bit or 32-bit alias of the Base UUID, else 128-bit).
    public var shortened: BluetoothUUID {
        let value = uuid128
        guard value & ~(UInt128(UInt32.max) << 96) == BluetoothUUID.baseUUID else { return .bit128(value) }
        let short = UInt32(truncatingIfNeeded: value >> 96)
        if short <= UInt32(UInt16.max) { return .bit16(UInt16(short)) }
        return .bit32(short)
    }

    /// The 16-bit alias, if this UUID has one.
    public var uuid16: UInt16? {
        if case .bit16(let v) = shortened { return v }
        return nil
    }

    /// Reads a UUID of `width` octets (2, 4 or 16), little-endian as on the wire.
    @inlinable
    public init(parsing reader: inout ByteReader, width: Int) throws(ByteReaderError) {
        switch width {
        case 2: self = .bit16(try reader.readUInt16LE())
        case 4: self = .bit32(try reader.readUInt32LE())
        default: self = .bit128(try reader.readUInt128LE())
        }
    }

    /// Builds a UUID from its little-endian wire octets (2, 4 or 16 of them).
    public init?<C: Collection>(littleEndian bytes: C) where C.Element == UInt8 {
        guard [2, 4, 16].contains(bytes.count) else { return nil }
        var reader = ByteReader(Array(bytes))
        guard let uuid = try? BluetoothUUID(parsing: &reader, width: bytes.count) else { return nil }
        self = uuid
    }

    @inlinable
    public func write(to writer: inout ByteWriter) {
        switch self {
        case .bit16(let v): writer.writeUInt16LE(v)
        case .bit32(let v): writer.writeUInt32LE(v)
        case .bit128(let v): writer.writeUInt128LE(v)
        }
    }

    /// Little-endian wire octets.
    public var littleEndianBytes: [UInt8] {
        var writer = ByteWriter(capacity: 16)
        write(to: &writer)
        return writer.bytes
    }

    /// `"180F"` for 16-bit, `"0000FEAA"`-style 8 digits for 32-bit, canonical upper-case
    /// `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX` for 128-bit.
    public var description: String { text(uppercase: true) }

    public func text(uppercase: Bool) -> String {
        var out = [UInt8]()
        out.reserveCapacity(36)
        writeText(to: &out, uppercase: uppercase)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `text(uppercase:)`'s text.
    @inlinable
    public func writeText(to text: inout [UInt8], uppercase: Bool = true) {
        switch self {
        case .bit16(let v): text.appendHex(v, digits: 4, uppercase: uppercase)
        case .bit32(let v): text.appendHex(v, digits: 8, uppercase: uppercase)
        case .bit128(let v):
            let high = UInt64(truncatingIfNeeded: v >> 64)
            let low = UInt64(truncatingIfNeeded: v)
            text.appendHex(UInt32(truncatingIfNeeded: high >> 32), digits: 8, uppercase: uppercase)
            text.append(UInt8(ascii: "-"))
            text.appendHex(UInt16(truncatingIfNeeded: high >> 16), digits: 4, uppercase: uppercase)
            text.append(UInt8(ascii: "-"))
            text.appendHex(UInt16(truncatingIfNeeded: high), digits: 4, uppercase: uppercase)
            text.append(UInt8(ascii: "-"))
            text.appendHex(UInt16(truncatingIfNeeded: low >> 48), digits: 4, uppercase: uppercase)
            text.append(UInt8(ascii: "-"))
            text.appendHex(low & 0xFFFF_FFFF_FFFF, digits: 12, uppercase: uppercase)
        }
    }

    /// Parses `180F`, `0x180F`, 8 hex digits, or a 128-bit UUID with or without dashes.
    public init?(_ text: String) {
        var body = Substring(text)
        if body.hasPrefix("0x") || body.hasPrefix("0X") { body = body.dropFirst(2) }
        let digits = body.filter { $0 != "-" }
        guard digits.allSatisfy(\.isHexDigit) else { return nil }
        switch digits.count {
        case 4 where !body.contains("-"):
            guard let v = UInt16(digits, radix: 16) else { return nil }
            self = .bit16(v)
        case 8 where !body.contains("-"):
            guard let v = UInt32(digits, radix: 16) else { return nil }
            self = .bit32(v)
        case 32:
            if body.contains("-") {
                let groups = body.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
                guard groups == [8, 4, 4, 4, 12] else { return nil }
            }
            guard let v = UInt128(digits, radix: 16) else { return nil }
            self = .bit128(v)
        default:
            return nil
        }
    }
}

extension BluetoothUUID: Hashable {
    public static func == (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool { lhs.uuid128 == rhs.uuid128 }
    public func hash(into hasher: inout Hasher) { hasher.combine(uuid128) }
}

extension BluetoothUUID: ExpressibleByIntegerLiteral {
    /// A 16-bit UUID literal: `let battery: BluetoothUUID = 0x180F`.
    public init(integerLiteral value: UInt16) { self = .bit16(value) }
}
