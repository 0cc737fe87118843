import Bluetooth
import Testing
@testable import HCI
import TestSupport

/// Issue 25: the advertising texts written as bytes are the descriptions, whatever the data.
@Suite("Advertising text written in place", .cpuBound)
struct AdvertisingTextTests {
    /// For every AD type the walk knows and others, random data of every length up to 40:
    /// `ADStructure.writeText(type:data:to:)` writes what the parsed value's description is,
    /// and refuses exactly where `ADStructure(type:data:)` does.
    @Test func inPlaceStructureTextIsTheDescription() {
        var generator = SystemRandomNumberGenerator()
        let types: [UInt8] = Array(0x00...0x24) + [0x3D, 0xFF]
        for type in types {
            for length in 0...40 {
                for _ in 0..<8 {
                    var data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                    // Names: printable and not, valid and invalid UTF-8.
                    if type == 0x09, length > 2, Bool.random(using: &generator) { data = Array("Sensor \(length)".utf8) }
                    var text: [UInt8] = []
                    let written = ADStructure.writeText(type: ADType(rawValue: type), data: data[...], to: &text)
                    let value = ADStructure(type: ADType(rawValue: type), data: data[...])
                    #expect(written == (value != nil), "type \(type) data \(data)")
                    if let value, written {
                        #expect(String(decoding: text, as: UTF8.self) == value.description, "type \(type) data \(data)")
                    } else {
                        #expect(text.isEmpty)
                    }
                }
            }
        }
    }

    @Test func numbersAndHexAsStringsGiveThem() {
        for value in [0, 1, 9, 10, 99, 100, 12345, Int.max, -1, -128, Int.min] {
            var text: [UInt8] = []
            text.appendDecimal(value)
            #expect(String(decoding: text, as: UTF8.self) == String(value))
        }
        for (value, digits) in [(0 as UInt64, 2), (0xAB, 2), (0xABC, 2), (0x1, 4), (UInt64.max, 4), (0x12, 40)] {
            var text: [UInt8] = []
            text.appendHex(value, digits: digits)
            let plain = String(value, radix: 16)
            #expect(String(decoding: text, as: UTF8.self) == String(repeating: "0", count: max(0, digits - plain.count)) + plain)
        }
        var padded: [UInt8] = []
        padded.appendDecimal(42, width: 6)
        #expect(String(decoding: padded, as: UTF8.self) == "000042")
        let uuid = BluetoothUUID.bit128(0xF000_AA01_0451_4000_B000_0000_0000_0000)
        #expect(uuid.text(uppercase: false) == "f000aa01-0451-4000-b000-000000000000")
        #expect(BluetoothAddress(rawValue: 0x00_1A_7D_DA_71_13)?.description == "00:1A:7D:DA:71:13")
    }
}
