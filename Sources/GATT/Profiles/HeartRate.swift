import Bluetooth

/// Heart Rate Measurement (0x2A37), notified by the Heart Rate Service.
///
/// Flags (one octet): bit 0 the value's format (UINT8, or UINT16), bits 1–2 sensor contact
/// (bit 2: supported, bit 1: detected), bit 3 Energy Expended present, bit 4 RR-Intervals
/// present; then the heart rate (beats per minute), the energy expended (kJ, UINT16), and
/// RR-Intervals (UINT16 each, 1/1024 s) filling the rest.
/// - SeeAlso: GATT Specification Supplement, §3.113 Heart Rate Measurement; Heart Rate Service 1.0, §3.1
public struct HeartRateMeasurement: Hashable, Sendable, ByteCodable, CustomStringConvertible {
    /// Sensor Contact Status (flags bits 1–2).
    public enum SensorContact: Hashable, Sendable {
        case notSupported
        case notDetected
        case detected
    }

    /// Beats per minute.
    public var heartRate: Int
    public var sensorContact: SensorContact
    /// Kilojoules since the last reset, when present.
    public var energyExpended: Int?
    /// Time between R-waves, in seconds (1/1024 s resolution), oldest first.
    public var rrIntervals: [Double]
    /// The value's format on the air: UINT16 (else UINT8). Decoding keeps it, so a value
    /// re-encodes to the same octets; a heart rate above 255 is always UINT16.
    public var sixteenBitValue: Bool

    public init(
        heartRate: Int, sensorContact: SensorContact = .notSupported, energyExpended: Int? = nil,
        rrIntervals: [Double] = [], sixteenBitValue: Bool = false
    ) {
        self.heartRate = heartRate
        self.sensorContact = sensorContact
        self.energyExpended = energyExpended
        self.rrIntervals = rrIntervals
        self.sixteenBitValue = sixteenBitValue
    }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        guard let flags = bytes.first else { throw ByteCodingError(expected: 2, actual: 0, field: "Heart Rate Measurement") }
        sixteenBitValue = flags & 0x01 != 0
        switch flags >> 1 & 0x03 {
        case 0b11: sensorContact = .detected
        case 0b10: sensorContact = .notDetected
        default: sensorContact = .notSupported
        }
        let hasEnergy = flags & 0x08 != 0
        let hasRR = flags & 0x10 != 0
        let fixed = 1 + (sixteenBitValue ? 2 : 1) + (hasEnergy ? 2 : 0)
        guard bytes.count >= fixed else { throw ByteCodingError(expected: fixed, actual: bytes.count, field: "Heart Rate Measurement") }
        func word(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        heartRate = sixteenBitValue ? word(1) : Int(bytes[1])
        energyExpended = hasEnergy ? word(fixed - 2) : nil
        let rest = bytes.count - fixed
        if hasRR {
            // (A flag with no interval after it is taken as none: some sensors send that.)
            guard rest % 2 == 0 else { throw ByteCodingError(expected: bytes.count + 1, actual: bytes.count, field: "RR-Interval") }
            rrIntervals = stride(from: fixed, to: bytes.count, by: 2).map { Double(word($0)) / 1024 }
        } else {
            guard rest == 0 else { throw ByteCodingError(expected: fixed, actual: bytes.count, field: "Heart Rate Measurement") }
            rrIntervals = []
        }
    }

    public func encoded() -> [UInt8] {
        let wide = sixteenBitValue || heartRate > 0xFF
        var flags: UInt8 = wide ? 0x01 : 0
        switch sensorContact {
        case .notSupported: break
        case .notDetected: flags |= 0b100
        case .detected: flags |= 0b110
        }
        if energyExpended != nil { flags |= 0x08 }
        if !rrIntervals.isEmpty { flags |= 0x10 }
        func word(_ value: Int) -> [UInt8] {
            let clamped = UInt16(clamping: value)
            return [UInt8(clamped & 0xFF), UInt8(clamped >> 8)]
        }
        var bytes = [flags] + (wide ? word(heartRate) : [UInt8(clamping: heartRate)])
        if let energyExpended { bytes += word(energyExpended) }
        for interval in rrIntervals { bytes += word(Int((interval * 1024).rounded())) }
        return bytes
    }

    /// `72 bpm, contact detected, 12 kJ, RR 0.812 s 0.799 s`.
    public var description: String {
        var parts = ["\(heartRate) bpm"]
        switch sensorContact {
        case .notSupported: break
        case .notDetected: parts.append("no contact")
        case .detected: parts.append("contact detected")
        }
        if let energyExpended { parts.append("\(energyExpended) kJ") }
        if !rrIntervals.isEmpty {
            parts.append("RR " + rrIntervals.map { "\(Double(Int(($0 * 1000).rounded())) / 1000) s" }.joined(separator: " "))
        }
        return parts.joined(separator: ", ")
    }
}

/// Body Sensor Location (0x2A38): where the heart-rate sensor sits; values past 6 are reserved
/// and kept as they are.
/// - SeeAlso: GATT Specification Supplement, §3.27 Body Sensor Location
public struct BodySensorLocation: RawRepresentable, Hashable, Sendable, ByteCodable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let other = BodySensorLocation(rawValue: 0)
    public static let chest = BodySensorLocation(rawValue: 1)
    public static let wrist = BodySensorLocation(rawValue: 2)
    public static let finger = BodySensorLocation(rawValue: 3)
    public static let hand = BodySensorLocation(rawValue: 4)
    public static let earLobe = BodySensorLocation(rawValue: 5)
    public static let foot = BodySensorLocation(rawValue: 6)

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        guard bytes.count == 1 else { throw ByteCodingError(expected: 1, actual: bytes.count, field: "Body Sensor Location") }
        rawValue = bytes[0]
    }

    public func encoded() -> [UInt8] { [rawValue] }

    public var description: String {
        let names = ["other", "chest", "wrist", "finger", "hand", "ear lobe", "foot"]
        return Int(rawValue) < names.count ? names[Int(rawValue)] : "reserved (\(rawValue))"
    }
}
