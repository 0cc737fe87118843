import BLE
import Bluetooth
import Emulator
import Foundation
import GATT
import Testing
import TestSupport
@testable import GATTClientCLI

/// The product commands over `--transport sim`: our unchanged host over the virtual controller
/// and the emulated devices.
@Suite struct SimulatedCommandTests {
    static let tag = PeerAddress(address: EmulatedSensorTag.defaultAddress, type: .public)
    static let board = PeerAddress(address: EmulatedBluefruit.defaultAddress, type: .random)

    static func options(json: Bool = true) -> GlobalOptions {
        var options = GlobalOptions()
        options.transport = "sim"
        options.json = json
        return options
    }

    func run(_ body: (inout BufferedOutput) async throws -> Void) async throws -> [String] {
        var output = BufferedOutput.capturing()
        try await body(&output)
        output.flush()
        return output.capturedLines
    }

    @Test func demoShowsTheWholeJob() async throws {
        // Two sensor periods at least (one second each), stretched under the sanitizer: a loaded
        // suite once gave no reading within 1.2 s.
        let seconds = max(2.5, 1.2 * testTimeoutScale)
        let lines = try await run { try await DemoCommand(sensorSeconds: seconds).run(options: Self.options(json: false), output: &$0) }
        #expect(lines.contains { $0.hasPrefix("== 1. scan") })
        #expect(lines.contains { $0.contains("\"CC2650 SensorTag\"") })
        #expect(lines.contains { $0.contains("14 services, ATT_MTU 23") })
        #expect(lines.contains { $0.hasPrefix("Manufacturer Name String") && $0.hasSuffix("Texas Instruments") })
        #expect(lines.contains { $0.contains("ir") && $0.contains("°C") })
        #expect(lines.contains { $0.contains("humidity") && $0.contains("%RH") })
        #expect(lines.contains("< Hello, Bluefruit! F L R S"))
    }

    @Test func scanOverTheSimulationAsJSON() async throws {
        var scan = ScanCommandOptions()
        scan.duration = 1
        scan.name = "bluefruit"
        let records = try jsonObjects(try await run { try await ScanCommand(options: scan).run(global: Self.options(), output: &$0) })
        #expect(!records.isEmpty)
        #expect(records.allSatisfy { ($0["name"] as? String)?.contains("Bluefruit") == true })
        #expect(records.last?["address"] as? String == EmulatedBluefruit.defaultAddress.description)
    }

    @Test func sensortagReadingsAsJSON() async throws {
        var command = SensorTagCommand(peer: Self.tag)
        command.sensors = [.barometer, .movement]
        command.periodMilliseconds = 200
        command.count = 4
        let records = try jsonObjects(try await run { try await command.run(options: Self.options(), replayMatchAny: false, output: &$0) })
        #expect(records.count == 4)
        let barometer = try #require(records.first { $0["sensor"] as? String == "barometer" })
        #expect(barometer["pressureHPa"] is Double || barometer["pressureHPa"] is Int)
        let movement = try #require(records.first { $0["sensor"] as? String == "movement" })
        #expect((movement["accelG"] as? [String: Any])?["z"] != nil)
        #expect(records.allSatisfy { $0["time"] != nil })
    }

    @Test func aSensorTagThatDisconnectsEndsTheCommandWithAFailure() async throws {
        // The typed values end with the link; the command says the link closed (exit 1), as it
        // did on its own subscriptions.
        let central = try await SimulatedCentral.open(.simulator(devices: ["sensortag"]))
        let device = try #require(central.simulation.sensorTag)
        var command = SensorTagCommand(peer: Self.tag, central: central)
        command.sensors = [.humidity]
        command.periodMilliseconds = 100
        command.duration = 60
        command.printed = { count in
            if count == 1 { await device.peripheral.disconnect() }
        }
        let finalCommand = command
        let failure = try await withTimeout(60, "sensortag across the tag's disconnect") { () async -> CommandFailure? in
            var output = BufferedOutput.capturing()
            do {
                try await finalCommand.run(options: Self.options(), replayMatchAny: false, output: &output)
                return nil
            } catch {
                return error as? CommandFailure
            }
        }
        await central.simulation.stop()
        #expect(failure?.kind == "disconnected")
        #expect(failure?.message == "disconnected by the peer: Remote User Terminated Connection (0x13)")
    }

    @Test func periodsBelowTheMinimumAreRefusedBeforeConnecting() async throws {
        var command = SensorTagCommand(peer: Self.tag)
        command.sensors = [.ir]
        command.periodMilliseconds = 100
        await #expect(throws: CommandFailure.self) {
            _ = try await run { try await command.run(options: Self.options(), replayMatchAny: false, output: &$0) }
        }
    }

    @Test func uartEchoesLinesAndControllerPackets() async throws {
        let lines = try await run {
            try await UARTCommand(peer: Self.board, duration: 1, input: ["F", "a line longer than one ATT_MTU of twenty-three"])
                .run(options: Self.options(json: false), replayMatchAny: false, output: &$0)
        }
        #expect(lines == ["F", "a line longer than one ATT_MTU of twenty-three"])
        let packet = try await run {
            try await UARTCommand(peer: Self.board, send: NordicUART.color(red: 255, green: 0, blue: 64))
                .run(options: Self.options(), replayMatchAny: false, output: &$0)
        }
        #expect(try jsonObjects(packet).first?["value"] as? String == Hex.encode(NordicUART.color(red: 255, green: 0, blue: 64)))
    }

    /// Issue 19 item 4: the end of standard input does not end the session before the echo:
    /// it waits for a quiet link (`--linger`, 1 s); text ends with a newline; a controller
    /// packet (not text) prints as hex.
    @Test func uartWaitsForTheEchoAfterTheInputEnds() async throws {
        let echoed = try await run {
            try await UARTCommand(peer: Self.board, linger: 0.5 * testTimeoutScale, input: ["hello"])
                .run(options: Self.options(json: false), replayMatchAny: false, output: &$0)
        }
        #expect(echoed == ["hello"])
        let packet = try await run {
            try await UARTCommand(peer: Self.board, send: NordicUART.color(red: 255, green: 0, blue: 64))
                .run(options: Self.options(json: false), replayMatchAny: false, output: &$0)
        }
        #expect(packet == ["hex: " + Hex.encode(NordicUART.color(red: 255, green: 0, blue: 64))])
        #expect(NordicUART.text(Array("ok\r\n".utf8)) == "ok\r\n")
        #expect(NordicUART.text([0x21, 0x42, 0x31, 0x31, 0x01]) == nil)
        #expect(
            try parse(["uart", "E8:7F:3A:21:9C:05/random", "--linger", "2.5"]).command
                == .uart(PeerAddress("E8:7F:3A:21:9C:05/random")!, send: nil, withResponse: false, duration: nil, linger: 2.5))
        #expect(throws: UsageError.self) { try parse(["uart", "E8:7F:3A:21:9C:05/random", "--linger", "1", "--send", "x"]) }
    }

    @Test func scanOverReplayMergesTheCaptureReports() async throws {
        var options = GlobalOptions()
        options.transport = "replay:" + Paths.fixture("synthetic-att-adv.btsnoop")
        options.json = true
        let records = try jsonObjects(try await run { try await ScanCommand(options: ScanCommandOptions()).run(global: options, output: &$0) })
        let tag = records.last { $0["address"] as? String == "54:6C:0E:12:34:56" }
        #expect(tag?["name"] as? String == "CC2650 SensorTag", "ADV_IND and SCAN_RSP merged")
        #expect(tag?["serviceUUIDs"] as? [String] == ["180F", "AA00"])
    }
}
