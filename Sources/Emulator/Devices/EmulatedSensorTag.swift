import ATT
import Bluetooth
import GATT
import HCI
import L2CAP

/// An emulated TI CC2650 SensorTag (firmware 1.4x): the database of ``SensorTagDatabase``
/// served by our GATT server at ATT_MTU 23, advertising ADV_IND with flags 0x06 and the
/// movement service, its name only in the scan response, from a public address with TI's OUI
/// 54:6C:0E.
///
/// Sensors behave as TI's firmware: writing the configuration switches a sensor on (the first
/// sample one period later, then one per period, notified when the client subscribed) or off
/// (data back to zeros); a period below the sensor's minimum is refused with application
/// error 0x80; a disconnect switches every sensor off and restores the default periods.
/// Keys are pressed from code (``press(user:power:reed:)``), notified on FFE1. A write of 1 to
/// Connection Control CCC3 disconnects; a write to CCC2 sends an L2CAP Connection Parameter
/// Update Request; CCC1 holds (and notifies) the current parameters. As TI's firmware does,
/// one second after connecting it asks for its preferred parameters (100–200 ms, latency 0,
/// 10 s) with an L2CAP Connection Parameter Update Request when the central chose others
/// (`requestsPreferredParameters: false` turns that off).
public final class EmulatedSensorTag: GATTVirtualPeripheral {
    public let address: BluetoothAddress
    public let addressType = AddressType.public
    public let advertisingData: [UInt8]
    public let scanResponseData: [UInt8]
    public let isConnectable = true
    /// The GATT side (database, values, connection).
    public let peripheral: GATTPeripheral
    let firmware: SensorTagFirmware

    /// The default address: TI's OUI 54:6C:0E.
    public static let defaultAddress = BluetoothAddress("54:6C:0E:9A:3B:01")!

    public init(
        address: BluetoothAddress = EmulatedSensorTag.defaultAddress, clock: any BluetoothClock = SystemClock(),
        requestsPreferredParameters: Bool = true, logger: Logger = .disabled
    ) throws(GATTError) {
        self.address = address
        // Flags (LE General Discoverable, BR/EDR not supported), incomplete 16-bit list: AA80.
        advertisingData = [0x02, 0x01, 0x06, 0x03, 0x02, 0x80, 0xAA]
        let name = Array(SensorTagDatabase.deviceName.utf8)
        // Complete Local Name, Tx Power 0 dBm, Peripheral Connection Interval Range 100–200 ms.
        scanResponseData =
            [UInt8(name.count + 1), 0x09] + name + [0x02, 0x0A, 0x00] + [0x05, 0x12, 0x50, 0x00, 0xA0, 0x00]
        let database = try SensorTagDatabase.database(address: address)
        firmware = SensorTagFirmware(
            database: database, clock: clock, requestsPreferredParameters: requestsPreferredParameters)
        peripheral = GATTPeripheral(
            database: database, rxMTU: ATTPDU.defaultLEMTU, firmware: firmware, clock: clock, logger: logger)
    }


    /// Sets the Simple Keys state (FFE1: bit 0 user, bit 1 power, bit 2 reed relay) and
    /// notifies it when the client subscribed. Press, then release with all false.
    public func press(user: Bool = false, power: Bool = false, reed: Bool = false) async {
        let state: UInt8 = (user ? 0x01 : 0) | (power ? 0x02 : 0) | (reed ? 0x04 : 0)
        try? await peripheral.updateValue([state], handle: firmware.handles.keys)
    }

    /// Sets the battery level (2A19), notified when subscribed.
    public func setBatteryLevel(_ percent: UInt8) async {
        try? await peripheral.updateValue([min(percent, 100)], handle: firmware.handles.battery)
    }

    /// Whether `sensor` is switched on.
    public func isEnabled(_ sensor: SensorTag.Sensor) async -> Bool { await firmware.isEnabled(sensor) }
}

