import Bluetooth
import Foundation
import Kernel
import Security
import SystemSupport
import Testing

@testable import BLE

/// The kernel path's key keeping, without a kernel: the keys its events report become the bond
/// the user-space path would store, and a stored bond becomes the keys Load Long Term Keys and
/// Load Identity Resolving Keys take.
@Suite("BLE: kernel pairing keys (management channel)")
struct KernelPairingTests {
    static let local = PeerAddress(address: BluetoothAddress("00:1B:DC:E0:6B:01")!, type: .public)
    static let identity = ManagementAddress(address: BluetoothAddress("C0:00:00:00:00:01")!, type: 0x01)
    static let rpa = BluetoothAddress("41:02:03:04:05:06")!
    static let ltk = Array(UInt8(0)..<16)
    static let irk = Array(UInt8(0xA0)..<0xB0)

    static func key(_ type: ManagementLongTermKey.KeyType, central: Bool, value: [UInt8] = ltk, size: UInt8 = 16) -> ManagementLongTermKey {
        ManagementLongTermKey(
            peer: identity, keyType: type, central: central, encryptionSize: size, ediv: type.isSecureConnections ? 0 : 0x1234,
            rand: type.isSecureConnections ? 0 : 0x0102_0304_0506_0708, value: value)
    }

    @Test("Secure Connections: the IRK, then one LTK, make a bond with the identity and the link's RPA")
    func secureConnectionsBond() throws {
        var collector = KernelKeyCollector(local: Self.local)
        let irkEvent = collector.receive(.newIdentityResolvingKey(storeHint: true, randomAddress: Self.rpa, key: .init(peer: Self.identity, value: Self.irk)))
        #expect(irkEvent == nil)
        let csrkEvent = collector.receive(.newSignatureResolvingKey(storeHint: true, peer: Self.identity, type: 0x03, value: Array(repeating: 7, count: 16)))
        #expect(csrkEvent == nil)
        let gotReceived = collector.receive(.newLongTermKey(storeHint: true, key: Self.key(.authenticatedP256, central: false)), created: "T")
        let got = try #require(gotReceived)
        #expect(got.persistent)
        let bond = got.bond
        #expect(bond.local == Self.local.address)
        #expect(bond.identity == Self.identity.address && bond.identityType == .public)
        #expect(bond.peer == Self.rpa && bond.peerType == .random)
        #expect(bond.peerLTK == LongTermKey(key: Self.ltk))
        #expect(bond.localLTK == nil)
        #expect(bond.secureConnections && bond.authenticated && bond.keySize == 16)
        #expect(bond.peerIRK == Self.irk)
        #expect(bond.peerCSRK == Array(repeating: 7, count: 16))
        #expect(bond.securityLevel == .secureConnections)
        #expect(collector.bond(for: Self.rpa, created: "T") == bond)
        #expect(collector.bond(for: Self.identity.address, created: "T") == bond)
    }

    @Test("legacy: ours and theirs by the Central flag; a key of a kind already held starts a new pairing")
    func legacyAndNewPairing() throws {
        var collector = KernelKeyCollector(local: Self.local)
        let ours = Array(UInt8(16)..<32)
        let firstReceived = collector.receive(.newLongTermKey(storeHint: true, key: Self.key(.unauthenticated, central: false, value: ours, size: 7)))
        let first = try #require(firstReceived)
        #expect(first.bond.localLTK?.key == ours && first.bond.peerLTK == nil)
        let bothReceived = collector.receive(.newLongTermKey(storeHint: true, key: Self.key(.unauthenticated, central: true, size: 7)))
        let both = try #require(bothReceived)
        #expect(both.bond.peerLTK == LongTermKey(key: Self.ltk, ediv: 0x1234, rand: 0x0102_0304_0506_0708))
        #expect(both.bond.localLTK?.key == ours)
        #expect(!both.bond.secureConnections && !both.bond.authenticated && both.bond.keySize == 7)
        #expect(both.bond.peer == Self.identity.address && both.bond.peerType == .public)
        // The next pairing's key of the same kind replaces the whole set.
        let nextReceived = collector.receive(.newLongTermKey(storeHint: true, key: Self.key(.unauthenticatedP256, central: false, value: ours)))
        let next = try #require(nextReceived)
        #expect(next.bond.localLTK == nil && next.bond.peerLTK?.key == ours && next.bond.secureConnections)
    }

