import Bluetooth

// The values of the health and time services, field by field as the GATT Specification
// Supplement defines them. Strict: a value whose length is not what its flags announce, or a
// date out of its ranges, does not decode (ByteCodingError names the field); encoding gives back
// the same octets, except flag bits the Supplement reserves (not kept).

/// Date Time (0x2A08), also the time stamp of the health measurements: year (1582–9999),
/// month (1–12), day (1–31), hours, minutes, seconds; 0 in year, month or day means unknown.
/// - SeeAlso: GATT Specification Supplement, §3.70 Date Time
public struct DateTime: Hashable, Sendable, ByteCodable, CustomStringConvertible {
    public var year: UInt16
    public var month: UInt8
    public var day: UInt8
    public var hours: UInt8
    public var minutes: UInt8
    public var seconds: UInt8

    public init(year: UInt16, month: UInt8, day: UInt8, hours: UInt8 = 0, minutes: UInt8 = 0, seconds: UInt8 = 0) {
        self.year = year
        self.month = month
        self.day = day
        self.hours = hours
        self.minutes = minutes
        self.seconds = seconds
    }

    /// Exactly 7 octets, each field in its range: year 1582–9999 (or 0), month 1–12 (or 0), day
    /// 1–31 (or 0), hours 0–23, minutes and seconds 0–59.
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 7, field: "Date Time")
        self.init(
            year: UInt16(bytes[0]) | UInt16(bytes[1]) << 8, month: bytes[2], day: bytes[3], hours: bytes[4],
            minutes: bytes[5], seconds: bytes[6])
        func refuse(_ what: String) -> ByteCodingError { ByteCodingError(field: "Date Time", outOfRange: what, length: 7) }
        guard year == 0 || (1582...9999).contains(year) else { throw refuse("year \(year) is not 1582–9999 (0: unknown)") }
        guard month <= 12 else { throw refuse("month \(month) is not 1–12 (0: unknown)") }
        guard day <= 31 else { throw refuse("day \(day) is not 1–31 (0: unknown)") }
        guard hours <= 23 else { throw refuse("hours \(hours) is not 0–23") }
        guard minutes <= 59 else { throw refuse("minutes \(minutes) is not 0–59") }
        guard seconds <= 59 else { throw refuse("seconds \(seconds) is not 0–59") }
    }

    public func encoded() -> [UInt8] { year.encoded() + [month, day, hours, minutes, seconds] }

    /// `2026-12-02 16:05:09` (`????` where year, month or day is unknown).
    public var description: String {
        func two(_ value: UInt8) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = self.year == 0 ? "????" : String(self.year)
        let month = self.month == 0 ? "??" : two(self.month)
        let day = self.day == 0 ? "??" : two(self.day)
        return "\(year)-\(month)-\(day) \(two(hours)):\(two(minutes)):\(two(seconds))"
    }
}

/// Takes a `DateTime` from `bytes` at `offset`, advancing it.
private func dateTime(_ bytes: [UInt8], _ offset: inout Int) throws(ByteCodingError) -> DateTime {
    let value = try DateTime(decoding: Array(bytes[offset..<offset + 7]))
    offset += 7
    return value
}

/// The length `flags` announce, checked against the value's.
private func checkLength(_ bytes: [UInt8], _ expected: Int, _ field: String) throws(ByteCodingError) {
    guard bytes.count == expected else { throw ByteCodingError(expected: expected, actual: bytes.count, field: field) }
}

private func word(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }

// MARK: - Health Thermometer

