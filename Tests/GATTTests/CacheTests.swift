import ATT
import Bluetooth
import Synchronization
import Testing
import TestSupport

@testable import GATT

#if canImport(Glibc)
    import Glibc
#endif

/// The database cache: hit, miss, hash mismatch, trust policy, invalidation, corrupt files.
@Suite("GATT database cache")
struct CacheTests {
    static let peer = GATTPeerIdentity(address: BluetoothAddress("F4:6C:0E:12:34:56")!, addressType: .random)
    static let hashA: [UInt8] = Array(0..<16)
    static let hashB: [UInt8] = Array(16..<32)

    /// A fresh directory under /tmp; the caller removes it (`removeTree`).
    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/gattclient-cache-test-XXXXXX".utf8CString)
        guard let result = mkdtemp(&template) else { throw GATTError.cache(reason: "mkdtemp failed") }
        return String(cString: result)
    }

    static func writeFile(_ path: String, _ text: String) {
        guard let file = fopen(path, "wb") else { return }
        _ = Array(text.utf8).withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }

    static func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// GAP, GATT (Service Changed, and the Database Hash when `hash` is given), Battery.
    static func table(hash: [UInt8]?) -> [ClientTestServer.Attribute] {
        var gatt = [
            BumbleSensorTag.Spec(
                uuid: 0x2A05, properties: BumbleSensorTag.indicate, value: [0, 0, 0, 0],
                descriptors: [BumbleSensorTag.cccd()])
        ]
        if let hash {
            gatt.append(
                BumbleSensorTag.Spec(uuid: 0x2B2A, properties: BumbleSensorTag.read, value: hash, descriptors: []))
        }
        let services = BumbleSensorTag.services
        return BumbleSensorTag.attributes(services: [services[0], (0x1801, gatt), services[3]])
    }

    final class Messages: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger {
            Logger(label: "cache", minimumLevel: .debug) { [self] _, _, message in
                self.lines.withLock { $0.append(message) }
            }
        }
    }

    static func connect(
        hash: [UInt8]?, cache: GATTDatabaseCache, policy: GATTCachePolicy = .requireHash
    ) -> ClientServerPair {
        ClientServerPair(
            attributes: table(hash: hash),
            configuration: GATTClient.Configuration(
                watchesServiceChanged: false, cache: cache, peer: peer, cachePolicy: policy))
    }

    @Test func missThenHit() async throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let cache = GATTDatabaseCache(directory: directory)
        let first = Self.connect(hash: Self.hashA, cache: cache)
        let discovered = try await first.client.loadDatabase()
        #expect(await first.clientConnection.requestsSent > 2)
        #expect(Self.fileExists(cache.path(for: Self.peer)))
        #expect(cache.load(Self.peer) == GATTCacheEntry(database: discovered, databaseHash: Self.hashA))
        await first.client.close()

        // A new connection: Exchange MTU and the hash read, nothing else.
        let second = Self.connect(hash: Self.hashA, cache: cache)
        let loaded = try await second.client.loadDatabase()
        #expect(loaded == discovered)
        #expect(await second.clientConnection.requestsSent == 2)
        #expect(await second.client.databaseHash == Self.hashA)
        await second.client.close()
    }

    @Test func hashMismatchRediscovers() async throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let cache = GATTDatabaseCache(directory: directory)
        let first = Self.connect(hash: Self.hashA, cache: cache)
        _ = try await first.client.loadDatabase()
        await first.client.close()
        let second = Self.connect(hash: Self.hashB, cache: cache)
        _ = try await second.client.loadDatabase()
        #expect(await second.clientConnection.requestsSent > 2)
        #expect(cache.load(Self.peer)?.databaseHash == Self.hashB)
        await second.client.close()
    }

    /// Without a Database Hash nothing is reused unless the caller trusts the cache.
    @Test(arguments: [GATTCachePolicy.requireHash, .trust])
    func withoutHash(policy: GATTCachePolicy) async throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let cache = GATTDatabaseCache(directory: directory)
        let first = Self.connect(hash: nil, cache: cache, policy: policy)
        let discovered = try await first.client.loadDatabase()
        await first.client.close()
        #expect(cache.load(Self.peer)?.databaseHash == nil)
        let second = Self.connect(hash: nil, cache: cache, policy: policy)
        #expect(try await second.client.loadDatabase() == discovered)
        let requests = await second.clientConnection.requestsSent
        if policy == .trust {
            #expect(requests == 2)
        } else {
            #expect(requests > 2)
        }
        await second.client.close()
    }

    @Test func invalidation() async throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let cache = GATTDatabaseCache(directory: directory)
        let pair = Self.connect(hash: Self.hashA, cache: cache)
        _ = try await pair.client.loadDatabase()
        #expect(cache.load(Self.peer) != nil)
        try await pair.client.invalidateCache()
        #expect(cache.load(Self.peer) == nil)
        #expect(!Self.fileExists(cache.path(for: Self.peer)))
        #expect(await pair.client.database == nil)
        try cache.invalidate(Self.peer)  // nothing left: no error
        await pair.client.close()
    }

    /// Unusable files are ignored with a logged reason, and replaced by the next discovery.
    @Test(arguments: [
        ("{ not json", "ignoring cache file"),
        (
            #"{"format":"other","version":1,"address":"F4:6C:0E:12:34:56","addressType":"random","services":[]}"#,
            "is not ours"
        ),
        (
            #"{"format":"gattclient-database-cache","version":9,"address":"F4:6C:0E:12:34:56","addressType":"random","services":[]}"#,
            "version 9"
        ),
        (
            #"{"format":"gattclient-database-cache","version":1,"address":"00:11:22:33:44:55","addressType":"random","services":[]}"#,
            "file names"
        ),
        (
            #"{"format":"gattclient-database-cache","version":1,"address":"F4:6C:0E:12:34:56","addressType":"random","databaseHash":"zz","services":[]}"#,
            "databaseHash"
        ),
        (
            #"{"format":"gattclient-database-cache","version":1,"address":"F4:6C:0E:12:34:56","addressType":"random","services":[{"uuid":"1800","start":5,"end":1,"primary":true,"includes":[],"characteristics":[]}]}"#,
            "inconsistent"
        ),
        (
            #"{"format":"gattclient-database-cache","version":1,"address":"F4:6C:0E:12:34:56","addressType":"random","services":[{"uuid":"nope","start":1,"end":1,"primary":true,"includes":[],"characteristics":[]}]}"#,
            "invalid UUID"
        ),
    ])
    func corruptFile(content: String, reason: String) async throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let messages = Messages()
        let cache = GATTDatabaseCache(directory: directory, logger: messages.logger)
        Self.writeFile(cache.path(for: Self.peer), content)
        #expect(cache.load(Self.peer) == nil)
        let logged = messages.lines.withLock { $0 }
        #expect(logged.count == 1)
        #expect(logged.first?.contains(reason) == true, "\(logged)")
        // Discovery replaces it.
        let pair = Self.connect(hash: Self.hashA, cache: cache)
        let database = try await pair.client.loadDatabase()
        #expect(cache.load(Self.peer)?.database == database)
        await pair.client.close()
    }

    @Test func defaultDirectory() {
        #expect(
            GATTDatabaseCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"])
                == "/x/cache/gattclient")
        #expect(GATTDatabaseCache.defaultDirectory(environment: ["HOME": "/home/u"]) == "/home/u/.cache/gattclient")
        // A relative XDG_CACHE_HOME is invalid (XDG Base Directory spec) and ignored.
        #expect(
            GATTDatabaseCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "rel", "HOME": "/home/u"])
                == "/home/u/.cache/gattclient")
        #expect(Self.peer.fileStem == "F46C0E123456-random")
    }

    /// Service Changed drops the cached file and stores the rediscovered database with the
    /// new hash.
    @Test func serviceChangedUpdatesTheCache() async throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let cache = GATTDatabaseCache(directory: directory)
        let pair = ClientServerPair(
            attributes: Self.table(hash: Self.hashA),
            configuration: GATTClient.Configuration(cache: cache, peer: Self.peer))
        let before = try await pair.client.loadDatabase()
        let serviceChanged = try before.characteristic(uuid: 0x2A05)
        var changed = Self.table(hash: Self.hashB)
        // The Battery service gains nothing but its level value handle stays; drop its CCCD.
        let batteryCCCD = try before.characteristic(uuid: 0x2A19).clientConfigurationHandle
        changed.removeAll { $0.handle == batteryCCCD }
        if let index = changed.firstIndex(where: { $0.type == 0x2800 && $0.value == [0x0F, 0x18] }) {
            changed[index].groupEnd = (changed[index].groupEnd ?? 0) - 1
        }
        pair.server.replace(changed)
        let start = try #require(before.services.last?.startHandle)
        try await pair.serverConnection.indicate(
            HandleValueIndication(
                handle: serviceChanged.valueHandle, value: [UInt8(start & 0xFF), UInt8(start >> 8), 0xFF, 0xFF]))
        var changes = pair.client.databaseChanges.makeAsyncIterator()
        let change = try #require(await changes.next())
        #expect(try change.database.characteristic(uuid: 0x2A19).descriptors.isEmpty)
        let entry = try #require(cache.load(Self.peer))
        #expect(entry.databaseHash == Self.hashB)
        #expect(entry.database == change.database)
        await pair.client.close()
    }
}
