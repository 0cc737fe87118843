import SystemSupport
import ATT
import Bluetooth
import Testing

@testable import GATT
import TestSupport

/// The JSON database loader (the `databases` layout of the shared vectors) and its JSON reader.
@Suite("GATT server: JSON database loader", .cpuBound)
struct ServerLoaderTests {
    @Test("every database of the shared vectors loads and matches its flattened attributes")
    func sharedDatabases() throws {
        guard let bytes = ServerShared.vectorsFile() else {
            print("skipped: \(ServerShared.missingMessage)")
            return
        }
        let loaded = try DatabaseDescription.databases(vectorsJSON: bytes)
        let root = try JSONValue(parsing: bytes)
        guard case .object(let entries)? = root["databases"] else {
            Issue.record("no databases object")
            return
        }
        #expect(loaded.map(\.name) == entries.map(\.0))
        #expect(loaded.count >= 4)
        for ((name, database), (_, entry)) in zip(loaded, entries) {
            let flat = entry["attributes"]?.array ?? []
            #expect(database.attributes.count == flat.count, "\(name)")
            for (attribute, expected) in zip(database.attributes, flat) {
                #expect(Int(attribute.handle) == expected["handle"]?.int, "\(name)")
                #expect(
                    attribute.type == BluetoothUUID(expected["type"]?.string ?? ""), "\(name) 0x\(attribute.handle)")
                #expect(
                    Hex.encode(attribute.value).lowercased() == expected["value"]?.string,
                    "\(name) 0x\(attribute.handle)")
                #expect(
                    attribute.permissions == AttributePermissions(bitmask: expected["permissions"]?.int ?? -1),
                    "\(name)")
            }
            try database.model.validate()
        }
    }

    @Test("the loaded ts_small_db answers like its description: secondary at 0x0001, service at 0xFFFF")
    func smallDatabaseServes() throws {
        guard let bytes = ServerShared.vectorsFile() else {
            print("skipped: \(ServerShared.missingMessage)")
            return
        }
        let database = try #require(
            try DatabaseDescription.databases(vectorsJSON: bytes).first { $0.name == "ts_small_db" }?.database)
        var server = GATTServer(database: database)
        let client = server.connect()
        #expect(server.answer("10 0100 ffff 0028", from: client) == "1106" + "10f018f00018" + "ffffffff0a18")
        #expect(server.answer("10 0100 ffff 0128", from: client) == "1106" + "010010000a18")
        #expect(server.answer("08 0100 ffff 0228", from: client) == "0908" + "11f0010010000a18")
        // Handle 0x000A–0x000F are a gap inside the secondary service.
        #expect(server.answer("04 0a00 0f00", from: client) == "0104" + "0a000a")
        #expect(server.answer("0a 0a00", from: client) == "010a0a0001")
        #expect(server.answer("0a 15f0", from: client) == "0b09")
    }

    static let sample = """
        {"services": [
          {"uuid": "180d", "handle": 16, "end_handle": 32, "primary": true,
           "characteristics": [
             {"uuid": "2a37", "declaration_handle": 17, "value_handle": 18,
              "properties": ["read", "notify"], "permissions": ["readEncrypted"], "value": "0040",
              "descriptors": [{"handle": 19, "uuid": "2902", "permissions": ["read", "write"], "value": "0000"},
                              {"handle": 20, "uuid": "2901", "value": "48\\u00352"}]}]},
          {"uuid": "6e400001-b5a3-f393-e0a9-e50e24dcca9e",
           "includes": [{"included_service_handle": 16, "included_end_handle": 32, "included_uuid": "180d"}],
           "characteristics": [{"uuid": "6e400002-b5a3-f393-e0a9-e50e24dcca9e", "properties": 12}]}
        ]}
        """

    @Test("names for properties and permissions; missing handles assigned after the given ones")
    func namedFields() throws {
        let database = try DatabaseDescription.database(json: Array(Self.sample.utf8))
        #expect(database.attributes.map(\.handle) == [16, 17, 18, 19, 20, 33, 34, 35, 36])
        #expect(database.attribute(at: 17)?.value == [0x12, 0x12, 0x00, 0x37, 0x2A])
        #expect(database.attribute(at: 18)?.permissions == .readEncrypted)
        #expect(database.attribute(at: 19)?.isFixedLength == true)
        // "48\u00352" (an escaped "5"): the value is hex, so an escaped character inside it still decodes.
        #expect(database.attribute(at: 20)?.value == [0x48, 0x52])
        #expect(database.attribute(at: 20)?.permissions == .read)
        #expect(database.attribute(at: 34)?.value == [16, 0, 32, 0, 0x0D, 0x18])
        // 128-bit write characteristic: permissions derived from its properties (write).
        #expect(database.attribute(at: 36)?.permissions == .write)
        #expect(database.model.services.map(\.endHandle) == [32, 36])
    }

    @Test("default permissions: from the properties for values, read/write for a CCCD, read for others")
    func defaultPermissions() throws {
        let json = """
            [{"uuid": "180f", "characteristics": [{"uuid": "2a19", "properties": 18, "value": "64",
              "descriptors": [{"uuid": "2902"}, {"uuid": "2904", "value": "04000127010000"}]}]}]
            """
        let database = try DatabaseDescription.database(json: Array(json.utf8))
        #expect(database.attributes.map(\.permissions) == [.read, .read, .read, .readWrite, .read])
        #expect(database.attribute(at: 4)?.value == [0, 0])
        var server = GATTServer(database: database)
        let client = server.connect()
        #expect(server.answer("12 0400 0100", from: client) == "13")
        #expect(server.answer("12 0500 00", from: client) == "0112050003")
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        var json: String
        var path: String
        var testDescription: String { json }
    }

    static let bad: [Bad] = [
        Bad(json: "", path: ""),
        Bad(json: "{\"services\": 3}", path: "services"),
        Bad(json: "[{\"uuid\": \"18\"}]", path: "services[0].uuid"),
        Bad(json: "[{\"uuid\": \"1800\", \"handle\": 0}]", path: "services[0].handle"),
        Bad(json: "[{\"uuid\": \"1800\", \"handle\": 70000}]", path: "services[0].handle"),
        Bad(
            json:
                "[{\"uuid\": \"1800\", \"characteristics\": [{\"uuid\": \"2a00\", \"properties\": 2, \"value\": \"0g\"}]}]",
            path: "services[0].characteristics[0].value"),
        Bad(
            json: "[{\"uuid\": \"1800\", \"characteristics\": [{\"uuid\": \"2a00\", \"properties\": [\"fly\"]}]}]",
            path: "services[0].characteristics[0].properties"),
        Bad(
            json:
                "[{\"uuid\": \"1800\", \"characteristics\": [{\"uuid\": \"2a00\", \"properties\": 2, \"permissions\": 256}]}]",
            path: "services[0].characteristics[0].permissions"),
        Bad(json: "[{\"uuid\": \"1800\", \"includes\": [{\"handle\": 2}]}]", path: "services[0].includes[0]"),
        Bad(json: "[{\"uuid\": \"1800\", \"handle\": 5}, {\"uuid\": \"1801\", \"handle\": 4}]", path: "services"),
    ]

    @Test("bad descriptions name the field", arguments: bad)
    func badDescriptions(_ entry: Bad) {
        #expect(throws: DatabaseDescriptionError.self) {
            _ = try DatabaseDescription.database(json: Array(entry.json.utf8))
        }
        do {
            _ = try DatabaseDescription.database(json: Array(entry.json.utf8))
        } catch {
            #expect(error.path == entry.path)
        }
    }

    // MARK: JSON reader

    @Test("the JSON reader: values, escapes, numbers")
    func jsonValues() throws {
        let value = try JSONValue(
            parsing: Array(#" {"a": [1, -2.5e3, true, false, null], "s": "x\"\\\/\n\u00e9\ud83d\ude00"} "#.utf8))
        #expect(value["a"] == .array([.integer(1), .number(JSONNumber(text: "-2.5e3")!), .bool(true), .bool(false), .null]))
        #expect(value["s"]?.string == "x\"\\/\n\u{e9}\u{1F600}")
        #expect(value["a"]?.array?.first?.int == 1)
    }

    @Test(
        "the JSON reader refuses malformed text",
        arguments: [
            "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "\"abc", "\"\\x\"", "\"\u{01}\"", "tru", "[] []", "{\"a\":1,}",
            "\"\\ud83d\\u0041\"", String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
        ])
    func jsonMalformed(_ text: String) {
        #expect(throws: JSONError.self) { _ = try JSONValue(parsing: Array(text.utf8)) }
    }
}
