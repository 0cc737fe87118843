import Bluetooth
import GATT

// Standard SIG services as device-model services: declare them in a `BluetoothDevice`.

/// Battery Service (0x180F): the battery level in percent (0–100), notified where the device
/// supports it.
/// - SeeAlso: Battery Service 1.1, §3.1; GATT Specification Supplement, Battery Level (0x2A19)
public struct BatteryService: BluetoothService {
    public static let id: BluetoothUUID = 0x180F

    @Characteristic(id: 0x2A19, notify: true) public var level: UInt8?

    public init() {}
}

/// Device Information Service (0x180A): what the device is, each string as UTF-8.
/// - SeeAlso: Device Information Service 1.1, §3
public struct DeviceInformationService: BluetoothService {
    public static let id: BluetoothUUID = 0x180A

    @Characteristic(id: 0x2A29) public var manufacturerName: String?
    @Characteristic(id: 0x2A24) public var modelNumber: String?
    @Characteristic(id: 0x2A25) public var serialNumber: String?
    @Characteristic(id: 0x2A27) public var hardwareRevision: String?
    @Characteristic(id: 0x2A26) public var firmwareRevision: String?
    @Characteristic(id: 0x2A28) public var softwareRevision: String?
    @Characteristic(id: 0x2A23) public var systemID: SystemID?
    @Characteristic(id: 0x2A50) public var pnpID: PnPID?

    public init() {}
}

/// Heart Rate Service (0x180D): the measurement (notified), where the sensor sits, and the
/// control point (write 1 to reset the energy expended).
/// - SeeAlso: Heart Rate Service 1.0, §3
public struct HeartRateService: BluetoothService {
    public static let id: BluetoothUUID = 0x180D

    @Characteristic(id: 0x2A37, notify: true) public var measurement: HeartRateMeasurement?
    @Characteristic(id: 0x2A38) public var bodySensorLocation: BodySensorLocation?
    @Characteristic(id: 0x2A39, autoRead: false) public var controlPoint: UInt8?

    /// Control Point: Reset Energy Expended (0x01).
    public static let resetEnergyExpended: UInt8 = 0x01

    public init() {}
}

/// Health Thermometer Service (0x1809): the temperature measurement (indicated), where it is
/// taken, the intermediate temperature (notified while measuring; enable it with
/// `$intermediateTemperature.enableNotifications()`), and the measurement interval in seconds.
/// - SeeAlso: Health Thermometer Service 1.0, §3
public struct HealthThermometerService: BluetoothService {
    public static let id: BluetoothUUID = 0x1809

    @Characteristic(id: 0x2A1C, notify: true, autoRead: false) public var measurement: TemperatureMeasurement?
    @Characteristic(id: 0x2A1D) public var temperatureType: TemperatureType?
    @Characteristic(id: 0x2A1E, autoRead: false) public var intermediateTemperature: TemperatureMeasurement?
    @Characteristic(id: 0x2A21) public var measurementInterval: UInt16?

    public init() {}
}

/// Blood Pressure Service (0x1810): the measurement (indicated), the intermediate cuff pressure
/// (notified while measuring; enable it with `$intermediateCuffPressure.enableNotifications()`),
/// and what the monitor detects.
/// - SeeAlso: Blood Pressure Service 1.1, §3
public struct BloodPressureService: BluetoothService {
    public static let id: BluetoothUUID = 0x1810

    @Characteristic(id: 0x2A35, notify: true, autoRead: false) public var measurement: BloodPressureMeasurement?
    @Characteristic(id: 0x2A36, autoRead: false) public var intermediateCuffPressure: BloodPressureMeasurement?
    @Characteristic(id: 0x2A49) public var feature: BloodPressureFeature?

    public init() {}
}

/// Weight Scale Service (0x181D): what the scale supports and its measurements (indicated).
/// - SeeAlso: Weight Scale Service 1.0, §3
public struct WeightScaleService: BluetoothService {
    public static let id: BluetoothUUID = 0x181D

    @Characteristic(id: 0x2A9E) public var feature: WeightScaleFeature?
    @Characteristic(id: 0x2A9D, notify: true, autoRead: false) public var measurement: WeightMeasurement?

    public init() {}
}

/// Current Time Service (0x1805): the device's time (read, notified when it changes, writable
/// where the server allows), its time zone and DST, and where its time comes from.
/// - SeeAlso: Current Time Service 1.1, §3
public struct CurrentTimeService: BluetoothService {
    public static let id: BluetoothUUID = 0x1805

    @Characteristic(id: 0x2A2B, notify: true) public var currentTime: CurrentTime?
    @Characteristic(id: 0x2A0F) public var localTimeInformation: LocalTimeInformation?
    @Characteristic(id: 0x2A14) public var referenceTimeInformation: ReferenceTimeInformation?

    public init() {}
}

/// Generic Access (0x1800): the name, the appearance, the preferred connection parameters, and
/// whether the device resolves private addresses as a central.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §12
public struct GenericAccessService: BluetoothService {
    public static let id: BluetoothUUID = 0x1800

