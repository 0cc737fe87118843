import Bluetooth
import HCI

/// A management command opcode. Open: unknown opcodes keep their value.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Management Commands"
public struct ManagementOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let readVersionInformation = ManagementOpcode(rawValue: 0x0001)
    public static let readSupportedCommands = ManagementOpcode(rawValue: 0x0002)
    public static let readControllerIndexList = ManagementOpcode(rawValue: 0x0003)
    public static let readControllerInformation = ManagementOpcode(rawValue: 0x0004)
    public static let setPowered = ManagementOpcode(rawValue: 0x0005)
    public static let setDiscoverable = ManagementOpcode(rawValue: 0x0006)
    public static let setConnectable = ManagementOpcode(rawValue: 0x0007)
    public static let setBondable = ManagementOpcode(rawValue: 0x0009)
    public static let setLowEnergy = ManagementOpcode(rawValue: 0x000D)
    public static let setAdvertising = ManagementOpcode(rawValue: 0x0029)
    public static let setBREDR = ManagementOpcode(rawValue: 0x002A)

    static let names: [UInt16: String] = [
        0x0001: "Read Management Version Information",
        0x0002: "Read Management Supported Commands",
        0x0003: "Read Controller Index List",
        0x0004: "Read Controller Information",
        0x0005: "Set Powered",
        0x0006: "Set Discoverable",
        0x0007: "Set Connectable",
        0x0009: "Set Bondable",
        0x000D: "Set Low Energy",
        0x0029: "Set Advertising",
        0x002A: "Set BR/EDR",
    ]

    public var description: String {
        ManagementOpcode.names[rawValue] ?? ManagementOpcode.securityNames[rawValue] ?? "management opcode 0x" + String(rawValue, radix: 16).leftPadded(4)
    }
}

/// A management event code. Open: unknown codes keep their value.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Management Events"
public struct ManagementEventCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let commandComplete = ManagementEventCode(rawValue: 0x0001)
    public static let commandStatus = ManagementEventCode(rawValue: 0x0002)
    public static let controllerError = ManagementEventCode(rawValue: 0x0003)
    public static let indexAdded = ManagementEventCode(rawValue: 0x0004)
    public static let indexRemoved = ManagementEventCode(rawValue: 0x0005)
    public static let newSettings = ManagementEventCode(rawValue: 0x0006)

    public var description: String {
        switch rawValue {
        case 0x0001: return "Command Complete"
        case 0x0002: return "Command Status"
        case 0x0003: return "Controller Error"
        case 0x0004: return "Index Added"
        case 0x0005: return "Index Removed"
        case 0x0006: return "New Settings"
        default:
            if let name = ManagementEventCode.securityNames[rawValue] { return name }
            return "management event 0x" + String(rawValue, radix: 16).leftPadded(4)
        }
    }
}

/// The 6-octet header shared by commands and events: code, controller index, parameter length,
/// all little-endian.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Packet Structures"
public struct ManagementHeader: Hashable, Sendable {
    public static let encodedLength = 6
    /// The controller index of a packet that concerns no controller (MGMT_INDEX_NONE).
    public static let indexNone: UInt16 = 0xFFFF

    /// The command opcode or event code.
    public var code: UInt16
    public var index: UInt16
    public var parameterLength: UInt16

    public init(code: UInt16, index: UInt16, parameterLength: UInt16) {
        self.code = code
        self.index = index
        self.parameterLength = parameterLength
    }

    /// Reads the header and checks `Parameter_Length` against the octets that follow: a
    /// management socket delivers whole packets, so any difference is malformed.
    public init(parsing reader: inout ByteReader, context: String) throws(HCIError) {
        do {
            code = try reader.readUInt16LE()
            index = try reader.readUInt16LE()
            parameterLength = try reader.readUInt16LE()
        } catch {
            throw HCIError(error, context: context)
        }
        guard Int(parameterLength) == reader.remainingCount else {
            throw HCIError.malformed(
                context: context, reason: .invalidLength(field: "Parameter_Length", value: Int(parameterLength)),
                offset: 4)
        }
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(code)
        writer.writeUInt16LE(index)
        writer.writeUInt16LE(parameterLength)
    }
}