/// Temperature Type (0x2A1D): where the temperature was taken; values past 9 are reserved and
/// kept as they are.
/// - SeeAlso: GATT Specification Supplement, §3.219 Temperature Type
public struct TemperatureType: RawRepresentable, Hashable, Sendable, ByteCodable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let armpit = TemperatureType(rawValue: 1)
    public static let body = TemperatureType(rawValue: 2)
    public static let ear = TemperatureType(rawValue: 3)
    public static let finger = TemperatureType(rawValue: 4)
    public static let gastrointestinalTract = TemperatureType(rawValue: 5)
    public static let mouth = TemperatureType(rawValue: 6)
    public static let rectum = TemperatureType(rawValue: 7)
    public static let toe = TemperatureType(rawValue: 8)
    public static let tympanum = TemperatureType(rawValue: 9)

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 1, field: "Temperature Type")
        rawValue = bytes[0]
    }

    public func encoded() -> [UInt8] { [rawValue] }

    public var description: String {
        let names = ["armpit", "body", "ear", "finger", "gastro-intestinal tract", "mouth", "rectum", "toe", "tympanum"]
        return (1...9).contains(rawValue) ? names[Int(rawValue) - 1] : "reserved (\(rawValue))"
    }
}

/// Temperature Measurement (0x2A1C, indicated; Intermediate Temperature 0x2A1E has the same
/// format). Flags: bit 0 the unit (Celsius, or Fahrenheit), bit 1 a time stamp follows, bit 2 a
/// temperature type follows; then the temperature (IEEE-11073 FLOAT), the time stamp (Date
/// Time), the type.
/// - SeeAlso: GATT Specification Supplement, §3.218 Temperature Measurement; Health Thermometer Service 1.0, §3.1
public struct TemperatureMeasurement: Hashable, Sendable, ByteCodable, CustomStringConvertible {
    public enum Unit: Hashable, Sendable {
        case celsius, fahrenheit
    }

    public var temperature: MedFloat32
    public var unit: Unit
    public var timestamp: DateTime?
    public var type: TemperatureType?

    public init(temperature: MedFloat32, unit: Unit = .celsius, timestamp: DateTime? = nil, type: TemperatureType? = nil) {
        self.temperature = temperature
        self.unit = unit
        self.timestamp = timestamp
        self.type = type
    }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        let field = "Temperature Measurement"
        guard let flags = bytes.first else { throw ByteCodingError(expected: 5, actual: 0, field: field) }
        let length = 5 + (flags & 0x02 != 0 ? 7 : 0) + (flags & 0x04 != 0 ? 1 : 0)
        try checkLength(bytes, length, field)
        unit = flags & 0x01 != 0 ? .fahrenheit : .celsius
        temperature = try MedFloat32(decoding: Array(bytes[1..<5]))
        var offset = 5
        timestamp = flags & 0x02 != 0 ? try dateTime(bytes, &offset) : nil
        type = flags & 0x04 != 0 ? TemperatureType(rawValue: bytes[offset]) : nil
    }

    public func encoded() -> [UInt8] {
        let flags: UInt8 = (unit == .fahrenheit ? 0x01 : 0) | (timestamp != nil ? 0x02 : 0) | (type != nil ? 0x04 : 0)
        return [flags] + temperature.encoded() + (timestamp?.encoded() ?? []) + (type.map { [$0.rawValue] } ?? [])
    }

    /// `36.6 °C, 2026-12-02 16:05:09, mouth`.
    public var description: String {
        var parts = ["\(temperature) \(unit == .celsius ? "°C" : "°F")"]
        if let timestamp { parts.append(timestamp.description) }
        if let type { parts.append(type.description) }
        return parts.joined(separator: ", ")
    }
}

// MARK: - Blood Pressure

/// Blood Pressure Measurement (0x2A35, indicated; Intermediate Cuff Pressure 0x2A36 has the same
/// format). Flags: bit 0 the unit (mmHg, or kPa), bit 1 time stamp, bit 2 pulse rate, bit 3 user
/// ID, bit 4 measurement status present; then systolic, diastolic and mean arterial pressure
/// (SFLOAT each), the time stamp, the pulse rate (SFLOAT, per minute), the user (0xFF: unknown),
/// the status bits.
/// - SeeAlso: GATT Specification Supplement, §3.31 Blood Pressure Measurement; Blood Pressure Service 1.1, §3.1
public struct BloodPressureMeasurement: Hashable, Sendable, ByteCodable, CustomStringConvertible {
    public enum Unit: Hashable, Sendable {
        case mmHg, kPa
    }

