import BLE
import Testing

/// Issue 22: the standard characteristics' codecs, both ways, on vectors built from the GATT
/// Specification Supplement's field definitions (through `import BLE` alone).
@Suite struct StandardCodecTests {
    @Test(arguments: [
        // Flags 0x00: UINT8 value, no contact status, nothing else.
        ([0x00, 0x48] as [UInt8], HeartRateMeasurement(heartRate: 72)),
        // 0x04: contact supported, not detected.
        ([0x04, 0x3C], HeartRateMeasurement(heartRate: 60, sensorContact: .notDetected)),
        // 0x16: contact detected, one RR-Interval 0x0400 = 1024/1024 s.
        ([0x16, 0x48, 0x00, 0x04], HeartRateMeasurement(heartRate: 72, sensorContact: .detected, rrIntervals: [1.0])),
        // 0x19: UINT16 value 300, Energy Expended 16 kJ, RR-Interval 0x0200 = 0.5 s.
        (
            [0x19, 0x2C, 0x01, 0x10, 0x00, 0x00, 0x02],
            HeartRateMeasurement(heartRate: 300, energyExpended: 16, rrIntervals: [0.5], sixteenBitValue: true)
        ),
        // 0x01: a small value sent as UINT16 stays UINT16 when encoded again.
        ([0x01, 0x50, 0x00], HeartRateMeasurement(heartRate: 80, sixteenBitValue: true)),
        // Two RR-Intervals, 0x0333 and 0x0320.
        (
            [0x10, 0x4B, 0x33, 0x03, 0x20, 0x03],
            HeartRateMeasurement(heartRate: 75, rrIntervals: [819.0 / 1024, 800.0 / 1024])
        ),
    ])
    func heartRateMeasurementBothWays(bytes: [UInt8], measurement: HeartRateMeasurement) throws {
        #expect(try HeartRateMeasurement(decoding: bytes) == measurement)
        #expect(measurement.encoded() == bytes)
    }