/// A management command as sent on the control channel: header plus parameters.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Packet Structures"
public struct ManagementCommandPacket: Hashable, Sendable {
    public var opcode: ManagementOpcode
    public var index: UInt16
    public var parameters: [UInt8]

    public init(opcode: ManagementOpcode, index: UInt16, parameters: [UInt8] = []) {
        self.opcode = opcode
        self.index = index
        self.parameters = parameters
    }

    /// Encodes a typed command for controller `index`.
    public init<Command: ManagementCommand>(_ command: Command, index: UInt16) {
        var writer = ByteWriter(capacity: command.parameterLength)
        command.writeParameters(to: &writer)
        self.init(opcode: Command.opcode, index: index, parameters: writer.bytes)
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let header = try ManagementHeader(parsing: &reader, context: "MGMT command")
        opcode = ManagementOpcode(rawValue: header.code)
        index = header.index
        parameters = Array(reader.readRemaining())
    }

    public init(bytes: [UInt8]) throws(HCIError) {
        var reader = ByteReader(bytes)
        try self.init(parsing: &reader)
    }

    public var encodedLength: Int { ManagementHeader.encodedLength + parameters.count }

    /// - Throws: `.malformed` when the parameters exceed the 16-bit length field.
    public func write(to writer: inout ByteWriter) throws(HCIError) {
        guard let length = UInt16(exactly: parameters.count) else {
            throw .malformed(
                context: "MGMT command", reason: .invalidLength(field: "Parameter_Length", value: parameters.count),
                offset: 4)
        }
        ManagementHeader(code: opcode.rawValue, index: index, parameterLength: length).write(to: &writer)
        writer.writeBytes(parameters)
    }

    public func encoded() throws(HCIError) -> [UInt8] {
        var writer = ByteWriter(capacity: encodedLength)
        try write(to: &writer)
        return writer.bytes
    }
}

/// A management event as received on the control channel: header plus parameters, undecoded.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Packet Structures"
public struct ManagementEventPacket: Hashable, Sendable {
    public var code: ManagementEventCode
    public var index: UInt16
    public var parameters: ArraySlice<UInt8>

    public init(code: ManagementEventCode, index: UInt16, parameters: ArraySlice<UInt8>) {
        self.code = code
        self.index = index
        self.parameters = parameters
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let header = try ManagementHeader(parsing: &reader, context: "MGMT event")
        code = ManagementEventCode(rawValue: header.code)
        index = header.index
        parameters = reader.readRemaining()
    }

    public init(bytes: [UInt8]) throws(HCIError) {
        var reader = ByteReader(bytes)
        try self.init(parsing: &reader)
    }

    public var encodedLength: Int { ManagementHeader.encodedLength + parameters.count }

    public func write(to writer: inout ByteWriter) throws(HCIError) {
        guard let length = UInt16(exactly: parameters.count) else {
            throw .malformed(
                context: "MGMT event", reason: .invalidLength(field: "Parameter_Length", value: parameters.count),
                offset: 4)
        }
        ManagementHeader(code: code.rawValue, index: index, parameterLength: length).write(to: &writer)
        writer.writeBytes(parameters)
    }

    public func encoded() throws(HCIError) -> [UInt8] {
        var writer = ByteWriter(capacity: encodedLength)
        try write(to: &writer)
        return writer.bytes
    }

    /// Decodes the parameters by event code.
    public func decode() throws(HCIError) -> ManagementEvent {
        try ManagementEvent(self)
    }

    public static func == (lhs: ManagementEventPacket, rhs: ManagementEventPacket) -> Bool {
        lhs.code == rhs.code && lhs.index == rhs.index && lhs.parameters.elementsEqual(rhs.parameters)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(index)
        hasher.combine(Array(parameters))
    }
}
