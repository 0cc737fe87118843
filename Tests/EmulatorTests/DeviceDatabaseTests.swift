import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import Testing

@Suite("Emulator: emulated databases against devices.md")
struct EmulatorDeviceDatabaseTests {
    static func ti(_ short: UInt16) -> BluetoothUUID { SensorTag.uuid(short) }

    @Test func sensorTagHasEveryDocumentedService() throws {
        let database = try SensorTagDatabase.database(address: EmulatedSensorTag.defaultAddress).model
        let expected: [BluetoothUUID] = [
            .bit16(0x1800), .bit16(0x1801), .bit16(0x180A), .bit16(0x180F), Self.ti(0xAA00), Self.ti(0xAA20),
            Self.ti(0xAA40), Self.ti(0xAA70), Self.ti(0xAA80), Self.ti(0xAA64), .bit16(0xFFE0), Self.ti(0xAC00),
            Self.ti(0xCCC0), Self.ti(0xFFC0),
        ]
        #expect(database.services.map(\.uuid) == expected)
        #expect(database.services.allSatisfy { $0.isPrimary })
        // GAP 3, GATT 1, DIS 9, battery 1, five sensors × 3, IO 2, keys 1, register 3, connection control 3, OAD 2.
        #expect(database.characteristics.count == 40)
        #expect(database.characteristics.reduce(0) { $0 + $1.descriptors.count } == 38)
        try database.validate()
    }

    /// Characteristic UUIDs and properties per service, in order.
    static let sensorTagCharacteristics: [(UInt16?, BluetoothUUID, CharacteristicProperties)] = {
        var rows: [(UInt16?, BluetoothUUID, CharacteristicProperties)] = [
            (nil, .bit16(0x2A00), [.read]), (nil, .bit16(0x2A01), [.read]), (nil, .bit16(0x2A04), [.read]),
            (nil, .bit16(0x2A05), [.indicate]),
        ]
        for uuid: UInt16 in [0x2A23, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29, 0x2A2A, 0x2A50] {
            rows.append((nil, .bit16(uuid), [.read]))
        }
        rows.append((nil, .bit16(0x2A19), [.read, .notify]))
        for sensor in SensorTagDatabase.periodicSensors {
            rows.append((nil, sensor.data, [.read, .notify]))
            rows.append((nil, sensor.configuration!, [.read, .write]))
            rows.append((nil, sensor.period!, [.read, .write]))
        }
        rows += [
            (nil, ti(0xAA65), [.read, .write]), (nil, ti(0xAA66), [.read, .write]), (nil, .bit16(0xFFE1), [.notify]),
            (nil, ti(0xAC01), [.read, .write, .notify]), (nil, ti(0xAC02), [.read, .write]),
            (nil, ti(0xAC03), [.read, .write]), (nil, ti(0xCCC1), [.read, .notify]), (nil, ti(0xCCC2), [.write]),
            (nil, ti(0xCCC3), [.write]), (nil, ti(0xFFC1), [.writeWithoutResponse, .write, .notify]),
            (nil, ti(0xFFC2), [.writeWithoutResponse, .write, .notify]),
        ]
        return rows
    }()

    @Test func sensorTagCharacteristicsHaveTIsUUIDsAndProperties() throws {
        let database = try SensorTagDatabase.database(address: EmulatedSensorTag.defaultAddress).model
        let actual = database.characteristics.map { ($0.uuid, $0.properties) }
        #expect(actual.map(\.0) == Self.sensorTagCharacteristics.map(\.1))
        #expect(actual.map(\.1) == Self.sensorTagCharacteristics.map(\.2))
    }

    @Test func sensorDataHasACCCDThenAUserDescription() throws {
        let database = try SensorTagDatabase.database(address: EmulatedSensorTag.defaultAddress).model
        for sensor in SensorTagDatabase.periodicSensors {
            let data = try database.characteristic(uuid: sensor.data)
            #expect(data.descriptors.map(\.uuid) == [.bit16(0x2902), .bit16(0x2901)], "\(sensor)")
            for uuid in [sensor.configuration!, sensor.period!] {
                let characteristic = try database.characteristic(uuid: uuid)
                #expect(characteristic.descriptors.map(\.uuid) == [.bit16(0x2901)])
            }
        }
        let keys = try database.characteristic(uuid: .bit16(0xFFE1))
        #expect(keys.descriptors.map(\.uuid) == [.bit16(0x2902), .bit16(0x2901)])
    }

