import Bluetooth
extension JSONValue {
    /// How ``encoded(_:)`` lays a value out.
    package struct EncodingStyle: Hashable, Sendable {
        /// One value per line, two spaces of indentation per level, a newline at the end.
        package var prettyPrinted: Bool
        /// Object members sorted by name (by their UTF-8 octets), else in their stored order.
        package var sortedMembers: Bool

        package init(prettyPrinted: Bool = false, sortedMembers: Bool = false) {
            self.prettyPrinted = prettyPrinted
            self.sortedMembers = sortedMembers
        }

        /// No white space, members as stored.
        package static let compact = EncodingStyle()
        /// Indented, members sorted: diffable files.
        package static let pretty = EncodingStyle(prettyPrinted: true, sortedMembers: true)
    }

    /// The value as UTF-8 JSON text (RFC 8259), readable by ``init(parsing:maximumDepth:)``.
    /// Strings escape `"`, `\` and U+0000–U+001F; everything else is written as UTF-8.
    package func encoded(_ style: EncodingStyle = .compact) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out, style: style, level: 0)
        if style.prettyPrinted { out.append(0x0A) }
        return out
    }

    private func write(into out: inout [UInt8], style: EncodingStyle, level: Int) {
        func newline(_ level: Int) {
            guard style.prettyPrinted else { return }
            out.append(0x0A)
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * level))
        }
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let number): out.append(contentsOf: number.text.utf8)
        case .string(let text): Self.writeString(text, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            guard !elements.isEmpty else { return out.append(UInt8(ascii: "]")) }
            for (position, element) in elements.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                newline(level + 1)
                element.write(into: &out, style: style, level: level + 1)
            }
            newline(level)
            out.append(UInt8(ascii: "]"))
        case .object(let stored):
            out.append(UInt8(ascii: "{"))
            guard !stored.isEmpty else { return out.append(UInt8(ascii: "}")) }
            let members = style.sortedMembers ? stored.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) } : stored
            for (position, (name, value)) in members.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                newline(level + 1)
                Self.writeString(name, into: &out)
                out.append(UInt8(ascii: ":"))
                if style.prettyPrinted { out.append(UInt8(ascii: " ")) }
                value.write(into: &out, style: style, level: level + 1)
            }
            newline(level)
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0x08: out.append(contentsOf: #"\b"#.utf8)
            case 0x0C: out.append(contentsOf: #"\f"#.utf8)
            case 0x00..<0x20:
                let digits: [UInt8] = Array("0123456789abcdef".utf8)
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