    @Characteristic(id: 0x2A00) public var deviceName: String?
    @Characteristic(id: 0x2A01) public var appearance: Appearance?
    @Characteristic(id: 0x2A04) public var preferredConnectionParameters: PreferredConnectionParameters?
    @Characteristic(id: 0x2AA6) public var centralAddressResolution: Bool?

    public init() {}
}

// MARK: - The TI CC2650 SensorTag

/// What the SensorTag's sensor services share: data (notified once enabled), an on/off switch
/// and a period. `start` writes the period (when given) and the switch, then enables the data's
/// notifications; `stop` undoes both.
public protocol SensorTagSensorService: BluetoothService {
    associatedtype Reading: ByteDecodable
    static var sensor: SensorTag.Sensor { get }
    var dataAccess: CharacteristicAccess<Reading> { get }
    var periodAccess: CharacteristicAccess<SensorTag.Period> { get }
    /// Switches the sensor on or off (its configuration characteristic).
    func switchSensor(on: Bool) async throws(BLEError)
}

extension SensorTagSensorService {
    /// Switches the sensor on (at `periodMilliseconds`, 10 ms steps, when given) and enables its
    /// notifications.
    public func start(periodMilliseconds: Int? = nil) async throws(BLEError) {
        if let periodMilliseconds { try await setPeriod(periodMilliseconds) }
        try await switchSensor(on: true)
        try await dataAccess.enableNotifications()
    }

    /// Writes the period: `milliseconds` from the sensor's minimum to 2550, in steps of 10.
    public func setPeriod(_ milliseconds: Int) async throws(BLEError) {
        let minimum = Int(Self.sensor.minimumPeriod) * 10
        guard milliseconds >= minimum, let period = SensorTag.Period(milliseconds: milliseconds) else {
            throw BLEError(
                "the \(Self.sensor.rawValue) sensor's period is \(minimum)–2550 ms in steps of 10, not \(milliseconds)",
                kind: "usage", exitCode: .usage)
        }
        try await periodAccess.write(period)
    }

    /// Switches the sensor off and its notifications too.
    public func stop() async throws(BLEError) {
        try await switchSensor(on: false)
        try await dataAccess.enableNotifications(false)
    }
}

/// IR temperature (TMP007): object and ambient temperature.
public struct SensorTagIRTemperatureService: SensorTagSensorService {
    public static let id = SensorTag.uuid(0xAA00)
    public static let sensor = SensorTag.Sensor.ir

    @Characteristic(id: SensorTag.uuid(0xAA01), autoRead: false) public var data: SensorTag.IRTemperature?
    @Characteristic(id: SensorTag.uuid(0xAA02)) public var enabled: Bool?
    @Characteristic(id: SensorTag.uuid(0xAA03)) public var period: SensorTag.Period?

    public init() {}
    public var dataAccess: CharacteristicAccess<SensorTag.IRTemperature> { $data }
    public var periodAccess: CharacteristicAccess<SensorTag.Period> { $period }
    public func switchSensor(on: Bool) async throws(BLEError) { try await $enabled.write(on) }
}

/// Humidity (HDC1000): temperature and relative humidity.
public struct SensorTagHumidityService: SensorTagSensorService {
    public static let id = SensorTag.uuid(0xAA20)
    public static let sensor = SensorTag.Sensor.humidity

    @Characteristic(id: SensorTag.uuid(0xAA21), autoRead: false) public var data: SensorTag.Humidity?
    @Characteristic(id: SensorTag.uuid(0xAA22)) public var enabled: Bool?
    @Characteristic(id: SensorTag.uuid(0xAA23)) public var period: SensorTag.Period?

    public init() {}
    public var dataAccess: CharacteristicAccess<SensorTag.Humidity> { $data }
    public var periodAccess: CharacteristicAccess<SensorTag.Period> { $period }
    public func switchSensor(on: Bool) async throws(BLEError) { try await $enabled.write(on) }
}

/// Barometer (BMP280): temperature and pressure.
public struct SensorTagBarometerService: SensorTagSensorService {
    public static let id = SensorTag.uuid(0xAA40)
    public static let sensor = SensorTag.Sensor.barometer

    @Characteristic(id: SensorTag.uuid(0xAA41), autoRead: false) public var data: SensorTag.Barometer?
    @Characteristic(id: SensorTag.uuid(0xAA42)) public var enabled: Bool?
    @Characteristic(id: SensorTag.uuid(0xAA44)) public var period: SensorTag.Period?

    public init() {}
    public var dataAccess: CharacteristicAccess<SensorTag.Barometer> { $data }
    public var periodAccess: CharacteristicAccess<SensorTag.Period> { $period }
    public func switchSensor(on: Bool) async throws(BLEError) { try await $enabled.write(on) }
}

/// Optical (OPT3001): light in lux.
public struct SensorTagOpticalService: SensorTagSensorService {
    public static let id = SensorTag.uuid(0xAA70)
    public static let sensor = SensorTag.Sensor.optical

