import Bluetooth
import Testing
@testable import GATTClientCLI

/// The in-place writers of `JSONWriter` (integers, hex, addresses, capture times, escape-free
/// strings) against the plain `String` formatting they replace.
@Suite struct JSONWriterFastPathTests {
    static func text(_ body: (inout JSONWriter) -> Void) -> String {
        var json = JSONWriter()
        json.beginObject()
        body(&json)
        json.endObject()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    @Test(arguments: [0, 1, 9, 10, 99, 100, 255, 65_535, 1_234_567_890, -1, -9, -10, -128, Int.max, Int.min])
    func integersMatchTheirDescription(value: Int) {
        #expect(Self.text { $0.field("v", value) } == "{\"v\":\(value)}")
    }

    /// The `time` field: what `String` formatting gave before (`sign + seconds + "." + six
    /// digits + "000"`).
    @Test(arguments: [0, 1, 999_999, 1_000_000, 12_345_678, 3_600_000_001, -1, -999_999, -1_000_000, -1_000_001, -12_345_678] as [Int64])
    func timesMatchTheStringFormatting(delta: Int64) {
        let seconds = delta / 1_000_000
        let fraction = String((delta % 1_000_000).magnitude)
        let sign = delta < 0 && seconds == 0 ? "-" : ""
        let expected = sign + String(seconds) + "." + String(repeating: "0", count: 6 - fraction.count) + fraction + "000"
        #expect(Self.text { $0.field("time", microseconds: delta) } == "{\"time\":\"\(expected)\"}")
    }

    @Test func addressesMatchFormat() {
        for raw: UInt64 in [0, 0x546C_0E12_3456, 0xFFFF_FFFF_FFFF, 0x0102_0304_0A0B] {
            guard let address = BluetoothAddress(rawValue: raw) else { Issue.record("bad address"); continue }
            #expect(Self.text { $0.field("a", address: address) } == "{\"a\":\"\(address.format(uppercase: false))\"}")
        }
    }

    @Test func hexAndStrings() {
        #expect(Self.text { $0.field("h", hex: [UInt8]()) } == #"{"h":""}"#)
        #expect(Self.text { $0.field("h", hex: [0x00, 0x0F, 0xA0, 0xFF][1...]) } == #"{"h":"0fa0ff"}"#)
        #expect(Self.text { $0.field("s", "plain ASCII and ünïcödé") } == #"{"s":"plain ASCII and ünïcödé"}"#)
        #expect(Self.text { $0.field("s", "tab\there \"q\" \\ \u{7}") } == #"{"s":"tab\there \"q\" \\ \u0007"}"#)
        #expect(Self.text { $0.field("s", "") } == #"{"s":""}"#)
    }
}

/// Issue 25: seconds written from microseconds without formatting a Double are what the
/// Double's own text is, at every magnitude (the fast path and the fallback both).
@Suite("JSONWriter: seconds from microseconds")
struct JSONSecondsTests {
    static func both(_ micros: Int64) -> (String, String) {
        var fast = JSONWriter()
        fast.beginObject()
        fast.field("t", secondsFromMicroseconds: micros)
        fast.endObject()
        var slow = JSONWriter()
        slow.beginObject()
        slow.field("t", Double(micros) / 1_000_000)
        slow.endObject()
        return (String(decoding: fast.bytes, as: UTF8.self), String(decoding: slow.bytes, as: UTF8.self))
    }

    @Test func sameTextAsTheDouble() {
        var generator = SystemRandomNumberGenerator()
        var values: [Int64] = [0, 1, 99, 100, 101, 999_999, 1_000_000, 1_000_001, -1, -100, -150, -1_000_001, 123_456_789,
                               999_999_999_999_999, 1_000_000_000_000_000, -999_999_999_999_999, 5_000_000, 2_500_000]
        var limit: Int64 = 1
        for _ in 1...18 {
            limit *= 10
            for _ in 0..<2_000 { values.append(Int64.random(in: -limit...limit, using: &generator)) }
        }
        for micros in values {
            let (fast, slow) = Self.both(micros)
            #expect(fast == slow, "\(micros)")
        }
    }
}
