import Emulator
import Foundation
import Synchronization
import Testing
import TestSupport

@testable import BLE

/// The emulated thermometer (`sim:thermometer`): its data needs an authenticated link; it
/// shows a passkey the central's user types.
@Suite("BLE: the emulated thermometer requires pairing", .serialized)
struct ThermometerPairingTests {
    static let address = PeerAddress(address: EmulatedThermometer.defaultAddress, type: .random)

    /// The user reads the thermometer's display (bounded wait) and types what it shows.
    final class Reader: PairingDelegate {
        let thermometer: EmulatedThermometer
        let typed = Mutex<Int>(0)
        init(thermometer: EmulatedThermometer) { self.thermometer = thermometer }
        func displayPasskey(_ passkey: UInt32, for peer: PeerAddress) async {}
        func enterPasskey(for peer: PeerAddress) async throws -> UInt32 {
            for _ in 0..<250 {
                if let shown = thermometer.displayedPasskey {
                    typed.withLock { $0 += 1 }
                    return shown
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            throw BLEError("the thermometer showed no passkey", kind: "test")
        }
        func confirm(_ number: UInt32, for peer: PeerAddress) async -> Bool { false }
    }

    @Test("not in the default set; named, it is found")
    func onlyWhenNamed() throws {
        #expect(!(try Simulation.devices(named: [])).contains(.thermometer))
        #expect(try Simulation.devices(named: ["thermometer"]) == [.thermometer])
    }

    @Test("Insufficient Authentication, Passkey Entry with the shown passkey, the value; reconnecting re-encrypts")
    func passkeyFromTheDisplay() async throws {
        try await withTimeout(60, "pairing with the thermometer") {
            let lines = Mutex<[String]>([])
            let simulation = try await Simulation.start(
                devices: [.thermometer], display: { line in lines.withLock { $0.append(line) } })
            let thermometer = try #require(simulation.thermometer)
            var options = AdapterOptions()
            options.bondsDirectory = NSTemporaryDirectory() + "thermometer-bonds-\(UInt64.random(in: 0...UInt64.max))"
            defer { removeTree(options.bondsDirectory!) }
            let adapter = try await Adapter.simulated(simulation, options: options)
            let user = Reader(thermometer: thermometer)
            await adapter.setPairingDelegate(user)

            let device = try await adapter.connect(to: Self.address)
            #expect(try await device.read(EmulatedThermometer.temperatureType) == [0x02], "paired on demand, then read")
            #expect(await device.securityLevel == .secureConnections)
            let shown = try #require(thermometer.displayedPasskey)
            #expect(lines.withLock { $0 }.contains { $0.hasSuffix(String(format: "passkey %06u", shown)) }, "the log shows it")
            let bond = try #require(await adapter.bonds().first)
            #expect(bond.authenticated && bond.secureConnections)
            // Indications need the authenticated link too: the measurement arrives.
            let measurements = try await device.subscribe(to: EmulatedThermometer.temperatureMeasurement)
            #expect(try await measurements.next(timeout: .seconds(10))?.value == EmulatedThermometer.measurement)
            await device.disconnect()

            let again = try await adapter.connect(to: Self.address, security: .authenticated)
            #expect(try await again.read(EmulatedThermometer.temperatureType) == [0x02])
            #expect(user.typed.withLock { $0 } == 1, "the bond re-encrypted: no second passkey")
            await again.disconnect()
            await adapter.close()
            await simulation.stop()
        }
    }

    @Test("without a passkey the pairing fails and the value stays out of reach")
    func noPasskeyNoValue() async throws {
        try await withTimeout(60, "no passkey") {
            let simulation = try await Simulation.start(devices: [.thermometer])
            var options = AdapterOptions()
            options.bondsDirectory = NSTemporaryDirectory() + "thermometer-bonds-\(UInt64.random(in: 0...UInt64.max))"
            defer { removeTree(options.bondsDirectory!) }
            let adapter = try await Adapter.simulated(simulation, options: options)
            let device = try await adapter.connect(to: Self.address)
            await #expect(throws: BLEError.self) { _ = try await device.read(EmulatedThermometer.temperatureType) }
            #expect(await adapter.bonds().isEmpty)
            await device.disconnect()
            await adapter.close()
            await simulation.stop()
        }
    }

    /// The standard Health Thermometer model, as an app declares it.
    struct SecureThermometer: BluetoothDevice {
        @Service var thermometer = HealthThermometerService()
        @Service(required: false) var access = GenericAccessService()
        init() {}
    }

    @Test("the Health Thermometer model: connecting pairs on demand, the type reads typed, the measurement indicates typed")
    func healthThermometerModel() async throws {
        try await withTimeout(60, "the thermometer model") {
            let simulation = try await Simulation.start(devices: [.thermometer])
            let thermometer = try #require(simulation.thermometer)
            var options = AdapterOptions()
            options.bondsDirectory = NSTemporaryDirectory() + "thermometer-bonds-\(UInt64.random(in: 0...UInt64.max))"
            defer { removeTree(options.bondsDirectory!) }
            let adapter = try await Adapter.simulated(simulation, options: options)
            await adapter.setPairingDelegate(Reader(thermometer: thermometer))
            let device = try await adapter.connect(to: Self.address, as: SecureThermometer.self)
            // Reading the type needs authentication: the connect paired (Passkey Entry), then read it.
            #expect(device.thermometer.temperatureType == .body)
            #expect(device.access.deviceName == EmulatedThermometer.deviceName)
            #expect(try #require(await adapter.bonds().first).authenticated)
            // The measurement: indicated once its CCCD is on (during the connect), 36.6 °C typed.
            let values = device.thermometer.$measurement.values()
            let measurement: TemperatureMeasurement?
            if let stored = device.thermometer.measurement {
                measurement = stored
            } else {
                var iterator = values.makeAsyncIterator()
                measurement = await iterator.next()
            }
            let expected = TemperatureMeasurement(temperature: MedFloat32(mantissa: 366, exponent: -1)!)
            #expect(measurement == expected)
            #expect(expected.encoded() == EmulatedThermometer.measurement)
            #expect(!device.thermometer.$intermediateTemperature.isPresent)
            await adapter.close()
            await simulation.stop()
        }
    }
}
