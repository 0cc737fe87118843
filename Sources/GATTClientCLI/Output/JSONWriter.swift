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
        if takeComma() { bytes.append(UInt8(ascii: ",")) }
    }

    /// Whether the next element of the open container needs a comma before it (and notes that
    /// the container now has an element).
    @inline(__always)
    private mutating func takeComma() -> Bool {
        guard depth > 0 else { return false }
        if depth > 64 {
            defer { deepNeedsComma[depth - 65] = true }
            return deepNeedsComma[depth - 65]
        }
        let bit: UInt64 = 1 << UInt64(depth - 1)
        defer { needsComma |= bit }
        return needsComma & bit != 0
    }

    /// Appends what `body` writes through a pointer to at most `maximum` octets of reserved
    /// room (it returns how many it wrote): one capacity check for a whole field instead of one
    /// per piece — the formatting of `dump --json` is made of these.
    @inline(__always)
    private mutating func region(_ maximum: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        bytes.appendRegion(maximum, body)
    }

    /// A keyed value: the key (with its comma) and at most `valueRoom` octets written by
    /// `value`, in one region for a literal key; a runtime key is escaped first.
    @inline(__always)
    private mutating func keyed(_ key: JSONKey, valueRoom: Int, _ value: (UnsafeMutablePointer<UInt8>) -> Int) {
        let comma = takeComma()
        guard let literal = key.literal else {
            if comma { bytes.append(UInt8(ascii: ",")) }
            writeString(key.text ?? "")
            bytes.append(UInt8(ascii: ":"))
            region(valueRoom, value)
            return
        }
        region(Self.keyRoom(literal) + valueRoom) { p in
            let n = Self.putKey(literal, comma: comma, at: p)
            return n + value(p + n)
        }
    }

    /// `"` + a literal + `"` at `p`; the length.
    @inline(__always)
    static func putQuoted(_ value: StaticString, at p: UnsafeMutablePointer<UInt8>) -> Int {
        let length = value.utf8CodeUnitCount
        p[0] = UInt8(ascii: "\"")
        TextDigits.putCopy(value.utf8Start, count: length, at: p + 1)
        p[length + 1] = UInt8(ascii: "\"")
        return length + 2
    }

    /// An address as `"aa:bb:cc:dd:ee:ff"` at `p`; the length (19).
    @inline(__always)
    static func putAddress(_ address: BluetoothAddress, at p: UnsafeMutablePointer<UInt8>) -> Int {
        p[0] = UInt8(ascii: "\"")
        address.writeText(at: p + 1, uppercase: false)
        p[18] = UInt8(ascii: "\"")
        return 19
    }

    /// A literal key with its comma (when due), quotes and colon: `,"key":`, at `p`; the length.
    @inline(__always)
    static func putKey(_ literal: StaticString, comma: Bool, at p: UnsafeMutablePointer<UInt8>) -> Int {
        var n = 0
        if comma {
            p[0] = UInt8(ascii: ",")
            n = 1
        }
        p[n] = UInt8(ascii: "\"")
        let length = literal.utf8CodeUnitCount
        TextDigits.putCopy(literal.utf8Start, count: length, at: p + n + 1)
        n += length + 1
        p[n] = UInt8(ascii: "\"")
        p[n + 1] = UInt8(ascii: ":")
        return n + 2
    }

    /// The room a literal key takes at most (comma, quotes, colon).
    @inline(__always)
    static func keyRoom(_ literal: StaticString) -> Int { literal.utf8CodeUnitCount + 4 }

    /// `value` in decimal at `p` (at most 20 octets); the length.
    @inline(__always)
    static func putInt(_ value: Int, at p: UnsafeMutablePointer<UInt8>) -> Int {
        if value >= 0 && value < 10 {
            p[0] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value)
            return 1
        }
        var n = 0
        if value < 0 {
            p[0] = UInt8(ascii: "-")
            n = 1
        }
        return n + putUnsigned(UInt64(value.magnitude), at: p + n)
    }

    /// `value` in decimal at `p` (at most 20 octets); the length.
    @inline(__always)
    static func putUnsigned(_ value: UInt64, at p: UnsafeMutablePointer<UInt8>) -> Int {
        let digits = TextDigits.decimalCount(value)
        TextDigits.putDecimal(value, digits: digits, at: p)
        return digits
    }

    /// `"` + two lower-case hex digits per octet + `"` at `p`; the length (2 × count + 2).
    @inline(__always)
    static func putHex(_ value: UnsafeBufferPointer<UInt8>, at p: UnsafeMutablePointer<UInt8>) -> Int {
        p[0] = UInt8(ascii: "\"")
        let index = 1 + TextDigits.putHex(value, at: p + 1)
        p[index] = UInt8(ascii: "\"")
        return index + 1
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

    public mutating func field(_ key: JSONKey, _ value: Int) {
        keyed(key, valueRoom: 20) { p in Self.putInt(value, at: p) }
    }
    public mutating func field(_ key: JSONKey, _ value: Double) { writeKey(key); writeDouble(value) }
    public mutating func field(_ key: JSONKey, _ value: Bool) { writeKey(key); writeBool(value) }
    public mutating func field(_ key: JSONKey, _ value: String) { writeKey(key); writeString(value) }
    /// A string value that is a literal of this program's (no escape to check).
    public mutating func field(_ key: JSONKey, literal value: StaticString) {
        keyed(key, valueRoom: value.utf8CodeUnitCount + 2) { p in Self.putQuoted(value, at: p) }
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
        let done: Void? = value.withContiguousStorageIfAvailable { octets in
            keyed(key, valueRoom: 2 * octets.count + 2) { p in Self.putHex(octets, at: p) }
        }
        if done == nil {
            // Not contiguous: the octets one by one.
            writeKey(key)
            writeHex(value)
        }
    }
    /// A Bluetooth address as Wireshark prints it: `aa:bb:cc:dd:ee:ff` (most significant first).
    public mutating func field(_ key: JSONKey, address: BluetoothAddress) {
        keyed(key, valueRoom: 19) { p in Self.putAddress(address, at: p) }
    }

    /// A time in microseconds as a string of seconds with nine fraction digits, the last three
    /// zero (`"12.345678000"`, `"-0.000001000"`): Wireshark's relative times.
    public mutating func field(_ key: JSONKey, microseconds delta: Int64) {
        keyed(key, valueRoom: 33) { p in Self.putSeconds(delta, at: p) }
    }

    /// `"12.345678000"` (at most 32 octets) at `p`; the length.
    @inline(__always)
    static func putSeconds(_ delta: Int64, at p: UnsafeMutablePointer<UInt8>) -> Int {
        p[0] = UInt8(ascii: "\"")
        var n = 1
        let seconds = delta / 1_000_000
        let micros = (delta % 1_000_000).magnitude
        if delta < 0 && seconds == 0 {
            p[n] = UInt8(ascii: "-")
            n += 1
        }
        n += putInt(Int(seconds), at: p + n)
        p[n] = UInt8(ascii: ".")
        n += 1
        // Six digits of microseconds (leading zeros kept), then three of nanoseconds.
        TextDigits.putDecimal(micros, digits: 6, at: p + n)
        p[n + 6] = UInt8(ascii: "0")
        p[n + 7] = UInt8(ascii: "0")
        p[n + 8] = UInt8(ascii: "0")
        p[n + 9] = UInt8(ascii: "\"")
        return n + 10
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
        keyed(key, valueRoom: 32) { p in Self.putExactSeconds(micros, at: p) }
    }

    /// `micros` as seconds, the fraction's trailing zeros dropped (at most 32 octets), at `p`;
    /// the length. Only for a whole number of seconds < 1e12 with a non-zero fraction.
    @inline(__always)
    static func putExactSeconds(_ micros: Int64, at p: UnsafeMutablePointer<UInt8>) -> Int {
        let magnitude = micros.magnitude
        var n = 0
        if micros < 0 {
            p[0] = UInt8(ascii: "-")
            n = 1
        }
        n += putUnsigned(magnitude / 1_000_000, at: p + n)
        p[n] = UInt8(ascii: ".")
        n += 1
        // Six digits (the fraction is not zero), then its trailing zeros dropped.
        TextDigits.putDecimal(magnitude % 1_000_000, digits: 6, at: p + n)
        var digits = 6
        while p[n + digits - 1] == UInt8(ascii: "0") { digits -= 1 }
        return n + digits
    }

    /// A value already in JSON (a string with its quotes and escapes, from
    /// ``encodedString(_:)``): the key and it in one region.
    public mutating func field(_ key: JSONKey, encoded value: [UInt8]) {
        value.withUnsafeBufferPointer { octets in
            keyed(key, valueRoom: octets.count) { p in Self.putCopy(octets, at: p) }
        }
    }

    /// `octets` as they are at `p`; the length.
    @inline(__always)
    static func putCopy(_ octets: UnsafeBufferPointer<UInt8>, at p: UnsafeMutablePointer<UInt8>) -> Int {
        if let source = octets.baseAddress { p.update(from: source, count: octets.count) }
        return octets.count
    }

    /// `value` as a JSON string (quotes and escapes), for ``field(_:encoded:)``.
    public static func encodedString(_ value: String) -> [UInt8] {
        var writer = JSONWriter(capacity: value.utf8.count + 2)
        writer.writeString(value)
        return writer.bytes
    }

    /// Writes a whole document through a ``JSONCursor`` into `maximum` octets of room reserved
    /// at once (the JSON dump's records: one capacity check for a record instead of one per
    /// field). Only at the top level. False, with nothing written, when the document did not fit
    /// or needed what the cursor leaves to the writer (an escape, a key that is not a literal):
    /// the caller then writes it with the writer.
    mutating func withCursor(reserving maximum: Int, _ body: (inout JSONCursor) -> Void) -> Bool {
        precondition(depth == 0, "JSONWriter.withCursor: only for a whole document")
        var written = false
        bytes.append(addingCapacity: maximum) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                var cursor = JSONCursor(base: buffer.baseAddress!, capacity: buffer.count)
                body(&cursor)
                written = !cursor.overflowed
                precondition(!written || cursor.isComplete, "JSONWriter.withCursor: a container left open")
                initialized = written ? cursor.count : 0
            }
        }
        return written
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