    /// Measurement Status bits: 0 body movement, 1 cuff too loose, 2 irregular pulse, 3–4 pulse
    /// rate range (1: above, 2: below the upper/lower limit), 5 improper measurement position.
    public struct Status: OptionSet, Hashable, Sendable {
        public var rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let bodyMovement = Status(rawValue: 1 << 0)
        public static let cuffTooLoose = Status(rawValue: 1 << 1)
        public static let irregularPulse = Status(rawValue: 1 << 2)
        public static let pulseRateAboveUpperLimit = Status(rawValue: 1 << 3)
        public static let pulseRateBelowLowerLimit = Status(rawValue: 2 << 3)
        public static let improperPosition = Status(rawValue: 1 << 5)
    }

    public var systolic: MedFloat16
    public var diastolic: MedFloat16
    public var meanArterialPressure: MedFloat16
    public var unit: Unit
    public var timestamp: DateTime?
    /// Beats per minute.
    public var pulseRate: MedFloat16?
    /// 0xFF: an unknown user.
    public var userID: UInt8?
    public var status: Status?

    public init(
        systolic: MedFloat16, diastolic: MedFloat16, meanArterialPressure: MedFloat16, unit: Unit = .mmHg,
        timestamp: DateTime? = nil, pulseRate: MedFloat16? = nil, userID: UInt8? = nil, status: Status? = nil
    ) {
        self.systolic = systolic
        self.diastolic = diastolic
        self.meanArterialPressure = meanArterialPressure
        self.unit = unit
        self.timestamp = timestamp
        self.pulseRate = pulseRate
        self.userID = userID
        self.status = status
    }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        let field = "Blood Pressure Measurement"
        guard let flags = bytes.first else { throw ByteCodingError(expected: 7, actual: 0, field: field) }
        let length =
            7 + (flags & 0x02 != 0 ? 7 : 0) + (flags & 0x04 != 0 ? 2 : 0) + (flags & 0x08 != 0 ? 1 : 0)
            + (flags & 0x10 != 0 ? 2 : 0)
        try checkLength(bytes, length, field)
        unit = flags & 0x01 != 0 ? .kPa : .mmHg
        systolic = MedFloat16(rawValue: word(bytes, 1))
        diastolic = MedFloat16(rawValue: word(bytes, 3))
        meanArterialPressure = MedFloat16(rawValue: word(bytes, 5))
        var offset = 7
        timestamp = flags & 0x02 != 0 ? try dateTime(bytes, &offset) : nil
        pulseRate = nil
        if flags & 0x04 != 0 {
            pulseRate = MedFloat16(rawValue: word(bytes, offset))
            offset += 2
        }
        userID = nil
        if flags & 0x08 != 0 {
            userID = bytes[offset]
            offset += 1
        }
        status = flags & 0x10 != 0 ? Status(rawValue: word(bytes, offset)) : nil
    }

    public func encoded() -> [UInt8] {
        var flags: UInt8 = unit == .kPa ? 0x01 : 0
        if timestamp != nil { flags |= 0x02 }
        if pulseRate != nil { flags |= 0x04 }
        if userID != nil { flags |= 0x08 }
        if status != nil { flags |= 0x10 }
        var bytes = [flags] + systolic.encoded() + diastolic.encoded() + meanArterialPressure.encoded()
        bytes += timestamp?.encoded() ?? []
        bytes += pulseRate?.encoded() ?? []
        bytes += userID.map { [$0] } ?? []
        bytes += status?.rawValue.encoded() ?? []
        return bytes
    }

    /// `120/80 mmHg (MAP 93), 2026-12-02 16:05:09, pulse 72/min, user 1`.
    public var description: String {
        var parts = ["\(systolic)/\(diastolic) \(unit == .mmHg ? "mmHg" : "kPa") (MAP \(meanArterialPressure))"]
        if let timestamp { parts.append(timestamp.description) }
        if let pulseRate { parts.append("pulse \(pulseRate)/min") }
        if let userID { parts.append(userID == 0xFF ? "unknown user" : "user \(userID)") }
        if let status, !status.isEmpty { parts.append("status 0x" + hex4(status.rawValue)) }
        return parts.joined(separator: ", ")
    }
}

