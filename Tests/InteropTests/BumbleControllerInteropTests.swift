import Bluetooth
import HCI
import Testing

/// Our controller driver (command flow control and the LE host initialisation sequence)
/// against Bumble's controller over H4/TCP. Skipped where python3 cannot import bumble.
@Suite(
    "Interop: controller driver against Bumble",
    .enabled(if: BumblePeer.isAvailable, "needs python3 with bumble (pip install bumble)"))
struct BumbleControllerInteropTests {
    @Test func initialisationSequenceCompletes() async throws {
        let peer = try await BumblePeer.start()
        defer { peer.stop() }
        let driver = HCIControllerDriver(transport: try await peer.uri.openRawTransport())
        await driver.start()

        let info = try await driver.initialize()
        #expect(info.address == BluetoothAddress("F0:F1:F2:F3:F4:F5"))
        #expect(info.version.hciVersion == .v5_0)
        #expect(info.aclBuffers == ControllerInfo.ACLBuffers(packetLength: 27, packetCount: 64, shared: false))
        #expect(info.lmpFeatures.contains(bit: LMPFeatures.leSupportedController))
        #expect(info.supportedCommands != nil)
        #expect(info.leFeatures?.contains(.leEncryption) == true)
        await driver.close()
    }

    @Test func unknownCommandFailsFastInsteadOfTimingOut() async throws {
        let peer = try await BumblePeer.start()
        defer { peer.stop() }
        let driver = HCIControllerDriver(transport: try await peer.uri.openRawTransport())
        await driver.start()
        let vendor = try HCICommandPacket(opcode: HCIOpcode(ogf: 0x3F, ocf: 0x0042), parameters: [0x01, 0x02])
        let outcome = await driver.execute(vendor)
        guard case .complete(let event) = outcome else {
            Issue.record("expected Command Complete, got \(outcome)")
            return
        }
        #expect(event.status == HCIStatus(rawValue: 0x01))
        // The controller keeps working afterwards.
        _ = try await driver.send(ResetCommand())
        await driver.close()
    }

    @Test func scanningThroughTheDriverDeliversReportsOnInbound() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag", "bluefruit"])
        defer { peer.stop() }
        let sensorTag = try #require(peer.devices["sensortag"])
        let bluefruit = try #require(peer.devices["bluefruit"])
        let driver = HCIControllerDriver(transport: try await peer.uri.openRawTransport())
        await driver.start()
        _ = try await driver.initialize()
        _ = try await driver.send(
            LESetScanParametersCommand(leScanType: .active, leScanInterval: 0x10, leScanWindow: 0x10))
        _ = try await driver.send(LESetScanEnableCommand(leScanEnable: true))

        let inbound = driver.inbound
        let names = try await withInteropTimeout(10) { () -> Set<String> in
            var seen: Set<String> = []
            let wanted: [(BluetoothAddress, String)] = [
                (sensorTag, "CC2650 SensorTag"), (bluefruit, "Adafruit Bluefruit LE"),
            ]
            for await packet in inbound where packet.type == .event && packet.bytes.first == 0x3E {
                for (address, name) in wanted
                where packet.bytes.contains(subsequence: address.littleEndianBytes)
                    && packet.bytes.contains(subsequence: Array(name.utf8))
                {
                    seen.insert(name)
                }
                if seen.count == wanted.count { break }
            }
            return seen
        }
        #expect(names == ["CC2650 SensorTag", "Adafruit Bluefruit LE"])
        _ = try await driver.send(LESetScanEnableCommand(leScanEnable: false))
        await driver.close()
    }
}

struct InteropTimeout: Error, CustomStringConvertible {
    var seconds: Double
    var description: String { "timed out after \(seconds) s" }
}

/// Runs `body`, failing after `seconds`.
func withInteropTimeout<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws
    -> T
{
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw InteropTimeout(seconds: seconds)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
