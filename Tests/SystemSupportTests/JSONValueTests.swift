import Testing

@testable import SystemSupport
import Bluetooth

/// The strict RFC 8259 reader and the writer of ``JSONValue``.
@Suite("Bluetooth JSON reader and writer")
struct BluetoothJSONValueTests {
    static func number(_ text: String) -> JSONValue { .number(JSONNumber(text: text)!) }

    // MARK: Accepted texts

    static let good: [(String, JSONValue)] = [
        ("null", .null),
        ("true", .bool(true)),
        ("false", .bool(false)),
        (" \t\r\n 7 \n", number("7")),  // §2: the four white-space characters around a value
        ("0", number("0")),
        ("-0", number("-0")),
        ("-3.25", number("-3.25")),
        ("1e10", number("1e10")),
        ("1E+2", number("1E+2")),
        ("2.5e-03", number("2.5e-03")),
        ("123456789012345678901234567890", number("123456789012345678901234567890")),
        (#""""#, .string("")),
        (#""a\"b\\c\/d\b\f\n\r\t""#, .string("a\"b\\c/d\u{8}\u{C}\n\r\t")),
        (#""\u0041\u00e9\u20AC\u0000""#, .string("Aé€\u{0}")),
        (#""\uD83D\uDE00""#, .string("😀")),  // §7: a surrogate pair is one scalar
        (#""\ud83d\ude00x""#, .string("😀x")),
        ("\"é€😀\"", .string("é€😀")),  // raw UTF-8 of two, three and four octets
        ("\"\u{7F}\"", .string("\u{7F}")),  // DEL needs no escape
        ("[]", .array([])),
        ("[ 1 , \"a\" , null ]", .array([number("1"), .string("a"), .null])),
        ("[1,[2,[3]]]", .array([number("1"), .array([number("2"), .array([number("3")])])])),
        ("{}", .object([])),
        (
            #"{ "b" : [true,false], "a":1, "c":{"d":null} }"#,
            .object([
                ("b", .array([.bool(true), .bool(false)])), ("a", number("1")), ("c", .object([("d", .null)])),
            ])
        ),
    ]

    @Test(arguments: good)
    func accepts(text: String, expected: JSONValue) throws {
        let value = try JSONValue(parsing: Array(text.utf8))
        #expect(value == expected)
        // And what the writer makes of it reads back the same, both layouts.
        #expect(try JSONValue(parsing: value.encoded()) == value)
        #expect(try JSONValue(parsing: value.encoded(.pretty)) == value.sortedForComparison)
    }

    // MARK: Refused texts: one specific error each, at its offset

    static let bad: [([UInt8], Int, JSONError.Reason)] = [
        (t(""), 0, .unexpectedEnd),
        (t("   "), 3, .unexpectedEnd),
        (t("nul"), 3, .unexpectedEnd),
        (t("nulx"), 0, .invalidLiteral),
        (t("tru e"), 0, .invalidLiteral),
        (t("True"), 0, .unexpectedCharacter(UInt8(ascii: "T"))),
        (t("NaN"), 0, .unexpectedCharacter(UInt8(ascii: "N"))),
        (t("'a'"), 0, .unexpectedCharacter(UInt8(ascii: "'"))),
        (t("/* c */ 1"), 0, .unexpectedCharacter(UInt8(ascii: "/"))),
        ([0xEF, 0xBB, 0xBF, 0x31], 0, .unexpectedCharacter(0xEF)),  // no byte order mark
        (t("01"), 1, .leadingZero),
        (t("-01"), 2, .leadingZero),
        (t("+1"), 0, .unexpectedCharacter(UInt8(ascii: "+"))),
        (t(".5"), 0, .unexpectedCharacter(UInt8(ascii: "."))),
        (t("-"), 1, .unexpectedEnd),
        (t("-a"), 1, .expectedDigit),
        (t("1."), 2, .unexpectedEnd),
        (t("1.e5"), 2, .expectedDigit),
        (t("1e"), 2, .unexpectedEnd),
        (t("1e+"), 3, .unexpectedEnd),
        (t("1ex"), 2, .expectedDigit),
        (t("1 2"), 2, .trailingCharacters),
        (t("{} x"), 3, .trailingCharacters),
        (t("[1,]"), 3, .unexpectedCharacter(UInt8(ascii: "]"))),
        (t("[1 2]"), 3, .expectedCommaOrBracket),
        (t("[1"), 2, .unexpectedEnd),
        (t("]"), 0, .unexpectedCharacter(UInt8(ascii: "]"))),
        (t(#"{"a":1,}"#), 7, .expectedMemberName),
        (t(#"{"a" 1}"#), 5, .expectedColon),
        (t("{a:1}"), 1, .expectedMemberName),
        (t(#"{"a":1 "b":2}"#), 7, .expectedCommaOrBrace),
        (t(#"{"a":1,"a":2}"#), 7, .duplicateMemberName("a")),
        (t(#"{"a":}"#), 5, .unexpectedCharacter(UInt8(ascii: "}"))),
        (t(#""abc"#), 4, .unexpectedEnd),
        (t("\"a\tb\""), 2, .controlCharacterInString),
        (t("\"a\nb\""), 2, .controlCharacterInString),
        ([0x22, 0x00, 0x22], 1, .controlCharacterInString),
        (t(#""\x""#), 1, .invalidEscape),
        (t(#""\U0041""#), 1, .invalidEscape),
        (t(#""\u12G4""#), 5, .invalidUnicodeEscape),
        (t(#""\u+123""#), 3, .invalidUnicodeEscape),
        (t(#""\uDE00""#), 1, .unpairedSurrogate),  // a lone low surrogate
        (t(#""\uD83D""#), 1, .unpairedSurrogate),  // a high one at the end of the string
        (t(#""\uD83Dx""#), 1, .unpairedSurrogate),
        (t(#""\uD83D\n""#), 1, .unpairedSurrogate),
        (t(#""\uD83D\u0041""#), 7, .unpairedSurrogate),  // followed by a non-surrogate escape
        (t(#""\uD83D\uD83D""#), 7, .unpairedSurrogate),  // followed by another high one
        ([0x22, 0x80, 0x22], 1, .invalidUTF8),  // a continuation octet first
        ([0x22, 0xC0, 0x80, 0x22], 1, .invalidUTF8),  // overlong NUL
        ([0x22, 0xC1, 0xBF, 0x22], 1, .invalidUTF8),  // overlong DEL
        ([0x22, 0xE0, 0x80, 0x80, 0x22], 2, .invalidUTF8),  // overlong three-octet form
        ([0x22, 0xED, 0xA0, 0x80, 0x22], 2, .invalidUTF8),  // U+D800 encoded
        ([0x22, 0xF0, 0x80, 0x80, 0x80, 0x22], 2, .invalidUTF8),  // overlong four-octet form
        ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 2, .invalidUTF8),  // above U+10FFFF
        ([0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], 1, .invalidUTF8),
        ([0x22, 0xFF, 0x22], 1, .invalidUTF8),
        ([0x22, 0xE2, 0x82, 0x22], 3, .invalidUTF8),  // cut short by the quote
        ([0x22, 0xE2, 0x82], 3, .unexpectedEnd),  // cut short by the end
        ([0x22, 0xC3, 0xA9, 0x80, 0x22], 3, .invalidUTF8),  // a stray continuation after é
    ]

    static func t(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(arguments: bad)
    func refuses(bytes: [UInt8], offset: Int, reason: JSONError.Reason) {
        #expect(throws: JSONError(offset: offset, reason: reason)) { try JSONValue(parsing: bytes) }
    }

    @Test func errorTextNamesTheOffset() {
        #expect(
            JSONError(offset: 7, reason: .duplicateMemberName("a")).description
                == #"JSON: member "a" appears twice at offset 7"#)
        #expect(JSONError(offset: 0, reason: .unexpectedCharacter(0xEF)).description == "JSON: unexpected octet 0xef at offset 0")
        #expect(JSONError(offset: 3, reason: .unexpectedCharacter(0x5D)).description == "JSON: unexpected character ']' at offset 3")
    }

    /// Every strict prefix of a valid text is cut short: `unexpectedEnd` at its own end.
    @Test func truncationSweep() throws {
        let text = Array(#" {"a":[1,-1.5e3,true,"x\u00e9é\uD83D\uDE00"],"b":null} "#.utf8)
        _ = try JSONValue(parsing: text)
        for length in 0..<(text.count - 1) {  // up to the text less its closing brace and space
            let prefix = Array(text[0..<length])
            #expect(throws: JSONError(offset: length, reason: .unexpectedEnd), "prefix \(length)") {
                try JSONValue(parsing: prefix)
            }
        }
    }

    // MARK: Nesting bound

    @Test func nestingBound() throws {
        let limit = JSONValue.defaultMaximumDepth
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        _ = try JSONValue(parsing: Array(deepest.utf8))
        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        #expect(throws: JSONError(offset: limit, reason: .tooDeep(limit: limit))) {
            try JSONValue(parsing: Array(tooDeep.utf8))
        }
        // Objects count as levels too, mixed with arrays.
        let mixed = Array(#"{"a":[{"b":[1]}]}"#.utf8)
        _ = try JSONValue(parsing: mixed, maximumDepth: 4)
        #expect(throws: JSONError(offset: 11, reason: .tooDeep(limit: 3))) { try JSONValue(parsing: mixed, maximumDepth: 3) }
        // A long flat array is no depth at all.
        let flat = "[" + Array(repeating: "0", count: 10_000).joined(separator: ",") + "]"
        #expect(try JSONValue(parsing: Array(flat.utf8)).array?.count == 10_000)
        // A hostile depth is refused without exhausting the stack.
        let hostile = [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)
        #expect(throws: JSONError(offset: limit, reason: .tooDeep(limit: limit))) { try JSONValue(parsing: hostile) }
    }

    // MARK: Accessors

    @Test func accessors() throws {
        let value = try JSONValue(parsing: Array(#"{"h":65535,"f":1.5,"e":1e2,"n":-7,"s":"x","l":[true],"z":null}"#.utf8))
        #expect(value["h"]?.int == 65535)
        #expect(value["f"]?.int == nil)
        #expect(value["f"]?.double == 1.5)
        #expect(value["e"]?.int == nil)
        #expect(value["e"]?.double == 100)
        #expect(value["n"]?.int == -7)
        #expect(value["s"]?.string == "x")
        #expect(value["l"]?.array == [.bool(true)])
        #expect(value["l"]?[0]?.bool == true)
        #expect(value["l"]?[1] == nil)
        #expect(value["z"]?.isNull == true)
        #expect(value["missing"] == nil)
        #expect(value.members?.map(\.0) == ["h", "f", "e", "n", "s", "l", "z"])
        #expect(JSONValue.string("a")["x"] == nil)
    }

    @Test func numbers() {
        #expect(JSONNumber(text: "12")?.int == 12)
        #expect(JSONNumber(text: "-0.5e-2")?.double == -0.005)
        for invalid in ["", "-", "01", "1.", ".1", "+1", "1e", "0x10", " 1", "1 ", "NaN", "Infinity"] {
            #expect(JSONNumber(text: invalid) == nil, "\(invalid)")
        }
        #expect(JSONNumber(UInt16.max).text == "65535")
        #expect(JSONNumber(Int64.min).text == "-9223372036854775808")
        #expect(JSONNumber(Double.nan) == nil)
        #expect(JSONNumber(-Double.infinity) == nil)
        #expect(JSONNumber(0.1)?.text == "0.1")
        #expect(JSONNumber(1e-5).flatMap { JSONNumber(text: $0.text) }?.double == 1e-5)
    }

    // MARK: Writer

    @Test func prettyLayout() throws {
        let value = JSONValue.object([
            ("version", .integer(1)), ("empty", .array([])), ("list", .array([.integer(1), .null])),
            ("inner", .object([("z", .bool(false)), ("a", .object([]))])),
        ])
        let expected = """
            {
              "empty": [],
              "inner": {
                "a": {},
                "z": false
              },
              "list": [
                1,
                null
              ],
              "version": 1
            }

            """
        #expect(String(decoding: value.encoded(.pretty), as: UTF8.self) == expected)
        #expect(
            String(decoding: value.encoded(), as: UTF8.self)
                == #"{"version":1,"empty":[],"list":[1,null],"inner":{"z":false,"a":{}}}"#)
    }

    @Test func stringEscapes() throws {
        let text = "q\"b\\s/\n\r\t\u{8}\u{C}\u{0}\u{1F}é😀"
        let encoded = JSONValue.string(text).encoded()
        #expect(String(decoding: encoded, as: UTF8.self) == #""q\"b\\s/\n\r\t\b\f\u0000\u001fé😀""#)
        #expect(try JSONValue(parsing: encoded) == .string(text))
    }
}

extension JSONValue {
    /// The value with every object's members sorted, as the pretty layout writes them.
    var sortedForComparison: JSONValue {
        switch self {
        case .array(let elements): return .array(elements.map(\.sortedForComparison))
        case .object(let members):
            return .object(
                members.map { ($0.0, $0.1.sortedForComparison) }.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) })
        default: return self
        }
    }

    subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }
}