/// Blood Pressure Feature (0x2A49): what the monitor detects (bit 0 body movement, 1 cuff fit,
/// 2 irregular pulse, 3 pulse rate range, 4 measurement position, 5 multiple bonds).
/// - SeeAlso: GATT Specification Supplement, §3.30 Blood Pressure Feature
public struct BloodPressureFeature: OptionSet, Hashable, Sendable, ByteCodable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let bodyMovementDetection = BloodPressureFeature(rawValue: 1 << 0)
    public static let cuffFitDetection = BloodPressureFeature(rawValue: 1 << 1)
    public static let irregularPulseDetection = BloodPressureFeature(rawValue: 1 << 2)
    public static let pulseRateRangeDetection = BloodPressureFeature(rawValue: 1 << 3)
    public static let measurementPositionDetection = BloodPressureFeature(rawValue: 1 << 4)
    public static let multipleBonds = BloodPressureFeature(rawValue: 1 << 5)

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) { rawValue = try UInt16(decoding: bytes) }
    public func encoded() -> [UInt8] { rawValue.encoded() }
}

// MARK: - Weight Scale

/// Weight Measurement (0x2A9D, indicated). Flags: bit 0 the units (SI: kg and m, or imperial:
/// lb and in), bit 1 time stamp, bit 2 user ID, bit 3 BMI and height present; then the weight
/// (UINT16: 0.005 kg or 0.01 lb; 0xFFFF: the measurement failed), the time stamp, the user
/// (0xFF: unknown), the BMI (UINT16, 0.1 kg/m²) and the height (UINT16: 0.001 m or 0.1 in).
/// - SeeAlso: GATT Specification Supplement, §3.246 Weight Measurement; Weight Scale Service 1.0, §3.2
public struct WeightMeasurement: Hashable, Sendable, ByteCodable, CustomStringConvertible {
    public enum Units: Hashable, Sendable {
        /// Kilograms and metres.
        case si
        /// Pounds and inches.
        case imperial
    }

    /// The weight in its resolution's units (0.005 kg, or 0.01 lb); 0xFFFF: unsuccessful.
    public var rawWeight: UInt16
    public var units: Units
    public var timestamp: DateTime?
    public var userID: UInt8?
    /// BMI in 0.1 kg/m² and height in 0.001 m (or 0.1 in), present together.
    public var rawBMI: UInt16?
    public var rawHeight: UInt16?

    public init(
        rawWeight: UInt16, units: Units = .si, timestamp: DateTime? = nil, userID: UInt8? = nil,
        rawBMI: UInt16? = nil, rawHeight: UInt16? = nil
    ) {
        self.rawWeight = rawWeight
        self.units = units
        self.timestamp = timestamp
        self.userID = userID
        self.rawBMI = rawBMI
        self.rawHeight = rawHeight
    }

