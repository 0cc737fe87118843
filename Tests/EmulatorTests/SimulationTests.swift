import ATT
import Bluetooth
import Emulator
import HCI
import Testing

@Suite("Emulator: sim transport URIs")
struct EmulatorSimulationTests {
    @Test func simWithoutDevicesHasBoth() async throws {
        let simulation = try #require(try await Simulation.start(try TransportURI(parsing: "sim")))
        #expect(simulation.sensorTag != nil && simulation.bluefruit != nil)
        #expect(simulation.link.peripherals.count == 2)
        await simulation.stop()
    }

    @Test func simNamesTheDevices() async throws {
        let simulation = try #require(try await Simulation.start(try TransportURI(parsing: "sim:bluefruit")))
        #expect(simulation.sensorTag == nil && simulation.bluefruit != nil)
        #expect(simulation.link.peripherals.map(\.address) == [EmulatedBluefruit.defaultAddress])
        await simulation.stop()
    }

    @Test func unknownDevicesAreRefused() async throws {
        #expect(throws: Simulation.SimulationError.unknownDevice("fitbit")) {
            _ = try Simulation.devices(named: ["sensortag", "fitbit"])
        }
        #expect(try Simulation.devices(named: ["SensorTag", "sensortag"]) == [.sensortag])
    }

    @Test func otherTransportsAreNotSimulations() async throws {
        #expect(try await Simulation.start(try TransportURI(parsing: "hci0")) == nil)
    }

    @Test func stoppingClosesTheHostTransport() async throws {
        let simulation = try await Simulation.start(devices: [])
        await simulation.stop()
        await #expect(throws: HCIError.self) {
            try await simulation.hostTransport.send(.command, [0x03, 0x0C, 0x00])
        }
    }
}
