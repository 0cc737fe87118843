import Bluetooth
import SystemSupport
import Testing
@testable import GATTClientCLI
import TestSupport

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
@Suite("JSONWriter: seconds from microseconds", .cpuBound)
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

/// Each field with a literal key is written in one reserved region; with a runtime key
/// (`JSONKey(text)`) through the piece-by-piece path. Both give the same document, commas
/// included, for every kind of field and at every position in its container.
@Suite("JSONWriter: literal and runtime keys agree")
struct JSONWriterRegionTests {
    static func document(literal fast: Bool) -> String {
        var json = JSONWriter(capacity: 1)  // every region grows the buffer
        func key(_ name: StaticString) -> JSONKey { fast ? JSONKey(stringLiteral: name) : JSONKey(name.description) }
        json.beginObject()
        json.beginArray(key("rounds"))
        for round in 0..<3 {
            json.beginObject()
            json.field(key("int"), round == 0 ? Int.min : round == 1 ? -7 : Int.max)
            json.field(key("literal"), literal: "LE_EXTENDED_ADVERTISING_REPORT")
            json.field(key("hex"), hex: [UInt8](0...UInt8(round * 40)))
            json.field(key("slice"), hex: [UInt8](0...20)[3..<(5 + round)])
            json.field(key("lazy"), hex: (0..<UInt8(round + 2)).lazy.map { $0 &* 37 })
            json.field(key("address"), address: BluetoothAddress(rawValue: 0xC677_7FDF_EF2A + UInt64(round))!)
            json.field(key("time"), microseconds: [-1_000_001, 0, 3_600_000_123][round])
            json.field(key("t"), secondsFromMicroseconds: [-1_500_000, 100, 999_999_999_999][round])
            json.field(key("encoded"), encoded: JSONWriter.encodedString("a \"quoted\" name\n"))
            json.beginArray(key("list"))
            json.beginObject()
            json.field(key("type"), round)
            json.endObject()
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    @Test func bothPathsWriteTheSameDocument() throws {
        let fast = Self.document(literal: true)
        #expect(fast == Self.document(literal: false))
        #expect(fast.hasPrefix(#"{"rounds":[{"int":-9223372036854775808,"literal":"LE_EXTENDED_ADVERTISING_REPORT","hex":"00","slice":"0304","lazy":"0025","address":"c6:77:7f:df:ef:2a","time":"-1.000001000","t":-1.5,"encoded":"a \"quoted\" name\n","list":[{"type":0}]},{"int":-7,"#))
        // A document the JSON parser reads back.
        _ = try JSONValue(parsing: Array(fast.utf8))
    }
}

/// The cursor behind the JSON dump's records writes what the writer does, and refuses whole
/// what it cannot write within the room reserved for it.
@Suite("JSONWriter: the cursor over reserved room")
struct JSONCursorTests {
    /// One document, through either.
    static func document<W: JSONFieldWriting>(micros: Int64, into json: inout W) {
        json.beginObject()
        json.field("kind", literal: "adv_report")
        json.field("n", -42)
        json.field("t", secondsFromMicroseconds: micros)
        json.field("time", microseconds: micros)
        json.fieldNull("none")
        json.field("flag", true)
        json.field("name", "plain ünïcödé")
        json.field("address", address: BluetoothAddress(rawValue: 0x0A0B_0C0D_0E0F)!)
        json.field("data", hex: [0x02, 0x01, 0x06][...])
        json.field("encoded", encoded: JSONWriter.encodedString("a \"quoted\" name"))
        json.beginArray("ad")
        for type in 0..<3 {
            json.beginObject()
            json.field("type", type)
            json.field("data", hex: [UInt8](repeating: UInt8(type), count: type))
            json.endObject()
        }
        json.endArray()
        json.beginArray("handles")
        for handle in [1, 0x0025, 0xFFFF] { json.element(handle) }
        json.endArray()
        json.beginObject("empty")
        json.endObject()
        json.endObject()
    }

    @Test func theCursorWritesWhatTheWriterWrites() {
        for micros: Int64 in [0, 1, 150, 1_000_000, -2_500_000, 123_456_789, -1_000_150, 1_000_000_000_000_000_000] {
            var writer = JSONWriter()
            Self.document(micros: micros, into: &writer)
            var viaCursor = JSONWriter()
            let written = viaCursor.withCursor(reserving: 1_024) { Self.document(micros: micros, into: &$0) }
            if !written {
                // A Double's text is the writer's: the caller writes the document with it.
                #expect(micros % 1_000_000 == 0 || micros.magnitude < 100 || micros.magnitude >= 1_000_000_000_000_000)
                continue
            }
            #expect(String(decoding: viaCursor.bytes, as: UTF8.self) == String(decoding: writer.bytes, as: UTF8.self), "\(micros)")
        }
    }

    /// What does not fit, or needs the writer (an escape, a Double's text, a key that is not a
    /// literal), is refused whole: nothing written, false, and the caller writes it again.
    @Test func whatTheCursorCannotWriteIsRefusedWhole() {
        var writer = JSONWriter()
        writer.beginArray()
        writer.element(1)
        writer.endArray()
        let before = writer.bytes
        let cases: [(String, (inout JSONCursor) -> Void)] = [
            ("too large", { $0.field("data", hex: [UInt8](repeating: 0xAB, count: 600)) }),
            ("an escape", { $0.field("name", "a \"quote\"") }),
            ("a Double", { $0.field("t", secondsFromMicroseconds: 0) }),
            ("a runtime key", { $0.field(JSONKey(String(["k", "e", "y"])), 1) }),
        ]
        for (what, body) in cases {
            let written = writer.withCursor(reserving: 64) { json in
                json.beginObject()
                json.field("kind", literal: "att")
                body(&json)
                json.endObject()
            }
            #expect(!written, "\(what)")
            #expect(writer.bytes == before, "\(what)")
        }
        let written = writer.withCursor(reserving: 64) { json in
            json.beginObject()
            json.field("name", "plain")
            json.endObject()
        }
        #expect(written)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"[1]{"name":"plain"}"#)
    }
}
