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
            // From the last digit back: an octet's two lower-case digits a step from the pair
            // table, then single digits (upper case, an odd count's first). Past the value's 16
            // digits `rest` is 0: zeros.
            var rest = magnitude
            var index = count
            if !uppercase {
                let pairs = UnsafeRawPointer(TextDigits.lowerHexPairs.utf8Start)
                while index >= 2 {
                    index -= 2
                    let pair = pairs.loadUnaligned(fromByteOffset: 2 * Int(truncatingIfNeeded: rest & 0xFF), as: UInt16.self)
                    UnsafeMutableRawPointer(p + index).storeBytes(of: pair, as: UInt16.self)
                    rest >>= 8
                }
            }
            while index > 0 {
                index -= 1
                p[index] = table[Int(truncatingIfNeeded: rest & 0xF)]
                rest >>= 4
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
        let count = bytes.count
        appendRegion(2 * count) { p in
            // A collection without contiguous storage (rare here) is copied first.
            bytes.withContiguousStorageIfAvailable { TextDigits.putHex($0, at: p) }
                ?? Array(bytes).withUnsafeBufferPointer { TextDigits.putHex($0, at: p) }
        }
    }
}

/// Digit tables and the digit writers the text and JSON writers share.
public enum TextDigits {
    public static let lower: [UInt8] = Array("0123456789abcdef".utf8)
    public static let upper: [UInt8] = Array("0123456789ABCDEF".utf8)
    /// The same digits as literals (read through a pointer, no array to retain).
    public static let lowerText: StaticString = "0123456789abcdef"
    public static let upperText: StaticString = "0123456789ABCDEF"

    /// "00" to "99", two octets each: two digits a step.
    public static let decimalPairs: StaticString = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
    /// "00" to "ff", two octets each: an octet's hex in one load.
    public static let lowerHexPairs: StaticString = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"

    /// Copies `count` octets from `source` to `p` (not overlapping): up to 32 octets with word
    /// moves from both ends that overlap in the middle (no call, nothing read outside the
    /// source), more through `update`. For keys, names and other short literals.
    @inlinable @inline(__always)
    public static func putCopy(_ source: UnsafePointer<UInt8>, count: Int, at p: UnsafeMutablePointer<UInt8>) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(p)
        if count > 16 {
            guard count <= 32 else {
                p.update(from: source, count: count)
                return
            }
            let a = from.loadUnaligned(as: UInt64.self)
            let b = from.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let c = from.loadUnaligned(fromByteOffset: count - 16, as: UInt64.self)
            let d = from.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            to.storeBytes(of: a, as: UInt64.self)
            to.storeBytes(of: b, toByteOffset: 8, as: UInt64.self)
            to.storeBytes(of: c, toByteOffset: count - 16, as: UInt64.self)
            to.storeBytes(of: d, toByteOffset: count - 8, as: UInt64.self)
        } else if count >= 8 {
            let head = from.loadUnaligned(as: UInt64.self)
            let tail = from.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            to.storeBytes(of: head, as: UInt64.self)
            to.storeBytes(of: tail, toByteOffset: count - 8, as: UInt64.self)
        } else if count >= 4 {
            let head = from.loadUnaligned(as: UInt32.self)
            let tail = from.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            to.storeBytes(of: head, as: UInt32.self)
            to.storeBytes(of: tail, toByteOffset: count - 4, as: UInt32.self)
        } else {
            var index = 0
            while index < count {
                p[index] = source[index]
                index += 1
            }
        }
    }

    /// How many decimal digits `value` has (1 for 0).
    @inlinable @inline(__always)
    public static func decimalCount(_ value: UInt64) -> Int {
        // Comparisons, not divisions: the dumps' numbers are mostly short.
        if value < 10 { return 1 }
        if value < 100 { return 2 }
        if value < 1_000 { return 3 }
        if value < 10_000 { return 4 }
        if value < 100_000 { return 5 }
        if value < 1_000_000 { return 6 }
        var digits = 7
        var rest = value / 10_000_000
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return digits
    }

    /// `value` in exactly `digits` decimal digits at `p` (zeros before it; its lowest digits
    /// when it has more).
    @inlinable @inline(__always)
    public static func putDecimal(_ value: UInt64, digits: Int, at p: UnsafeMutablePointer<UInt8>) {
        let pairs = UnsafeRawPointer(decimalPairs.utf8Start)
        var rest = value
        var index = digits
        while index >= 2 {
            let pair = pairs.loadUnaligned(fromByteOffset: 2 * Int(truncatingIfNeeded: rest % 100), as: UInt16.self)
            UnsafeMutableRawPointer(p + index - 2).storeBytes(of: pair, as: UInt16.self)
            rest /= 100
            index -= 2
        }
        if index == 1 { p[0] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10) }
    }

    /// `octets` as lower-case hex, two digits each, at `p`; the length (2 × count).
    @inlinable
    public static func putHex(_ octets: UnsafeBufferPointer<UInt8>, at p: UnsafeMutablePointer<UInt8>) -> Int {
        let pairs = UnsafeRawPointer(lowerHexPairs.utf8Start)
        let out = UnsafeMutableRawPointer(p)
        var index = 0
        for byte in octets {
            out.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 2 * Int(byte), as: UInt16.self), toByteOffset: index, as: UInt16.self)
            index += 2
        }
        return index
    }
}
