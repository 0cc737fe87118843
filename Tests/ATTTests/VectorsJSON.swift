import SystemSupport
import Bluetooth
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A JSON tree and file access for the shared-vector tests, without Foundation:
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

    /// The reader's complaint (offset and reason).
    struct ParseError: Error, CustomStringConvertible {
        let underlying: JSONError
        var offset: Int { underlying.offset }
        var description: String { underlying.description }
    }

    /// Parses one JSON document (whitespace around it allowed) with the package's strict reader
    /// (`SystemSupport.JSONValue`), as this simpler tree: objects as dictionaries, numbers as
    /// doubles, which is what the vector comparisons use.
    static func parse<C: Collection>(_ bytes: C) throws -> JSONValue where C.Element == UInt8 {
        do {
            return JSONValue(try SystemSupport.JSONValue(parsing: Array(bytes)))
        } catch {
            throw ParseError(underlying: error)
        }
    }

    init(_ value: SystemSupport.JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .number(let number): self = .number(number.double ?? .nan)
        case .string(let text): self = .string(text)
        case .array(let elements): self = .array(elements.map(JSONValue.init))
        case .object(let members):
            // Names are unique: the reader rejects a repeated one.
            self = .object(Dictionary(members.map { ($0.0, JSONValue($0.1)) }, uniquingKeysWith: { _, last in last }))
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
