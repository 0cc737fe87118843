import Bluetooth
import HCI

/// A management command with typed parameters and a typed return value (the Return_Parameters
/// of its Command Complete event).
public protocol ManagementCommand: Hashable, Sendable {
    associatedtype Response: Hashable, Sendable
    static var opcode: ManagementOpcode { get }
    /// Octets `writeParameters` appends.
    var parameterLength: Int { get }
    func writeParameters(to writer: inout ByteWriter)
    /// Decodes the command's parameters (the whole remainder of `reader`).
    init(parsingParameters reader: inout ByteReader) throws(HCIError)
    /// Decodes the Return_Parameters of a successful Command Complete (the whole remainder).
    static func parseResponse(_ reader: inout ByteReader) throws(HCIError) -> Response
}

extension ManagementCommand {
    static func wrap<T>(_ context: String, _ body: () throws(ByteReaderError) -> T) throws(HCIError) -> T {
        do {
            return try body()
        } catch {
            throw HCIError(error, context: context)
        }
    }

    /// Reads the single mode octet of a mode command and checks it against `allowed`.
    static func parseMode(_ reader: inout ByteReader, allowed: ClosedRange<UInt8>, field: String) throws(HCIError) -> UInt8 {
        let context = "MGMT \(opcode)"
        let value = try wrap(context) { () throws(ByteReaderError) -> UInt8 in
            let value = try reader.readUInt8()
            try reader.expectEnd()
            return value
        }
        guard allowed.contains(value) else {
            throw .malformed(context: context, reason: .invalidValue(field: field, value: Int(value)), offset: 0)
        }
        return value
    }

    /// Current_Settings (4 octets), the reply of every mode command.
    static func parseCurrentSettings(_ reader: inout ByteReader) throws(HCIError) -> ManagementSettings {
        try wrap("MGMT \(opcode) reply") { () throws(ByteReaderError) -> ManagementSettings in
            let value = try reader.readUInt32LE()
            try reader.expectEnd()
            return ManagementSettings(rawValue: value)
        }
    }
}

/// Read Controller Information Command (no parameters).
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Read Controller Information Command"
public struct ReadControllerInformationCommand: ManagementCommand {
    public static let opcode = ManagementOpcode.readControllerInformation
    public init() {}
    public var parameterLength: Int { 0 }
    public func writeParameters(to writer: inout ByteWriter) {}

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        try Self.wrap("MGMT \(Self.opcode)") { () throws(ByteReaderError) in try reader.expectEnd() }
    }

    public static func parseResponse(_ reader: inout ByteReader) throws(HCIError) -> ManagementControllerInformation {
        try ManagementControllerInformation(parsing: &reader)
    }
}

/// The Return_Parameters of Read Controller Information (280 octets).
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Read Controller Information Command"
public struct ManagementControllerInformation: Hashable, Sendable {
    public static let encodedLength = 280
    /// Name is 249 octets (248 + a terminating NUL), Short_Name 11 (10 + NUL).
    public static let nameLength = 249
    public static let shortNameLength = 11

    public var address: BluetoothAddress
    /// Bluetooth_Version: the HCI version of the controller (e.g. 0x09 for 5.0).
    public var bluetoothVersion: UInt8
    /// Manufacturer: the company identifier.
    public var manufacturer: UInt16
    public var supportedSettings: ManagementSettings
    public var currentSettings: ManagementSettings
    /// Class_Of_Device, 24 bits.
    public var classOfDevice: UInt32
    public var name: String
    public var shortName: String

    public init(
        address: BluetoothAddress, bluetoothVersion: UInt8, manufacturer: UInt16, supportedSettings: ManagementSettings,
        currentSettings: ManagementSettings, classOfDevice: UInt32, name: String, shortName: String
    ) {
        self.address = address
        self.bluetoothVersion = bluetoothVersion
        self.manufacturer = manufacturer
        self.supportedSettings = supportedSettings
        self.currentSettings = currentSettings
        self.classOfDevice = classOfDevice
        self.name = name
        self.shortName = shortName
    }

