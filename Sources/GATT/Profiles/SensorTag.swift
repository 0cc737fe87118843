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
            public init(x: Double, y: Double, z: Double) {
                self.x = x
                self.y = y
                self.z = z
            }
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
        do throws(ByteCodingError) {
            switch sensor {
            case .ir: return try IRTemperature(decoding: value).reading
            case .humidity: return try Humidity(decoding: value).reading
            case .barometer: return try Barometer(decoding: value).reading
            case .optical: return try Optical(decoding: value).reading
            case .movement: return try Movement(decoding: value).reading(accelerometerRange: accelerometerRange)
            case .keys: return try Keys(decoding: value).reading
            case .battery:
                guard value.count == 1, value[0] <= 100 else { return nil }
                return .battery(percent: Int(value[0]))
            }
        } catch {
            return nil
        }
    }

    /// The sensor whose data characteristic is `uuid`.
    public static func sensor(data uuid: BluetoothUUID) -> Sensor? {
        Sensor.allCases.first { $0.data == uuid }
    }
}

// MARK: - The sensors' values, typed (TI's conversions)

extension SensorTag {
    /// IR temperature data (TMP007, 4 octets): object and die (ambient) temperature, each the
    /// upper 14 bits of the sensor's two's-complement register, in 0.03125 °C. (TI's sample
    /// code shifts the register as unsigned, which reads a temperature below 0 °C as about
    /// +512 °C; the sign is kept here.)
    public struct IRTemperature: Hashable, Sendable, ByteCodable {
        public var rawObject: UInt16
        public var rawAmbient: UInt16
        public init(rawObject: UInt16, rawAmbient: UInt16) {
            self.rawObject = rawObject
            self.rawAmbient = rawAmbient
        }
        public var objectC: Double { Double(Int16(bitPattern: rawObject) >> 2) * 0.03125 }
        public var ambientC: Double { Double(Int16(bitPattern: rawAmbient) >> 2) * 0.03125 }
        public var reading: Reading { .ir(objectC: objectC, ambientC: ambientC) }