/// TI's sensor firmware behind ``EmulatedSensorTag``.
actor SensorTagFirmware: GATTPeripheralFirmware {
    struct SensorHandles: Sendable {
        var data: UInt16
        var configuration: UInt16
        var period: UInt16
    }

    struct Handles: Sendable {
        var sensors: [SensorTag.Sensor: SensorHandles]
        var keys: UInt16
        var battery: UInt16
        var connectionParameters: UInt16
        var connectionParametersRequest: UInt16
        var disconnectRequest: UInt16
        var ioData: UInt16
        var ioConfiguration: UInt16
    }

    struct SensorState {
        var enabled = false
        var period: UInt8
        var sample = 0
        var timer: ScheduledTimer?
        var generation = 0
        var accelerometerRange = SensorTag.AccelerometerRange.g2
    }

    /// IO self-test result with every component passing.
    static let selfTestPassed: UInt8 = 0x7F

    /// TI's "invalid range" application error for a period below the minimum.
    static let periodOutOfRange = ATTErrorCode(rawValue: 0x80)

    /// TI's preferred connection parameters (GAP 2A04): 100–200 ms, latency 0, 10 s.
    static let preferred = ConnectionParameterUpdateRequest(
        intervalMin: 0x0050, intervalMax: 0x00A0, peripheralLatency: 0, timeoutMultiplier: 0x03E8)

    nonisolated let handles: Handles
    private let clock: any BluetoothClock
    private let requestsPreferredParameters: Bool
    private var connectionGeneration = 0
    private var parameterTimer: ScheduledTimer?
    private var sensors: [SensorTag.Sensor: SensorState] = [:]
    private weak var peripheral: GATTPeripheral?

    init(database: AttributeDatabase, clock: any BluetoothClock, requestsPreferredParameters: Bool) {
        self.requestsPreferredParameters = requestsPreferredParameters
        func handle(_ uuid: BluetoothUUID) -> UInt16 { database.valueHandle(of: uuid) ?? 0 }
        var sensorHandles: [SensorTag.Sensor: SensorHandles] = [:]
        for sensor in SensorTagDatabase.periodicSensors {
            sensorHandles[sensor] = SensorHandles(
                data: handle(sensor.data), configuration: handle(sensor.configuration!), period: handle(sensor.period!))
            sensors[sensor] = SensorState(period: SensorTagDatabase.defaultPeriod(sensor))
        }
        handles = Handles(
            sensors: sensorHandles, keys: handle(.bit16(0xFFE1)), battery: handle(.bit16(0x2A19)),
            connectionParameters: handle(SensorTag.uuid(0xCCC1)),
            connectionParametersRequest: handle(SensorTag.uuid(0xCCC2)),
            disconnectRequest: handle(SensorTag.uuid(0xCCC3)), ioData: handle(SensorTag.uuid(0xAA65)),
            ioConfiguration: handle(SensorTag.uuid(0xAA66)))
        self.clock = clock
    }

    func isEnabled(_ sensor: SensorTag.Sensor) -> Bool { sensors[sensor]?.enabled ?? false }

    nonisolated func checkWrite(handle: UInt16, value: [UInt8]) -> ATTErrorCode? {
        for (sensor, sensorHandles) in handles.sensors where sensorHandles.period == handle {
            if let period = value.first, value.count == 1, period < sensor.minimumPeriod {
                return Self.periodOutOfRange
            }
        }
        return nil
    }

    func handle(_ event: GATTPeripheralEvent, peripheral: GATTPeripheral) async {
        self.peripheral = peripheral
        switch event {
        case .connected(let parameters):
            try? await peripheral.setValue(Self.encode(parameters), handle: handles.connectionParameters)
            connectionGeneration += 1
            let generation = connectionGeneration
            let preferred = Self.preferred
            if requestsPreferredParameters,
                !(preferred.intervalMin...preferred.intervalMax).contains(parameters.interval)
            {
                parameterTimer = clock.schedule(after: .seconds(1)) { [weak self, weak peripheral] in
                    guard let peripheral, await self?.isConnection(generation) == true else { return }
                    await peripheral.requestConnectionParameters(preferred)
                }
            }
        case .parametersChanged(let parameters):
            try? await peripheral.updateValue(Self.encode(parameters), handle: handles.connectionParameters)
        case .valueWritten(let handle, let value):
            await written(handle, value, peripheral)
        case .subscriptionChanged:
            break
        case .disconnected:
            connectionGeneration += 1
            parameterTimer?.cancel()
            parameterTimer = nil
            await resetAll(peripheral)
        }
    }

    private func isConnection(_ generation: Int) -> Bool { generation == connectionGeneration }

    /// CCC1's value: interval, latency, supervision timeout, little-endian.
    static func encode(_ p: VirtualLinkConnection.Parameters) -> [UInt8] {
        [
            UInt8(p.interval & 0xFF), UInt8(p.interval >> 8), UInt8(p.latency & 0xFF), UInt8(p.latency >> 8),
            UInt8(p.supervisionTimeout & 0xFF), UInt8(p.supervisionTimeout >> 8),
        ]
    }

    private func written(_ handle: UInt16, _ value: [UInt8], _ peripheral: GATTPeripheral) async {
        if handle == handles.disconnectRequest {
            // After the Write Response has gone out, as the real firmware terminates the link.
            _ = clock.schedule(after: .milliseconds(10)) { [weak peripheral] in await peripheral?.disconnect() }
            return
        }
        if handle == handles.connectionParametersRequest, value.count == 8 {
            func u16(_ i: Int) -> UInt16 { UInt16(value[i]) | UInt16(value[i + 1]) << 8 }
            await peripheral.requestConnectionParameters(
                ConnectionParameterUpdateRequest(
                    intervalMin: u16(0), intervalMax: u16(2), peripheralLatency: u16(4), timeoutMultiplier: u16(6)))
            return
        }
        if handle == handles.ioConfiguration, let mode = value.first {
            // 0 local, 1 remote (AA65 drives the LEDs and buzzer), 2 self-test: AA65 then
            // reads the test result, one bit per component (IR, humidity, light, pressure,
            // MPU, magnetometer, external flash), all passing.
            try? await peripheral.setValue([mode == 2 ? Self.selfTestPassed : 0x00], handle: handles.ioData)
            return
        }
        for (sensor, sensorHandles) in handles.sensors {
            if handle == sensorHandles.configuration {
                let on: Bool
                if sensor == .movement {
                    on = (value.first ?? 0) & 0x7F != 0
                    if value.count > 1 {
                        sensors[sensor]?.accelerometerRange = SensorTag.AccelerometerRange(rawValue: value[1] & 0x03)!
                    }
                } else {
                    on = value.first == 0x01
                }
                await configure(sensor, on: on, peripheral)
            } else if handle == sensorHandles.period, let period = value.first {
                sensors[sensor]?.period = period
                // A running sensor takes the new period from now.
                if sensors[sensor]?.enabled == true { schedule(sensor) }
            }
        }
    }

    private func configure(_ sensor: SensorTag.Sensor, on: Bool, _ peripheral: GATTPeripheral) async {
        guard let state = sensors[sensor] else { return }
        if on {
            guard !state.enabled else { return }
            sensors[sensor]?.enabled = true
            schedule(sensor)
        } else {
            stop(sensor)
            if let data = handles.sensors[sensor]?.data {
                try? await peripheral.setValue(
                    [UInt8](repeating: 0, count: SensorTagDatabase.dataLength(sensor)), handle: data)
            }
        }
    }

    /// The next sample one period from now.
    private func schedule(_ sensor: SensorTag.Sensor) {
        guard var state = sensors[sensor] else { return }
        state.timer?.cancel()
        state.generation += 1
        let generation = state.generation
        state.timer = clock.schedule(after: .milliseconds(10 * Int(state.period))) { [weak self] in
            await self?.sample(sensor, generation: generation)
        }
        sensors[sensor] = state
    }

    private func stop(_ sensor: SensorTag.Sensor) {
        sensors[sensor]?.timer?.cancel()
        sensors[sensor]?.timer = nil
        sensors[sensor]?.generation += 1
        sensors[sensor]?.enabled = false
    }

    private func sample(_ sensor: SensorTag.Sensor, generation: Int) async {
        guard let state = sensors[sensor], state.enabled, state.generation == generation,
            let peripheral, let data = handles.sensors[sensor]?.data
        else { return }
        sensors[sensor]?.sample += 1
        let raw = SensorTagReadings.raw(sensor, sample: state.sample, accelerometerRange: state.accelerometerRange)
        schedule(sensor)
        try? await peripheral.updateValue(raw, handle: data)
    }

    /// What a disconnect does: every sensor off, data zero, default periods, IO local.
    private func resetAll(_ peripheral: GATTPeripheral) async {
        for sensor in SensorTagDatabase.periodicSensors {
            stop(sensor)
            sensors[sensor] = SensorState(period: SensorTagDatabase.defaultPeriod(sensor))
            guard let sensorHandles = handles.sensors[sensor] else { continue }
            let length = SensorTagDatabase.dataLength(sensor)
            try? await peripheral.setValue([UInt8](repeating: 0, count: length), handle: sensorHandles.data)
            try? await peripheral.setValue(
                [UInt8](repeating: 0, count: sensor == .movement ? 2 : 1), handle: sensorHandles.configuration)
            try? await peripheral.setValue([SensorTagDatabase.defaultPeriod(sensor)], handle: sensorHandles.period)
        }
        try? await peripheral.setValue([0x00], handle: handles.ioData)
        try? await peripheral.setValue([0x00], handle: handles.ioConfiguration)
        try? await peripheral.setValue([0x00], handle: handles.keys)
    }
}
