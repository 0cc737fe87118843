import Bluetooth

/// How the controller finishes a command: with HCI_Command_Complete (carrying return
/// parameters) or with HCI_Command_Status followed later by the command's own event.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §4.4
public enum HCICommandCompletion: Hashable, Sendable {
    case commandComplete
    case commandStatus
}

/// A typed HCI command: its opcode, its parameters as Swift fields, and the return parameters
/// its HCI_Command_Complete carries.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.1
public protocol HCICommand: Hashable, Sendable, CustomStringConvertible {
    static var opcode: HCIOpcode { get }
    /// `.commandStatus` for commands answered by HCI_Command_Status (their `ReturnParameters`
    /// is then the plain status and is not used).
    static var completion: HCICommandCompletion { get }
    associatedtype ReturnParameters: HCIReturnParameters = StatusReturnParameters
    /// Parses exactly the command parameters (after Parameter_Total_Length); strict.
    init(parsingParameters reader: inout ByteReader) throws(HCIError)
    /// Writes the command parameters (not the opcode or length). Assumes `validate()` passed:
    /// encode through `HCICommandPacket(_:)` or `encodeParameters()`, which check first.
    func writeParameters(to writer: inout ByteWriter)
    /// Checks the fields against the limits the parser enforces (lengths, counts, handles), so an
    /// encoded command always parses back. Called by `HCICommandPacket.init(_:)`.
    func validate() throws(HCIError)
}

extension HCICommand {
    public static var completion: HCICommandCompletion { .commandComplete }
    public func validate() throws(HCIError) {}

    /// The parameters alone, as bytes; throws when a field breaks the command's limits.
    public func encodeParameters() throws(HCIError) -> [UInt8] {
        try validate()
        var writer = ByteWriter()
        writeParameters(to: &writer)
        return writer.bytes
    }

    /// Parses a parameter block that must hold exactly this command.
    public init(parameters: [UInt8]) throws(HCIError) {
        var reader = ByteReader(parameters)
        try self.init(parsingParameters: &reader)
    }
}

/// Return parameters of a command completed by HCI_Command_Complete (the status comes first).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.14
public protocol HCIReturnParameters: Hashable, Sendable, CustomStringConvertible {
    var status: HCIStatus { get }
    /// Parses the whole return parameter block, status included; strict.
    init(parsing reader: inout ByteReader) throws(HCIError)
    func write(to writer: inout ByteWriter)
}

extension HCIReturnParameters {
    /// The return parameters as bytes (status first).
    public var bytes: [UInt8] {
        var writer = ByteWriter()
        write(to: &writer)
        return writer.bytes
    }

    /// Parses a block that must hold exactly these return parameters.
    public init(bytes: [UInt8]) throws(HCIError) {
        var reader = ByteReader(bytes)
        try self.init(parsing: &reader)
    }
}

/// Return parameters that are only a status (Reset, the LE Set … commands, …).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.14
public struct StatusReturnParameters: HCIReturnParameters {
    public var status: HCIStatus

    public init(status: HCIStatus = .success) { self.status = status }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, context: "status return parameters")
        status = try r.status()
        try r.end()
        reader = r.reader
    }

    public func write(to writer: inout ByteWriter) { writer.writeUInt8(status.rawValue) }
    public var description: String { status.description }
}

/// One HCI command packet without its H4 indicator: opcode, Parameter_Total_Length, parameters.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.1
public struct HCICommandPacket: Hashable, Sendable, CustomStringConvertible {
    /// Parameter_Total_Length is one octet.
    public static let maximumParameterLength = 255
    /// Opcode (2) and Parameter_Total_Length (1).
    public static let headerLength = 3

    public let opcode: HCIOpcode
    public let parameters: [UInt8]

    /// Throws when `parameters` do not fit Parameter_Total_Length.
    public init(opcode: HCIOpcode, parameters: [UInt8] = []) throws(HCIError) {
        guard parameters.count <= Self.maximumParameterLength else {
            throw .malformed(
                context: "HCI command \(opcode)",
                reason: .invalidLength(field: "Parameter_Total_Length", value: parameters.count), offset: 2)
        }
        self.opcode = opcode
        self.parameters = parameters
    }