/// What the JSON dump's records are written through: a ``JSONWriter``, or a ``JSONCursor`` over
/// room reserved for the record.
protocol JSONFieldWriting {
    mutating func beginObject()
    mutating func beginObject(_ key: JSONKey)
    mutating func endObject()
    mutating func beginArray(_ key: JSONKey)
    mutating func endArray()
    mutating func field(_ key: JSONKey, _ value: Int)
    mutating func field(_ key: JSONKey, _ value: Bool)
    mutating func field(_ key: JSONKey, _ value: String)
    mutating func field(_ key: JSONKey, literal value: StaticString)
    mutating func fieldNull(_ key: JSONKey)
    mutating func field(_ key: JSONKey, hex value: [UInt8])
    mutating func field(_ key: JSONKey, hex value: ArraySlice<UInt8>)
    mutating func field(_ key: JSONKey, address: BluetoothAddress)
    mutating func field(_ key: JSONKey, microseconds delta: Int64)
    mutating func field(_ key: JSONKey, secondsFromMicroseconds micros: Int64)
    mutating func field(_ key: JSONKey, encoded value: [UInt8])
    mutating func element(_ value: Int)
}

extension JSONWriter: JSONFieldWriting {}

/// A JSON document written through a pointer into room reserved by
/// ``JSONWriter/withCursor(reserving:_:)``: the same text as ``JSONWriter``'s fields, each field
/// checked against the room once. What does not fit, and what it leaves to the writer (a
/// string that needs an escape, a key that is not a literal), marks it `overflowed`: nothing
/// more is written and the caller writes the document with the writer instead.
struct JSONCursor: JSONFieldWriting {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0
    private(set) var overflowed = false
    /// Bit `depth − 1`: the container at that depth has an element (a comma before the next).
    private var needsComma: UInt64 = 0
    private var depth = 0

