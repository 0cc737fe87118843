import Bluetooth
import Emulator
import Foundation
import HCI
import L2CAP
import Security
import Testing
import TestSupport

@testable import BLE

/// Resolvable private addresses of bonded peers (issue 18, privacy): the IRK resolves the
/// address (ah), and scans show the identity behind it.
@Suite("BLE: resolving a bonded peer's private address", .serialized)
struct PrivacyTests {
    /// Core 5.4 Vol 3 Part H Appendix D.7: ah(IRK, prand 0x708194) = 0x0DFBAA.
    static let irk: [UInt8] = Array(Hex.decode("ec0234a357c8ad05341010a60a397d9b")!)
    static let privateAddress = BluetoothAddress("70:81:94:0D:FB:AA")!
    static let identity = PeerAddress(address: BluetoothAddress("C0:11:22:33:44:55")!, type: .random)

    /// A device advertising (non-connectable) with a resolvable private address.
    final class PrivateAdvertiser: VirtualPeripheral {
        let address = PrivacyTests.privateAddress
        let addressType = AddressType.random
        let advertisingData: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0x09, 0x48, 0x52, 0x4D, 0x31]
        let scanResponseData: [UInt8] = []
        let isConnectable = false
        func connected(_ link: VirtualLinkConnection) async {}
        func received(_ frame: L2CAPBasicFrame) async {}
        func disconnected(reason: HCIStatus) async {}
    }

    static func bond(local: BluetoothAddress, irk: [UInt8]?) -> Bond {
        var bond = Bond(
            result: PairingResult(method: .justWorks, secureConnections: true, authenticated: false, keySize: 16, bonded: true),
            local: PeerAddress(address: local, type: .public), peer: identity, pairedAs: "central")
        bond.peerLTK = LongTermKey(key: [UInt8](repeating: 0x11, count: 16))
        // Keys are kept in SMP PDU octet order: least significant first.
        bond.peerIRK = irk.map { Array($0.reversed()) }
        return bond
    }

    @Test("the Appendix D sample: the IRK resolves the address; one bit off, or a static address, does not")
    func resolution() {
        #expect(AddressResolver.resolves(Self.privateAddress, irk: Self.irk))
        #expect(!AddressResolver.resolves(BluetoothAddress("70:81:94:0D:FB:AB")!, irk: Self.irk))
        let resolver = AddressResolver(bonds: [Self.bond(local: .zero, irk: Self.irk)])
        #expect(resolver.identity(of: PeerAddress(address: Self.privateAddress, type: .random)) == Self.identity)
        #expect(resolver.identity(of: PeerAddress(address: Self.privateAddress, type: .public)) == nil, "public: not an RPA")
        #expect(resolver.identity(of: PeerAddress(address: BluetoothAddress("F0:81:94:0D:FB:AA")!, type: .random)) == nil)
        #expect(AddressResolver(bonds: [Self.bond(local: .zero, irk: nil)]).identity(
            of: PeerAddress(address: Self.privateAddress, type: .random)) == nil, "a bond without an IRK cannot resolve")
    }

    /// The first advertisement from the private address, within a bounded scan.
    static func scanOnce(_ adapter: Adapter) async throws -> Advertisement? {
        for try await advertisement in await adapter.scan(ScanOptions(duration: .seconds(5 * testTimeoutScale)))
        where advertisement.peer.address == privateAddress {
            return advertisement
        }
        return nil
    }

    @Test("a scan shows the bonded identity behind the private address, and nothing without the bond")
    func scanShowsTheIdentity() async throws {
        try await withTimeout(60, "scanning a private address") {
            let simulation = try await Simulation.start(devices: [])
            simulation.link.add(PrivateAdvertiser())
            var options = AdapterOptions()
            let bonds = NSTemporaryDirectory() + "privacy-bonds-\(UInt64.random(in: 0...UInt64.max))"
            defer { removeTree(bonds) }
            options.bondsDirectory = bonds
            let adapter = try await Adapter.simulated(simulation, options: options)
            let unknown = try #require(try await Self.scanOnce(adapter))
            #expect(unknown.identity == nil)
            try await adapter.saveBond(Self.bond(local: adapter.address.address, irk: Self.irk))
            let known = try #require(try await Self.scanOnce(adapter))
            #expect(known.identity == Self.identity)
            #expect(known.name == "HRM1")
            await adapter.close()
            await simulation.stop()
        }
    }
}
