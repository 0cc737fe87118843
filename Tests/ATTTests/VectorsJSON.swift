import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small JSON reader and file access for the shared-vector tests, without Foundation:
/// importing Foundation into the ATTTests module makes its member overloads visible to every
/// test file of the module and pushes some `#expect` expressions in other suites past the type
/// checker's limits.
indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    var string: String? { if case .string(let s) = self { return s }; return nil }
    var bool: Bool? { if case .bool(let b) = self { return b }; return nil }
    var array: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
    var object: [String: JSONValue]? { if case .object(let o) = self { return o }; return nil }
    var int: Int? {
        if case .number(let d) = self, d.rounded() == d, abs(d) < 1e15 { return Int(d) }
        return nil
    }
    var isNull: Bool { self == .null }

    struct ParseError: Error, CustomStringConvertible {
        let offset: Int
        let message: String
        var description: String { "JSON: \(message) at offset \(offset)" }
    }

    /// Parses one JSON document (whitespace around it allowed).
    static func parse<C: Collection>(_ bytes: C) throws -> JSONValue where C.Element == UInt8 {
        var parser = Parser(bytes: Array(bytes))
        let value = try parser.value()
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw ParseError(offset: parser.index, message: "trailing data") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        func fail(_ message: String) -> ParseError { ParseError(offset: index, message: message) }

        mutating func expect(_ literal: String, _ value: JSONValue) throws -> JSONValue {
            let utf8 = Array(literal.utf8)
            guard index + utf8.count <= bytes.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
                throw fail("expected \(literal)")
            }
            index += utf8.count
            return value
        }

        mutating func value() throws -> JSONValue {
            skipSpace()
            guard index < bytes.count else { throw fail("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object()
            case UInt8(ascii: "["): return try array()
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try expect("true", .bool(true))
            case UInt8(ascii: "f"): return try expect("false", .bool(false))
            case UInt8(ascii: "n"): return try expect("null", .null)
            default: return try number()
            }
        }

        mutating func object() throws -> JSONValue {
            index += 1
            var members: [String: JSONValue] = [:]
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected key") }
                let key = try string()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected :") }
                index += 1
                members[key] = try value()
                skipSpace()
                guard index < bytes.count else { throw fail("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                throw fail("expected , or }")
            }
        }

        mutating func array() throws -> JSONValue {
            index += 1
            var elements: [JSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            while true {
                elements.append(try value())
                skipSpace()
                guard index < bytes.count else { throw fail("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
                throw fail("expected , or ]")
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
            else { throw fail("bad \\u escape") }
            index += 4
            return v
        }

        mutating func string() throws -> String {
            index += 1
            var out: [UInt8] = []
            while true {
                guard index < bytes.count else { throw fail("unterminated string") }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw fail("unterminated escape") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar), index + 6 <= bytes.count,
                           bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                            index += 2
                            let low = try hex4()
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        out.append(contentsOf: String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8)
                    default: throw fail("bad escape")
                    }
                default:
                    out.append(byte)
                }
            }
        }

        mutating func number() throws -> JSONValue {
            let start = index
            while index < bytes.count, "+-0123456789.eE".utf8.contains(bytes[index]) { index += 1 }
            guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else {
                throw fail("bad number")
            }
            return .number(value)
        }
    }
}

/// File access for tests, without Foundation.
enum TestFiles {
    /// `<package root>/../shared/<relative>`, from this file's path.
    static func sharedPath(_ relative: String, filePath: String = #filePath) -> String {
        var parts = filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // VectorsJSON.swift, ATTTests, Tests
        parts.removeLast()  // the package directory
        return parts.joined(separator: "/") + "/shared/" + relative
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The whole file, or `nil` when it cannot be opened.
    static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        return drain(file)
    }

    /// The output of `gzip -dc PATH` (paths with a single quote are refused).
    static func gunzip(_ path: String) -> [UInt8]? {
        guard !path.contains("'"), let pipe = popen("/usr/bin/gzip -dc '\(path)'", "r") else { return nil }
        let bytes = drain(pipe)
        return pclose(pipe) == 0 ? bytes : nil
    }

    private static func drain(_ file: UnsafeMutablePointer<FILE>) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count <= 0 { break }
            out.append(contentsOf: buffer[0..<count])
        }
        return out
    }

    /// Names in a directory.
    static func list(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}

@Suite("ATT vectors: JSON reader")
struct ATTVectorsJSONTests {
    @Test("parses the shapes the vector files use")
    func parse() throws {
        let text = #"{"a": [1, -2.5, true, false, null], "b": {"c": "x\"y\\z\u00e9\n"}, "d": []}"#
        let value = try JSONValue.parse(Array(text.utf8))
        #expect(value["a"]?.array?.count == 5)
        #expect(value["a"]?.array?[0].int == 1)
        #expect(value["a"]?.array?[1] == .number(-2.5))
        #expect(value["a"]?.array?[4].isNull == true)
        #expect(value["b"]?["c"]?.string == "x\"y\\z\u{e9}\n")
        #expect(value["d"] == .array([]))
    }

    @Test("rejects broken documents", arguments: [#"{"a": }"#, #"[1, 2"#, #""abc"#, "{} x", "tru"])
    func reject(_ text: String) {
        #expect(throws: JSONValue.ParseError.self) { try JSONValue.parse(Array(text.utf8)) }
    }
}
