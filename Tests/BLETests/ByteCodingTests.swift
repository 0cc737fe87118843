import BLE
import Testing

/// Issue 22 (in part): the byte codecs of the device-model contract, through `import BLE` alone.
@Suite struct ByteCodingTests {
    @Test func integersAreLittleEndianAndExact() throws {
        #expect(try UInt16(decoding: [0x34, 0x12]) == 0x1234)
        #expect(try Int16(decoding: [0xFE, 0xFF]) == -2)
        #expect(try UInt32(decoding: [0x01, 0x00, 0x00, 0x80]) == 0x8000_0001)
        #expect(try Int64(decoding: [UInt8](repeating: 0xFF, count: 8)) == -1)
        #expect(UInt32(0x0A0B_0C0D).encoded() == [0x0D, 0x0C, 0x0B, 0x0A])
        #expect(Int8(-1).encoded() == [0xFF])
        #expect(throws: ByteCodingError(expected: 2, actual: 3)) { try UInt16(decoding: [1, 2, 3]) }
        #expect(throws: ByteCodingError(expected: 4, actual: 0)) { try Int32(decoding: []) }
        for value in [UInt64.min, 1, 0x0102_0304_0506_0708, .max] { #expect(try UInt64(decoding: value.encoded()) == value) }
    }

    @Test func boolStringAndRawOctets() throws {
        #expect(try Bool(decoding: [0x01]) && !(try Bool(decoding: [0x00])))
        #expect(true.encoded() == [1])
        #expect(throws: ByteCodingError(expected: 1, actual: 2)) { try Bool(decoding: [1, 1]) }
        #expect(try String(decoding: Array("CC2650 SensorTag".utf8)) == "CC2650 SensorTag")
        #expect("é".encoded() == [0xC3, 0xA9])
        #expect(try [UInt8](decoding: [1, 2, 3]) == [1, 2, 3] && [UInt8]([9]).encoded() == [9])
        #expect(ByteCodingError(expected: 2, actual: 1, field: "flags").description == "flags: expected 2 octets, got 1")
    }

    /// IEEE 11073-20601 SFLOAT and FLOAT: values, exponents, and every special value.
    @Test func medicalFloats() throws {
        // 36.45 °C as a thermometer sends it: mantissa 3645, exponent −2 (FLOAT).
        let temperature = try MedFloat32(decoding: [0x3D, 0x0E, 0x00, 0xFE])
        #expect(temperature.mantissa == 3645 && temperature.exponent == -2)
        #expect(temperature.description == "36.45" && abs(temperature.doubleValue - 36.45) < 1e-9)
        #expect(MedFloat32(mantissa: 3645, exponent: -2) == temperature)
        #expect(temperature.encoded() == [0x3D, 0x0E, 0x00, 0xFE])
        // 120 mmHg as SFLOAT (mantissa 120, exponent 0), and −0.5 (mantissa −5, exponent −1).
        #expect(try MedFloat16(decoding: [0x78, 0x00]).doubleValue == 120)
        let half = try #require(MedFloat16(mantissa: -5, exponent: -1))
        #expect(half.rawValue == 0xFFFB && half.doubleValue == -0.5 && half.description == "-0.5")
        #expect(try MedFloat16(decoding: half.encoded()) == half)
        #expect(MedFloat16(mantissa: 2046, exponent: 0) == nil && MedFloat16(mantissa: 1, exponent: 8) == nil)
        #expect(MedFloat32(mantissa: -8_388_606, exponent: 0) == nil)
        // The special values.
        #expect(try MedFloat16(decoding: [0xFF, 0x07]) == .nan && MedFloat16.nan.doubleValue.isNaN)
        #expect(try MedFloat16(decoding: [0x00, 0x08]) == .nres && MedFloat16.nres.description == "NRes")
        #expect(MedFloat16.infinity.doubleValue == .infinity && MedFloat16.negativeInfinity.doubleValue == -.infinity)
        #expect([MedFloat16.nan, .nres, .infinity, .negativeInfinity, .reserved].allSatisfy { $0.isSpecial })
        #expect(!half.isSpecial)
        #expect(try MedFloat32(decoding: [0xFF, 0xFF, 0x7F, 0x00]) == .nan)
        #expect(MedFloat32.nres.rawValue == 0x0080_0000 && MedFloat32.reserved.doubleValue.isNaN)
        #expect(MedFloat32.negativeInfinity.description == "-INFINITY")
        #expect([MedFloat32.nan, .nres, .infinity, .negativeInfinity, .reserved].allSatisfy { $0.isSpecial })
        #expect(throws: ByteCodingError(expected: 4, actual: 2)) { try MedFloat32(decoding: [0, 0]) }
    }

    /// A user's own type: the codec is the contract's.
    @Test func aUsersOwnDecoderThrowsTheSameError() throws {
        struct Reading: ByteCodable {
            var flags: UInt8
            var value: MedFloat16
            init(flags: UInt8, value: MedFloat16) {
                self.flags = flags
                self.value = value
            }
            init(decoding bytes: [UInt8]) throws(ByteCodingError) {
                guard bytes.count == 3 else { throw ByteCodingError(expected: 3, actual: bytes.count, field: "Reading") }
                flags = bytes[0]
                value = try MedFloat16(decoding: Array(bytes[1...]))
            }
            func encoded() -> [UInt8] { [flags] + value.encoded() }
        }
        let reading = Reading(flags: 1, value: try #require(MedFloat16(mantissa: 365, exponent: -1)))
        #expect(try Reading(decoding: reading.encoded()).value.description == "36.5")
        #expect(throws: ByteCodingError(expected: 3, actual: 1, field: "Reading")) { try Reading(decoding: [1]) }
    }
}
