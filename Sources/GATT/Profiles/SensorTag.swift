import Bluetooth

/// The TI CC2650 SensorTag's GATT profile (firmware 1.4x): service and characteristic UUIDs in
/// TI's 128-bit base `F000xxxx-0451-4000-B000-000000000000`, and TI's conversions of the raw
/// sensor data to units. Handles differ between firmware versions: always discover them.
public enum SensorTag {
    /// `F000xxxx-0451-4000-B000-000000000000` for a 16-bit TI short id.
    public static func uuid(_ short: UInt16) -> BluetoothUUID {
        .bit128(UInt128(0xF000_0000_0451_4000_B000_0000_0000_0000) | UInt128(short) << 96)
    }

    /// The TI short id of a UUID in TI's base, if it is one.
    public static func shortID(_ uuid: BluetoothUUID) -> UInt16? {
        let value = uuid.uuid128
        let base = UInt128(0xF000_0000_0451_4000_B000_0000_0000_0000)
        guard value & ~(UInt128(0xFFFF) << 96) == base else { return nil }
        return UInt16(truncatingIfNeeded: value >> 96)
    }

    /// One sensor of the SensorTag: its service and its data, configuration and period
    /// characteristics.
    public enum Sensor: String, CaseIterable, Hashable, Sendable {
        case ir, humidity, barometer, optical, movement, keys, battery

        /// The service that holds the sensor.
        public var service: BluetoothUUID {
            switch self {
            case .ir: return SensorTag.uuid(0xAA00)
            case .humidity: return SensorTag.uuid(0xAA20)
            case .barometer: return SensorTag.uuid(0xAA40)
            case .optical: return SensorTag.uuid(0xAA70)
            case .movement: return SensorTag.uuid(0xAA80)
            case .keys: return .bit16(0xFFE0)
            case .battery: return .bit16(0x180F)
            }
        }

        /// The data characteristic (READ + NOTIFY).
        public var data: BluetoothUUID {
            switch self {
            case .ir: return SensorTag.uuid(0xAA01)
            case .humidity: return SensorTag.uuid(0xAA21)
            case .barometer: return SensorTag.uuid(0xAA41)
            case .optical: return SensorTag.uuid(0xAA71)
            case .movement: return SensorTag.uuid(0xAA81)
            case .keys: return .bit16(0xFFE1)
            case .battery: return .bit16(0x2A19)
            }
        }

        /// The configuration characteristic (write `enableValue` to switch on, zeros to switch
        /// off); `nil` for keys and battery, which are always on.
        public var configuration: BluetoothUUID? {
            switch self {
            case .ir: return SensorTag.uuid(0xAA02)
            case .humidity: return SensorTag.uuid(0xAA22)
            case .barometer: return SensorTag.uuid(0xAA42)
            case .optical: return SensorTag.uuid(0xAA72)
            case .movement: return SensorTag.uuid(0xAA82)
            case .keys, .battery: return nil
            }
        }

        /// The period characteristic (units of 10 ms); `nil` where there is none.
        public var period: BluetoothUUID? {
            switch self {
            case .ir: return SensorTag.uuid(0xAA03)
            case .humidity: return SensorTag.uuid(0xAA23)
            case .barometer: return SensorTag.uuid(0xAA44)
            case .optical: return SensorTag.uuid(0xAA73)
            case .movement: return SensorTag.uuid(0xAA83)
            case .keys, .battery: return nil
            }
        }

        /// What to write to the configuration to switch the sensor on. Movement: every axis of
        /// gyro, accelerometer and magnetometer (bits 0–6), accelerometer range from `range`.
        public func enableValue(accelerometerRange: AccelerometerRange = .g8) -> [UInt8] {
            switch self {
            case .movement: return [0x7F, accelerometerRange.rawValue]
            default: return [0x01]
            }
        }

        /// What to write to switch it off.
        public var disableValue: [UInt8] { self == .movement ? [0x00, 0x00] : [0x00] }

        /// Shortest period the firmware accepts, in 10 ms units.
        public var minimumPeriod: UInt8 {
            switch self {
            case .ir: return 30
            default: return 10
            }
        }
    }

    /// The movement sensor's accelerometer range (configuration bits 8–9).
    public enum AccelerometerRange: UInt8, Hashable, Sendable {
        case g2 = 0, g4 = 1, g8 = 2, g16 = 3
        public var g: Double { Double(2 << Int(rawValue)) }
    }

