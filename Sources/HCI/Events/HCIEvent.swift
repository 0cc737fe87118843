import Bluetooth

/// An HCI event packet: Event_Code, Parameter_Total_Length, parameters. Events this module does
/// not decode are kept raw (`.unknown`) so a stream never fails on them; a known event with
/// malformed parameters throws.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.4 and §7.7
public enum HCIEvent: Hashable, Sendable, CustomStringConvertible {
    case commandComplete(CommandCompleteEvent)
    case commandStatus(CommandStatusEvent)
    case disconnectionComplete(DisconnectionCompleteEvent)
    case numberOfCompletedPackets(NumberOfCompletedPacketsEvent)
    case hardwareError(HardwareErrorEvent)
    /// Encryption Change v1 (0x08) or v2 (0x59, with key size).
    case encryptionChange(EncryptionChangeEvent)
    case dataBufferOverflow(DataBufferOverflowEvent)
    case leMeta(LEMetaEvent)
    /// An event this module does not decode: its code and parameters.
    case unknown(code: HCIEventCode, parameters: [UInt8])

    static let context = "HCI event"
    /// Octets before the parameters.
    public static let headerLength = 2

    /// Parses an event packet (after the H4 indicator). Parameter_Total_Length must equal the
    /// octets that follow the header exactly; the reader is consumed to its end.
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let code = HCIEventCode(rawValue: try reader.hciUInt8(Self.context))
        let lengthOffset = reader.offset
        let length = Int(try reader.hciUInt8(Self.context))
        guard reader.remainingCount == length else {
            let reason: HCIError.MalformedReason =
                reader.remainingCount < length
                ? .truncated(needed: length, available: reader.remainingCount)
                : .trailingBytes(count: reader.remainingCount - length)
            throw HCIError.malformed(context: "\(code) event", reason: reason, offset: lengthOffset)
        }
        var parameters: ByteReader
        do { parameters = try reader.subReader(length) } catch { throw HCIError(error, context: Self.context) }
        try self.init(code: code, parameters: &parameters)
    }

    /// Parses the parameters of an event whose header has already been read.
    public init(code: HCIEventCode, parameters reader: inout ByteReader) throws(HCIError) {
        switch code.rawValue {
        case 0x0E: self = .commandComplete(try CommandCompleteEvent(parsing: &reader))
        case 0x0F: self = .commandStatus(try CommandStatusEvent(parsing: &reader))
        case 0x05: self = .disconnectionComplete(try DisconnectionCompleteEvent(parsing: &reader))
        case 0x13: self = .numberOfCompletedPackets(try NumberOfCompletedPacketsEvent(parsing: &reader))
        case 0x10: self = .hardwareError(try HardwareErrorEvent(parsing: &reader))
        case 0x08: self = .encryptionChange(try EncryptionChangeEvent(parsing: &reader, version2: false))
        case 0x59: self = .encryptionChange(try EncryptionChangeEvent(parsing: &reader, version2: true))
        case 0x1A: self = .dataBufferOverflow(try DataBufferOverflowEvent(parsing: &reader))
        case 0x3E: self = .leMeta(try LEMetaEvent(parsing: &reader))
        default: self = .unknown(code: code, parameters: Array(reader.readRemaining()))
        }
    }

    /// Parses a whole event packet from bytes (no H4 indicator).
    public init(bytes: [UInt8]) throws(HCIError) {
        var reader = ByteReader(bytes)
        try self.init(parsing: &reader)
    }

    public var eventCode: HCIEventCode {
        switch self {
        case .commandComplete: return .commandComplete
        case .commandStatus: return .commandStatus
        case .disconnectionComplete: return .disconnectionComplete
        case .numberOfCompletedPackets: return .numberOfCompletedPackets
        case .hardwareError: return .hardwareError
        case .encryptionChange(let event): return event.eventCode
        case .dataBufferOverflow: return .dataBufferOverflow
        case .leMeta: return .leMeta
        case .unknown(let code, _): return code
        }
    }

    /// Writes the event code, Parameter_Total_Length and the parameters. Throws when the
    /// parameters exceed 255 octets or a report list cannot be encoded.
    public func write(to writer: inout ByteWriter) throws(HCIError) {
        writer.writeUInt8(eventCode.rawValue)
        let lengthIndex = writer.count
        writer.writeUInt8(0)
        switch self {
        case .commandComplete(let event): event.write(to: &writer)
        case .commandStatus(let event): event.write(to: &writer)
        case .disconnectionComplete(let event): event.write(to: &writer)
        case .numberOfCompletedPackets(let event): try event.write(to: &writer)
        case .hardwareError(let event): event.write(to: &writer)
        case .encryptionChange(let event): event.write(to: &writer)
        case .dataBufferOverflow(let event): event.write(to: &writer)
        case .leMeta(let event): try event.write(to: &writer)
        case .unknown(_, let parameters): writer.writeBytes(parameters)
        }
        let length = writer.count - lengthIndex - 1
        guard length <= 255 else {
            throw HCIError.invalidArgument(context: "\(eventCode) event", reason: "\(length) parameter octets, at most 255")
        }
        writer.bytes[lengthIndex] = UInt8(length)
    }

    /// The encoded event (no H4 indicator).
    public func encoded() throws(HCIError) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        try write(to: &writer)
        return writer.bytes
    }

    /// One line, btmon-like.
    public var description: String {
        switch self {
        case .commandComplete(let event):
            var text = "Command Complete: \(event.opcode) ncmd \(event.numHCICommandPackets)"
            if let status = event.status { text += " \(status)" }
            if event.returnParameters.count > 1 { text += " " + Hex.encode(event.returnParameters.dropFirst()) }
            return text
        case .commandStatus(let event):
            return "Command Status: \(event.opcode) ncmd \(event.numHCICommandPackets) \(event.status)"
        case .disconnectionComplete(let event): return event.description
        case .numberOfCompletedPackets(let event): return event.description
        case .hardwareError(let event): return event.description
        case .encryptionChange(let event): return event.description
        case .dataBufferOverflow(let event): return event.description
        case .leMeta(let event): return event.description
        case .unknown(let code, let parameters): return "\(code) (\(hciHexString(code.rawValue, 2))): \(Hex.encode(parameters))"
        }
    }
}
