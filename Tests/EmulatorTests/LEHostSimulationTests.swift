import Host
import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import L2CAP
import Testing
import TestSupport

/// What `--transport sim` and `gattclient demo` run: our LEHost over the built-in simulation,
/// in real time (advertising every 10 ms).
@Suite("Emulator: LEHost over the simulation")
struct EmulatorLEHostSimulationTests {
    /// With the extended commands offered (LEHost uses them) and without (legacy).
    @Test(arguments: [true, false])
    func scansConnectsDiscoversAndEchoes(extended: Bool) async throws {
        let simulation = try await Simulation.start(
            configuration: .init(advertisingInterval: .milliseconds(10), extendedAdvertising: extended))
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = .seconds(30 * testTimeoutScale)  // not under test; the suite runs on two loaded cores
        let host = try await LEHost.start(transport: simulation.hostTransport, configuration: configuration)
        #expect(host.usesExtendedCommands == extended)

        // Scan until both devices are seen with their names (from the scan responses).
        let names = try await withTimeout { () -> [BluetoothAddress: String] in
            var names: [BluetoothAddress: String] = [:]
            for try await event in host.scan() {
                switch event {
                case .discovered(let device), .updated(let device):
                    if let name = device.summary.name { names[device.address] = name }
                default: break
                }
                if names.count == 2 { break }
            }
            return names
        }
        #expect(names[EmulatedSensorTag.defaultAddress] == "CC2650 SensorTag")
        #expect(names[EmulatedBluefruit.defaultAddress] == "Adafruit Bluefruit LE")

        // The SensorTag: discovery and a decoded reading.
        let tag = try await host.connect(to: EmulatedSensorTag.defaultAddress, type: .public, timeout: .seconds(30))
        let tagConnection = ATTConnection(channel: tag.channel)
        let tagClient = GATTClient(connection: tagConnection)
        let database = try await withTimeout { try await tagClient.discoverDatabase() }
        #expect(database.services.count == 14)
        let humidity = try database.characteristic(uuid: SensorTag.Sensor.humidity.data)
        try await tagClient.configure(humidity, .notifications)
        _ = try await tagClient.write(
            handle: try database.characteristic(uuid: SensorTag.Sensor.humidity.period!).valueHandle, value: [10])
        _ = try await tagClient.write(
            handle: try database.characteristic(uuid: SensorTag.Sensor.humidity.configuration!).valueHandle,
            value: [0x01])
        let raw = try await nextNotification(tagConnection, handle: humidity.valueHandle)
        guard case .humidity(let temperature, let relative) = SensorTag.decode(.humidity, raw) else {
            Issue.record("not a humidity reading: \(raw)")
            return
        }
        #expect((15...30).contains(temperature) && (30...60).contains(relative))

        // The Bluefruit: UART round trip.
        let board = try await host.connect(to: EmulatedBluefruit.defaultAddress, type: .random, timeout: .seconds(30))
        let boardConnection = ATTConnection(channel: board.channel)
        let boardClient = GATTClient(connection: boardConnection)
        let uart = try await withTimeout { try await boardClient.discoverDatabase() }
        let tx = try uart.characteristic(uuid: NordicUART.tx)
        try await boardClient.configure(tx, .notifications)
        _ = try await boardClient.write(
            handle: try uart.characteristic(uuid: NordicUART.rx).valueHandle, value: Array("ping".utf8))
        #expect(try await nextNotification(boardConnection, handle: tx.valueHandle) == Array("ping".utf8))

        await tagConnection.close()
        await boardConnection.close()
        try await host.disconnect(tag)
        await host.close()
        await simulation.stop()
    }
}

/// Issue 21: `sim:NAME*N` copies with consecutive addresses, and the counting device.
@Suite struct SimulationCopiesTests {
    @Test func namesWithCountsParse() throws {
        #expect(try Simulation.devices(named: ["sensortag*3", "counter"]) == [.sensortag, .counter])
        #expect(try Simulation.copies(named: ["sensortag*3", "counter"]) == [.sensortag: 3, .counter: 1])
        #expect(throws: Simulation.SimulationError.invalidCount("counter*0")) { try Simulation.devices(named: ["counter*0"]) }
        #expect(throws: Simulation.SimulationError.invalidCount("counter*65")) { try Simulation.devices(named: ["counter*65"]) }
        #expect(throws: Simulation.SimulationError.unknownDevice("lamp*2")) { try Simulation.devices(named: ["lamp*2"]) }
        #expect(BluetoothAddress("C0:DE:00:00:00:FF")!.adding(1) == BluetoothAddress("C0:DE:00:00:01:00")!)
        #expect(BluetoothAddress("54:6C:0E:FF:FF:FF")!.adding(1) == BluetoothAddress("54:6C:0E:00:00:00")!, "the company stays")
    }

    @Test func copiesHaveTheirOwnAddresses() async throws {
        let simulation = try await Simulation.start(devices: [.sensortag, .counter], copies: [.sensortag: 2, .counter: 3])
        #expect(simulation.sensorTags.map(\.address.description) == ["54:6C:0E:9A:3B:01", "54:6C:0E:9A:3B:02"])
        #expect(simulation.counters.map(\.address.description) == ["C0:DE:00:00:00:01", "C0:DE:00:00:00:02", "C0:DE:00:00:00:03"])
        #expect(simulation.counters.map(\.name) == ["Counter 1", "Counter 2", "Counter 3"])
        #expect(simulation.counters[0].sent == 0, "nothing sent before a central subscribes")
        await simulation.stop()
    }
}
