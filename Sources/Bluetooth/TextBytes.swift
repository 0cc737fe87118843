/// Text appended to a byte buffer as UTF-8, without a `String` per piece: what the dumps'
/// formatting is built from (a description written this way is the same text its
/// `description` gives, which is made from it).
extension Array where Element == UInt8 {
    /// Appends a literal.
    @inlinable
    public mutating func appendText(_ text: StaticString) {
        text.withUTF8Buffer { append(contentsOf: $0) }
    }

    /// Appends a string's UTF-8.
    @inlinable
    public mutating func appendString(_ text: String) {
        append(contentsOf: text.utf8)
    }

    /// Appends a substring's UTF-8.
    @inlinable
    public mutating func appendString(_ text: Substring) {
        append(contentsOf: text.utf8)
    }

    /// Appends one ASCII character.
    @inlinable
    public mutating func appendASCII(_ character: Unicode.Scalar) {
        append(UInt8(truncatingIfNeeded: character.value))
    }

    /// Appends `value` in decimal (a minus sign when negative), as `String(value)` gives it.
    @inlinable
    public mutating func appendDecimal<T: BinaryInteger>(_ value: T) {
        if value < 0 {
            append(UInt8(ascii: "-"))
            appendDecimal(UInt64(value.magnitude))
        } else {
            appendDecimal(UInt64(value))
        }
    }

    /// Appends `value` in decimal, left-padded with zeros to `width` digits.
    @inlinable
    public mutating func appendDecimal(_ value: UInt64, width: Int = 1) {
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 octets of scratch
        var count = 0
        var rest = value
        Swift.withUnsafeMutableBytes(of: &digits) { scratch in
            repeat {
                scratch[31 - count] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
                count += 1
            } while rest != 0
            while count < width && count < 32 {
                scratch[31 - count] = UInt8(ascii: "0")
                count += 1
            }
            append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[(32 - count)...]))
        }
    }

    /// Appends `value`'s bit pattern in hex without a prefix, left-padded with zeros to `digits`
    /// (more when the value needs more): for a value of at least 0, what
    /// `String(value, radix: 16)` padded gives.
    @inlinable
    public mutating func appendHex<T: FixedWidthInteger>(_ value: T, digits: Int, uppercase: Bool = false) {
        let magnitude = UInt64(truncatingIfNeeded: value)
        let significant = magnitude == 0 ? 1 : (64 - magnitude.leadingZeroBitCount + 3) / 4
        let count = Swift.max(significant, digits)
        let table = uppercase ? TextDigits.upper : TextDigits.lower
        for index in stride(from: count - 1, through: 0, by: -1) {
            let nibble = index >= 16 ? 0 : Int(truncatingIfNeeded: magnitude >> (UInt64(index) * 4) & 0xF)
            append(table[nibble])
        }
    }

    /// Appends `0x` and `value` in hex padded to `digits` (HCI's way of naming values).
    @inlinable
    public mutating func appendPrefixedHex<T: FixedWidthInteger>(_ value: T, digits: Int) {
        append(UInt8(ascii: "0"))
        append(UInt8(ascii: "x"))
        appendHex(value, digits: digits)
    }

    /// Appends octets as lower-case hex, two digits each (as `Hex.encode`).
    @inlinable
    public mutating func appendHexBytes<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        reserveCapacity(count + bytes.count * 2)
        for byte in bytes {
            append(TextDigits.lower[Int(byte >> 4)])
            append(TextDigits.lower[Int(byte & 0x0F)])
        }
    }
}

/// Hex digit tables for `appendHex`.
public enum TextDigits {
    public static let lower: [UInt8] = Array("0123456789abcdef".utf8)
    public static let upper: [UInt8] = Array("0123456789ABCDEF".utf8)
}
