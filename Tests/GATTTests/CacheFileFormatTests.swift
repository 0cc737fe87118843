import SystemSupport
import Bluetooth
import Synchronization
import Testing
import TestSupport

@testable import GATT

#if canImport(Glibc)
    import Glibc
#endif

/// The cache file itself (no discovery): written and read back, the former `JSONEncoder`
/// layout still read, damaged files refused with their reason, atomic replacement.
@Suite("GATT cache file format")
struct GATTCacheFileFormatTests {
    static let peer = GATTPeerIdentity(address: BluetoothAddress("F4:6C:0E:12:34:56")!, addressType: .random)

    /// GAP (two characteristics), a secondary service, and Battery including it (with and
    /// without a UUID), its level with a CCCD, and a 128-bit vendor characteristic.
    static let database = GATTDatabase(services: [
        Service(
            uuid: 0x1800, startHandle: 1, endHandle: 5,
            characteristics: [
                Characteristic(uuid: 0x2A00, declarationHandle: 2, valueHandle: 3, properties: [.read]),
                Characteristic(uuid: 0x2A01, declarationHandle: 4, valueHandle: 5, properties: [.read]),
            ]),
        Service(uuid: 0x180A, startHandle: 6, endHandle: 8, isPrimary: false, characteristics: [
            Characteristic(uuid: 0x2A29, declarationHandle: 7, valueHandle: 8, properties: [.read])
        ]),
        Service(
            uuid: 0x180F, startHandle: 9, endHandle: 0xFFFF,
            includes: [
                IncludedService(handle: 10, startHandle: 6, endHandle: 8, uuid: 0x180A),
                IncludedService(handle: 11, startHandle: 6, endHandle: 8, uuid: nil),
            ],
            characteristics: [
                Characteristic(
                    uuid: 0x2A19, declarationHandle: 12, valueHandle: 13, properties: [.read, .notify],
                    descriptors: [Descriptor(handle: 14, uuid: 0x2902)]),
                Characteristic(
                    uuid: BluetoothUUID("F000AA01-0451-4000-B000-000000000000")!, declarationHandle: 15,
                    valueHandle: 16, endHandle: 0xFFFF, properties: [.read, .write]),
            ]),
    ])

    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/gattclient-cachefile-test-XXXXXX".utf8CString)
        guard let result = mkdtemp(&template) else { throw GATTError.cache(reason: "mkdtemp failed") }
        return String(cString: result)
    }

    final class Messages: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger {
            Logger(label: "cache", minimumLevel: .debug) { [self] _, _, message in
                self.lines.withLock { $0.append(message) }
            }
        }
    }

    @Test(arguments: [nil, Array(0..<16)] as [[UInt8]?])
    func roundTrip(hash: [UInt8]?) throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let cache = GATTDatabaseCache(directory: directory + "/a/b")  // created on store
        let entry = GATTCacheEntry(database: Self.database, databaseHash: hash)
        try cache.store(entry, for: Self.peer)
        #expect(cache.load(Self.peer) == entry)
        // Another peer's file name: nothing.
        #expect(cache.load(GATTPeerIdentity(address: Self.peer.address, addressType: .public)) == nil)
        // The text follows the documented layout, readable by any JSON reader.
        let text = try FileSystem.readFile(atPath: cache.path(for: Self.peer))
        let root = try JSONValue(parsing: text)
        #expect(root["format"]?.string == "gattclient-database-cache")
        #expect(root["version"]?.int == 1)
        #expect(root["address"]?.string == "F4:6C:0E:12:34:56")
        #expect(root["addressType"]?.string == "random")
        #expect(root["databaseHash"]?.string == hash.map { Hex.encode($0) })
        #expect(root["services"]?.array?.count == 3)
        #expect(root["services"]?.array?[2]["includes"]?.array?[1].members?.map(\.0) == ["end", "handle", "start"])
        #expect(text.last == 0x0A)
    }

    /// A file as the Foundation version wrote it (`JSONEncoder`, `.prettyPrinted` and
    /// `.sortedKeys`: `"key" : value`, optionals omitted, `/` escaped) still loads.
    @Test func oldEncoderFileLoads() throws {
        let old = #"""
            {
              "address" : "F4:6C:0E:12:34:56",
              "addressType" : "random",
              "databaseHash" : "000102030405060708090a0b0c0d0e0f",
              "format" : "gattclient-database-cache",
              "services" : [
                {
                  "characteristics" : [
                    {
                      "declarationHandle" : 2,
                      "descriptors" : [

                      ],
                      "endHandle" : 3,
                      "properties" : 2,
                      "uuid" : "2A00",
                      "valueHandle" : 3
                    },
                    {
                      "declarationHandle" : 4,
                      "descriptors" : [

                      ],
                      "endHandle" : 5,
                      "properties" : 2,
                      "uuid" : "2A01",
                      "valueHandle" : 5
                    }
                  ],
                  "end" : 5,
                  "includes" : [

                  ],
                  "primary" : true,
                  "start" : 1,
                  "uuid" : "1800"
                },
                {
                  "characteristics" : [
                    {
                      "declarationHandle" : 7,
                      "descriptors" : [

                      ],
                      "endHandle" : 8,
                      "properties" : 2,
                      "uuid" : "2A29",
                      "valueHandle" : 8
                    }
                  ],
                  "end" : 8,
                  "includes" : [

                  ],
                  "primary" : false,
                  "start" : 6,
                  "uuid" : "180A"
                },
                {
                  "characteristics" : [
                    {
                      "declarationHandle" : 12,
                      "descriptors" : [
                        {
                          "handle" : 14,
                          "uuid" : "2902"
                        }
                      ],
                      "endHandle" : 14,
                      "properties" : 18,
                      "uuid" : "2A19",
                      "valueHandle" : 13
                    },
                    {
                      "declarationHandle" : 15,
                      "descriptors" : [

                      ],
                      "endHandle" : 65535,
                      "properties" : 10,
                      "uuid" : "F000AA01-0451-4000-B000-000000000000",
                      "valueHandle" : 16
                    }
                  ],
                  "end" : 65535,
                  "includes" : [
                    {
                      "end" : 8,
                      "handle" : 10,
                      "start" : 6,
                      "uuid" : "180A"
                    },
                    {
                      "end" : 8,
                      "handle" : 11,
                      "start" : 6
                    }
                  ],
                  "primary" : true,
                  "start" : 9,
                  "uuid" : "180F"
                }
              ],
              "version" : 1
            }
            """#
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let messages = Messages()
        let cache = GATTDatabaseCache(directory: directory, logger: messages.logger)
        try FileSystem.writeFileAtomically(Array(old.utf8), toPath: cache.path(for: Self.peer))
        #expect(cache.load(Self.peer) == GATTCacheEntry(database: Self.database, databaseHash: Array(0..<16)))
        #expect(messages.lines.withLock { $0 } == [])
        // `\/` escapes (JSONEncoder's default) and an explicit null read as JSONDecoder read them.
        let escaped = #"{"format":"gattclient-database-cache","version":1,"address":"F4:6C:0E:12:34:56","addressType":"random","databaseHash":null,"services":[],"note":"a\/b"}"#
        try FileSystem.writeFileAtomically(Array(escaped.utf8), toPath: cache.path(for: Self.peer))
        #expect(cache.load(Self.peer) == GATTCacheEntry(database: GATTDatabase(services: []), databaseHash: nil))
    }

    static let header = #""format":"gattclient-database-cache","version":1,"address":"F4:6C:0E:12:34:56","addressType":"random""#

    /// Damaged files: nil, and one warning naming the file and the reason.
    @Test(arguments: [
        ("", "unexpected end of text at offset 0"),
        ("{\(header),\"services\":[]} x", "characters after the value at offset"),
        ("{\(header),\(header),\"services\":[]}", "appears twice"),
        ("[1]", "the file is not an object"),
        ("{\(header)}", "services is missing"),
        ("{\(header),\"services\":{}}", "services is not an array"),
        ("{\(header),\"services\":[7]}", "services[0] is not an object"),
        (#"{"format":"gattclient-database-cache","version":"1","address":"F4:6C:0E:12:34:56","addressType":"random","services":[]}"#,
         "version is not an integer"),
        ("{\(header),\"services\":[{\"uuid\":\"1800\",\"start\":1,\"end\":70000,\"primary\":true,\"includes\":[],\"characteristics\":[]}]}",
         "services[0].end is not an integer from 0 to 65535"),
        ("{\(header),\"services\":[{\"uuid\":\"1800\",\"start\":1.0,\"end\":5,\"primary\":true,\"includes\":[],\"characteristics\":[]}]}",
         "services[0].start is not an integer"),
        ("{\(header),\"services\":[{\"uuid\":\"1800\",\"start\":1,\"end\":5,\"primary\":1,\"includes\":[],\"characteristics\":[]}]}",
         "services[0].primary is not true or false"),
        ("{\(header),\"services\":[{\"uuid\":\"1800\",\"start\":1,\"end\":5,\"primary\":true,\"includes\":[],\"characteristics\":[{\"uuid\":\"2A00\",\"declarationHandle\":2,\"valueHandle\":3,\"endHandle\":3,\"properties\":256,\"descriptors\":[]}]}]}",
         "services[0].characteristics[0].properties is not an integer from 0 to 255"),
        ("{\(header),\"services\":[{\"uuid\":\"1800\",\"start\":1,\"end\":5,\"primary\":true,\"includes\":[{\"handle\":2,\"start\":6,\"end\":8,\"uuid\":7}],\"characteristics\":[]}]}",
         "services[0].includes[0].uuid is not a string"),
        ("{\(header),\"services\":[{\"uuid\":\"1800\",\"start\":1,\"end\":5,\"primary\":true,\"includes\":[],\"characteristics\":[{\"uuid\":\"2A00\",\"declarationHandle\":2,\"valueHandle\":3,\"endHandle\":3,\"properties\":2,\"descriptors\":[{\"handle\":4}]}]}]}",
         "services[0].characteristics[0].descriptors[0].uuid is missing"),
    ])
    func damagedFile(content: String, reason: String) throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let messages = Messages()
        let cache = GATTDatabaseCache(directory: directory, logger: messages.logger)
        let path = cache.path(for: Self.peer)
        try FileSystem.writeFileAtomically(Array(content.utf8), toPath: path)
        #expect(cache.load(Self.peer) == nil)
        let logged = messages.lines.withLock { $0 }
        #expect(logged.count == 1)
        #expect(logged.first?.hasPrefix("ignoring cache file \(path): ") == true, "\(logged)")
        #expect(logged.first?.contains(reason) == true, "\(logged)")
    }

    @Test func invalidUTF8IsRefused() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let messages = Messages()
        let cache = GATTDatabaseCache(directory: directory, logger: messages.logger)
        let bytes = Array("{\(Self.header),\"services\":[],\"x\":\"".utf8) + [0xC0, 0xAF] + Array("\"}".utf8)
        try FileSystem.writeFileAtomically(bytes, toPath: cache.path(for: Self.peer))
        #expect(cache.load(Self.peer) == nil)
        #expect(messages.lines.withLock { $0 }.first?.contains("invalid UTF-8") == true)
    }

    /// No file: a quiet miss. A directory in its place: a miss with a warning.
    @Test func missingAndUnreadable() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let messages = Messages()
        let cache = GATTDatabaseCache(directory: directory, logger: messages.logger)
        #expect(cache.load(Self.peer) == nil)
        #expect(messages.lines.withLock { $0 } == [])
        try FileSystem.createDirectory(atPath: cache.path(for: Self.peer))
        #expect(cache.load(Self.peer) == nil)
        let logged = messages.lines.withLock { $0 }
        #expect(logged.count == 1)
        #expect(logged.first?.contains("Is a directory") == true, "\(logged)")
    }

    /// Stores replace the file through a temporary one in the same directory and leave
    /// nothing else behind; a store that cannot write leaves no temporary file either.
    @Test func atomicStoreLeavesNoTemporaryFile() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let cache = GATTDatabaseCache(directory: directory)
        let first = GATTCacheEntry(database: Self.database, databaseHash: Array(0..<16))
        try cache.store(first, for: Self.peer)
        let second = GATTCacheEntry(database: GATTDatabase(services: [Self.database.services[0]]), databaseHash: nil)
        try cache.store(second, for: Self.peer)
        #expect(try FileSystem.contentsOfDirectory(atPath: directory) == ["F46C0E123456-random.json"])
        #expect(cache.load(Self.peer) == second)

        // The cache file's place is a directory: rename fails, the temporary file goes.
        let other = GATTPeerIdentity(address: BluetoothAddress("00:11:22:33:44:55")!, addressType: .public)
        try FileSystem.createDirectory(atPath: cache.path(for: other))
        #expect(throws: GATTError.self) { try cache.store(first, for: other) }
        #expect(
            try FileSystem.contentsOfDirectory(atPath: directory).sorted()
                == ["001122334455-public.json", "F46C0E123456-random.json"])

        // The directory cannot be made (a file is in the way): a GATTError naming the file.
        let blocked = GATTDatabaseCache(directory: cache.path(for: Self.peer) + "/sub")
        do {
            try blocked.store(first, for: Self.peer)
            Issue.record("store through a file succeeded")
        } catch {
            #expect("\(error)".contains("Not a directory"), "\(error)")
        }
    }

    @Test func invalidateRemovesTheFile() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let cache = GATTDatabaseCache(directory: directory)
        try cache.store(GATTCacheEntry(database: Self.database, databaseHash: nil), for: Self.peer)
        try cache.invalidate(Self.peer)
        #expect(try FileSystem.contentsOfDirectory(atPath: directory) == [])
        try cache.invalidate(Self.peer)
    }

    @Test func defaultDirectoryFromTheProcessEnvironment() {
        // Whatever this process's environment says, the answer ends in gattclient and is absolute
        // unless neither XDG_CACHE_HOME, HOME nor the password database has anything.
        let directory = GATTDatabaseCache.defaultDirectory()
        #expect(directory.hasSuffix("/gattclient"))
        if let xdg = ProcessEnvironment.value("XDG_CACHE_HOME"), xdg.hasPrefix("/") {
            #expect(directory == xdg + "/gattclient")
        } else if let home = ProcessEnvironment.value("HOME"), !home.isEmpty {
            #expect(directory == home + "/.cache/gattclient")
        }
        // No HOME in the given environment: the password database's home of this user.
        if let home = ProcessEnvironment.passwordDatabaseHome(uid: getuid()) {
            #expect(GATTDatabaseCache.defaultDirectory(environment: [:]) == home + "/.cache/gattclient")
        }
    }
}
