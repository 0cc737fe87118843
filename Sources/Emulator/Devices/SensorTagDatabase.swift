import Bluetooth
import GATT

/// The attribute database of a TI CC2650 SensorTag running firmware 1.4x, as
/// `../shared/notes/devices.md` documents it: GAP, GATT, Device Information, Battery, the five
/// sensors, IO, Simple Keys, Register, Connection Control and OAD. TI's own services use the
/// 128-bit base `F000xxxx-0451-4000-B000-000000000000`; every sensor characteristic carries a
/// Characteristic User Description, after the CCCD where there is one.
public enum SensorTagDatabase {
    /// The device name (GAP Device Name and the scan response's Complete Local Name).
    public static let deviceName = "CC2650 SensorTag"
    /// The firmware revision string (Device Information 2A26).
    public static let firmwareRevision = "1.40 (Mar 29 2017)"

    /// Period characteristics' default values (10 ms units), by sensor.
    public static func defaultPeriod(_ sensor: SensorTag.Sensor) -> UInt8 {
        sensor == .optical ? 80 : 100
    }

    /// Length of each sensor's data characteristic.
    public static func dataLength(_ sensor: SensorTag.Sensor) -> Int {
        switch sensor {
        case .ir, .humidity: return 4
        case .barometer: return 6
        case .optical: return 2
        case .movement: return 18
        case .keys, .battery: return 1
        }
    }

    /// The labels TI's firmware gives the data, configuration and period characteristics.
    static func labels(_ sensor: SensorTag.Sensor) -> (data: String, configuration: String, period: String) {
        switch sensor {
        case .ir: return ("IR Temp. Data", "IR Temp. Conf.", "IR Temp. Period")
        case .humidity: return ("Humid. Data", "Humid. Conf.", "Humid. Period")
        case .barometer: return ("Barometer Data", "Barometer Conf.", "Barometer Period")
        case .optical: return ("Light Intensity Data", "Light Intensity Conf.", "Light Intensity Period")
        case .movement: return ("Movement Data", "Movement Conf.", "Movement Period")
        case .keys, .battery: return ("", "", "")
        }
    }

    /// The sensors with data, configuration and period characteristics.
    public static let periodicSensors: [SensorTag.Sensor] = [.ir, .humidity, .barometer, .optical, .movement]

    /// The service definitions, in the firmware's order.
    /// - Parameter address: the public address (System ID and nothing else derive from it).
    public static func services(address: BluetoothAddress) -> [ServiceDefinition] {
        var services: [ServiceDefinition] = [
            genericAccess(),
            StandardServices.genericAttributeWithServiceChangedOnly(),
            deviceInformation(address: address),
            ServiceDefinition(
                uuid: .bit16(0x180F),
                characteristics: [
                    CharacteristicDefinition(
                        uuid: .bit16(0x2A19), properties: [.read, .notify], value: [100], maximumLength: 1,
                        isFixedLength: true, descriptors: [.clientConfiguration()])
                ]),
        ]
        services += periodicSensors.map(sensorService)
        services.append(io())
        services.append(simpleKeys())
        services.append(register())
        services.append(connectionControl())
        services.append(oad())
        return services
    }

    /// The database, handles assigned in order from 0x0001.
    public static func database(address: BluetoothAddress) throws(GATTError) -> AttributeDatabase {
        try AttributeDatabase(services: services(address: address))
    }

    static func genericAccess() -> ServiceDefinition {
        // Peripheral Preferred Connection Parameters: 100–200 ms interval, latency 0, 10 s.
        let preferred: [UInt8] = [0x50, 0x00, 0xA0, 0x00, 0x00, 0x00, 0xE8, 0x03]
        return ServiceDefinition(
            uuid: GATTUUID.genericAccess,
            characteristics: [
                CharacteristicDefinition(
                    uuid: GATTUUID.deviceName, properties: [.read], value: Array(deviceName.utf8), maximumLength: 20),
                CharacteristicDefinition(
                    uuid: GATTUUID.appearance, properties: [.read], value: [0x00, 0x00], maximumLength: 2,
                    isFixedLength: true),
                CharacteristicDefinition(
                    uuid: GATTUUID.peripheralPreferredConnectionParameters, properties: [.read], value: preferred,
                    maximumLength: 8, isFixedLength: true),
            ])
    }

