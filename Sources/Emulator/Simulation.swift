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
        /// ``EmulatedCounter``: notifies a counter every 50 ms; only when named.
        case counter
        /// ``EmulatedHeartRateMonitor``: Heart Rate, Battery, Device Information; only when named.
        case heartrate

        /// The devices of a bare `sim`.
        public static let defaultSet: [Device] = [.sensortag, .bluefruit]
    }

    public enum SimulationError: Error, Hashable, Sendable, CustomStringConvertible {
        case unknownDevice(String)
        case invalidCount(String)
        case database(GATTError)

        public var description: String {
            switch self {
            case .unknownDevice(let name):
                return "unknown simulated device '\(name)' (known: "
                    + Device.allCases.map(\.rawValue).joined(separator: ", ") + ")"
            case .invalidCount(let name):
                return "'\(name)': a device is named NAME or NAME*N, with N from 1 to \(Simulation.maximumCopies)"
            case .database(let error): return "emulated device database: \(error)"
            }
        }
    }

    /// The host's end of the HCI transport: give it to the controller driver.
    public let hostTransport: InMemoryTransport
    public let controller: VirtualController
    public let link: VirtualLink
    /// The first of each kind (the only one unless copies were asked for).
    public var sensorTag: EmulatedSensorTag? { sensorTags.first }
    public var bluefruit: EmulatedBluefruit? { bluefruits.first }
    public let thermometer: EmulatedThermometer?
    /// Every copy, in address order (copy N has the first one's address plus N − 1).
    public let sensorTags: [EmulatedSensorTag]
    public let bluefruits: [EmulatedBluefruit]
    public let counters: [EmulatedCounter]
    public let heartRateMonitors: [EmulatedHeartRateMonitor]
    public var heartRateMonitor: EmulatedHeartRateMonitor? { heartRateMonitors.first }

    /// The most copies of one device (`sim:counter*64`).
    public static let maximumCopies = 64

    /// The devices named by `names` (`[]`: the default set), each `NAME` or `NAME*N`. Throws on
    /// an unknown name or a bad count.
    public static func devices(named names: [String]) throws(SimulationError) -> [Device] {
        try named(names).map(\.device)
    }

    /// How many copies of each device `names` asks for (`sensortag*32`: 32), in the order named.
    public static func copies(named names: [String]) throws(SimulationError) -> [Device: Int] {
        var copies: [Device: Int] = [:]
        for (device, count) in try named(names) { copies[device] = count }
        return copies
    }

    private static func named(_ names: [String]) throws(SimulationError) -> [(device: Device, count: Int)] {
        guard !names.isEmpty else { return Device.defaultSet.map { ($0, 1) } }
        var devices: [(device: Device, count: Int)] = []
        for name in names {
            let parts = name.lowercased().split(separator: "*", maxSplits: 1, omittingEmptySubsequences: false)
            guard let device = Device(rawValue: String(parts[0])) else { throw .unknownDevice(name) }
            var count = 1
            if parts.count == 2 {
                guard let given = Int(parts[1]), (1...maximumCopies).contains(given) else { throw .invalidCount(name) }
                count = given
            }
            if let index = devices.firstIndex(where: { $0.device == device }) {
                devices[index].count = max(devices[index].count, count)
            } else {
                devices.append((device, count))
            }
        }
        return devices
    }

    /// Builds the link with `devices` on it and starts a controller for our host. `display`
    /// gets what a device shows its user (the thermometer's passkey).
    public static func start(
        devices: [Device] = Device.defaultSet, copies: [Device: Int] = [:], clock: any BluetoothClock = SystemClock(),
        configuration: VirtualController.Configuration = .init(), logger: Logger = .disabled,
        display: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws(SimulationError) -> Simulation {
        let link = VirtualLink()
        var sensorTags: [EmulatedSensorTag] = []
        var bluefruits: [EmulatedBluefruit] = []
        var counters: [EmulatedCounter] = []
        var heartRateMonitors: [EmulatedHeartRateMonitor] = []
        var thermometer: EmulatedThermometer?
        func count(_ device: Device) -> Int { devices.contains(device) ? max(1, min(copies[device] ?? 1, maximumCopies)) : 0 }
        func suffix(_ copy: Int) -> String { copy == 0 ? "" : "-\(copy + 1)" }
        do throws(GATTError) {
            for copy in 0..<count(.sensortag) {
                let device = try EmulatedSensorTag(
                    address: EmulatedSensorTag.defaultAddress.adding(copy), clock: clock,
                    logger: logger.child("sensortag" + suffix(copy)))
                link.add(device)
                sensorTags.append(device)
            }
            for copy in 0..<count(.bluefruit) {
                let device = try EmulatedBluefruit(
                    address: EmulatedBluefruit.defaultAddress.adding(copy), clock: clock,
                    logger: logger.child("bluefruit" + suffix(copy)))
                link.add(device)
                bluefruits.append(device)
            }
            for copy in 0..<count(.counter) {
                let device = try EmulatedCounter(
                    address: EmulatedCounter.defaultAddress.adding(copy), name: "Counter \(copy + 1)", clock: clock,
                    logger: logger.child("counter" + suffix(copy)))
                link.add(device)
                counters.append(device)
            }
            for copy in 0..<count(.heartrate) {
                let device = try EmulatedHeartRateMonitor(
                    address: EmulatedHeartRateMonitor.defaultAddress.adding(copy), clock: clock,
                    logger: logger.child("heartrate" + suffix(copy)))
                link.add(device)
                heartRateMonitors.append(device)
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
            hostTransport: host, controller: controller, link: link, thermometer: thermometer, sensorTags: sensorTags,
            bluefruits: bluefruits, counters: counters, heartRateMonitors: heartRateMonitors)
    }

    /// Stops the controller (the host's transport closes).
    public func stop() async {
        await controller.stop()
    }
}

