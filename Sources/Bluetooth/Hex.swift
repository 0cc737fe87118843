/// Lower-case hex text for bytes, and parsing back.
public enum Hex {
    /// `[0x01, 0xAB]` → `"01ab"`.
    @inlinable
    public static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = [UInt8]()
        out.appendHexBytes(bytes)
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses hex text; spaces, colons and an optional `0x` prefix are allowed. `nil` when the
    /// text has an odd number of digits or a character that is not a hex digit.
    public static func decode(_ text: String) -> [UInt8]? {
        var body = Substring(text)
        if body.hasPrefix("0x") || body.hasPrefix("0X") { body = body.dropFirst(2) }
        var out = [UInt8]()
        var high: UInt8?
        for scalar in body.unicodeScalars {
            if scalar == " " || scalar == ":" || scalar == "-" { continue }
            guard let nibble = nibble(scalar) else { return nil }
            if let h = high {
                out.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return high == nil ? out : nil
    }

    static func nibble(_ scalar: Unicode.Scalar) -> UInt8? {
        switch scalar.value {
        case 0x30...0x39: return UInt8(scalar.value - 0x30)
        case 0x41...0x46: return UInt8(scalar.value - 0x41 + 10)
        case 0x61...0x66: return UInt8(scalar.value - 0x61 + 10)
        default: return nil
        }
    }
}