    @Test func heartRateMeasurementsThatDoNotFitTheirFlagsAreRefused() throws {
        for bytes: [UInt8] in [[], [0x01, 0x48], [0x08, 0x48, 0x01], [0x10, 0x48, 0x00], [0x00, 0x48, 0x00]] {
            #expect(throws: ByteCodingError.self, "\(bytes)") { try HeartRateMeasurement(decoding: bytes) }
        }
        // The RR flag with no interval after it: none (some sensors send that).
        #expect(try HeartRateMeasurement(decoding: [0x10, 0x48]).rrIntervals == [])
        #expect(
            HeartRateMeasurement(heartRate: 72, sensorContact: .detected, energyExpended: 12, rrIntervals: [0.8125]).description
                == "72 bpm, contact detected, 12 kJ, RR 0.813 s")
    }

    @Test func bodySensorLocationSystemIDAndPnPID() throws {
        #expect(try BodySensorLocation(decoding: [0x01]) == .chest)
        #expect(BodySensorLocation.wrist.encoded() == [0x02] && BodySensorLocation(rawValue: 9).description == "reserved (9)")
        #expect(throws: ByteCodingError(expected: 1, actual: 2, field: "Body Sensor Location")) {
            try BodySensorLocation(decoding: [1, 2])
        }
        // PnP ID: source Bluetooth SIG, vendor 0x000D (Texas Instruments), product 0x0000, version 0x0110.
        let pnp: [UInt8] = [0x01, 0x0D, 0x00, 0x00, 0x00, 0x10, 0x01]
        let decoded = try PnPID(decoding: pnp)
        #expect(decoded == PnPID(vendorIDSource: 1, vendorID: 0x000D, productID: 0, productVersion: 0x0110))
        #expect(decoded.encoded() == pnp)
        #expect(throws: ByteCodingError(expected: 7, actual: 6, field: "PnP ID")) { try PnPID(decoding: Array(pnp.dropLast())) }
        // System ID: manufacturer identifier (40 bits) then OUI (24 bits), least significant octet first.
        let system: [UInt8] = [0x01, 0x3B, 0x9A, 0xFE, 0xFF, 0x0E, 0x6C, 0x54]
        let id = try SystemID(decoding: system)
        #expect(id.manufacturerIdentifier == 0xFF_FE9A_3B01 && id.organizationallyUniqueIdentifier == 0x546C0E)
        #expect(id.encoded() == system)
    }

    // MARK: Health and time services (GATT Specification Supplement field by field)

    @Test func temperatureMeasurementBothWays() throws {
        // 36.6 °C: FLOAT mantissa 366 (0x00016E), exponent −1 (0xFF); Celsius, nothing else.
        let plain: [UInt8] = [0x00, 0x6E, 0x01, 0x00, 0xFF]
        let celsius = TemperatureMeasurement(temperature: MedFloat32(mantissa: 366, exponent: -1)!)
        #expect(try TemperatureMeasurement(decoding: plain) == celsius)
        #expect(celsius.encoded() == plain && celsius.description == "36.6 °C")
        // 0x07: Fahrenheit 98.6, time stamp 2026-12-02 16:05:09 (year 0x07EA), type 6 (mouth).
        let full: [UInt8] = [0x07, 0xDA, 0x03, 0x00, 0xFF, 0xEA, 0x07, 0x0C, 0x02, 0x10, 0x05, 0x09, 0x06]
        let fahrenheit = TemperatureMeasurement(
            temperature: MedFloat32(mantissa: 986, exponent: -1)!, unit: .fahrenheit,
            timestamp: DateTime(year: 2026, month: 12, day: 2, hours: 16, minutes: 5, seconds: 9), type: .mouth)
        #expect(try TemperatureMeasurement(decoding: full) == fahrenheit)
        #expect(fahrenheit.encoded() == full)
        #expect(fahrenheit.description == "98.6 °F, 2026-12-02 16:05:09, mouth")
        // A special value: NaN (0x007FFFFF) is carried, not turned into a number.
        #expect(try TemperatureMeasurement(decoding: [0x00, 0xFF, 0xFF, 0x7F, 0x00]).temperature == .nan)
        // The flags announce fields the value lacks, or the value has octets no flag announces.
        for bytes: [UInt8] in [[], [0x00, 0x6E, 0x01, 0x00], [0x02] + plain.dropFirst(), plain + [0x06], [0x04] + plain.dropFirst()] {
            #expect(throws: ByteCodingError.self, "\(bytes)") { try TemperatureMeasurement(decoding: bytes) }
        }
        #expect(try TemperatureType(decoding: [0x03]) == .ear && TemperatureType(rawValue: 10).description == "reserved (10)")
    }

    @Test func bloodPressureMeasurementBothWays() throws {
        // mmHg 120/80, MAP 93 (SFLOAT exponent 0), nothing else.
        let plain: [UInt8] = [0x00, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00]
        let basic = BloodPressureMeasurement(
            systolic: MedFloat16(mantissa: 120, exponent: 0)!, diastolic: MedFloat16(mantissa: 80, exponent: 0)!,
            meanArterialPressure: MedFloat16(mantissa: 93, exponent: 0)!)
        #expect(try BloodPressureMeasurement(decoding: plain) == basic)
        #expect(basic.encoded() == plain && basic.description == "120/80 mmHg (MAP 93)")
        // 0x1F: kPa 16.0/10.7/12.5 (exponent −1: 0xF0A0, 0xF06B, 0xF07D), time stamp, pulse 72,
        // user 1, status: body movement and irregular pulse (0x0005).
        let full: [UInt8] = [
            0x1F, 0xA0, 0xF0, 0x6B, 0xF0, 0x7D, 0xF0, 0xEA, 0x07, 0x0C, 0x02, 0x07, 0x1E, 0x00, 0x48, 0x00, 0x01, 0x05, 0x00,
        ]
        let kPa = BloodPressureMeasurement(
            systolic: MedFloat16(mantissa: 160, exponent: -1)!, diastolic: MedFloat16(mantissa: 107, exponent: -1)!,
            meanArterialPressure: MedFloat16(mantissa: 125, exponent: -1)!, unit: .kPa,
            timestamp: DateTime(year: 2026, month: 12, day: 2, hours: 7, minutes: 30), pulseRate: MedFloat16(mantissa: 72, exponent: 0)!,
            userID: 1, status: [.bodyMovement, .irregularPulse])
        #expect(try BloodPressureMeasurement(decoding: full) == kPa)
        #expect(kPa.encoded() == full)
        #expect(kPa.description == "16.0/10.7 kPa (MAP 12.5), 2026-12-02 07:30:00, pulse 72/min, user 1, status 0x0005")
        for bytes: [UInt8] in [[], Array(plain.dropLast()), [0x04] + plain.dropFirst(), Array(full.dropLast()), plain + [0]] {
            #expect(throws: ByteCodingError.self, "\(bytes)") { try BloodPressureMeasurement(decoding: bytes) }
        }
        #expect(try BloodPressureFeature(decoding: [0x21, 0x00]) == [.bodyMovementDetection, .multipleBonds])
    }

    @Test func weightMeasurementBothWays() throws {
        // SI, 72.5 kg = 14500 × 0.005 (0x38A4).
        let plain: [UInt8] = [0x00, 0xA4, 0x38]
        let si = WeightMeasurement(rawWeight: 14500)
        #expect(try WeightMeasurement(decoding: plain) == si)
        #expect(si.encoded() == plain && si.weight == 72.5 && si.description == "72.5 kg")
        // 0x0F: imperial 159.84 lb (15984 × 0.01 = 0x3E70), time stamp, user 2, BMI 23.4 (234),
        // height 69.3 in (693 × 0.1).
        let full: [UInt8] = [0x0F, 0x70, 0x3E, 0xEA, 0x07, 0x0C, 0x02, 0x07, 0x00, 0x00, 0x02, 0xEA, 0x00, 0xB5, 0x02]
        let imperial = WeightMeasurement(
            rawWeight: 15984, units: .imperial, timestamp: DateTime(year: 2026, month: 12, day: 2, hours: 7), userID: 2,
            rawBMI: 234, rawHeight: 693)
        #expect(try WeightMeasurement(decoding: full) == imperial)
        #expect(imperial.encoded() == full)
        #expect(imperial.description == "159.84 lb, 2026-12-02 07:00:00, user 2, BMI 23.4, height 69.3 in")
        // 0xFFFF: the measurement failed.
        let failed = try WeightMeasurement(decoding: [0x00, 0xFF, 0xFF])
        #expect(failed.isUnsuccessful && failed.weight == nil && failed.description == "measurement unsuccessful")
        for bytes: [UInt8] in [[], [0x00, 0xA4], [0x08, 0xA4, 0x38, 0xEA, 0x00], plain + [0]] {
            #expect(throws: ByteCodingError.self, "\(bytes)") { try WeightMeasurement(decoding: bytes) }
        }
        let feature = try WeightScaleFeature(decoding: [0xBF, 0x01, 0x00, 0x00])
        #expect(feature.contains([.timestamp, .multipleUsers, .bmi]) && feature.weightResolution == 7 && feature.heightResolution == 3)
    }

    @Test func currentTimeAndLocalTimeBothWays() throws {
        // Wednesday 2026-12-02 16:05:09 and 128/256 s, adjusted by an external reference.
        let bytes: [UInt8] = [0xEA, 0x07, 0x0C, 0x02, 0x10, 0x05, 0x09, 0x03, 0x80, 0x02]
        let time = CurrentTime(
            dateTime: DateTime(year: 2026, month: 12, day: 2, hours: 16, minutes: 5, seconds: 9), dayOfWeek: 3, fractions256: 128,
            adjustReason: .externalReferenceTimeUpdate)
        #expect(try CurrentTime(decoding: bytes) == time)
        #expect(time.encoded() == bytes && time.description == "Wednesday 2026-12-02 16:05:09.500")
        #expect(throws: ByteCodingError(expected: 10, actual: 9, field: "Current Time")) { try CurrentTime(decoding: Array(bytes.dropLast())) }
        // UTC+01:00 (4 × 15 min), standard time; UTC−03:30 (−14), DST +1 h; unknown.
        #expect(try LocalTimeInformation(decoding: [0x04, 0x00]).description == "UTC+01:00, standard time")
        #expect(try LocalTimeInformation(decoding: [0xF2, 0x04]).description == "UTC-03:30, DST +1 h")
        #expect(LocalTimeInformation(timeZone: -128, dstOffset: 255).encoded() == [0x80, 0xFF])
        #expect(try DateTime(decoding: [0, 0, 0, 0, 12, 0, 0]).description == "????-??-?? 12:00:00")
        #expect(try ReferenceTimeInformation(decoding: [1, 8, 0, 3]) == ReferenceTimeInformation(source: 1, accuracy: 8, daysSinceUpdate: 0, hoursSinceUpdate: 3))
    }

    @Test func genericAccessValuesBothWays() throws {
        #expect(try Appearance(decoding: [0x41, 0x03]).description == "0x0341 Heart Rate Sensor, subcategory 1")
        #expect(Appearance(rawValue: 0x0341).encoded() == [0x41, 0x03])
        let parameters: [UInt8] = [0x50, 0x00, 0xA0, 0x00, 0x00, 0x00, 0xE8, 0x03]
        let decoded = try PreferredConnectionParameters(decoding: parameters)
        #expect(decoded == PreferredConnectionParameters(minimumInterval: 80, maximumInterval: 160, latency: 0, supervisionTimeout: 1000))
        #expect(decoded.encoded() == parameters)
        #expect(throws: ByteCodingError.self) { try PreferredConnectionParameters(decoding: [0x50]) }
        let format: [UInt8] = [0x04, 0x00, 0xAD, 0x27, 0x01, 0x00, 0x00]
        #expect(try PresentationFormat(decoding: format).encoded() == format)
    }

    // MARK: The SensorTag (TI's conversions, from the CC2650 user guide)

    @Test func sensorTagDataBothWays() throws {
        // IR: object 0x0C1C >> 2 = 775 × 0.03125 = 24.21875 °C; ambient 0x0B00 >> 2 × 0.03125 = 22 °C.
        let ir = try SensorTag.IRTemperature(decoding: [0x1C, 0x0C, 0x00, 0x0B])
        #expect(ir.objectC == 24.21875 && ir.ambientC == 22 && ir.encoded() == [0x1C, 0x0C, 0x00, 0x0B])
        // Humidity: temperature 0x6000 → 0.375 × 165 − 40 = 21.875 °C; humidity 0x8003 (status bits cleared) → 50 %.
        let humidity = try SensorTag.Humidity(decoding: [0x00, 0x60, 0x03, 0x80])
        #expect(humidity.temperatureC == 21.875 && humidity.humidityPercent == 50)
        // Barometer: 2263 (0x0008D7) → 22.63 °C, 101325 (0x018BCD) → 1013.25 hPa.
        let barometer = try SensorTag.Barometer(decoding: [0xD7, 0x08, 0x00, 0xCD, 0x8B, 0x01])
        #expect(barometer.temperatureC == 22.63 && barometer.pressureHPa == 1013.25)
        #expect(barometer.encoded() == [0xD7, 0x08, 0x00, 0xCD, 0x8B, 0x01])
        // Optical: exponent 5, mantissa 1000 (0x53E8) → 0.01 × 32 × 1000 = 320 lux.
        #expect(try SensorTag.Optical(decoding: [0xE8, 0x53]).lux == 320)
        // Movement: gyro x 65536/500 ≈ 131 → 1 °/s; accel z 4096 at ±8 G → 1 G, at ±2 G → 0.25... (32768/2 = 16384 per G).
        let movement = try #require(SensorTag.Movement(raw: [131, 0, 0, 0, 0, 4096, 22, -3, -40]))
        #expect(SensorTag.Movement(raw: [1, 2, 3]) == nil)
        let bytes = movement.encoded()
        #expect(bytes.count == 18)
        let decoded = try SensorTag.Movement(decoding: bytes)
        #expect(decoded == movement)
        #expect(decoded.accelG(range: .g8).z == 1 && decoded.accelG(range: .g2).z == 0.25)
        #expect(decoded.magMicroT == SensorTag.Reading.Vector(x: 22, y: -3, z: -40))
        #expect(abs(decoded.gyroDps.x - 131 * 500 / 65536) < 1e-12)
        #expect(try SensorTag.Keys(decoding: [0x05]).reading == .keys(user: true, power: false, reed: true))
        #expect(SensorTag.MovementConfiguration.allAxes(range: .g4).encoded() == [0x7F, 0x01])
        #expect(try SensorTag.MovementConfiguration(decoding: [0x7F, 0x02]).range == .g8)
        #expect(SensorTag.Period(milliseconds: 500)?.encoded() == [50] && SensorTag.Period(milliseconds: 5) == nil)
        // Wrong lengths are refused, and `decode` (the CLI's) gives nil for them.
        #expect(throws: ByteCodingError(expected: 4, actual: 3, field: "IR temperature data")) {
            try SensorTag.IRTemperature(decoding: [1, 2, 3])
        }
        #expect(SensorTag.decode(.movement, [0, 1]) == nil)
        // Below 0 °C: the TMP007's registers and the BMP280's temperature are signed (0xFF80 >> 2
        // = −32 × 0.03125 = −1 °C; 0xFFFE0C = −500 → −5 °C).
        #expect(try SensorTag.IRTemperature(decoding: [0x80, 0xFF, 0x80, 0xFF]).objectC == -1)
        #expect(try SensorTag.Barometer(decoding: [0x0C, 0xFE, 0xFF, 0xCD, 0x8B, 0x01]).temperatureC == -5)
    }

    /// Every strict prefix of a whole value (all its optional fields present) is refused: the
    /// flags announce more than the octets hold.
    @Test func everyTruncationOfAFullValueIsRefused() throws {
        let full: [(String, [UInt8], ([UInt8]) throws(ByteCodingError) -> Void)] = [
            ("Temperature Measurement", [0x06, 0x6E, 0x01, 0x00, 0xFF, 0xEA, 0x07, 0x0C, 0x02, 0x10, 0x05, 0x09, 0x06], { (bytes) throws(ByteCodingError) in _ = try TemperatureMeasurement(decoding: bytes) }),
            (
                "Blood Pressure Measurement",
                [0x1F, 0xA0, 0xF0, 0x6B, 0xF0, 0x7D, 0xF0, 0xEA, 0x07, 0x0C, 0x02, 0x07, 0x1E, 0x00, 0x48, 0x00, 0x01, 0x05, 0x00],
                { (bytes) throws(ByteCodingError) in _ = try BloodPressureMeasurement(decoding: bytes) }
            ),
            ("Weight Measurement", [0x0F, 0x70, 0x3E, 0xEA, 0x07, 0x0C, 0x02, 0x07, 0x00, 0x00, 0x02, 0xEA, 0x00, 0xB5, 0x02], { (bytes) throws(ByteCodingError) in _ = try WeightMeasurement(decoding: bytes) }),
            ("Heart Rate Measurement", [0x19, 0x2C, 0x01, 0x10, 0x00], { (bytes) throws(ByteCodingError) in _ = try HeartRateMeasurement(decoding: bytes) }),
            ("Current Time", [0xEA, 0x07, 0x0C, 0x02, 0x10, 0x05, 0x09, 0x03, 0x80, 0x02], { (bytes) throws(ByteCodingError) in _ = try CurrentTime(decoding: bytes) }),
            ("Date Time", [0xEA, 0x07, 0x0C, 0x02, 0x10, 0x05, 0x09], { (bytes) throws(ByteCodingError) in _ = try DateTime(decoding: bytes) }),
            ("PnP ID", [0x01, 0x0D, 0x00, 0x00, 0x00, 0x10, 0x01], { (bytes) throws(ByteCodingError) in _ = try PnPID(decoding: bytes) }),
            ("System ID", [0x01, 0x3B, 0x9A, 0xFE, 0xFF, 0x0E, 0x6C, 0x54], { (bytes) throws(ByteCodingError) in _ = try SystemID(decoding: bytes) }),
            ("movement data", Array(repeating: 0, count: 18), { (bytes) throws(ByteCodingError) in _ = try SensorTag.Movement(decoding: bytes) }),
        ]
        for (name, bytes, decode) in full {
            #expect(throws: Never.self, "\(name), whole") { try decode(bytes) }
            for length in 0..<bytes.count {
                #expect(throws: ByteCodingError.self, "\(name), \(length) of \(bytes.count) octets") { try decode(Array(bytes.prefix(length))) }
            }
        }
    }

    @Test func datesOutOfTheirRangesAreRefused() throws {
        let valid: [UInt8] = [0xEA, 0x07, 0x0C, 0x02, 0x10, 0x05, 0x09]
        for (index, value, reason) in [
            (2, 13, "month 13 is not 1–12 (0: unknown)"), (3, 32, "day 32 is not 1–31 (0: unknown)"),
            (4, 24, "hours 24 is not 0–23"), (5, 60, "minutes 60 is not 0–59"), (6, 60, "seconds 60 is not 0–59"),
        ] as [(Int, UInt8, String)] {
            var bytes = valid
            bytes[index] = value
            #expect(throws: ByteCodingError(field: "Date Time", outOfRange: reason, length: 7)) { try DateTime(decoding: bytes) }
        }
        #expect(throws: ByteCodingError.self) { try DateTime(decoding: [0x10, 0x00, 1, 1, 0, 0, 0]) }  // year 16
        #expect(try DateTime(decoding: [0, 0, 0, 0, 0, 0, 0]) == DateTime(year: 0, month: 0, day: 0))
        // Inside a measurement the same refusal comes through.
        #expect(throws: ByteCodingError.self) {
            try TemperatureMeasurement(decoding: [0x02, 0x6E, 0x01, 0x00, 0xFF, 0xEA, 0x07, 0x0D, 0x02, 0x10, 0x05, 0x09])
        }
        #expect(
            ByteCodingError(field: "Date Time", outOfRange: "month 13 is not 1–12 (0: unknown)", length: 7).description
                == "Date Time: month 13 is not 1–12 (0: unknown)")
    }
}
