import Bluetooth
import HCI

/// Command Complete Event: Command_Opcode, Status, Return_Parameters.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Command Complete Event"
public struct ManagementCommandCompleteEvent: Hashable, Sendable {
    public var opcode: ManagementOpcode
    public var status: ManagementStatus
    public var returnParameters: [UInt8]

    public init(opcode: ManagementOpcode, status: ManagementStatus, returnParameters: [UInt8] = []) {
        self.opcode = opcode
        self.status = status
        self.returnParameters = returnParameters
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        do {
            opcode = ManagementOpcode(rawValue: try reader.readUInt16LE())
            status = ManagementStatus(rawValue: try reader.readUInt8())
            returnParameters = Array(reader.readRemaining())
        } catch {
            throw HCIError(error, context: "MGMT Command Complete Event")
        }
    }

    public var parameterLength: Int { 3 + returnParameters.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(opcode.rawValue)
        writer.writeUInt8(status.rawValue)
        writer.writeBytes(returnParameters)
    }
}

/// Command Status Event: Command_Opcode, Status. A failure status ends the command; success
/// means it is still pending (its Command Complete follows).
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Command Status Event"
public struct ManagementCommandStatusEvent: Hashable, Sendable {
    public var opcode: ManagementOpcode
    public var status: ManagementStatus

    public init(opcode: ManagementOpcode, status: ManagementStatus) {
        self.opcode = opcode
        self.status = status
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        do {
            opcode = ManagementOpcode(rawValue: try reader.readUInt16LE())
            status = ManagementStatus(rawValue: try reader.readUInt8())
            try reader.expectEnd()
        } catch {
            throw HCIError(error, context: "MGMT Command Status Event")
        }
    }

    public var parameterLength: Int { 3 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(opcode.rawValue)
        writer.writeUInt8(status.rawValue)
    }
}

/// A decoded management event. Events this module does not decode stay `.other`.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Management Events"
public enum ManagementEvent: Hashable, Sendable {
    case commandComplete(ManagementCommandCompleteEvent)
    case commandStatus(ManagementCommandStatusEvent)
    /// Controller Error Event: Error_Code (1 octet).
    case controllerError(UInt8)
    /// Index Added Event (no parameters).
    case indexAdded
    /// Index Removed Event (no parameters).
    case indexRemoved
    /// New Settings Event: Current_Settings.
    case newSettings(ManagementSettings)
    case other(code: ManagementEventCode, parameters: [UInt8])

    public init(_ packet: ManagementEventPacket) throws(HCIError) {
        var reader = ByteReader(packet.parameters)
        switch packet.code {
        case .commandComplete:
            self = .commandComplete(try ManagementCommandCompleteEvent(parsing: &reader))
        case .commandStatus:
            self = .commandStatus(try ManagementCommandStatusEvent(parsing: &reader))
        case .controllerError:
            self = .controllerError(try Self.fixed("MGMT Controller Error Event", &reader) { (r) throws(ByteReaderError) in try r.readUInt8() })
        case .indexAdded:
            try Self.fixed("MGMT Index Added Event", &reader) { (_) throws(ByteReaderError) in }
            self = .indexAdded
        case .indexRemoved:
            try Self.fixed("MGMT Index Removed Event", &reader) { (_) throws(ByteReaderError) in }
            self = .indexRemoved
        case .newSettings:
            let raw = try Self.fixed("MGMT New Settings Event", &reader) { (r) throws(ByteReaderError) in try r.readUInt32LE() }
            self = .newSettings(ManagementSettings(rawValue: raw))
        default:
            self = .other(code: packet.code, parameters: Array(packet.parameters))
        }
    }

    private static func fixed<T>(
        _ context: String, _ reader: inout ByteReader, _ body: (inout ByteReader) throws(ByteReaderError) -> T
    ) throws(HCIError) -> T {
        do {
            let value = try body(&reader)
            try reader.expectEnd()
            return value
        } catch {
            throw HCIError(error, context: context)
        }
    }
}

/// Matches the events of a management socket to one outstanding command (sans I/O): feed every
/// event to `receive(_:)`; it says whether the command finished.
public struct ManagementTransaction: Hashable, Sendable {
    public let opcode: ManagementOpcode
    public let index: UInt16

    public enum Outcome: Hashable, Sendable {
        /// Command Complete with Success: the Return_Parameters.
        case completed(returnParameters: [UInt8])
        /// Command Complete or Command Status with a failure status.
        case failed(ManagementStatus)
    }

    public init(opcode: ManagementOpcode, index: UInt16) {
        self.opcode = opcode
        self.index = index
    }

    public init(_ packet: ManagementCommandPacket) {
        self.init(opcode: packet.opcode, index: packet.index)
    }

    /// The outcome if `packet` ends this command; `nil` for events about other commands or
    /// controllers, unsolicited events, and a successful Command Status (still pending).
    /// - Throws: `HCIError` when a Command Complete/Status addressed to us does not decode.
    public func receive(_ packet: ManagementEventPacket) throws(HCIError) -> Outcome? {
        guard packet.index == index else { return nil }
        switch packet.code {
        case .commandComplete, .commandStatus:
            // Peek at the opcode first: a malformed reply to someone else's command is not ours.
            var peek = ByteReader(packet.parameters)
            guard let raw = try? peek.readUInt16LE(), raw == opcode.rawValue else { return nil }
        default:
            return nil
        }
        switch try packet.decode() {
        case .commandComplete(let event):
            return event.status == .success ? .completed(returnParameters: event.returnParameters) : .failed(event.status)
        case .commandStatus(let event):
            return event.status == .success ? nil : .failed(event.status)
        default:
            return nil
        }
    }
}