    @Characteristic(id: SensorTag.uuid(0xAA71), autoRead: false) public var data: SensorTag.Optical?
    @Characteristic(id: SensorTag.uuid(0xAA72)) public var enabled: Bool?
    @Characteristic(id: SensorTag.uuid(0xAA73)) public var period: SensorTag.Period?

    public init() {}
    public var dataAccess: CharacteristicAccess<SensorTag.Optical> { $data }
    public var periodAccess: CharacteristicAccess<SensorTag.Period> { $period }
    public func switchSensor(on: Bool) async throws(BLEError) { try await $enabled.write(on) }
}

/// Movement (MPU9250): gyroscope, accelerometer, magnetometer. `start` switches every axis on,
/// the accelerometer at ±8 G unless `start(periodMilliseconds:accelerometerRange:)` says
/// otherwise (the data's `accelG(range:)` takes the same range).
public struct SensorTagMovementService: SensorTagSensorService {
    public static let id = SensorTag.uuid(0xAA80)
    public static let sensor = SensorTag.Sensor.movement

    @Characteristic(id: SensorTag.uuid(0xAA81), autoRead: false) public var data: SensorTag.Movement?
    @Characteristic(id: SensorTag.uuid(0xAA82)) public var configuration: SensorTag.MovementConfiguration?
    @Characteristic(id: SensorTag.uuid(0xAA83)) public var period: SensorTag.Period?

    public init() {}
    public var dataAccess: CharacteristicAccess<SensorTag.Movement> { $data }
    public var periodAccess: CharacteristicAccess<SensorTag.Period> { $period }
    public func switchSensor(on: Bool) async throws(BLEError) {
        try await $configuration.write(on ? .allAxes(range: .g8) : .off)
    }

    /// Every axis on with the accelerometer at `accelerometerRange`, at `periodMilliseconds`
    /// when given; notifications on.
    public func start(periodMilliseconds: Int? = nil, accelerometerRange: SensorTag.AccelerometerRange) async throws(BLEError) {
        if let periodMilliseconds { try await setPeriod(periodMilliseconds) }
        try await $configuration.write(.allAxes(range: accelerometerRange))
        try await $data.enableNotifications()
    }
}

/// The simple keys (0xFFE0): user and power key, reed relay; always on, notified.
public struct SensorTagKeysService: BluetoothService {
    public static let id: BluetoothUUID = 0xFFE0

    @Characteristic(id: 0xFFE1, notify: true, autoRead: false) public var keys: SensorTag.Keys?

    public init() {}
}

/// The TI CC2650 SensorTag (firmware 1.4x): every sensor typed with TI's conversions, its
/// switch and period; the battery and device information where the firmware serves them.
///
/// ```swift
/// let tag = try await adapter.connect(to: advertisement, as: CC2650SensorTag.self)
/// try await tag.ir.start(periodMilliseconds: 500)
/// for await sample in tag.ir.$data.values() { print(sample.objectC) }
/// ```
public struct CC2650SensorTag: BluetoothDevice {
    @Service public var ir = SensorTagIRTemperatureService()
    @Service public var humidity = SensorTagHumidityService()
    @Service public var barometer = SensorTagBarometerService()
    @Service public var optical = SensorTagOpticalService()
    @Service public var movement = SensorTagMovementService()
    @Service public var keys = SensorTagKeysService()
    @Service(required: false) public var battery = BatteryService()
    @Service(required: false) public var deviceInformation = DeviceInformationService()

    public init() {}
}

// MARK: - The Nordic UART (Adafruit Bluefruit LE)

/// The Nordic UART Service: write to RX, receive TX notifications. `send` splits what it sends
/// into ATT_MTU − 3 octets, never inside a UTF-8 sequence.
public struct NordicUARTService: BluetoothService {
    public static let id = NordicUART.service

    @Characteristic(id: NordicUART.rx, autoRead: false) public var rx: [UInt8]?
    @Characteristic(id: NordicUART.tx, notify: true, autoRead: false) public var tx: [UInt8]?

    public init() {}

    /// Sends `bytes` to RX in chunks of ATT_MTU − 3: Write Commands where RX takes them (unless
    /// `withResponse`), else Write Requests.
    public func send(_ bytes: [UInt8], withResponse: Bool = false) async throws(BLEError) {
        let binding = try $rx.box.require("sending to")
        let noResponse = !withResponse && binding.characteristic.properties.contains(.writeWithoutResponse)
        for chunk in NordicUART.chunks(bytes, mtu: await binding.peripheral.mtu) {
            try await $rx.write(chunk, withResponse: !noResponse)
        }
    }

    /// Sends `text` as UTF-8.
    public func send(_ text: String, withResponse: Bool = false) async throws(BLEError) {
        try await send(Array(text.utf8), withResponse: withResponse)
    }
}

/// An Adafruit Bluefruit LE UART board (or any Nordic UART peripheral).
public struct BluefruitUART: BluetoothDevice {
    @Service public var uart = NordicUARTService()
    @Service(required: false) public var deviceInformation = DeviceInformationService()

    public init() {}
}