    /// The weight failed to measure (the value 0xFFFF).
    public var isUnsuccessful: Bool { rawWeight == 0xFFFF }
    /// Kilograms (SI) or pounds (imperial); nil when the measurement failed.
    public var weight: Double? { isUnsuccessful ? nil : Double(rawWeight) * (units == .si ? 0.005 : 0.01) }
    /// kg/m².
    public var bmi: Double? { rawBMI.map { Double($0) / 10 } }
    /// Metres (SI) or inches (imperial).
    public var height: Double? { rawHeight.map { Double($0) * (units == .si ? 0.001 : 0.1) } }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        let field = "Weight Measurement"
        guard let flags = bytes.first else { throw ByteCodingError(expected: 3, actual: 0, field: field) }
        let length = 3 + (flags & 0x02 != 0 ? 7 : 0) + (flags & 0x04 != 0 ? 1 : 0) + (flags & 0x08 != 0 ? 4 : 0)
        try checkLength(bytes, length, field)
        units = flags & 0x01 != 0 ? .imperial : .si
        rawWeight = word(bytes, 1)
        var offset = 3
        timestamp = flags & 0x02 != 0 ? try dateTime(bytes, &offset) : nil
        userID = nil
        if flags & 0x04 != 0 {
            userID = bytes[offset]
            offset += 1
        }
        if flags & 0x08 != 0 {
            rawBMI = word(bytes, offset)
            rawHeight = word(bytes, offset + 2)
        } else {
            rawBMI = nil
            rawHeight = nil
        }
    }

    public func encoded() -> [UInt8] {
        let hasBody = rawBMI != nil && rawHeight != nil
        let flags: UInt8 =
            (units == .imperial ? 0x01 : 0) | (timestamp != nil ? 0x02 : 0) | (userID != nil ? 0x04 : 0) | (hasBody ? 0x08 : 0)
        var bytes = [flags] + rawWeight.encoded() + (timestamp?.encoded() ?? []) + (userID.map { [$0] } ?? [])
        if hasBody, let rawBMI, let rawHeight { bytes += rawBMI.encoded() + rawHeight.encoded() }
        return bytes
    }

    /// `72.5 kg, 2026-12-02 07:30:00, user 1, BMI 23.4, height 1.76 m`.
    public var description: String {
        func number(_ value: Double, _ places: Int) -> String {
            var scale = 1.0
            for _ in 0..<places { scale *= 10 }
            return "\((value * scale).rounded() / scale)"
        }
        var parts = [weight.map { number($0, 3) + (units == .si ? " kg" : " lb") } ?? "measurement unsuccessful"]
        if let timestamp { parts.append(timestamp.description) }
        if let userID { parts.append(userID == 0xFF ? "unknown user" : "user \(userID)") }
        if let bmi { parts.append("BMI " + number(bmi, 1)) }
        if let height { parts.append("height " + number(height, 3) + (units == .si ? " m" : " in")) }
        return parts.joined(separator: ", ")
    }
}

/// Weight Scale Feature (0x2A9E): bit 0 time stamp, 1 multiple users, 2 BMI supported; bits 3–6
/// the weight resolution, 7–9 the height resolution.
/// - SeeAlso: GATT Specification Supplement, §3.245 Weight Scale Feature; Weight Scale Service 1.0, §3.1
public struct WeightScaleFeature: OptionSet, Hashable, Sendable, ByteCodable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let timestamp = WeightScaleFeature(rawValue: 1 << 0)
    public static let multipleUsers = WeightScaleFeature(rawValue: 1 << 1)
    public static let bmi = WeightScaleFeature(rawValue: 1 << 2)

    /// The weight resolution code (bits 3–6: 0 not specified, 1 = 0.5 kg … 7 = 0.005 kg).
    public var weightResolution: UInt8 { UInt8(rawValue >> 3 & 0x0F) }
    /// The height resolution code (bits 7–9: 0 not specified, 1 = 0.01 m, 2 = 0.005 m, 3 = 0.001 m).
    public var heightResolution: UInt8 { UInt8(rawValue >> 7 & 0x07) }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) { rawValue = try UInt32(decoding: bytes) }
    public func encoded() -> [UInt8] { rawValue.encoded() }
}

// MARK: - Current Time

