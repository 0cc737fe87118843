import BLE
import Bluetooth

/// An object key: a literal (written as it is: the keys this program writes need no escape), or
/// any string (`JSONKey(text)`, escaped).
public struct JSONKey: ExpressibleByStringLiteral, Sendable {
    let literal: StaticString?
    let text: String?

    public init(stringLiteral value: StaticString) {
        literal = value
        text = nil
    }

    public init(_ text: String) {
        literal = nil
        self.text = text
    }
}

/// Writes one JSON document into a byte buffer, keys in the order given. Used for every `--json`
/// output: fast (no intermediate tree, no Foundation) and deterministic.
public struct JSONWriter: Sendable {
    /// The document (a caller may lend its own buffer: swap it in, write, swap it back).
    public internal(set) var bytes: [UInt8] = []
    /// Whether each open container already has an element (a comma goes before the next): bit
    /// `depth - 1` for the 64 outermost, `deepNeedsComma` for any deeper.
    private var needsComma: UInt64 = 0
    private var deepNeedsComma: [Bool] = []
    private var depth = 0

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        needsComma = 0
        deepNeedsComma.removeAll(keepingCapacity: true)
        depth = 0
    }

    @inline(__always)
    private mutating func separator() {
        guard depth > 0 else { return }
        if depth > 64 {
            if deepNeedsComma[depth - 65] { bytes.append(UInt8(ascii: ",")) }
            deepNeedsComma[depth - 65] = true
            return
        }
        let bit: UInt64 = 1 << UInt64(depth - 1)
        if needsComma & bit != 0 { bytes.append(UInt8(ascii: ",")) }
        needsComma |= bit
    }

    @inline(__always)
    private mutating func open(_ bracket: Unicode.Scalar) {
        bytes.append(UInt8(truncatingIfNeeded: bracket.value))
        depth += 1
        if depth <= 64 {
            needsComma &= ~(1 << UInt64(depth - 1))
        } else {
            deepNeedsComma.append(false)
        }
    }

    @inline(__always)
    private mutating func close(_ bracket: Unicode.Scalar) {
        bytes.append(UInt8(truncatingIfNeeded: bracket.value))
        if depth > 64 { deepNeedsComma.removeLast() }
        depth -= 1
    }

    @inline(__always)
    private mutating func writeKey(_ key: JSONKey) {
        separator()
        if let literal = key.literal {
            bytes.append(UInt8(ascii: "\""))
            literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
            bytes.append(UInt8(ascii: "\""))
        } else {
            writeString(key.text ?? "")
        }
        bytes.append(UInt8(ascii: ":"))
    }

    // MARK: containers

    public mutating func beginObject() { separator(); open("{") }
    public mutating func beginObject(_ key: JSONKey) { writeKey(key); open("{") }
    public mutating func endObject() { close("}") }
    public mutating func beginArray() { separator(); open("[") }
    public mutating func beginArray(_ key: JSONKey) { writeKey(key); open("[") }
    public mutating func endArray() { close("]") }

    // MARK: keyed values

    public mutating func field(_ key: JSONKey, _ value: Int) { writeKey(key); writeInt(value) }
    public mutating func field(_ key: JSONKey, _ value: Double) { writeKey(key); writeDouble(value) }
    public mutating func field(_ key: JSONKey, _ value: Bool) { writeKey(key); writeBool(value) }
    public mutating func field(_ key: JSONKey, _ value: String) { writeKey(key); writeString(value) }
    /// A string value that is a literal of this program's (no escape to check).
    public mutating func field(_ key: JSONKey, literal value: StaticString) {
        writeKey(key)
        bytes.append(UInt8(ascii: "\""))
        value.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Starts a document at the end of `bytes` as they are (after `reset()` or a swap).
    public mutating func resetContainers() {
        needsComma = 0
        deepNeedsComma.removeAll(keepingCapacity: true)
        depth = 0
    }

    public mutating func fieldNull(_ key: JSONKey) { writeKey(key); bytes.append(contentsOf: "null".utf8) }
    /// Bytes as a lower-case hex string.
    public mutating func field<C: Collection>(_ key: JSONKey, hex value: C) where C.Element == UInt8 {
        writeKey(key); writeHex(value)
    }
    /// A Bluetooth address as Wireshark prints it: `aa:bb:cc:dd:ee:ff` (most significant first).
    public mutating func field(_ key: JSONKey, address: BluetoothAddress) {
        writeKey(key)
        bytes.append(UInt8(ascii: "\""))
        address.writeText(to: &bytes, uppercase: false)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A time in microseconds as a string of seconds with nine fraction digits, the last three
    /// zero (`"12.345678000"`, `"-0.000001000"`): Wireshark's relative times.
    public mutating func field(_ key: JSONKey, microseconds delta: Int64) {
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

    /// Seconds from microseconds as a number: what `field(key, Double(microseconds) / 1_000_000)`
    /// writes (Swift's shortest round-trip text), without formatting a Double where that text
    /// is the exact decimal (1e-4 ≤ |seconds| < 1e9: there the exact decimal, trailing zeros
    /// dropped, is the shortest text that reads back as the same Double).
    public mutating func field(_ key: JSONKey, secondsFromMicroseconds micros: Int64) {
        let magnitude = micros.magnitude
        guard magnitude >= 100, magnitude < 1_000_000_000_000_000, micros % 1_000_000 != 0 else {
            field(key, Double(micros) / 1_000_000)
            return
        }
        writeKey(key)
        if micros < 0 { bytes.append(UInt8(ascii: "-")) }
        writeInt(Int(magnitude / 1_000_000))
        bytes.append(UInt8(ascii: "."))
        var fraction = magnitude % 1_000_000
        var digits = 6
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        var index = start + digits - 1
        while fraction > 0 {
            bytes[index] = UInt8(ascii: "0") + UInt8(fraction % 10)
            fraction /= 10
            index -= 1
        }
    }

    /// A pre-encoded JSON fragment (trusted: produced by this writer).
    public mutating func field(_ key: JSONKey, raw fragment: String) { writeKey(key); bytes.append(contentsOf: fragment.utf8) }

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