    /// The packet of a typed command; throws when the command breaks its own limits.
    public init<C: HCICommand>(_ command: C) throws(HCIError) {
        try self.init(opcode: C.opcode, parameters: try command.encodeParameters())
    }

    /// Parses the bytes after the H4 indicator: the packet must end exactly where
    /// Parameter_Total_Length says (a datagram is whole).
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        do {
            opcode = HCIOpcode(rawValue: try reader.readUInt16LE())
            let length = Int(try reader.readUInt8())
            parameters = Array(try reader.readBytes(length))
            try reader.expectEnd()
        } catch {
            throw HCIError(error, context: "HCI command packet")
        }
    }

    /// Parses a whole packet (after the H4 indicator).
    public init(bytes: [UInt8]) throws(HCIError) {
        var reader = ByteReader(bytes)
        try self.init(parsing: &reader)
    }

    public var encodedLength: Int { Self.headerLength + parameters.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(opcode.rawValue)
        writer.writeUInt8(UInt8(parameters.count))
        writer.writeBytes(parameters)
    }

    /// Opcode, length and parameters (no H4 indicator).
    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: encodedLength)
        write(to: &writer)
        return writer.bytes
    }

    /// Decodes the parameters as `C`; throws when the opcode is another command's.
    public func decode<C: HCICommand>(as type: C.Type) throws(HCIError) -> C {
        guard opcode == C.opcode else {
            throw .malformed(
                context: "HCI command \(opcode)",
                reason: .invalidValue(field: "Opcode", value: Int(opcode.rawValue)), offset: 0)
        }
        var reader = ByteReader(parameters)
        return try C(parsingParameters: &reader)
    }

    /// `"HCI_Reset (0x0c03) plen 0"`, with the parameters in hex when there are any.
    public var description: String {
        let head = "\(opcode) (0x\(String(opcode.rawValue, radix: 16).leftPadded(4))) plen \(parameters.count)"
        return parameters.isEmpty ? head : head + ": " + Hex.encode(parameters)
    }
}

// MARK: - Parsing helpers (internal)

/// Reads command and return parameters; cursor errors become `HCIError.malformed` naming the
/// command, and enumerated fields are checked as they are read.
struct CommandParameterReader {
    var reader: ByteReader
    let context: String

    init(_ reader: ByteReader, context: String) {
        self.reader = reader
        self.context = context
    }

    init(_ reader: ByteReader, command opcode: HCIOpcode) {
        self.init(reader, context: opcode.description)
    }

    var offset: Int { reader.offset }
    var remainingCount: Int { reader.remainingCount }

    private func wrap(_ error: ByteReaderError) -> HCIError { HCIError(error, context: context) }

    func invalidValue(_ field: String, _ value: Int, at offset: Int) -> HCIError {
        .malformed(context: context, reason: .invalidValue(field: field, value: value), offset: offset)
    }

    func invalidLength(_ field: String, _ value: Int, at offset: Int) -> HCIError {
        .malformed(context: context, reason: .invalidLength(field: field, value: value), offset: offset)
    }

    mutating func uint8() throws(HCIError) -> UInt8 {
        do { return try reader.readUInt8() } catch { throw wrap(error) }
    }

    mutating func int8() throws(HCIError) -> Int8 {
        do { return try reader.readInt8() } catch { throw wrap(error) }
    }

    mutating func uint16() throws(HCIError) -> UInt16 {
        do { return try reader.readUInt16LE() } catch { throw wrap(error) }
    }

    mutating func uint24() throws(HCIError) -> UInt32 {
        do { return try reader.readUInt24LE() } catch { throw wrap(error) }
    }

    mutating func uint64() throws(HCIError) -> UInt64 {
        do { return try reader.readUInt64LE() } catch { throw wrap(error) }
    }

    mutating func bytes(_ count: Int) throws(HCIError) -> [UInt8] {
        do { return Array(try reader.readBytes(count)) } catch { throw wrap(error) }
    }

    /// Six octets, checked as one field so a short address reports `needed: 6`.
    mutating func address() throws(HCIError) -> BluetoothAddress {
        do {
            var field = try reader.subReader(6)
            return try BluetoothAddress(parsingLittleEndian: &field)
        } catch {
            throw wrap(error)
        }
    }

    mutating func status() throws(HCIError) -> HCIStatus {
        HCIStatus(rawValue: try uint8())
    }

