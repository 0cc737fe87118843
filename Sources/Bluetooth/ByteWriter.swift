/// Appends wire bytes; endianness is in every method name.
public struct ByteWriter: Sendable {
    public var bytes: [UInt8]

    @inlinable
    public init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inlinable public var count: Int { bytes.count }

    @inlinable public mutating func writeUInt8(_ value: UInt8) { bytes.append(value) }
    @inlinable public mutating func writeInt8(_ value: Int8) { bytes.append(UInt8(bitPattern: value)) }

    @inlinable
    public mutating func writeLE<T: FixedWidthInteger>(_ value: T, octets: Int) {
        var v = value
        for _ in 0..<octets {
            bytes.append(UInt8(truncatingIfNeeded: v))
            v = v >> 8
        }
    }

    @inlinable
    public mutating func writeBE<T: FixedWidthInteger>(_ value: T, octets: Int) {
        for index in stride(from: octets - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: value >> (index * 8)))
        }
    }

    @inlinable public mutating func writeUInt16LE(_ value: UInt16) { writeLE(value, octets: 2) }
    /// Writes the low 24 bits.
    @inlinable public mutating func writeUInt24LE(_ value: UInt32) { writeLE(value, octets: 3) }
    @inlinable public mutating func writeUInt32LE(_ value: UInt32) { writeLE(value, octets: 4) }
    @inlinable public mutating func writeUInt64LE(_ value: UInt64) { writeLE(value, octets: 8) }
    @inlinable public mutating func writeUInt128LE(_ value: UInt128) { writeLE(value, octets: 16) }
    @inlinable public mutating func writeInt16LE(_ value: Int16) { writeLE(value, octets: 2) }
    @inlinable public mutating func writeUInt16BE(_ value: UInt16) { writeBE(value, octets: 2) }
    @inlinable public mutating func writeUInt32BE(_ value: UInt32) { writeBE(value, octets: 4) }
    @inlinable public mutating func writeUInt64BE(_ value: UInt64) { writeBE(value, octets: 8) }

    @inlinable
    public mutating func writeBytes<C: Collection>(_ data: C) where C.Element == UInt8 {
        bytes.append(contentsOf: data)
    }

    /// Overwrites two octets already written (for length fields known only at the end).
    @inlinable
    public mutating func setUInt16LE(_ value: UInt16, at index: Int) {
        bytes[index] = UInt8(truncatingIfNeeded: value)
        bytes[index + 1] = UInt8(truncatingIfNeeded: value >> 8)
    }
}