    /// A reading decoded with TI's conversions.
    public enum Reading: Hashable, Sendable, CustomStringConvertible {
        case ir(objectC: Double, ambientC: Double)
        case humidity(temperatureC: Double, humidityPercent: Double)
        case barometer(temperatureC: Double, pressureHPa: Double)
        case optical(lux: Double)
        case movement(gyroDps: Vector, accelG: Vector, magMicroT: Vector)
        case keys(user: Bool, power: Bool, reed: Bool)
        case battery(percent: Int)

        public struct Vector: Hashable, Sendable {
            public var x: Double, y: Double, z: Double
        }

        public var description: String {
            func f(_ value: Double, _ digits: Int = 2) -> String {
                let scale = Double((0..<digits).reduce(1) { r, _ in r * 10 })
                let rounded = (value * scale).rounded() / scale
                return "\(rounded)"
            }
            func v(_ vector: Vector, _ digits: Int) -> String { "(\(f(vector.x, digits)), \(f(vector.y, digits)), \(f(vector.z, digits)))" }
            switch self {
            case .ir(let object, let ambient): return "object \(f(object)) °C, ambient \(f(ambient)) °C"
            case .humidity(let temperature, let humidity): return "\(f(temperature)) °C, \(f(humidity)) %RH"
            case .barometer(let temperature, let pressure): return "\(f(temperature)) °C, \(f(pressure)) hPa"
            case .optical(let lux): return "\(f(lux)) lux"
            case .movement(let gyro, let accel, let mag):
                return "gyro \(v(gyro, 2)) °/s, accel \(v(accel, 3)) G, mag \(v(mag, 0)) µT"
            case .keys(let user, let power, let reed):
                let pressed = [user ? "user" : nil, power ? "power" : nil, reed ? "reed" : nil].compactMap { $0 }
                return pressed.isEmpty ? "no key" : pressed.joined(separator: " + ")
            case .battery(let percent): return "\(percent) %"
            }
        }
    }

    /// Decodes a data characteristic's value; `nil` when its length is not the sensor's.
    /// - Parameter accelerometerRange: the range last configured (movement only).
    public static func decode(_ sensor: Sensor, _ value: [UInt8], accelerometerRange: AccelerometerRange = .g8) -> Reading? {
        func u16(_ i: Int) -> UInt16 { UInt16(value[i]) | UInt16(value[i + 1]) << 8 }
        func s16(_ i: Int) -> Double { Double(Int16(bitPattern: u16(i))) }
        func u24(_ i: Int) -> UInt32 { UInt32(value[i]) | UInt32(value[i + 1]) << 8 | UInt32(value[i + 2]) << 16 }
        switch sensor {
        case .ir:
            guard value.count == 4 else { return nil }
            return .ir(objectC: Double(u16(0) >> 2) * 0.03125, ambientC: Double(u16(2) >> 2) * 0.03125)
        case .humidity:
            guard value.count == 4 else { return nil }
            return .humidity(
                temperatureC: Double(u16(0)) / 65536 * 165 - 40, humidityPercent: Double(u16(2) & ~0x0003) / 65536 * 100)
        case .barometer:
            guard value.count == 6 else { return nil }
            return .barometer(temperatureC: Double(u24(0)) / 100, pressureHPa: Double(u24(3)) / 100)
        case .optical:
            guard value.count == 2 else { return nil }
            let raw = u16(0)
            return .optical(lux: 0.01 * Double(1 << Int(raw >> 12)) * Double(raw & 0x0FFF))
        case .movement:
            guard value.count == 18 else { return nil }
            let gyro = Reading.Vector(x: s16(0) * 500 / 65536, y: s16(2) * 500 / 65536, z: s16(4) * 500 / 65536)
            let scale = 32768 / accelerometerRange.g
            let accel = Reading.Vector(x: s16(6) / scale, y: s16(8) / scale, z: s16(10) / scale)
            let mag = Reading.Vector(x: s16(12), y: s16(14), z: s16(16))
            return .movement(gyroDps: gyro, accelG: accel, magMicroT: mag)
        case .keys:
            guard value.count == 1 else { return nil }
            return .keys(user: value[0] & 0x01 != 0, power: value[0] & 0x02 != 0, reed: value[0] & 0x04 != 0)
        case .battery:
            guard value.count == 1, value[0] <= 100 else { return nil }
            return .battery(percent: Int(value[0]))
        }
    }

    /// The sensor whose data characteristic is `uuid`.
    public static func sensor(data uuid: BluetoothUUID) -> Sensor? {
        Sensor.allCases.first { $0.data == uuid }
    }
}
