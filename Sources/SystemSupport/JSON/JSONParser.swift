import Bluetooth
/// The recursive-descent reader behind ``JSONValue/init(parsing:maximumDepth:)``: every rule
/// of RFC 8259 §2–§8, nothing more (no comments, no trailing commas, no byte order mark, no
/// NaN), and a repeated member name refused (§4 leaves its meaning open).
///
/// - SeeAlso: RFC 8259, §2 (grammar), §4 (objects), §6 (numbers), §7 (strings), §8.1 (UTF-8).
struct JSONParser {
    let bytes: [UInt8]
    let maximumDepth: Int
    var index = 0

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    private func fail(_ reason: JSONError.Reason, at offset: Int? = nil) -> JSONError {
        JSONError(offset: offset ?? index, reason: reason)
    }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// §2: `ws = *( %x20 / %x09 / %x0A / %x0D )`.
    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func document() throws(JSONError) -> JSONValue {
        skipSpace()
        let value = try value(depth: 0)
        skipSpace()
        guard index == bytes.count else { throw fail(.trailingCharacters) }
        return value
    }

    private mutating func value(depth: Int) throws(JSONError) -> JSONValue {
        guard let byte = peek else { throw fail(.unexpectedEnd) }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = index
            index = try numberEnd()
            return .number(JSONNumber(validated: String(decoding: bytes[start..<index], as: UTF8.self)))
        default: throw fail(.unexpectedCharacter(byte))
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONError) {
        let start = index
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else {
            // A prefix of the word at the end of the text is a cut-short text, not a misspelling.
            let rest = bytes[index...]
            let isPrefix = word.withUTF8Buffer { rest.elementsEqual($0.prefix(rest.count)) }
            throw fail(isPrefix ? .unexpectedEnd : .invalidLiteral, at: isPrefix ? bytes.count : start)
        }
        let matches = word.withUTF8Buffer { bytes[index..<index + count].elementsEqual($0) }
        guard matches else { throw fail(.invalidLiteral, at: start) }
        index += count
    }

    /// §4: `{ member *( , member ) }`, `member = string : value`.
    private mutating func object(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= maximumDepth else { throw fail(.tooDeep(limit: maximumDepth)) }
        index += 1
        var members: [(String, JSONValue)] = []
        var names = Set<String>()
        skipSpace()
        if peek == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard let byte = peek else { throw fail(.unexpectedEnd) }
            guard byte == UInt8(ascii: "\"") else { throw fail(.expectedMemberName) }
            let nameOffset = index
            let name = try string()
            guard names.insert(name).inserted else { throw fail(.duplicateMemberName(name), at: nameOffset) }
            skipSpace()
            guard let colon = peek else { throw fail(.unexpectedEnd) }
            guard colon == UInt8(ascii: ":") else { throw fail(.expectedColon) }
            index += 1
            skipSpace()
            members.append((name, try value(depth: depth)))
            skipSpace()
            guard let next = peek else { throw fail(.unexpectedEnd) }
            index += 1
            switch next {
            case UInt8(ascii: ","): continue
            case UInt8(ascii: "}"): return .object(members)
            default:
                index -= 1
                throw fail(.expectedCommaOrBrace)
            }
        }
    }

    /// §5: `[ value *( , value ) ]`.
    private mutating func array(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= maximumDepth else { throw fail(.tooDeep(limit: maximumDepth)) }
        index += 1
        var elements: [JSONValue] = []
        skipSpace()
        if peek == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipSpace()
            elements.append(try value(depth: depth))
            skipSpace()
            guard let next = peek else { throw fail(.unexpectedEnd) }
            index += 1
            switch next {
            case UInt8(ascii: ","): continue
            case UInt8(ascii: "]"): return .array(elements)
            default:
                index -= 1
                throw fail(.expectedCommaOrBracket)
            }
        }
    }

    /// §6: the index just past the number that starts at `index` (which does not move).
    func numberEnd() throws(JSONError) -> Int {
        var at = index
        func isDigit(_ at: Int) -> Bool { at < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[at]) }
        func digits(from start: Int) throws(JSONError) -> Int {
            guard isDigit(start) else {
                throw JSONError(offset: start, reason: start < bytes.count ? .expectedDigit : .unexpectedEnd)
            }
            var end = start + 1
            while isDigit(end) { end += 1 }
            return end
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        let integerStart = at
        at = try digits(from: at)
        if bytes[integerStart] == UInt8(ascii: "0"), at - integerStart > 1 {
            throw JSONError(offset: integerStart + 1, reason: .leadingZero)
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") { at = try digits(from: at + 1) }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            at = try digits(from: at)
        }
        return at
    }

    /// §7: a quoted string, its escapes resolved; §8.1: its octets well-formed UTF-8.
    private mutating func string() throws(JSONError) -> String {
        index += 1
        var utf8: [UInt8] = []
        while true {
            guard let byte = peek else { throw fail(.unexpectedEnd) }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                // Every octet appended was checked (or encoded by us): decoding replaces nothing.
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try escape(into: &utf8)
            case 0x00..<0x20:
                throw fail(.controlCharacterInString)
            case 0x20..<0x80:
                utf8.append(byte)
                index += 1
            default:
                let length = try multibyteLength()
                utf8.append(contentsOf: bytes[index..<index + length])
                index += length
            }
        }
    }

    /// The length of the well-formed UTF-8 sequence of two to four octets at `index`
    /// (Unicode 15, Table 3-7).
    private func multibyteLength() throws(JSONError) -> Int {
        let lead = bytes[index]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default: throw fail(.invalidUTF8)
        }
        for offset in 1..<length {
            guard index + offset < bytes.count else { throw fail(.unexpectedEnd, at: bytes.count) }
            let range = offset == 1 ? secondRange : 0x80...0xBF
            guard range.contains(bytes[index + offset]) else { throw fail(.invalidUTF8, at: index + offset) }
        }
        return length
    }

    /// One escape (the backslash at `index`), appended as UTF-8.
    private mutating func escape(into utf8: inout [UInt8]) throws(JSONError) {
        let start = index
        index += 1
        guard let letter = peek else { throw fail(.unexpectedEnd) }
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(letter)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var code = try hex4()
            if (0xDC00...0xDFFF).contains(code) { throw fail(.unpairedSurrogate, at: start) }
            if (0xD800...0xDBFF).contains(code) {
                let lowStart = index
                guard index < bytes.count else { throw fail(.unexpectedEnd) }
                guard bytes[index] == UInt8(ascii: "\\") else { throw fail(.unpairedSurrogate, at: start) }
                guard index + 1 < bytes.count else { throw fail(.unexpectedEnd, at: bytes.count) }
                guard bytes[index + 1] == UInt8(ascii: "u") else { throw fail(.unpairedSurrogate, at: start) }
                index += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw fail(.unpairedSurrogate, at: lowStart) }
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            }
            // Not a surrogate (checked above), at most 0x10FFFF: always a scalar.
            guard let scalar = Unicode.Scalar(code) else { throw fail(.invalidUnicodeEscape, at: start) }
            utf8.append(contentsOf: scalar.utf8)
        default:
            throw fail(.invalidEscape, at: start)
        }
    }

    /// Four hex digits (either case) at `index`.
    private mutating func hex4() throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek else { throw fail(.unexpectedEnd) }
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail(.invalidUnicodeEscape)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
