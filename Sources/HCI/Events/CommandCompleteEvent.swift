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