        public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
            try ByteCodingError.check(bytes, count: 4, field: "IR temperature data")
            self.init(rawObject: word(bytes, 0), rawAmbient: word(bytes, 2))
        }
        public func encoded() -> [UInt8] { rawObject.encoded() + rawAmbient.encoded() }
    }

    /// Humidity data (HDC1000, 4 octets): temperature (raw / 65536 × 165 − 40 °C) and relative
    /// humidity (raw with the two status bits cleared / 65536 × 100 %).
    public struct Humidity: Hashable, Sendable, ByteCodable {
        public var rawTemperature: UInt16
        public var rawHumidity: UInt16
        public init(rawTemperature: UInt16, rawHumidity: UInt16) {
            self.rawTemperature = rawTemperature
            self.rawHumidity = rawHumidity
        }
        public var temperatureC: Double { Double(rawTemperature) / 65536 * 165 - 40 }
        public var humidityPercent: Double { Double(rawHumidity & ~0x0003) / 65536 * 100 }
        public var reading: Reading { .humidity(temperatureC: temperatureC, humidityPercent: humidityPercent) }

        public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
            try ByteCodingError.check(bytes, count: 4, field: "humidity data")
            self.init(rawTemperature: word(bytes, 0), rawHumidity: word(bytes, 2))
        }
        public func encoded() -> [UInt8] { rawTemperature.encoded() + rawHumidity.encoded() }
    }

    /// Barometer data (BMP280, 6 octets): temperature (a signed 24-bit value, 0.01 °C: the
    /// firmware sends the BMP280's compensated temperature, negative below 0 °C, where TI's
    /// sample code reads it unsigned) and pressure (UINT24, 0.01 hPa).
    public struct Barometer: Hashable, Sendable, ByteCodable {
        public var rawTemperature: UInt32
        public var rawPressure: UInt32
        public init(rawTemperature: UInt32, rawPressure: UInt32) {
            self.rawTemperature = rawTemperature & 0xFF_FFFF
            self.rawPressure = rawPressure & 0xFF_FFFF
        }
        public var temperatureC: Double { Double(Int32(bitPattern: rawTemperature << 8) >> 8) / 100 }
        public var pressureHPa: Double { Double(rawPressure) / 100 }
        public var reading: Reading { .barometer(temperatureC: temperatureC, pressureHPa: pressureHPa) }

        public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
            try ByteCodingError.check(bytes, count: 6, field: "barometer data")
            func u24(_ i: Int) -> UInt32 { UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 }
            self.init(rawTemperature: u24(0), rawPressure: u24(3))
        }
        public func encoded() -> [UInt8] {
            (0..<3).map { UInt8(truncatingIfNeeded: rawTemperature >> (8 * UInt32($0))) }
                + (0..<3).map { UInt8(truncatingIfNeeded: rawPressure >> (8 * UInt32($0))) }
        }
    }

    /// Optical data (OPT3001, 2 octets): a 4-bit exponent and 12-bit mantissa, 0.01 × 2^e × m lux.
    public struct Optical: Hashable, Sendable, ByteCodable {
        public var rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public var lux: Double { 0.01 * Double(1 << Int(rawValue >> 12)) * Double(rawValue & 0x0FFF) }
        public var reading: Reading { .optical(lux: lux) }

        public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
            try ByteCodingError.check(bytes, count: 2, field: "optical data")
            rawValue = word(bytes, 0)
        }
        public func encoded() -> [UInt8] { rawValue.encoded() }
    }

    /// Movement data (MPU9250, 18 octets): gyroscope, accelerometer and magnetometer, x y z each
    /// as SINT16. The accelerometer's scale depends on the configured range.
    public struct Movement: Hashable, Sendable, ByteCodable {
        /// gyro x y z, accelerometer x y z, magnetometer x y z: always nine.
        public private(set) var raw: [Int16]
        /// nil unless `raw` holds nine values.
        public init?(raw: [Int16]) {
            guard raw.count == 9 else { return nil }
            self.raw = raw
        }
        /// Degrees per second (raw × 500 / 65536).
        public var gyroDps: Reading.Vector { vector(0) { $0 * 500 / 65536 } }
        /// Microtesla (raw).
        public var magMicroT: Reading.Vector { vector(6) { $0 } }
        /// G at the configured accelerometer range (raw / (32768 / range)).
        public func accelG(range: AccelerometerRange) -> Reading.Vector {
            let scale = 32768 / range.g
            return vector(3) { $0 / scale }
        }
        public func reading(accelerometerRange: AccelerometerRange) -> Reading {
            .movement(gyroDps: gyroDps, accelG: accelG(range: accelerometerRange), magMicroT: magMicroT)
        }
        private func vector(_ first: Int, _ convert: (Double) -> Double) -> Reading.Vector {
            Reading.Vector(x: convert(Double(raw[first])), y: convert(Double(raw[first + 1])), z: convert(Double(raw[first + 2])))
        }

        public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
            try ByteCodingError.check(bytes, count: 18, field: "movement data")
            raw = stride(from: 0, to: 18, by: 2).map { Int16(bitPattern: word(bytes, $0)) }
        }
        public func encoded() -> [UInt8] { raw.flatMap { $0.encoded() } }
    }

    /// Simple keys (0xFFE1, 1 octet): bit 0 the user key, bit 1 the power key, bit 2 the reed relay.
    public struct Keys: Hashable, Sendable, ByteCodable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public var user: Bool { rawValue & 0x01 != 0 }
        public var power: Bool { rawValue & 0x02 != 0 }
        public var reed: Bool { rawValue & 0x04 != 0 }
        public var reading: Reading { .keys(user: user, power: power, reed: reed) }

        public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
            try ByteCodingError.check(bytes, count: 1, field: "simple keys")
            rawValue = bytes[0]
        }
        public func encoded() -> [UInt8] { [rawValue] }
    }

    /// The movement sensor's configuration (2 octets): bits 0–2 gyroscope z y x, 3–5 accelerometer
    /// z y x, 6 magnetometer, 7 wake-on-motion, 8–9 the accelerometer range.
    public struct MovementConfiguration: Hashable, Sendable, ByteCodable {
        public var rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        /// Every axis of the three sensors on, at `range`.
        public static func allAxes(range: AccelerometerRange = .g8) -> MovementConfiguration {
            MovementConfiguration(rawValue: 0x007F | UInt16(range.rawValue) << 8)
        }
        public static let off = MovementConfiguration(rawValue: 0)

        public var gyroscope: Bool { rawValue & 0x07 != 0 }
        public var accelerometer: Bool { rawValue & 0x38 != 0 }
        public var magnetometer: Bool { rawValue & 0x40 != 0 }
        public var wakeOnMotion: Bool { rawValue & 0x80 != 0 }
        public var range: AccelerometerRange { AccelerometerRange(rawValue: UInt8(rawValue >> 8 & 0x03)) ?? .g2 }

        public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
            try ByteCodingError.check(bytes, count: 2, field: "movement configuration")
            rawValue = word(bytes, 0)
        }
        public func encoded() -> [UInt8] { rawValue.encoded() }
    }

    /// A sensor's period (1 octet, units of 10 ms).
    public struct Period: Hashable, Sendable, ByteCodable, CustomStringConvertible {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// nil unless `milliseconds` is a multiple of 10 in 10…2550.
        public init?(milliseconds: Int) {
            guard milliseconds % 10 == 0, (10...2550).contains(milliseconds) else { return nil }
            rawValue = UInt8(milliseconds / 10)
        }
        public var milliseconds: Int { Int(rawValue) * 10 }

        public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
            try ByteCodingError.check(bytes, count: 1, field: "period")
            rawValue = bytes[0]
        }
        public func encoded() -> [UInt8] { [rawValue] }
        public var description: String { "\(milliseconds) ms" }
    }
}

private func word(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