    @Test("keys the kernel says not to keep, debug keys and BR/EDR addresses")
    func notKept() {
        var collector = KernelKeyCollector(local: Self.local)
        let unkept = collector.receive(.newLongTermKey(storeHint: false, key: Self.key(.unauthenticatedP256, central: false)))
        #expect(unkept?.persistent == false)
        let debug = collector.receive(.newLongTermKey(storeHint: true, key: Self.key(.debugP256, central: false)))
        #expect(debug == nil)
        var brEDR = Self.key(.unauthenticatedP256, central: false)
        brEDR.peer.type = 0x00
        let classic = collector.receive(.newLongTermKey(storeHint: true, key: brEDR))
        #expect(classic == nil)
        let request = collector.receive(.userPasskeyRequest(peer: Self.identity))
        #expect(request == nil)
    }

    @Test("a stored bond loads as the kernel's keys; a private identity is left out")
    func bondsToKernelKeys() throws {
        var collector = KernelKeyCollector(local: Self.local)
        _ = collector.receive(.newIdentityResolvingKey(storeHint: true, randomAddress: Self.rpa, key: .init(peer: Self.identity, value: Self.irk)))
        let scReceived = collector.receive(.newLongTermKey(storeHint: true, key: Self.key(.unauthenticatedP256, central: false)))
        let sc = try #require(scReceived).bond
        var legacy = BondStoreTests.bond(secureConnections: false)
        var privateIdentity = BondStoreTests.bond()
        privateIdentity.identity = Self.rpa
        privateIdentity.identityType = .random
        legacy.identity = BluetoothAddress("C1:02:03:04:05:06")!
        legacy.identityType = .random  // static random: loadable
        let keys = kernelKeys(of: [sc, legacy, privateIdentity])
        #expect(keys.skipped == [privateIdentity])
        #expect(keys.longTermKeys.count == 3)
        // Loading the collected bond gives back the key the kernel reported.
        #expect(keys.longTermKeys[0] == Self.key(.unauthenticatedP256, central: true))
        let staticPeer = ManagementAddress(le: legacy.identity, type: .random)
        #expect(keys.longTermKeys[1].peer == staticPeer && keys.longTermKeys[1].central && keys.longTermKeys[1].value == legacy.peerLTK?.key)
        #expect(keys.longTermKeys[1].ediv == 0x1234 && keys.longTermKeys[1].rand == 0x0102_0304_0506_0708)
        #expect(keys.longTermKeys[2].peer == staticPeer && !keys.longTermKeys[2].central && keys.longTermKeys[2].value == legacy.localLTK?.key)
        #expect(keys.identityResolvingKeys == [
            ManagementIdentityResolvingKey(peer: Self.identity, value: Self.irk),
            ManagementIdentityResolvingKey(peer: staticPeer, value: Array(repeating: 0xAA, count: 16)),
        ])
    }

    @Test("bluetoothd is found by its process name")
    func bluetoothdDetection() throws {
        let root = NSTemporaryDirectory() + "proc-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (pid, name) in [("1", "systemd\n"), ("42", "dbus-daemon\n"), ("self", "bluetoothd\n")] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(pid)", withIntermediateDirectories: true)
            try FileSystem.writeFileAtomically(Array(name.utf8), toPath: "\(root)/\(pid)/comm")
        }
        #expect(!bluetoothDaemonRuns(proc: root))
        try FileManager.default.createDirectory(atPath: "\(root)/777", withIntermediateDirectories: true)
        try FileSystem.writeFileAtomically(Array("bluetoothd\n".utf8), toPath: "\(root)/777/comm")
        #expect(bluetoothDaemonRuns(proc: root))
        #expect(!bluetoothDaemonRuns(proc: root + "/missing"))
    }
}
