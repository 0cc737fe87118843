import Host
import ATT
import Bluetooth
import GATT
import HCI

/// The built-in simulated world behind `--transport sim[:sensortag,bluefruit,thermometer]`: a virtual
/// link with the requested emulated devices and a virtual controller for our host, reached
/// through an in-memory HCI transport.
///
/// ```swift
/// let simulation = try await Simulation.start(devices: [.sensortag])
/// let host = try await LEHost.start(transport: simulation.hostTransport)
/// let tag = try await host.connect(to: EmulatedSensorTag.defaultAddress, type: .public)
/// // ... ATTConnection(channel: tag.channel), GATTClient, ...
/// await host.close()      // closes the transport: the controller stops, devices disconnect
/// ```
///
/// Time runs on the injected clock (the system clock by default; tests pass an
/// ``ManualClock``): advertising events every `configuration.advertisingInterval`, sensor
/// periods, the SensorTag's parameter request.
public struct Simulation: Sendable {
    /// The devices `sim:` may name.
    public enum Device: String, CaseIterable, Hashable, Sendable {
        case sensortag, bluefruit
        /// ``EmulatedThermometer``: requires pairing; only when named.
        case thermometer

        /// The devices of a bare `sim`.
        public static let defaultSet: [Device] = [.sensortag, .bluefruit]
    }

    public enum SimulationError: Error, Hashable, Sendable, CustomStringConvertible {
        case unknownDevice(String)
        case database(GATTError)

        public var description: String {
            switch self {
            case .unknownDevice(let name):
                return "unknown simulated device '\(name)' (known: "
                    + Device.allCases.map(\.rawValue).joined(separator: ", ") + ")"
            case .database(let error): return "emulated device database: \(error)"
            }
        }
    }

    /// The host's end of the HCI transport: give it to the controller driver.
    public let hostTransport: InMemoryTransport
    public let controller: VirtualController
    public let link: VirtualLink
    public let sensorTag: EmulatedSensorTag?
    public let bluefruit: EmulatedBluefruit?
    public let thermometer: EmulatedThermometer?

    /// The devices named by `names` (`[]`: the default set). Throws on an unknown name.
    public static func devices(named names: [String]) throws(SimulationError) -> [Device] {
        guard !names.isEmpty else { return Device.defaultSet }
        var devices: [Device] = []
        for name in names {
            guard let device = Device(rawValue: name.lowercased()) else { throw .unknownDevice(name) }
            if !devices.contains(device) { devices.append(device) }
        }
        return devices
    }

    /// Builds the link with `devices` on it and starts a controller for our host. `display`
    /// gets what a device shows its user (the thermometer's passkey).
    public static func start(
        devices: [Device] = Device.defaultSet, clock: any BluetoothClock = SystemClock(),
        configuration: VirtualController.Configuration = .init(), logger: Logger = .disabled,
        display: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws(SimulationError) -> Simulation {
        let link = VirtualLink()
        var sensorTag: EmulatedSensorTag?
        var bluefruit: EmulatedBluefruit?
        var thermometer: EmulatedThermometer?
        do throws(GATTError) {
            if devices.contains(.sensortag) {
                let device = try EmulatedSensorTag(clock: clock, logger: logger.child("sensortag"))
                link.add(device)
                sensorTag = device
            }
            if devices.contains(.bluefruit) {
                let device = try EmulatedBluefruit(clock: clock, logger: logger.child("bluefruit"))
                link.add(device)
                bluefruit = device
            }
            if devices.contains(.thermometer) {
                let device = try EmulatedThermometer(clock: clock, logger: logger.child("thermometer"), display: display)
                link.add(device)
                thermometer = device
            }
        } catch {
            throw .database(error)
        }
        let (controller, host) = await VirtualController.attach(
            to: link, clock: clock, configuration: configuration, logger: logger.child("controller"))
        return Simulation(
            hostTransport: host, controller: controller, link: link, sensorTag: sensorTag, bluefruit: bluefruit,
            thermometer: thermometer)
    }

    /// Stops the controller (the host's transport closes).
    public func stop() async {
        await controller.stop()
    }
}
