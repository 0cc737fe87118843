import BLE
import Bluetooth
import Emulator
import Foundation
import GATT
import Testing
import TestSupport
@testable import GATTClientCLI

/// `gattclient watch`: a standard service's typed values through the library's models, the link
/// kept up across the peripheral's disconnects.
@Suite(.serialized) struct WatchCommandTests {
    static let monitor = PeerAddress(address: EmulatedHeartRateMonitor.defaultAddress, type: .random)

    @Test func theServiceIsRequiredAndNamed() throws {
        guard case .watch(let peer, let service, let count, let duration) = try parse(
            ["watch", "D1:7E:A8:70:00:01/random", "--service", "heart-rate", "--count", "3"]
        ).command else {
            Issue.record("not a watch command")
            return
        }
        #expect(peer == Self.monitor && service == "heart-rate" && count == 3 && duration == nil)
        #expect(throws: UsageError.self) { try parse(["watch", "D1:7E:A8:70:00:01/random"]) }
        #expect(throws: UsageError.self) { try parse(["watch", "D1:7E:A8:70:00:01/random", "--service", "glucose"]) }
        #expect(throws: UsageError.self) { try parse(["watch", "--service", "battery"]) }
        #expect(throws: UsageError.self) { try parse(["watch", "D1:7E:A8:70:00:01/random", "--service", "battery", "--count", "0"]) }
        for name in WatchCommand.Watched.allCases.map(\.rawValue) {
            #expect(throws: Never.self) { try parse(["watch", "D1:7E:A8:70:00:01/random", "--service", name]) }
        }
    }

    @Test func heartRateValuesKeepComingAcrossThePeripheralsDisconnect() async throws {
        let central = try await SimulatedCentral.open(.simulator(devices: ["heartrate"]))
        let device = try #require(central.simulation.heartRateMonitor)
        var command = WatchCommand(peer: Self.monitor, service: .heartRate, count: 12)
        command.central = central
        // The monitor ends the link after the fourth value (the command waits for that); the
        // command reconnects by itself.
        command.printed = { count in
            if count == 4 { await device.peripheral.disconnect() }
        }
        var global = GlobalOptions()
        global.json = true
        let (finalCommand, options) = (command, global)
        let lines = try await withTimeout(60, "watch across a disconnect") {
            var output = BufferedOutput.capturing()
            try await finalCommand.run(options: options, output: &output)
            output.flush()
            return output.capturedLines
        }
        let records = try lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        await central.simulation.stop()
        let states = records.filter { $0["kind"] as? String == "state" }.compactMap { $0["state"] as? String }
        #expect(states.first == "connected")
        #expect(states.contains { $0.hasPrefix("disconnected") })
        #expect(states.contains { $0.hasPrefix("reconnected after") })
        let values = records.filter { $0["kind"] as? String == "value" }
        #expect(values.count == 12)
        // Each connection reads the sensor location, then measurements come, typed.
        let locations = values.filter { $0["characteristic"] as? String == "2A38" }
        #expect(locations.count == 2 && locations.allSatisfy { $0["text"] as? String == "chest" && $0["value"] as? String == "01" })
        let measurements = values.filter { $0["characteristic"] as? String == "2A37" }
        #expect(measurements.count == 10)
        #expect(measurements.allSatisfy { ($0["text"] as? String)?.contains(" bpm, contact detected") == true })
        // Values after the reconnect: the second location read comes after the disconnect line.
        let secondLocation = try #require(records.lastIndex { $0["characteristic"] as? String == "2A38" })
        let disconnect = try #require(records.firstIndex { ($0["state"] as? String)?.hasPrefix("disconnected") == true })
        #expect(disconnect < secondLocation)
        #expect(records[secondLocation...].contains { $0["characteristic"] as? String == "2A37" })
    }

    @Test func aDeviceWithoutTheServiceSaysSo() async throws {
        // The SensorTag has no heart-rate service: the model's binding fails, and the command
        // says what is missing (exit 1) rather than waiting for values that cannot come.
        var global = GlobalOptions()
        global.transport = "sim"
        global.json = true
        let options = global
        let command = WatchCommand(peer: PeerAddress(address: EmulatedSensorTag.defaultAddress, type: .public), service: .heartRate)
        let failure = try await withTimeout(60, "watch without the service") { () async -> CommandFailure? in
            var output = BufferedOutput.capturing()
            do {
                try await command.run(options: options, output: &output)
                return nil
            } catch {
                return error as? CommandFailure
            }
        }
        #expect(failure?.message == "54:6C:0E:9A:3B:01 has no heart-rate service (180D)")
        #expect(failure?.exitCode == .failure)
    }
}
