import Bluetooth
import Foundation
import Security
import SystemSupport
import Synchronization
import Testing
import TestSupport

@testable import BLE

/// The bond files: where they go, their shape, their mode, a damaged one.
@Suite("BLE: the bond store")
struct BondStoreTests {
    static func directory() -> String { NSTemporaryDirectory() + "bondstore-\(UInt64.random(in: 0...UInt64.max))" }

    static func bond(secureConnections: Bool = true) -> Bond {
        var result = PairingResult(
            method: .justWorks, secureConnections: secureConnections, authenticated: false, keySize: 16, bonded: true)
        result.peerLTK = LongTermKey(key: Array(0..<16), ediv: secureConnections ? 0 : 0x1234, rand: secureConnections ? 0 : 0x0102_0304_0506_0708)
        if !secureConnections { result.localLTK = LongTermKey(key: Array(16..<32), ediv: 7, rand: 9) }
        result.peerIRK = Array(repeating: 0xAA, count: 16)
        result.peerIdentity = IdentityAddressInformation(addressType: .public, address: BluetoothAddress("00:11:22:33:44:55")!)
        return Bond(
            result: result, local: PeerAddress(address: BluetoothAddress("00:1B:DC:E0:6B:01")!, type: .public),
            peer: PeerAddress(address: BluetoothAddress("F1:5E:C0:0E:00:01")!, type: .random), pairedAs: "central",
            created: "2026-12-02T04:00:00Z")
    }

    @Test func savedOnePerPeerMode0600AndReadBack() throws {
        let directory = Self.directory()
        defer { removeTree(directory) }
        let store = BondStore(directory: directory)
        let bond = Self.bond(secureConnections: false)
        try store.save(bond)
        let path = store.directory + "/00:1B:DC:E0:6B:01/00:11:22:33:44:55.json"
        let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        #expect(store.bonds(local: bond.local) == [bond])
        // Found by its identity, never by the address it paired on (another device may have paired
        // from that address); not for another controller.
        #expect(store.bond(local: bond.local, peer: PeerAddress("00:11:22:33:44:55")!) == bond)
        #expect(store.bond(local: bond.local, peer: PeerAddress("F1:5E:C0:0E:00:01/random")!) == nil)
        #expect(store.bonds(local: BluetoothAddress("00:1B:DC:E0:6B:02")!).isEmpty)
        let text = String(decoding: try FileSystem.readFile(atPath: path), as: UTF8.self)
        #expect(text.contains("\"peerLTK\""))
        #expect(text.contains("\"ltk\": \"000102030405060708090a0b0c0d0e0f\""), "PDU octet order: \(text)")
        #expect(text.contains("\"rand\": \"0807060504030201\""))
        #expect(text.contains("\"ediv\": 4660"))
        #expect(text.contains("\"pairedAs\": \"central\""))
        #expect(try store.remove(local: bond.local, peer: PeerAddress("00:11:22:33:44:55")!))
        #expect(store.bonds(local: bond.local).isEmpty)
        #expect(try !store.remove(local: bond.local, peer: PeerAddress("00:11:22:33:44:55")!))
    }

    @Test func secureConnectionsOmitsWhatIsAbsent() throws {
        let json = String(decoding: Self.bond().json.encoded(), as: UTF8.self)
        #expect(!json.contains("localLTK") && !json.contains("peerCSRK"))
        #expect(json.contains("\"secureConnections\":true"))
    }

    @Test func aDamagedFileIsReportedOnceAndIgnored() throws {
        let warnings = WarningLog()
        let directory = Self.directory()
        defer { removeTree(directory) }
        let store = BondStore(directory: directory, warning: { warnings.append($0) })
        let good = Self.bond()
        try store.save(good)
        let folder = store.directory + "/" + good.local.description
        try FileSystem.writeFileAtomically(Array("{\"local\": 1}".utf8), toPath: folder + "/AA:AA:AA:AA:AA:AA.json")
        #expect(store.bonds(local: good.local) == [good])
        #expect(store.bonds(local: good.local) == [good])
        #expect(warnings.lines.count == 1)
        #expect(warnings.lines.first?.contains("AA:AA:AA:AA:AA:AA.json") == true)
    }

    @Test func theDirectoryFollowsTheEnvironment() {
        #expect(BondStore.defaultDirectory(environment: ["GATTCLIENT_BONDS": "/x/bonds", "HOME": "/h"]) == "/x/bonds")
        #expect(BondStore.defaultDirectory(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"]) == "/s/gattclient/bonds")
        #expect(BondStore.defaultDirectory(environment: ["HOME": "/h"]) == "/h/.local/state/gattclient/bonds")
    }
}

final class WarningLog: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}