    @Test func sensorTagValuesMatchTheDevice() throws {
        let database = try SensorTagDatabase.database(address: EmulatedSensorTag.defaultAddress)
        func value(_ uuid: BluetoothUUID) -> [UInt8]? {
            database.valueHandle(of: uuid).flatMap { database.attribute(at: $0)?.value }
        }
        #expect(value(.bit16(0x2A00)) == Array("CC2650 SensorTag".utf8))
        #expect(value(.bit16(0x2A29)) == Array("Texas Instruments".utf8))
        #expect(String(decoding: value(.bit16(0x2A26)) ?? [], as: UTF8.self).hasPrefix("1.40"))
        for sensor in SensorTagDatabase.periodicSensors {
            #expect(value(sensor.period!) == [sensor == .optical ? 80 : 100], "\(sensor) default period")
            #expect(value(sensor.data)?.count == SensorTagDatabase.dataLength(sensor))
        }
        #expect(value(SensorTag.Sensor.movement.configuration!)?.count == 2)
    }

    @Test func sensorTagAdvertisesAsTheRealOne() throws {
        let tag = try EmulatedSensorTag()
        #expect(tag.address.description.hasPrefix("54:6C:0E"))
        #expect(tag.addressType == .public)
        let advertising = AdvertisingData(tag.advertisingData).summary
        #expect(advertising.flags?.rawValue == 0x06)
        #expect(advertising.name == nil)
        #expect(AdvertisingData(tag.scanResponseData).summary.name == "CC2650 SensorTag")
        #expect(tag.advertisingData.count <= 31 && tag.scanResponseData.count <= 31)
    }

    @Test func bluefruitHasTheNordicUARTAndDeviceInformation() throws {
        let database = try AttributeDatabase(services: EmulatedBluefruit.services())
        let model = database.model
        #expect(model.services.map(\.uuid) == [.bit16(0x1800), .bit16(0x1801), NordicUART.service, .bit16(0x180A)])
        let tx = try model.characteristic(uuid: NordicUART.tx)
        let rx = try model.characteristic(uuid: NordicUART.rx)
        #expect(tx.properties == [.notify])
        #expect(tx.descriptors.map(\.uuid) == [.bit16(0x2902)])
        #expect(rx.properties == [.write, .writeWithoutResponse])
        func text(_ uuid: UInt16) -> String? {
            database.valueHandle(of: .bit16(uuid)).flatMap { database.attribute(at: $0) }.map {
                String(decoding: $0.value, as: UTF8.self)
            }
        }
        #expect(text(0x2A29) == "Adafruit Industries")
        #expect(text(0x2A24) == "BLEFRIEND32")
        #expect(text(0x2A26)?.hasPrefix("0.8") == true)
        #expect(text(0x2A28) == "S110 8.0.0, 0.2")
        #expect(text(0x2A00) == "Adafruit Bluefruit LE")
    }

    @Test func bluefruitAdvertisesTheUARTFromARandomStaticAddress() throws {
        let board = try EmulatedBluefruit()
        #expect(board.addressType == .random)
        #expect(board.address.rawValue >> 46 == 0b11, "random static: two top bits set")
        let advertising = AdvertisingData(board.advertisingData).summary
        #expect(advertising.serviceUUIDs.contains(NordicUART.service))
        #expect(AdvertisingData(board.scanResponseData).summary.name == "Adafruit Bluefruit LE")
    }

    /// TI's conversions applied to the emulated raw values give back the physical values.
    @Test(arguments: SensorTagDatabase.periodicSensors)
    func readingsRoundTripThroughTIsConversions(_ sensor: SensorTag.Sensor) throws {
        for n in [0, 1, 17, 250] {
            let raw = SensorTagReadings.raw(sensor, sample: n)
            #expect(raw.count == SensorTagDatabase.dataLength(sensor))
            let reading = try #require(SensorTag.decode(sensor, raw))
            let physical = SensorTagReadings.physical(sensor, sample: n)
            switch reading {
            case .ir(let object, let ambient):
                #expect(abs(object - physical[0]) < 0.04 && abs(ambient - physical[1]) < 0.04)
            case .humidity(let temperature, let humidity):
                #expect(abs(temperature - physical[0]) < 0.01 && abs(humidity - physical[1]) < 0.01)
            case .barometer(let temperature, let pressure):
                #expect(abs(temperature - physical[0]) < 0.01 && abs(pressure - physical[1]) < 0.01)
            case .optical(let lux):
                #expect(abs(lux - physical[0]) / physical[0] < 0.002)
            case .movement(let gyro, let accel, let mag):
                #expect(abs(gyro.x - physical[0]) < 0.01 && abs(accel.z - physical[5]) < 0.001)
                #expect(abs(mag.z - physical[8]) <= 0.5)
            default:
                Issue.record("unexpected \(reading)")
            }
        }
        // Slowly varying: consecutive samples differ, but only a little.
        #expect(SensorTagReadings.raw(sensor, sample: 10) != SensorTagReadings.raw(sensor, sample: 11))
    }
}
