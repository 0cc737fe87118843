/// A JSON value, read by a small strict parser (RFC 8259) so the database loader needs no
/// Foundation. Nesting is bounded (64 levels); every error names the octet offset.
enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// The number as written (integers are read exactly from it).
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order.
    case object([(String, JSONValue)])

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let v): hasher.combine(v)
        case .number(let v): hasher.combine(v)
        case .string(let v): hasher.combine(v)
        case .array(let v): hasher.combine(v)
        case .object(let v):
            for (key, value) in v {
                hasher.combine(key)
                hasher.combine(value)
            }
        }
    }

    /// The member `key` of an object.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    var int: Int? {
        guard case .number(let text) = self else { return nil }
        return Int(text)
    }

    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var array: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    // MARK: Parsing

    struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "JSON: \(reason) at offset \(offset)" }
    }

    init(parsing bytes: [UInt8]) throws(ParseError) {
        var parser = Parser(bytes: bytes)
        parser.skipSpace()
        self = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw ParseError(offset: parser.index, reason: "trailing characters") }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        func fail(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func expect(_ literal: String) throws(ParseError) {
            for byte in literal.utf8 {
                guard peek == byte else { throw fail("expected \(literal)") }
                index += 1
            }
        }

        mutating func value(depth: Int) throws(ParseError) -> JSONValue {
            guard depth < 64 else { throw fail("nesting deeper than 64") }
            guard let byte = peek else { throw fail("unexpected end") }
            switch byte {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try expect("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try expect("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try expect("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw fail("unexpected character")
            }
        }

        mutating func object(depth: Int) throws(ParseError) -> JSONValue {
            index += 1
            var members: [(String, JSONValue)] = []
            skipSpace()
            if peek == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard peek == UInt8(ascii: "\"") else { throw fail("expected a member name") }
                let key = try string()
                skipSpace()
                try expect(":")
                skipSpace()
                members.append((key, try value(depth: depth + 1)))
                skipSpace()
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect("}")
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(ParseError) -> JSONValue {
            index += 1
            var elements: [JSONValue] = []
            skipSpace()
            if peek == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipSpace()
                elements.append(try value(depth: depth + 1))
                skipSpace()
                if peek == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                try expect("]")
                return .array(elements)
            }
        }

        mutating func number() throws(ParseError) -> JSONValue {
            let start = index
            if peek == UInt8(ascii: "-") { index += 1 }
            func digits(_ parser: inout Parser) -> Int {
                let from = parser.index
                while let byte = parser.peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                    parser.index += 1
                }
                return parser.index - from
            }
            let leading = index
            guard digits(&self) > 0 else { throw fail("expected digits") }
            if bytes[leading] == UInt8(ascii: "0"), index - leading > 1 { throw fail("leading zero") }
            if peek == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw fail("expected fraction digits") }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw fail("expected exponent digits") }
            }
            return .number(String(decoding: bytes[start..<index], as: UTF8.self))
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard index + 4 <= bytes.count,
                let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
            else { throw fail("bad \\u escape") }
            index += 4
            return value
        }

        mutating func string() throws(ParseError) -> String {
            index += 1
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []
            func flush(_ run: inout [UInt8], into scalars: inout String.UnicodeScalarView) {
                scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars)
                run.removeAll(keepingCapacity: true)
            }
            while true {
                guard let byte = peek else { throw fail("unterminated string") }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    flush(&run, into: &scalars)
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush(&run, into: &scalars)
                    guard let escape = peek else { throw fail("unterminated escape") }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): run.append(0x22)
                    case UInt8(ascii: "\\"): run.append(0x5C)
                    case UInt8(ascii: "/"): run.append(0x2F)
                    case UInt8(ascii: "b"): run.append(0x08)
                    case UInt8(ascii: "f"): run.append(0x0C)
                    case UInt8(ascii: "n"): run.append(0x0A)
                    case UInt8(ascii: "r"): run.append(0x0D)
                    case UInt8(ascii: "t"): run.append(0x09)
                    case UInt8(ascii: "u"):
                        var code = try hex4()
                        if (0xD800...0xDBFF).contains(code), peek == UInt8(ascii: "\\") {
                            index += 1
                            try expect("u")
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw fail("bad surrogate pair") }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw fail("bad \\u escape") }
                        scalars.append(scalar)
                    default:
                        throw fail("bad escape")
                    }
                case 0x00..<0x20:
                    throw fail("control character in string")
                default:
                    run.append(byte)
                }
            }
        }
    }
}
