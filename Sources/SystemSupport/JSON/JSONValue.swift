import Bluetooth
/// A JSON value (RFC 8259), read by a small strict parser and written by a small writer, so
/// no module of `gattclient` needs Foundation for its JSON files (the GATT cache, `services
/// --json` read back, `--database` files).
///
/// Objects keep their members in document order. Numbers keep their text (see ``JSONNumber``):
/// a handle written as `65535` reads back exactly, whatever a `Double` would round.
///
/// - SeeAlso: RFC 8259, The JavaScript Object Notation (JSON) Data Interchange Format.
package enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    /// Members in document order; names are unique (the parser rejects a repeated name).
    case object([(String, JSONValue)])

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
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

    package func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let value): hasher.combine(value)
        case .string(let value): hasher.combine(value)
        case .array(let value): hasher.combine(value)
        case .object(let members):
            hasher.combine(members.count)
            for (name, value) in members {
                hasher.combine(name)
                hasher.combine(value)
            }
        }
    }

    // MARK: Building

    /// An integer number.
    package static func integer<T: BinaryInteger>(_ value: T) -> JSONValue { .number(JSONNumber(value)) }

    // MARK: Reading

    /// The member `name` of an object (nil for another kind of value or a missing member).
    package subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == name }?.1
    }

    /// The members of an object.
    package var members: [(String, JSONValue)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// A number written as an integer that fits `Int` (`12`, `-3`; not `12.0`, `1e2`).
    package var int: Int? {
        if case .number(let number) = self { return number.int }
        return nil
    }

    /// A number, as the nearest `Double`.
    package var double: Double? {
        if case .number(let number) = self { return number.double }
        return nil
    }

    package var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    package var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    package var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    package var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Parses one JSON text: optional white space, one value, optional white space, nothing
    /// else. Strings must be valid UTF-8; arrays and objects may nest `maximumDepth` deep.
    package init(parsing bytes: [UInt8], maximumDepth: Int = JSONValue.defaultMaximumDepth) throws(JSONError) {
        var parser = JSONParser(bytes: bytes, maximumDepth: maximumDepth)
        self = try parser.document()
    }

    /// The nesting bound of ``init(parsing:maximumDepth:)``.
    package static let defaultMaximumDepth = 64
}

/// A JSON number, kept as its text: the RFC 8259 grammar
/// `[-] (0 | [1-9][0-9]*) [. [0-9]+] [(e|E) [+|-] [0-9]+]`. Equality is textual.
package struct JSONNumber: Hashable, Sendable, CustomStringConvertible {
    package let text: String

    /// `text` when it follows the grammar, else nil.
    package init?(text: String) {
        let parser = JSONParser(bytes: Array(text.utf8), maximumDepth: 0)
        guard (try? parser.numberEnd()) == text.utf8.count else { return nil }
        self.text = text
    }

    package init<T: BinaryInteger>(_ value: T) { text = String(value) }

    /// A finite `Double` in its shortest round-trip form; nil for infinities and NaN, which
    /// JSON cannot carry.
    package init?(_ value: Double) {
        guard value.isFinite else { return nil }
        // "1e-05", "0.1", "100.0": all within the grammar.
        text = value.description
    }

    init(validated text: String) { self.text = text }

    /// The value when written as an integer that fits `Int`.
    package var int: Int? { Int(text) }

    /// The nearest `Double`.
    package var double: Double? { Double(text) }

    package var description: String { text }
}

/// Why a JSON text was refused, and where: `offset` is the octet the parser stopped at.
package struct JSONError: Error, Hashable, Sendable, CustomStringConvertible {
    package enum Reason: Hashable, Sendable {
        /// The text ended inside a value (or was empty).
        case unexpectedEnd
        /// An octet that cannot start or continue a value here.
        case unexpectedCharacter(UInt8)
        /// `true`, `false` or `null` misspelt.
        case invalidLiteral
        /// An object member must start with a quoted name.
        case expectedMemberName
        case expectedColon
        /// After an array element: `,` or `]`.
        case expectedCommaOrBracket
        /// After an object member: `,` or `}`.
        case expectedCommaOrBrace
        /// The same member name twice in one object.
        case duplicateMemberName(String)
        /// `01`, `-00`.
        case leadingZero
        /// A number sign, fraction point or exponent without digits after it.
        case expectedDigit
        /// A control character (U+0000–U+001F) unescaped in a string.
        case controlCharacterInString
        /// A backslash followed by something other than `" \ / b f n r t u`.
        case invalidEscape
        /// `\u` not followed by four hex digits.
        case invalidUnicodeEscape
        /// A `\uD800`–`\uDBFF` escape without a following low surrogate escape, or a lone low one.
        case unpairedSurrogate
        /// Octets that are not well-formed UTF-8 (overlong, surrogate, above U+10FFFF, cut short).
        case invalidUTF8
        /// Arrays and objects nested deeper than the bound.
        case tooDeep(limit: Int)
        /// Something after the value.
        case trailingCharacters
    }

    package var offset: Int
    package var reason: Reason

    package init(offset: Int, reason: Reason) {
        self.offset = offset
        self.reason = reason
    }

    package var description: String {
        let text: String
        switch reason {
        case .unexpectedEnd: text = "unexpected end of text"
        case .unexpectedCharacter(let byte):
            text = (0x21...0x7E).contains(byte)
                ? "unexpected character '\(Character(Unicode.Scalar(byte)))'"
                : "unexpected octet 0x\(Hex.encode([byte]))"
        case .invalidLiteral: text = "invalid literal (true, false or null)"
        case .expectedMemberName: text = "expected a member name in quotes"
        case .expectedColon: text = "expected ':'"
        case .expectedCommaOrBracket: text = "expected ',' or ']'"
        case .expectedCommaOrBrace: text = "expected ',' or '}'"
        case .duplicateMemberName(let name): text = "member \"\(name)\" appears twice"
        case .leadingZero: text = "number with a leading zero"
        case .expectedDigit: text = "expected a digit"
        case .controlCharacterInString: text = "control character in a string (escape it)"
        case .invalidEscape: text = "invalid escape"
        case .invalidUnicodeEscape: text = "\\u needs four hex digits"
        case .unpairedSurrogate: text = "unpaired UTF-16 surrogate escape"
        case .invalidUTF8: text = "invalid UTF-8"
        case .tooDeep(let limit): text = "nesting deeper than \(limit)"
        case .trailingCharacters: text = "characters after the value"
        }
        return "JSON: \(text) at offset \(offset)"
    }
}