/// Current Time (0x2A2B): Exact Time 256 (Date Time, day of week 1–7 from Monday or 0 unknown,
/// 1/256 s fractions) and the adjust reason bits (0 manual update, 1 external reference, 2 time
/// zone change, 3 DST change). Ten octets.
/// - SeeAlso: GATT Specification Supplement, §3.62 Current Time; Current Time Service 1.1, §3.1
public struct CurrentTime: Hashable, Sendable, ByteCodable, CustomStringConvertible {
    public struct AdjustReason: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let manualTimeUpdate = AdjustReason(rawValue: 1 << 0)
        public static let externalReferenceTimeUpdate = AdjustReason(rawValue: 1 << 1)
        public static let timeZoneChange = AdjustReason(rawValue: 1 << 2)
        public static let daylightSavingChange = AdjustReason(rawValue: 1 << 3)
    }

    public var dateTime: DateTime
    /// 1 Monday … 7 Sunday; 0 unknown.
    public var dayOfWeek: UInt8
    /// 1/256 of a second.
    public var fractions256: UInt8
    public var adjustReason: AdjustReason

    public init(dateTime: DateTime, dayOfWeek: UInt8 = 0, fractions256: UInt8 = 0, adjustReason: AdjustReason = []) {
        self.dateTime = dateTime
        self.dayOfWeek = dayOfWeek
        self.fractions256 = fractions256
        self.adjustReason = adjustReason
    }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 10, field: "Current Time")
        dateTime = try DateTime(decoding: Array(bytes[0..<7]))
        dayOfWeek = bytes[7]
        fractions256 = bytes[8]
        adjustReason = AdjustReason(rawValue: bytes[9])
    }

    public func encoded() -> [UInt8] { dateTime.encoded() + [dayOfWeek, fractions256, adjustReason.rawValue] }

    /// `Wednesday 2026-12-02 16:05:09.500`.
    public var description: String {
        let days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
        let day = (1...7).contains(dayOfWeek) ? days[Int(dayOfWeek) - 1] + " " : ""
        let milliseconds = Int(fractions256) * 1000 / 256
        let fraction = milliseconds == 0 ? "" : "." + String(String(milliseconds + 1000).dropFirst())
        return day + dateTime.description + fraction
    }
}

/// Local Time Information (0x2A0F): the time zone in 15-minute steps from UTC (−48…56; −128
/// unknown) and the daylight saving offset (0, 2, 4, 8 in 15-minute steps; 255 unknown).
/// - SeeAlso: GATT Specification Supplement, §3.136 Local Time Information
public struct LocalTimeInformation: Hashable, Sendable, ByteCodable, CustomStringConvertible {
    public var timeZone: Int8
    public var dstOffset: UInt8

    public init(timeZone: Int8, dstOffset: UInt8) {
        self.timeZone = timeZone
        self.dstOffset = dstOffset
    }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 2, field: "Local Time Information")
        timeZone = Int8(bitPattern: bytes[0])
        dstOffset = bytes[1]
    }

    public func encoded() -> [UInt8] { [UInt8(bitPattern: timeZone), dstOffset] }

    /// `UTC+01:00, DST +1 h`.
    public var description: String {
        func offset(_ quarters: Int) -> String {
            let minutes = abs(quarters) * 15
            let hours = minutes / 60, rest = minutes % 60
            return (quarters < 0 ? "-" : "+") + (hours < 10 ? "0" : "") + "\(hours):" + (rest < 10 ? "0" : "") + "\(rest)"
        }
        let zone = timeZone == -128 ? "time zone unknown" : "UTC" + offset(Int(timeZone))
        let dst: String
        switch dstOffset {
        case 0: dst = "standard time"
        case 2: dst = "DST +0.5 h"
        case 4: dst = "DST +1 h"
        case 8: dst = "DST +2 h"
        case 255: dst = "DST unknown"
        default: dst = "DST code \(dstOffset)"
        }
        return zone + ", " + dst
    }
}

/// Reference Time Information (0x2A14): the time source (0 unknown, 1 NTP, 2 GPS, 3 radio, 4
/// manual, 5 atomic clock, 6 cellular), its accuracy (1/8 s; 254 beyond, 255 unknown), and the
/// days and hours since the last update (255 days: 255 days or more).
/// - SeeAlso: GATT Specification Supplement, §3.181 Reference Time Information
public struct ReferenceTimeInformation: Hashable, Sendable, ByteCodable {
    public var source: UInt8
    public var accuracy: UInt8
    public var daysSinceUpdate: UInt8
    public var hoursSinceUpdate: UInt8

    public init(source: UInt8, accuracy: UInt8, daysSinceUpdate: UInt8, hoursSinceUpdate: UInt8) {
        self.source = source
        self.accuracy = accuracy
        self.daysSinceUpdate = daysSinceUpdate
        self.hoursSinceUpdate = hoursSinceUpdate
    }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 4, field: "Reference Time Information")
        self.init(source: bytes[0], accuracy: bytes[1], daysSinceUpdate: bytes[2], hoursSinceUpdate: bytes[3])
    }

    public func encoded() -> [UInt8] { [source, accuracy, daysSinceUpdate, hoursSinceUpdate] }
}
