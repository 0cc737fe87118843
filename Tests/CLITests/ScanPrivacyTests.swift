import BLE
import Bluetooth
import Emulator
import Foundation
import HCI
import L2CAP
import Security
import Testing
import TestSupport
@testable import GATTClientCLI

/// `gattclient scan` shows the bonded identity behind a resolvable private address (text and
/// JSON `identity`).
@Suite("CLI: scan resolves a bonded peer's private address")
struct ScanPrivacyTests {
    /// Core 5.4 Vol 3 Part H Appendix D.7: ah(IRK, prand 0x708194) = 0x0DFBAA.
    static let irk: [UInt8] = Array(Hex.decode("ec0234a357c8ad05341010a60a397d9b")!)
    static let privateAddress = BluetoothAddress("70:81:94:0D:FB:AA")!
    static let centralAddress = BluetoothAddress("00:1B:DC:E0:6D:02")!

    final class PrivateAdvertiser: VirtualPeripheral {
        let address = ScanPrivacyTests.privateAddress
        let addressType = AddressType.random
        let advertisingData: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0x09, 0x48, 0x52, 0x4D, 0x31]
        let scanResponseData: [UInt8] = []
        let isConnectable = false
        func connected(_ link: VirtualLinkConnection) async {}
        func received(_ frame: L2CAPBasicFrame) async {}
        func disconnected(reason: HCIStatus) async {}
    }

    @Test func jsonAndTextNameTheIdentity() async throws {
        let bonds = NSTemporaryDirectory() + "scan-privacy-\(UInt64.random(in: 0...UInt64.max))"
        defer { removeTree(bonds) }
        var bond = Bond(
            result: PairingResult(method: .justWorks, secureConnections: true, authenticated: false, keySize: 16, bonded: true),
            local: PeerAddress(address: Self.centralAddress, type: .public),
            peer: PeerAddress(address: BluetoothAddress("C0:11:22:33:44:55")!, type: .random), pairedAs: "central")
        bond.peerLTK = LongTermKey(key: [UInt8](repeating: 0x22, count: 16))
        bond.peerIRK = Array(Self.irk.reversed())
        try BondStore(directory: bonds).save(bond)
        for json in [true, false] {
            try await withTimeout(60, "scan with a bonded private address") {
                let simulation = try await Simulation.start(devices: [])
                simulation.link.add(PrivateAdvertiser())
                let (_, transport) = await VirtualController.attach(
                    to: simulation.link, clock: SystemClock(), configuration: .init(address: Self.centralAddress))
                let central = try await UserSpaceCentral.start(transport, name: "virtual", commandTimeout: .seconds(30 * testTimeoutScale))
                var options = ScanCommandOptions()
                options.duration = 1
                var global = GlobalOptions()
                global.json = json
                global.bonds = bonds
                var output = BufferedOutput.capturing()
                try await ScanCommand(options: options, central: central).run(global: global, output: &output)
                output.flush()
                let line = try #require(output.capturedLines.first { $0.contains("70:81:94:0D:FB:AA") }, "\(output.capturedLines)")
                if json {
                    #expect(line.contains("\"identity\":\"C0:11:22:33:44:55\""), "\(line)")
                    #expect(line.contains("\"identityType\":\"random\""), "\(line)")
                } else {
                    #expect(line.contains("identity C0:11:22:33:44:55"), "\(line)")
                }
                await simulation.stop()
            }
        }
    }
}
