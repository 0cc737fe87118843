/// Text appended to a byte buffer as UTF-8, without a `String` per piece: what the dumps'
/// formatting is built from (a description written this way is the same text its
/// `description` gives, which is made from it).
extension Array where Element == UInt8 {
    /// Appends what `body` writes through a pointer to at most `maximum` octets of reserved
    /// room (it returns how many it wrote): one capacity check for a whole piece of text
    /// instead of one per octet — what the writers below are made of.
    @inlinable
    public mutating func appendRegion(_ maximum: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        append(addingCapacity: maximum) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                let written = body(buffer.baseAddress!)
                precondition(written <= buffer.count, "a text writer outgrew its reserved room")
                initialized = written
            }
        }
    }

    /// Appends a literal.
    @inlinable
    public mutating func appendText(_ text: StaticString) {
        let length = text.utf8CodeUnitCount
        appendRegion(length) { p in
            let source = text.utf8Start
            for index in 0..<length { p[index] = source[index] }
            return length
        }
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

    /// Appends `value` in decimal, left-padded with zeros to `width` digits (at most 32).
    @inlinable
    public mutating func appendDecimal(_ value: UInt64, width: Int = 1) {
        let count = Swift.max(TextDigits.decimalCount(value), Swift.min(width, 32))
        appendRegion(count) { p in
            TextDigits.putDecimal(value, digits: count, at: p)
            return count
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
        let table = uppercase ? TextDigits.upperText.utf8Start : TextDigits.lowerText.utf8Start
        appendRegion(count) { p in
            for index in 0..<count {
                let shift = count - 1 - index
                p[index] = shift >= 16 ? UInt8(ascii: "0") : table[Int(truncatingIfNeeded: magnitude >> (UInt64(shift) * 4) & 0xF)]
            }
            return count
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
        let table = TextDigits.lowerText.utf8Start
        let count = bytes.count
        appendRegion(2 * count) { p in
            var index = 0
            for byte in bytes {
                p[index] = table[Int(byte >> 4)]
                p[index + 1] = table[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }
}

/// Hex digit tables for `appendHex`.
public enum TextDigits {
    public static let lower: [UInt8] = Array("0123456789abcdef".utf8)
    public static let upper: [UInt8] = Array("0123456789ABCDEF".utf8)
    /// The same digits as literals (read through a pointer, no array to retain).
    public static let lowerText: StaticString = "0123456789abcdef"
    public static let upperText: StaticString = "0123456789ABCDEF"

    /// How many decimal digits `value` has (1 for 0).
    @inlinable
    public static func decimalCount(_ value: UInt64) -> Int {
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return digits
    }

    /// `value` in exactly `digits` decimal digits at `p` (zeros before it; its lowest digits
    /// when it has more).
    @inlinable
    public static func putDecimal(_ value: UInt64, digits: Int, at p: UnsafeMutablePointer<UInt8>) {
        var rest = value
        var index = digits - 1
        while index >= 0 {
            p[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
            index -= 1
        }
    }
}
