import BLE
import Bluetooth

/// Writes one JSON document into a byte buffer, keys in the order given. Used for every `--json`
/// output: fast (no intermediate tree, no Foundation) and deterministic.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Whether the current container already has an element (a comma goes before the next).
    private var needsComma: [Bool] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        needsComma.removeAll(keepingCapacity: true)
    }

    private mutating func separator() {
        if let last = needsComma.last {
            if last { bytes.append(UInt8(ascii: ",")) }
            needsComma[needsComma.count - 1] = true
        }
    }

    private mutating func writeKey(_ key: String) {
        separator()
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
    }

    // MARK: containers

    public mutating func beginObject() { separator(); bytes.append(UInt8(ascii: "{")); needsComma.append(false) }
    public mutating func beginObject(_ key: String) { writeKey(key); bytes.append(UInt8(ascii: "{")); needsComma.append(false) }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma.removeLast() }
    public mutating func beginArray() { separator(); bytes.append(UInt8(ascii: "[")); needsComma.append(false) }
    public mutating func beginArray(_ key: String) { writeKey(key); bytes.append(UInt8(ascii: "[")); needsComma.append(false) }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma.removeLast() }

    // MARK: keyed values

    public mutating func field(_ key: String, _ value: Int) { writeKey(key); writeInt(value) }
    public mutating func field(_ key: String, _ value: Double) { writeKey(key); writeDouble(value) }
    public mutating func field(_ key: String, _ value: Bool) { writeKey(key); writeBool(value) }
    public mutating func field(_ key: String, _ value: String) { writeKey(key); writeString(value) }
    public mutating func fieldNull(_ key: String) { writeKey(key); bytes.append(contentsOf: "null".utf8) }
    /// Bytes as a lower-case hex string.
    public mutating func field<C: Collection>(_ key: String, hex value: C) where C.Element == UInt8 {
        writeKey(key); writeHex(value)
    }
    /// A Bluetooth address as Wireshark prints it: `aa:bb:cc:dd:ee:ff` (most significant first).
    public mutating func field(_ key: String, address: BluetoothAddress) {
        writeKey(key)
        bytes.append(UInt8(ascii: "\""))
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { table in
            for index in stride(from: 5, through: 0, by: -1) {
                let octet = UInt8(truncatingIfNeeded: address.rawValue >> (index * 8))
                bytes.append(table[Int(octet >> 4)])
                bytes.append(table[Int(octet & 0x0F)])
                if index > 0 { bytes.append(UInt8(ascii: ":")) }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A time in microseconds as a string of seconds with nine fraction digits, the last three
    /// zero (`"12.345678000"`, `"-0.000001000"`): Wireshark's relative times.
    public mutating func field(_ key: String, microseconds delta: Int64) {
        writeKey(key)
        bytes.append(UInt8(ascii: "\""))
        let seconds = delta / 1_000_000
        var micros = (delta % 1_000_000).magnitude
        if delta < 0 && seconds == 0 { bytes.append(UInt8(ascii: "-")) }
        writeInt(Int(seconds))
        bytes.append(UInt8(ascii: "."))
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: 9))
        for index in stride(from: start + 5, through: start, by: -1) {
            bytes[index] = UInt8(ascii: "0") + UInt8(micros % 10)
            micros /= 10
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A pre-encoded JSON fragment (trusted: produced by this writer).
    public mutating func field(_ key: String, raw fragment: String) { writeKey(key); bytes.append(contentsOf: fragment.utf8) }

    // MARK: array elements

    public mutating func element(_ value: Int) { separator(); writeInt(value) }
    public mutating func element(_ value: String) { separator(); writeString(value) }
    public mutating func element(_ value: Double) { separator(); writeDouble(value) }

    // MARK: scalars

    private mutating func writeBool(_ value: Bool) { bytes.append(contentsOf: (value ? "true" : "false").utf8) }

    private mutating func writeInt(_ value: Int) {
        if value >= 0 && value < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var v = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits = 0
        var probe = v
        while probe > 0 {
            digits += 1
            probe /= 10
        }
        // Digits written in place, least significant last.
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var index = start + digits - 1
            while v > 0 {
                buffer[index] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                index -= 1
            }
        }
    }

    private mutating func writeDouble(_ value: Double) {
        guard value.isFinite else { bytes.append(contentsOf: "null".utf8); return }
        if value == value.rounded(), abs(value) < 1e15 {
            writeInt(Int(value))
        } else {
            bytes.append(contentsOf: "\(value)".utf8)
        }
    }

    private mutating func writeHex<C: Collection>(_ value: C) where C.Element == UInt8 {
        // Room for the quotes and two digits per octet, then filled in place.
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "\""), count: 2 * value.count + 2))
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { table in
            bytes.withUnsafeMutableBufferPointer { buffer in
                var index = start + 1
                for byte in value {
                    buffer[index] = table[Int(byte >> 4)]
                    buffer[index + 1] = table[Int(byte & 0x0F)]
                    index += 2
                }
            }
        }
    }

    private mutating func writeString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escape: copy their UTF-8 in one go.
        var value = value
        let copied = value.withUTF8 { utf8 -> Bool in
            for byte in utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                bytes.append(contentsOf: "\\u00".utf8)
                let digits: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(digits[Int(byte >> 4)])
                bytes.append(digits[Int(byte & 0x0F)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
