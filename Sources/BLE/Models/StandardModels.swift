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
