import BLE
import Bluetooth
import Foundation
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 19 items 2 and 3: a bare address connects with the type a scan saw (cached between
/// runs), else either type; a connect that times out with the other type than the one a scan
/// saw says so; on a terminal, a connect without progress says what it waits for.
@Suite("gattclient: automatic address types", .serialized, .timeLimit(.minutes(2)))
struct AddressTypeTests {
    static let board = "E8:7F:3A:21:9C:05"  // the simulated Bluefruit: a random address

    @Test func theCacheKeepsTheNewestTypes() throws {
        let directory = NSTemporaryDirectory() + "address-cache-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = AddressTypeCache(directory: directory)
        let a = BluetoothAddress("E8:7F:3A:21:9C:05")!, b = BluetoothAddress("54:6C:0E:9A:3B:01")!
        #expect(cache.type(of: a) == nil)
        try cache.record([a: .random, b: .public], seen: 100)
        try cache.record([a: .public], seen: 200)
        #expect(cache.type(of: a) == .public && cache.type(of: b) == .public)
        #expect(cache.entries()[b]?.seen == 100)
        // Damaged lines are skipped.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "nonsense\nE8:7F:3A:21:9C:05 sideways 5\n54:6C:0E:9A:3B:01 random 300\n".write(
            toFile: cache.path, atomically: true, encoding: .utf8)
        #expect(cache.entries().count == 1 && cache.type(of: b) == .random)
        #expect(AddressTypeCache.defaultDirectory(environment: ["GATTCLIENT_CACHE": "/c"]) == "/c")
        #expect(AddressTypeCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "/x", "HOME": "/h"]) == "/x/gattclient")
        #expect(AddressTypeCache.defaultDirectory(environment: ["HOME": "/h"]) == "/h/.cache/gattclient")
    }

    @Test func aBareAddressFindsItsType() async throws {
        // No scan needed: either type (the user-space host's Filter Accept List holds both).
        let bare = await runInProcess(["--no-cache", "--transport", "sim", "read", Self.board, "2A00"])
        #expect(bare.code == 0, "\(bare.stderr)")
        #expect(bare.stdout.contains("Adafruit Bluefruit LE"))
        #expect(try parse(["read", Self.board, "2A00"]).options.automaticAddressType)
        #expect(try !parse(["read", Self.board + "/random", "2A00"]).options.automaticAddressType)
        #expect(try !parse(["read", Self.board, "2A00", "--random"]).options.automaticAddressType)
        // A scan fills the cache; then the cached type is used at once.
        let scan = await runInProcess(["--transport", "sim", "scan", "--duration", "1"])
        #expect(scan.code == 0)
        let cache = AddressTypeCache(directory: testCacheDirectory)
        #expect(cache.type(of: BluetoothAddress(Self.board)!) == .random)
        let cached = await runInProcess(["--transport", "sim", "read", Self.board, "2A00"])
        #expect(cached.code == 0, "\(cached.stderr)")
        // The wrong type given: the timeout says which type a scan saw.
        let wrong = await runInProcess(["--timeout", "2", "--transport", "sim", "read", Self.board + "/public", "2A00"])
        #expect(wrong.code == 1)
        #expect(wrong.stderr.contains("did you mean \(Self.board)/random? (a scan saw it as a random address)"), "\(wrong.stderr)")
        let uncached = await runInProcess(["--no-cache", "--timeout", "2", "--transport", "sim", "read", Self.board + "/public", "2A00"])
        #expect(!uncached.stderr.contains("did you mean"), "--no-cache reads nothing: \(uncached.stderr)")
    }

    @Test func aConnectWithoutProgressSaysSoOnATerminal() async {
        let terminal = await TerminalAndFailureTests.runOnTerminal(
            ["--timeout", "2.5", "--transport", "sim", "read", "C0:00:00:00:00:09/random", "2A00"], standardErrorToo: true)
        #expect(terminal.code == 1)
        #expect(terminal.screen.contains("gattclient: connecting to C0:00:00:00:00:09 (random)…"), "\(terminal.screen)")
        let piped = await runInProcess(["--timeout", "2.5", "--transport", "sim", "read", "C0:00:00:00:00:09/random", "2A00"])
        #expect(!piped.stderr.contains("connecting to C0:00:00:00:00:09 (random)…"), "not on a pipe: \(piped.stderr)")
    }
}
