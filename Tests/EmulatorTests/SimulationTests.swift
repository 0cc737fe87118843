import ATT
import Bluetooth
import Emulator
import HCI
import Testing

@Suite("Emulator: the simulation and its devices")
struct EmulatorSimulationTests {
    @Test func simWithoutDevicesHasBoth() async throws {
        let simulation = try await Simulation.start(devices: try Simulation.devices(named: []))
        #expect(simulation.sensorTag != nil && simulation.bluefruit != nil)
        #expect(simulation.link.peripherals.count == 2)
        await simulation.stop()
    }

    @Test func simNamesTheDevices() async throws {
        let simulation = try await Simulation.start(devices: try Simulation.devices(named: ["bluefruit"]))
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

    @Test func stoppingClosesTheHostTransport() async throws {
        let simulation = try await Simulation.start(devices: [])
        await simulation.stop()
        await #expect(throws: HCIError.self) {
            try await simulation.hostTransport.send(.command, [0x03, 0x0C, 0x00])
        }
    }
}