    /// A Connection_Handle: 12 bits, 0x0000–0x0EFF.
    mutating func connectionHandle(_ field: String = "Connection_Handle") throws(HCIError) -> UInt16 {
        let at = offset
        let value = try uint16()
        guard value <= HCIConnectionHandleLimit.maximum else { throw invalidValue(field, Int(value), at: at) }
        return value
    }

    /// A one-octet boolean (0x00 or 0x01 only).
    mutating func bool(_ field: String) throws(HCIError) -> Bool {
        let at = offset
        switch try uint8() {
        case 0: return false
        case 1: return true
        case let other: throw invalidValue(field, Int(other), at: at)
        }
    }

    /// A one-octet closed enumeration; values the spec reserves are rejected.
    mutating func enumeration<E: RawRepresentable>(_ type: E.Type, _ field: String) throws(HCIError) -> E
    where E.RawValue == UInt8 {
        let at = offset
        let raw = try uint8()
        guard let value = E(rawValue: raw) else { throw invalidValue(field, Int(raw), at: at) }
        return value
    }

    func end() throws(HCIError) {
        do { try reader.expectEnd() } catch { throw wrap(error) }
    }
}

/// The Connection_Handle range shared by every command that names a connection.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.2
public enum HCIConnectionHandleLimit {
    public static let maximum: UInt16 = 0x0EFF

    /// Throws when `handle` is outside 0x0000–0x0EFF (used by `validate()`).
    static func check(_ handle: UInt16, field: String = "Connection_Handle", in opcode: HCIOpcode, offset: Int)
        throws(HCIError)
    {
        guard handle <= maximum else {
            throw .malformed(
                context: opcode.description, reason: .invalidValue(field: field, value: Int(handle)), offset: offset)
        }
    }
}

// MARK: - Display helpers (internal)

enum CommandFormat {
    /// `0x0010` style hex of `digits` digits.
    static func hex<T: BinaryInteger>(_ value: T, digits: Int) -> String {
        "0x" + String(value, radix: 16).leftPadded(digits)
    }

    /// `units × microsecondsPerUnit` µs as `"10.000 ms"`; exact integer arithmetic.
    static func milliseconds<T: BinaryInteger>(_ units: T, microsecondsPerUnit: Int) -> String {
        let micro = Int(units) * microsecondsPerUnit
        return "\(micro / 1000)." + String(micro % 1000).leftPadded(3) + " ms"
    }

    /// `"30.000–50.000 ms"`: two values in the same unit (one when they are equal).
    static func millisecondRange<T: BinaryInteger>(_ low: T, _ high: T, microsecondsPerUnit: Int) -> String {
        let first = milliseconds(low, microsecondsPerUnit: microsecondsPerUnit)
        if low == high { return first }
        return String(first.dropLast(3)) + "–" + milliseconds(high, microsecondsPerUnit: microsecondsPerUnit)
    }

    /// A 0.625 ms time value: `"10.000 ms"`.
    static func slots<T: BinaryInteger>(_ units: T) -> String { milliseconds(units, microsecondsPerUnit: 625) }
    /// A 1.25 ms connection interval value.
    static func connectionInterval(_ units: UInt16) -> String { milliseconds(units, microsecondsPerUnit: 1250) }
    /// A 10 ms value (supervision timeout, durations).
    static func tenMilliseconds(_ units: UInt16) -> String { milliseconds(units, microsecondsPerUnit: 10_000) }

    static func handle(_ value: UInt16) -> String { "handle \(value)" }

    /// Hex of a data block with its length: `"3 octets 020106"`.
    static func data(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "0 octets" : "\(bytes.count) octet\(bytes.count == 1 ? "" : "s") \(Hex.encode(bytes))"
    }

    static func name(_ opcode: HCIOpcode) -> String { opcode.displayName }
}

/// A command with no parameters (Parameter_Total_Length 0): parsing only checks there are none.
public protocol HCICommandWithoutParameters: HCICommand {
    init()
}

extension HCICommandWithoutParameters {
    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        let r = CommandParameterReader(reader, command: Self.opcode)
        try r.end()
        self.init()
    }

    public func writeParameters(to writer: inout ByteWriter) {}

    public var description: String { Self.opcode.displayName }
}