    /// Names are read up to their first NUL (the kernel always terminates them; if it did not,
    /// the whole field is the name).
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let context = "MGMT Read Controller Information reply"
        do {
            address = try BluetoothAddress(parsingLittleEndian: &reader)
            bluetoothVersion = try reader.readUInt8()
            manufacturer = try reader.readUInt16LE()
            supportedSettings = ManagementSettings(rawValue: try reader.readUInt32LE())
            currentSettings = ManagementSettings(rawValue: try reader.readUInt32LE())
            classOfDevice = try reader.readUInt24LE()
            let nameField = try reader.readBytes(Self.nameLength)
            let shortField = try reader.readBytes(Self.shortNameLength)
            try reader.expectEnd()
            name = String(decoding: nameField.prefix { $0 != 0 }, as: UTF8.self)
            shortName = String(decoding: shortField.prefix { $0 != 0 }, as: UTF8.self)
        } catch {
            throw HCIError(error, context: context)
        }
    }

    /// Names longer than their field (248 / 10 octets of UTF-8) are cut at the field size.
    public func write(to writer: inout ByteWriter) {
        address.write(littleEndian: &writer)
        writer.writeUInt8(bluetoothVersion)
        writer.writeUInt16LE(manufacturer)
        writer.writeUInt32LE(supportedSettings.rawValue)
        writer.writeUInt32LE(currentSettings.rawValue)
        writer.writeUInt24LE(classOfDevice)
        Self.writeField(name, length: Self.nameLength, to: &writer)
        Self.writeField(shortName, length: Self.shortNameLength, to: &writer)
    }

    static func writeField(_ text: String, length: Int, to writer: inout ByteWriter) {
        let octets = Array(text.utf8.prefix(length - 1))
        writer.writeBytes(octets)
        writer.writeBytes(repeatElement(UInt8(0), count: length - octets.count))
    }
}

/// A command of one mode octet (`Set Powered`, `Set Bondable`, …) answered with Current_Settings.
public protocol ManagementModeCommand: ManagementCommand where Response == ManagementSettings {
    /// The values the kernel takes, and the field's name in mgmt-api.txt.
    static var modes: ClosedRange<UInt8> { get }
    static var field: String { get }
    var modeOctet: UInt8 { get }
    init(modeOctet: UInt8)
}

extension ManagementModeCommand {
    public var parameterLength: Int { 1 }
    public func writeParameters(to writer: inout ByteWriter) { writer.writeUInt8(modeOctet) }
    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        self.init(modeOctet: try Self.parseMode(&reader, allowed: Self.modes, field: Self.field))
    }
    public static func parseResponse(_ reader: inout ByteReader) throws(HCIError) -> ManagementSettings {
        try parseCurrentSettings(&reader)
    }
}

/// Set Powered Command: Powered 0x00 off, 0x01 on. Returns Current_Settings.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Set Powered Command"
public struct SetPoweredCommand: ManagementModeCommand {
    public static let opcode = ManagementOpcode.setPowered
    public static let modes: ClosedRange<UInt8> = 0...1
    public static let field = "Powered"
    public var powered: Bool
    public init(powered: Bool) { self.powered = powered }
    public init(modeOctet: UInt8) { powered = modeOctet == 1 }
    public var modeOctet: UInt8 { powered ? 1 : 0 }
}

/// Set Connectable Command: Connectable 0x00 off, 0x01 on. Returns Current_Settings.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Set Connectable Command"
public struct SetConnectableCommand: ManagementModeCommand {
    public static let opcode = ManagementOpcode.setConnectable
    public static let modes: ClosedRange<UInt8> = 0...1
    public static let field = "Connectable"
    public var connectable: Bool
    public init(connectable: Bool) { self.connectable = connectable }
    public init(modeOctet: UInt8) { connectable = modeOctet == 1 }
    public var modeOctet: UInt8 { connectable ? 1 : 0 }
}

/// Set Low Energy Command: Low_Energy 0x00 disabled, 0x01 enabled. Returns Current_Settings.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Set Low Energy Command"
public struct SetLowEnergyCommand: ManagementModeCommand {
    public static let opcode = ManagementOpcode.setLowEnergy
    public static let modes: ClosedRange<UInt8> = 0...1
    public static let field = "Low_Energy"
    public var enabled: Bool
    public init(enabled: Bool) { self.enabled = enabled }
    public init(modeOctet: UInt8) { enabled = modeOctet == 1 }
    public var modeOctet: UInt8 { enabled ? 1 : 0 }
}

/// The Advertising parameter of Set Advertising. Open.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Set Advertising Command"
public struct ManagementAdvertisingMode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let off = ManagementAdvertisingMode(rawValue: 0x00)
    public static let on = ManagementAdvertisingMode(rawValue: 0x01)
    /// Advertise connectable regardless of the Connectable setting.
    public static let connectable = ManagementAdvertisingMode(rawValue: 0x02)

    public var description: String {
        switch rawValue {
        case 0: return "off"
        case 1: return "on"
        case 2: return "connectable"
        default: return "mode 0x" + String(rawValue, radix: 16)
        }
    }
}

/// Set Advertising Command: Advertising 0x00 off, 0x01 on, 0x02 connectable. Returns
/// Current_Settings.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Set Advertising Command"
public struct SetAdvertisingCommand: ManagementModeCommand {
    public static let opcode = ManagementOpcode.setAdvertising
    public static let modes: ClosedRange<UInt8> = 0...2
    public static let field = "Advertising"
    public var mode: ManagementAdvertisingMode
    public init(mode: ManagementAdvertisingMode) { self.mode = mode }
    public init(modeOctet: UInt8) { mode = ManagementAdvertisingMode(rawValue: modeOctet) }
    public var modeOctet: UInt8 { mode.rawValue }
}
