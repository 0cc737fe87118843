import Bluetooth

/// HCI_Command_Complete: the controller finished a command; `returnParameters` are the command's
/// own return parameters (status first, for almost every command).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.14
public struct CommandCompleteEvent: Hashable, Sendable {
    public static let eventCode = HCIEventCode(rawValue: 0x0E)

    /// Num_HCI_Command_Packets: command credits the controller grants.
    public var numHCICommandPackets: UInt8
    public var opcode: HCIOpcode
    public var returnParameters: [UInt8]

    public init(numHCICommandPackets: UInt8, opcode: HCIOpcode, returnParameters: [UInt8]) {
        self.numHCICommandPackets = numHCICommandPackets
        self.opcode = opcode
        self.returnParameters = returnParameters
    }

    /// Parses the event parameters (after the event header).
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        do {
            numHCICommandPackets = try reader.readUInt8()
            opcode = HCIOpcode(rawValue: try reader.readUInt16LE())
            returnParameters = Array(reader.readRemaining())
        } catch {
            throw HCIError(error, context: "HCI_Command_Complete")
        }
    }

    /// The status octet most commands return first; `nil` when there are no return parameters
    /// (the NOP opcode 0x0000 that only grants credits).
    public var status: HCIStatus? { returnParameters.first.map(HCIStatus.init(rawValue:)) }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(numHCICommandPackets)
        writer.writeUInt16LE(opcode.rawValue)
        writer.writeBytes(returnParameters)
    }
}

extension CommandCompleteEvent {
    /// The Command Complete that answers command `C` with `returnParameters` (what a controller,
    /// or the emulator, sends).
    public init<C: HCICommand>(
        completing command: C.Type, numHCICommandPackets: UInt8 = 1, returning returnParameters: C.ReturnParameters
    ) {
        self.init(
            numHCICommandPackets: numHCICommandPackets, opcode: C.opcode, returnParameters: returnParameters.bytes)
    }

    /// The return parameters of command `C`. Throws `.commandFailed` when the status is not
    /// success (whatever follows it: controllers often return only the status on failure), and
    /// `.malformed` when the opcode is another command's or the parameters are not exactly `C`'s.
    public func decodeReturn<C: HCICommand>(for command: C.Type) throws(HCIError) -> C.ReturnParameters {
        guard opcode == C.opcode else {
            throw .malformed(
                context: "HCI_Command_Complete for \(C.opcode)",
                reason: .invalidValue(field: "Command_Opcode", value: Int(opcode.rawValue)), offset: 1)
        }
        guard let status else {
            throw .malformed(
                context: "\(opcode) return parameters", reason: .truncated(needed: 1, available: 0), offset: 0)
        }
        guard status == .success else { throw .commandFailed(opcode: opcode, status: status) }
        var reader = ByteReader(returnParameters)
        do {
            return try C.ReturnParameters(parsing: &reader)
        } catch {
            throw Self.rewrap(error, opcode: opcode)
        }
    }

    /// The return parameters typed by opcode, for display; `.raw` for opcodes not modelled.
    public var typedReturn: HCICommandReturn {
        get throws(HCIError) { try HCICommandReturn(opcode: opcode, returnParameters: returnParameters) }
    }

    /// Names the command in a malformed-return error.
    static func rewrap(_ error: HCIError, opcode: HCIOpcode) -> HCIError {
        if case .malformed(_, let reason, let offset) = error {
            return .malformed(context: "\(opcode) return parameters", reason: reason, offset: offset)
        }
        return error
    }
}

/// HCI_Command_Status: the controller accepted (or refused) a command that completes later.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.15
public struct CommandStatusEvent: Hashable, Sendable {
    public static let eventCode = HCIEventCode(rawValue: 0x0F)

    public var status: HCIStatus
    public var numHCICommandPackets: UInt8
    public var opcode: HCIOpcode

    public init(status: HCIStatus, numHCICommandPackets: UInt8, opcode: HCIOpcode) {
        self.status = status
        self.numHCICommandPackets = numHCICommandPackets
        self.opcode = opcode
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        do {
            status = HCIStatus(rawValue: try reader.readUInt8())
            numHCICommandPackets = try reader.readUInt8()
            opcode = HCIOpcode(rawValue: try reader.readUInt16LE())
            try reader.expectEnd()
        } catch {
            throw HCIError(error, context: "HCI_Command_Status")
        }
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(status.rawValue)
        writer.writeUInt8(numHCICommandPackets)
        writer.writeUInt16LE(opcode.rawValue)
    }
}

extension CommandStatusEvent {
    /// Checks that this Command Status answers command `C` and accepted it: throws `.malformed`
    /// for another command's opcode and `.commandFailed` for a failure status.
    public func check<C: HCICommand>(for command: C.Type) throws(HCIError) {
        guard opcode == C.opcode else {
            throw .malformed(
                context: "HCI_Command_Status for \(C.opcode)",
                reason: .invalidValue(field: "Command_Opcode", value: Int(opcode.rawValue)), offset: 2)
        }
        guard status == .success else { throw .commandFailed(opcode: opcode, status: status) }
    }
}