    init(base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    var isComplete: Bool { depth == 0 }

    /// `n` octets of room at the end (where the next piece goes), or nil: then overflowed.
    @inline(__always)
    private mutating func room(_ n: Int) -> UnsafeMutablePointer<UInt8>? {
        guard !overflowed, count + n <= capacity else {
            overflowed = true
            return nil
        }
        return base + count
    }

    @inline(__always)
    private mutating func takeComma() -> Bool {
        guard depth > 0 else { return false }
        let bit: UInt64 = 1 << UInt64(depth - 1)
        defer { needsComma |= bit }
        return needsComma & bit != 0
    }

    /// The key (with its comma) and then at most `valueRoom` octets of value written by `value`.
    @inline(__always)
    private mutating func field(_ key: JSONKey, valueRoom: Int, _ value: (UnsafeMutablePointer<UInt8>) -> Int) {
        guard let literal = key.literal else {
            overflowed = true
            return
        }
        let comma = takeComma()
        guard let p = room(JSONWriter.keyRoom(literal) + valueRoom) else { return }
        let n = JSONWriter.putKey(literal, comma: comma, at: p)
        count += n + value(p + n)
    }

    @inline(__always)
    private mutating func open(_ bracket: UInt8, key: JSONKey?) {
        if let key {
            field(key, valueRoom: 1) { p in
                p[0] = bracket
                return 1
            }
        } else {
            let comma = takeComma()
            guard let p = room(2) else { return }
            if comma {
                p[0] = UInt8(ascii: ",")
                p[1] = bracket
                count += 2
            } else {
                p[0] = bracket
                count += 1
            }
        }
        guard depth < 64 else {
            overflowed = true
            return
        }
        depth += 1
        needsComma &= ~(1 << UInt64(depth - 1))
    }

    @inline(__always)
    private mutating func close(_ bracket: UInt8) {
        guard let p = room(1) else { return }
        p[0] = bracket
        count += 1
        depth -= 1
    }

    mutating func beginObject() { open(UInt8(ascii: "{"), key: nil) }
    mutating func beginObject(_ key: JSONKey) { open(UInt8(ascii: "{"), key: key) }
    mutating func endObject() { close(UInt8(ascii: "}")) }
    mutating func beginArray(_ key: JSONKey) { open(UInt8(ascii: "["), key: key) }
    mutating func endArray() { close(UInt8(ascii: "]")) }

    mutating func field(_ key: JSONKey, _ value: Int) {
        field(key, valueRoom: 20) { p in JSONWriter.putInt(value, at: p) }
    }

    mutating func field(_ key: JSONKey, _ value: Bool) { bare(key, value ? "true" : "false") }

    /// A string needing no escape, in quotes; one that needs an escape is left to the writer.
    mutating func field(_ key: JSONKey, _ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            for byte in utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                overflowed = true
                return
            }
            field(key, valueRoom: utf8.count + 2) { p in
                p[0] = UInt8(ascii: "\"")
                p[utf8.count + 1] = UInt8(ascii: "\"")
                return JSONWriter.putCopy(utf8, at: p + 1) + 2
            }
        }
    }

    mutating func field(_ key: JSONKey, literal value: StaticString) {
        field(key, valueRoom: value.utf8CodeUnitCount + 2) { p in JSONWriter.putQuoted(value, at: p) }
    }

    mutating func fieldNull(_ key: JSONKey) { bare(key, "null") }

    /// A literal value without quotes (`null`, `true`, `false`).
    private mutating func bare(_ key: JSONKey, _ value: StaticString) {
        let length = value.utf8CodeUnitCount
        field(key, valueRoom: length) { p in
            TextDigits.putCopy(value.utf8Start, count: length, at: p)
            return length
        }
    }

    mutating func field(_ key: JSONKey, hex value: UnsafeBufferPointer<UInt8>) {
        field(key, valueRoom: 2 * value.count + 2) { p in JSONWriter.putHex(value, at: p) }
    }

    mutating func field(_ key: JSONKey, hex value: ArraySlice<UInt8>) {
        value.withUnsafeBufferPointer { field(key, hex: $0) }
    }

    mutating func field(_ key: JSONKey, hex value: [UInt8]) {
        value.withUnsafeBufferPointer { field(key, hex: $0) }
    }

    mutating func field(_ key: JSONKey, address: BluetoothAddress) {
        field(key, valueRoom: 19) { p in JSONWriter.putAddress(address, at: p) }
    }

    mutating func field(_ key: JSONKey, microseconds delta: Int64) {
        field(key, valueRoom: 33) { p in JSONWriter.putSeconds(delta, at: p) }
    }

    /// As ``JSONWriter/field(_:secondsFromMicroseconds:)``; a Double's text (outside the exact
    /// range) is left to the writer.
    mutating func field(_ key: JSONKey, secondsFromMicroseconds micros: Int64) {
        let magnitude = micros.magnitude
        guard magnitude >= 100, magnitude < 1_000_000_000_000_000, micros % 1_000_000 != 0 else {
            overflowed = true
            return
        }
        field(key, valueRoom: 32) { p in JSONWriter.putExactSeconds(micros, at: p) }
    }

    mutating func field(_ key: JSONKey, encoded value: [UInt8]) {
        value.withUnsafeBufferPointer { octets in
            field(key, valueRoom: octets.count) { p in JSONWriter.putCopy(octets, at: p) }
        }
    }

    mutating func element(_ value: Int) {
        let comma = takeComma()
        guard let p = room(21) else { return }
        var n = 0
        if comma {
            p[0] = UInt8(ascii: ",")
            n = 1
        }
        count += n + JSONWriter.putInt(value, at: p + n)
    }
}
