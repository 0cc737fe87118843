@testable import BLE
import Bluetooth
import Foundation
import Security
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 37 item 17: `bonds` and `unpair` need no adapter — without `--transport` they list (or
/// remove from) the store of every local address, naming it; a bond directory that is a file
/// is an error, not "no bonds".
@Suite("gattclient bonds and unpair without an adapter")
struct BondsWithoutAdapterTests {
    static func run(_ arguments: [String]) async -> CapturedRun {
        await captureRun { out, err in runGATTClient(arguments, standardOutput: out, standardError: err) }
    }

    static func bond(local: String, identity: String, _ type: AddressType = .public) -> Bond {
        Bond(
            local: BluetoothAddress(local)!, localType: .public, peer: BluetoothAddress(identity)!, peerType: type,
            identity: BluetoothAddress(identity)!, identityType: type, peerLTK: LongTermKey(key: Array(repeating: 9, count: 16)),
            localLTK: nil, keySize: 16, authenticated: false, secureConnections: true, peerIRK: nil, peerCSRK: nil, localIRK: nil,
            localCSRK: nil, pairedAs: "central", created: "2026-12-07T00:00:00Z")
    }

    @Test("bonds lists every local address's bonds; unpair removes by address, the type found when it is one device")
    func listAndRemove() async throws {
        let directory = NSTemporaryDirectory() + "bonds-noadapter-\(UInt64.random(in: 0...UInt64.max))"
        defer { removeTree(directory) }
        let store = BondStore(directory: directory)
        try store.save(Self.bond(local: "00:1B:DC:E0:6B:01", identity: "C0:11:22:33:44:55"))
        try store.save(Self.bond(local: "00:1B:DC:E0:6B:02", identity: "C0:11:22:33:44:66", .random))

        let listed = await Self.run(["--bonds", directory, "bonds"])
        #expect(listed.code == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("00:1B:DC:E0:6B:01: C0:11:22:33:44:55 (public)"), "\(listed.stdout)")
        #expect(listed.stdout.contains("00:1B:DC:E0:6B:02: C0:11:22:33:44:66 (random)"), "\(listed.stdout)")
        let json = await Self.run(["--bonds", directory, "--json", "bonds"])
        #expect(json.stdout.split(separator: "\n").filter { $0.contains("\"kind\":\"bond\"") }.count == 2, "\(json.stdout)")

        // Typed without /random: one device has those bits, so it is that one.
        let removed = await Self.run(["--bonds", directory, "unpair", "C0:11:22:33:44:66"])
        #expect(removed.code == 0, "\(removed.stderr)")
        #expect(removed.stdout.contains("forgot the bond with C0:11:22:33:44:66 (random) on 00:1B:DC:E0:6B:02"), "\(removed.stdout)")
        #expect(removed.stdout.contains("the store only"), "the kernel's keys are not touched, and it says so")
        #expect(store.bonds(local: BluetoothAddress("00:1B:DC:E0:6B:02")!).isEmpty)
        let missing = await Self.run(["--bonds", directory, "unpair", "C0:11:22:33:44:66"])
        #expect(missing.code == 1 && missing.stderr.contains("no bond with C0:11:22:33:44:66"), "\(missing.stderr)")

        // Public and random with the same bits are two devices: the address as typed (public)
        // names the public one.
        try store.save(Self.bond(local: "00:1B:DC:E0:6B:01", identity: "C0:11:22:33:44:55", .random))
        let typed = await Self.run(["--bonds", directory, "unpair", "C0:11:22:33:44:55"])
        #expect(typed.code == 0, "\(typed.stderr)")
        #expect(store.bonds(local: BluetoothAddress("00:1B:DC:E0:6B:01")!).map(\.identityType) == [.random])
        // One random device bonded on two local adapters: which one is asked, not guessed.
        try store.save(Self.bond(local: "00:1B:DC:E0:6B:02", identity: "C0:11:22:33:44:55", .random))
        let ambiguous = await Self.run(["--bonds", directory, "unpair", "C0:11:22:33:44:55"])
        #expect(ambiguous.code == 64, "\(ambiguous.stderr)")
        #expect(ambiguous.stderr.contains("00:1B:DC:E0:6B:01") && ambiguous.stderr.contains("00:1B:DC:E0:6B:02"), "\(ambiguous.stderr)")
        #expect(store.bonds(local: BluetoothAddress("00:1B:DC:E0:6B:01")!).count == 1)
    }

    @Test("unpair by the resolvable private address a bonded IRK resolves")
    func unpairByPrivateAddress() async throws {
        let directory = NSTemporaryDirectory() + "bonds-rpa-\(UInt64.random(in: 0...UInt64.max))"
        defer { removeTree(directory) }
        var bond = Self.bond(local: "00:1B:DC:E0:6B:01", identity: "C0:11:22:33:44:77", .random)
        let irk: [UInt8] = (0..<16).map { UInt8(0x30 + $0) }
        bond.peerIRK = irk
        try BondStore(directory: directory).save(bond)
        let prand: [UInt8] = [0x5A, 0x01, 0x02]
        let hash = try SecurityFunctions.ah(Array(irk.reversed()), prand)
        let rpa = BluetoothAddress(rawValue: (prand + hash).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })!
        let removed = await Self.run(["--bonds", directory, "unpair", rpa.description + "/random"])
        #expect(removed.code == 0, "\(removed.stderr)")
        #expect(removed.stdout.contains("forgot the bond with C0:11:22:33:44:77 (random)"), "\(removed.stdout)")
    }

    @Test("a bond directory that is a file is an error, not \"no bonds\"")
    func directoryIsAFile() async throws {
        let path = NSTemporaryDirectory() + "bonds-file-\(UInt64.random(in: 0...UInt64.max))"
        defer { removeTree(path) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        let listed = await Self.run(["--bonds", path, "bonds"])
        #expect(listed.code == 1, "\(listed.stdout) \(listed.stderr)")
        #expect(listed.stderr.contains("is not a directory"), "\(listed.stderr)")
        let removed = await Self.run(["--bonds", path, "unpair", "00:11:22:33:44:55"])
        #expect(removed.code == 1 && removed.stderr.contains("is not a directory"), "\(removed.stderr)")
    }
}
