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
}
