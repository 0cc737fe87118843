import Bluetooth

/// Primary/Secondary_Advertising_PHY_Options of the v2 extended advertising parameters: the
/// coding preference or requirement on LE Coded.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.53
public enum LEAdvertisingPHYOptions: UInt8, Hashable, Sendable, CustomStringConvertible {
    case noPreference = 0x00
    case preferS2 = 0x01
    case preferS8 = 0x02
    case requireS2 = 0x03
    case requireS8 = 0x04

    public var description: String {
        switch self {
        case .noPreference: return "no coding preference"
        case .preferS2: return "prefer S=2"
        case .preferS8: return "prefer S=8"
        case .requireS2: return "require S=2"
        case .requireS8: return "require S=8"
        }
    }
}

/// Names a malformed error from an embedded v1 parser after the v2 command.
private func renamed(_ error: HCIError, to opcode: HCIOpcode) -> HCIError {
    if case .malformed(_, let reason, let offset) = error {
        return .malformed(context: opcode.description, reason: reason, offset: offset)
    }
    return error
}

/// HCI_LE_Set_Extended_Advertising_Parameters [v2]: the v1 parameters followed by
/// Primary_Advertising_PHY_Options and Secondary_Advertising_PHY_Options.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.53
public struct LESetExtendedAdvertisingParametersV2Command: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingParametersV2
    public typealias ReturnParameters = LESetExtendedAdvertisingParametersV1Command.ReturnParameters

    /// The fields v1 and v2 share (its `opcode` is v1's; only the fields are used here).
    public var parameters: LESetExtendedAdvertisingParametersV1Command
    public var primaryAdvertisingPHYOptions: LEAdvertisingPHYOptions
    public var secondaryAdvertisingPHYOptions: LEAdvertisingPHYOptions

    public init(
        parameters: LESetExtendedAdvertisingParametersV1Command,
        primaryAdvertisingPHYOptions: LEAdvertisingPHYOptions = .noPreference,
        secondaryAdvertisingPHYOptions: LEAdvertisingPHYOptions = .noPreference
    ) {
        self.parameters = parameters
        self.primaryAdvertisingPHYOptions = primaryAdvertisingPHYOptions
        self.secondaryAdvertisingPHYOptions = secondaryAdvertisingPHYOptions
    }

    /// Length of the v1 part.
    static let sharedLength = 25

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        do throws(HCIError) {
            var shared: ByteReader
            do { shared = try r.reader.subReader(Self.sharedLength) } catch { throw HCIError(error, context: "") }
            parameters = try LESetExtendedAdvertisingParametersV1Command(parsingParameters: &shared)
        } catch {
            throw renamed(error, to: Self.opcode)
        }
        primaryAdvertisingPHYOptions = try r.enumeration(
            LEAdvertisingPHYOptions.self, "Primary_Advertising_PHY_Options")
        secondaryAdvertisingPHYOptions = try r.enumeration(
            LEAdvertisingPHYOptions.self, "Secondary_Advertising_PHY_Options")
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        do { try parameters.validate() } catch { throw renamed(error, to: Self.opcode) }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        parameters.writeParameters(to: &writer)
        writer.writeUInt8(primaryAdvertisingPHYOptions.rawValue)
        writer.writeUInt8(secondaryAdvertisingPHYOptions.rawValue)
    }

    public var description: String {
        let v1 = parameters.description
        let fields = v1.firstIndex(of: ":").map { String(v1[v1.index($0, offsetBy: 2)...]) } ?? v1
        return "\(Self.opcode.displayName): \(fields), primary \(primaryAdvertisingPHYOptions), "
            + "secondary \(secondaryAdvertisingPHYOptions)"
    }
}

/// HCI_LE_Extended_Create_Connection [v2]: Advertising_Handle and Subevent (for connecting from
/// Periodic Advertising with Responses; 0xFF when not used), then the v1 parameters.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.66
public struct LEExtendedCreateConnectionV2Command: HCICommand {
    public static let opcode = HCIOpcode.leExtendedCreateConnectionV2
    public static var completion: HCICommandCompletion { .commandStatus }
    /// Advertising_Handle / Subevent value meaning "not a PAwR connection".
    public static let notUsed: UInt8 = 0xFF

    /// Advertising_Handle: 0x00–0xEF, or 0xFF.
    public var advertisingHandle: UInt8
    /// Subevent: 0x00–0x7F, or 0xFF.
    public var subevent: UInt8
    /// The fields v1 and v2 share (its `opcode` is v1's; only the fields are used here).
    public var parameters: LEExtendedCreateConnectionV1Command

    public init(
        advertisingHandle: UInt8 = notUsed, subevent: UInt8 = notUsed, parameters: LEExtendedCreateConnectionV1Command
    ) {
        self.advertisingHandle = advertisingHandle
        self.subevent = subevent
        self.parameters = parameters
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        var at = r.offset
        advertisingHandle = try r.uint8()
        guard advertisingHandle <= LEAdvertisingHandleLimit.maximum || advertisingHandle == Self.notUsed else {
            throw r.invalidValue("Advertising_Handle", Int(advertisingHandle), at: at)
        }
        at = r.offset
        subevent = try r.uint8()
        guard subevent <= 0x7F || subevent == Self.notUsed else {
            throw r.invalidValue("Subevent", Int(subevent), at: at)
        }
        do {
            parameters = try LEExtendedCreateConnectionV1Command(parsingParameters: &r.reader)
        } catch {
            throw renamed(error, to: Self.opcode)
        }
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        func invalid(_ field: String, _ value: UInt8, _ offset: Int) -> HCIError {
            .malformed(
                context: Self.opcode.description, reason: .invalidValue(field: field, value: Int(value)), offset: offset
            )
        }
        guard advertisingHandle <= LEAdvertisingHandleLimit.maximum || advertisingHandle == Self.notUsed else {
            throw invalid("Advertising_Handle", advertisingHandle, 0)
        }
        guard subevent <= 0x7F || subevent == Self.notUsed else { throw invalid("Subevent", subevent, 1) }
        do { try parameters.validate() } catch { throw renamed(error, to: Self.opcode) }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(advertisingHandle)
        writer.writeUInt8(subevent)
        parameters.writeParameters(to: &writer)
    }

    public var description: String {
        let v1 = parameters.description
        let fields = v1.firstIndex(of: ":").map { String(v1[v1.index($0, offsetBy: 2)...]) } ?? v1
        let pawr =
            advertisingHandle == Self.notUsed ? "" : "advertising handle \(advertisingHandle), subevent \(subevent), "
        return "\(Self.opcode.displayName): \(pawr)\(fields)"
    }
}