    static func deviceInformation(address: BluetoothAddress) -> ServiceDefinition {
        // System ID: the address with 0xFFFE inserted in the middle (TI's derivation).
        let a = address.littleEndianBytes
        let systemID = [a[0], a[1], a[2], 0xFE, 0xFF, a[3], a[4], a[5]]
        return ServiceDefinition(
            uuid: .bit16(0x180A),
            characteristics: [
                CharacteristicDefinition(
                    uuid: .bit16(0x2A23), properties: [.read], value: systemID, maximumLength: 8, isFixedLength: true),
                .text(0x2A24, "CC2650 SensorTag"),
                .text(0x2A25, "N.A."),
                .text(0x2A26, firmwareRevision),
                .text(0x2A27, "PCB 1.2/1.3"),
                .text(0x2A28, "N.A."),
                .text(0x2A29, "Texas Instruments"),
                CharacteristicDefinition(
                    uuid: .bit16(0x2A2A), properties: [.read],
                    value: [0xFE, 0x00] + Array("experimental".utf8)),
                CharacteristicDefinition(
                    // Vendor ID source Bluetooth SIG, TI (0x000D), product 0x0000, version 0x0110.
                    uuid: .bit16(0x2A50), properties: [.read], value: [0x01, 0x0D, 0x00, 0x00, 0x00, 0x10, 0x01],
                    maximumLength: 7, isFixedLength: true),
            ])
    }

    static func sensorService(_ sensor: SensorTag.Sensor) -> ServiceDefinition {
        let labels = labels(sensor)
        let configurationLength = sensor == .movement ? 2 : 1
        var characteristics = [
            CharacteristicDefinition(
                uuid: sensor.data, properties: [.read, .notify],
                value: [UInt8](repeating: 0, count: dataLength(sensor)), maximumLength: dataLength(sensor),
                isFixedLength: true, descriptors: [.clientConfiguration(), .userDescription(labels.data)]),
            CharacteristicDefinition(
                uuid: sensor.configuration!, properties: [.read, .write],
                value: [UInt8](repeating: 0, count: configurationLength), maximumLength: configurationLength,
                isFixedLength: true, descriptors: [.userDescription(labels.configuration)]),
        ]
        characteristics.append(
            CharacteristicDefinition(
                uuid: sensor.period!, properties: [.read, .write], value: [defaultPeriod(sensor)], maximumLength: 1,
                isFixedLength: true, descriptors: [.userDescription(labels.period)]))
        return ServiceDefinition(uuid: sensor.service, characteristics: characteristics)
    }

    static func io() -> ServiceDefinition {
        ServiceDefinition(
            uuid: SensorTag.uuid(0xAA64),
            characteristics: [
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xAA65), properties: [.read, .write], value: [0x00], maximumLength: 1,
                    isFixedLength: true, descriptors: [.userDescription("IO Data")]),
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xAA66), properties: [.read, .write], value: [0x00], maximumLength: 1,
                    isFixedLength: true, descriptors: [.userDescription("IO Config")]),
            ])
    }

    static func simpleKeys() -> ServiceDefinition {
        ServiceDefinition(
            uuid: .bit16(0xFFE0),
            characteristics: [
                CharacteristicDefinition(
                    uuid: .bit16(0xFFE1), properties: [.notify], permissions: [], value: [0x00], maximumLength: 1,
                    isFixedLength: true, descriptors: [.clientConfiguration(), .userDescription("Key Press State")])
            ])
    }

    static func register() -> ServiceDefinition {
        ServiceDefinition(
            uuid: SensorTag.uuid(0xAC00),
            characteristics: [
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xAC01), properties: [.read, .write, .notify],
                    value: [0x00, 0x00, 0x00, 0x00], maximumLength: 4,
                    descriptors: [.clientConfiguration(), .userDescription("Register Data")]),
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xAC02), properties: [.read, .write], value: [0x01, 0x00, 0x00, 0x00, 0x00],
                    maximumLength: 5, isFixedLength: true, descriptors: [.userDescription("Register Address")]),
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xAC03), properties: [.read, .write], value: [0x00, 0x00], maximumLength: 2,
                    isFixedLength: true, descriptors: [.userDescription("Register Device ID")]),
            ])
    }

    static func connectionControl() -> ServiceDefinition {
        ServiceDefinition(
            uuid: SensorTag.uuid(0xCCC0),
            characteristics: [
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xCCC1), properties: [.read, .notify], value: [0, 0, 0, 0, 0, 0],
                    maximumLength: 6, isFixedLength: true,
                    descriptors: [.clientConfiguration(), .userDescription("Conn. Params")]),
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xCCC2), properties: [.write], value: [0, 0, 0, 0, 0, 0, 0, 0],
                    maximumLength: 8, isFixedLength: true, descriptors: [.userDescription("Conn. Params Req")]),
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xCCC3), properties: [.write], value: [0x00], maximumLength: 1,
                    isFixedLength: true, descriptors: [.userDescription("Disconnect Req")]),
            ])
    }

    static func oad() -> ServiceDefinition {
        ServiceDefinition(
            uuid: SensorTag.uuid(0xFFC0),
            characteristics: [
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xFFC1), properties: [.writeWithoutResponse, .write, .notify], value: [],
                    maximumLength: 16, descriptors: [.clientConfiguration(), .userDescription("Img Identify")]),
                CharacteristicDefinition(
                    uuid: SensorTag.uuid(0xFFC2), properties: [.writeWithoutResponse, .write, .notify], value: [],
                    maximumLength: 18, descriptors: [.clientConfiguration(), .userDescription("Img Block")]),
            ])
    }
}
