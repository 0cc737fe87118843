import ATT
import Bluetooth
import GATT
import HCI
import L2CAP
import Synchronization

/// An emulated heart-rate monitor (`sim:heartrate`): the Heart Rate Service (a measurement
/// notified every `period` while a central has notifications on, the body sensor location, the
/// control point that resets the energy expended), Battery and Device Information. The
/// measurements follow a fixed sequence (``measurement(_:)``), so a test knows each value it
/// should receive. A random static address; the two service UUIDs in its advertising data, its
/// name in the scan response.
public final class EmulatedHeartRateMonitor: GATTVirtualPeripheral {
    public static let defaultAddress = BluetoothAddress("D1:7E:A8:70:00:01")!
    public static let heartRateService: BluetoothUUID = 0x180D
    public static let measurementUUID: BluetoothUUID = 0x2A37
    public static let bodySensorLocationUUID: BluetoothUUID = 0x2A38
    public static let controlPointUUID: BluetoothUUID = 0x2A39
    public static let name = "Heart Rate Monitor"

    public let address: BluetoothAddress
    public let addressType = AddressType.random
    public let advertisingData: [UInt8]
    public let scanResponseData: [UInt8]
    public let isConnectable = true
    public let peripheral: GATTPeripheral
    let firmware: HeartRateFirmware

    public init(
        address: BluetoothAddress = EmulatedHeartRateMonitor.defaultAddress, period: Duration = .milliseconds(250),
        clock: any BluetoothClock = SystemClock(), logger: Logger = .disabled
    ) throws(GATTError) {
        self.address = address
        // Flags 0x06, Complete List of 16-bit Service UUIDs (180D, 180F); the name in the scan response.
        advertisingData = [0x02, 0x01, 0x06, 0x05, 0x03, 0x0D, 0x18, 0x0F, 0x18]
        scanResponseData = [UInt8(Self.name.utf8.count + 1), 0x09] + Array(Self.name.utf8)
        let database = try AttributeDatabase(services: Self.services())
        firmware = HeartRateFirmware(
            measurement: database.valueHandle(of: Self.measurementUUID) ?? 0,
            controlPoint: database.valueHandle(of: Self.controlPointUUID) ?? 0, period: period, clock: clock)
        peripheral = GATTPeripheral(
            database: database, rxMTU: ATTPDU.defaultLEMTU, firmware: firmware, clock: clock, logger: logger)
    }

    /// The `index`-th measurement it notifies (from 0): a heart rate between 60 and 99 bpm,
    /// sensor contact detected, the energy expended (kJ since the last reset) in every tenth,
    /// one RR-Interval (two in every fifth), 60 / rate seconds each.
    public static func measurement(_ index: Int, energy: Int) -> HeartRateMeasurement {
        let rate = 60 + (index * 7) % 40
        let interval = (60.0 / Double(rate) * 1024).rounded() / 1024
        return HeartRateMeasurement(
            heartRate: rate, sensorContact: .detected, energyExpended: index % 10 == 0 ? energy : nil,
            rrIntervals: index % 5 == 0 ? [interval, interval] : [interval])
    }

    /// GAP, GATT, Heart Rate, Battery, Device Information.
    public static func services() -> [ServiceDefinition] {
        return [
            // Appearance: Heart Rate Sensor, Heart Rate Belt (0x0341).
            StandardServices.genericAccess(deviceName: name, appearance: 0x0341),
            StandardServices.genericAttributeWithServiceChangedOnly(),
            ServiceDefinition(
                uuid: heartRateService,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: measurementUUID, properties: [.notify], value: [], maximumLength: 20,
                        descriptors: [.clientConfiguration()]),
                    CharacteristicDefinition(
                        uuid: bodySensorLocationUUID, properties: [.read], value: BodySensorLocation.chest.encoded(),
                        maximumLength: 1, isFixedLength: true),
                    CharacteristicDefinition(
                        uuid: controlPointUUID, properties: [.write], value: [0], maximumLength: 1, isFixedLength: true),
                ]),
            ServiceDefinition(
                uuid: .bit16(0x180F),
                characteristics: [
                    CharacteristicDefinition(
                        uuid: .bit16(0x2A19), properties: [.read, .notify], value: [87], maximumLength: 1,
                        isFixedLength: true, descriptors: [.clientConfiguration()])
                ]),
            ServiceDefinition(
                uuid: .bit16(0x180A),
                characteristics: [.text(0x2A29, "SwiftBLEHost"), .text(0x2A24, "HRM-1"), .text(0x2A26, "1.0")]),
        ]
    }

    /// Measurements notified so far.
    public var sent: Int { firmware.current.sent }
    /// Energy Expended resets (control point 0x01) so far.
    public var resets: Int { firmware.current.resets }

}

/// The monitor's firmware: while notifications are on, each period pushes the next measurement
/// of the sequence (``PeriodicPush``); the control point's Reset Energy Expended.
final class HeartRateFirmware: GATTPeripheralFirmware {
    struct Counts: Sendable {
        var sent = 0
        var energy = 0
        var resets = 0
    }

    let measurement: UInt16
    let controlPoint: UInt16
    /// Shared with the loop's tick (a class: the tick is made before `self` is).
    private let counts = SharedState(Counts())
    private let loop: PeriodicPush

    init(measurement: UInt16, controlPoint: UInt16, period: Duration, clock: any BluetoothClock) {
        self.measurement = measurement
        self.controlPoint = controlPoint
        let counts = counts
        loop = PeriodicPush(period: period, clock: clock) { peripheral in
            let value = counts.lock.withLock { counts in
                counts.energy += 1
                return EmulatedHeartRateMonitor.measurement(counts.sent, energy: counts.energy)
            }
            let outcome = try? await peripheral.push(value.encoded(), handle: measurement, indication: false)
            guard outcome == .sent else { return false }
            counts.lock.withLock { $0.sent += 1 }
            return true
        }
    }

    var current: Counts { counts.lock.withLock { $0 } }

    /// Heart Rate Service 1.0, §3.3.1: only Reset Energy Expended (0x01); anything else is
    /// Control Point Not Supported (0x80).
    func checkWrite(handle: UInt16, value: [UInt8]) -> ATTErrorCode? {
        guard handle == controlPoint else { return nil }
        return value == [0x01] ? nil : ATTErrorCode(rawValue: 0x80)
    }

    func handle(_ event: GATTPeripheralEvent, peripheral: GATTPeripheral) async {
        switch event {
        case .subscriptionChanged(let valueHandle, let configuration) where valueHandle == measurement:
            if configuration.contains(.notifications) { loop.start(peripheral) } else { loop.halt() }
        case .valueWritten(let handle, [0x01]) where handle == controlPoint:
            counts.lock.withLock {
                $0.energy = 0
                $0.resets += 1
            }
        case .disconnected:
            loop.halt()
        default:
            break
        }
    }
}
