import Bluetooth

/// The return parameters of an HCI_Command_Complete, typed by opcode, for display and dispatch.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.14
public enum HCICommandReturn: Hashable, Sendable, CustomStringConvertible {
    /// A modelled command whose return parameters are only a status.
    case status(HCIOpcode, StatusReturnParameters)
    /// A modelled command that failed and returned only the status (controllers commonly omit
    /// the other return parameters on failure).
    case failed(HCIOpcode, HCIStatus)
    case readLocalVersionInformation(ReadLocalVersionInformationCommand.ReturnParameters)
    case readLocalSupportedCommands(ReadLocalSupportedCommandsCommand.ReturnParameters)
    case readLocalSupportedFeatures(ReadLocalSupportedFeaturesCommand.ReturnParameters)
    case readBufferSize(ReadBufferSizeCommand.ReturnParameters)
    case readBDADDR(ReadBDADDRCommand.ReturnParameters)
    case readRSSI(ReadRSSICommand.ReturnParameters)
    case leReadBufferSizeV1(LEReadBufferSizeV1Command.ReturnParameters)
    case leReadBufferSizeV2(LEReadBufferSizeV2Command.ReturnParameters)
    case leReadLocalSupportedFeatures(LEReadLocalSupportedFeaturesCommand.ReturnParameters)
    case leReadPHY(LEReadPHYCommand.ReturnParameters)
    case leSetDataLength(ConnectionHandleReturnParameters)
    case leRemoteConnectionParameterRequestReply(ConnectionHandleReturnParameters)
    case leRemoteConnectionParameterRequestNegativeReply(ConnectionHandleReturnParameters)
    case leSetExtendedAdvertisingParametersV1(LESetExtendedAdvertisingParametersV1Command.ReturnParameters)
    case readLocalName(ReadLocalNameCommand.ReturnParameters)
    case leReadFilterAcceptListSize(LEReadFilterAcceptListSizeCommand.ReturnParameters)
    case leRand(LERandCommand.ReturnParameters)
    case leReadSupportedStates(LEReadSupportedStatesCommand.ReturnParameters)
    case leReadSuggestedDefaultDataLength(LEReadSuggestedDefaultDataLengthCommand.ReturnParameters)
    case leReadMaximumDataLength(LEReadMaximumDataLengthCommand.ReturnParameters)
    case leReadMaximumAdvertisingDataLength(LEReadMaximumAdvertisingDataLengthCommand.ReturnParameters)
    case leReadNumberOfSupportedAdvertisingSets(LEReadNumberOfSupportedAdvertisingSetsCommand.ReturnParameters)
    case leSetExtendedAdvertisingParametersV2(LESetExtendedAdvertisingParametersV2Command.ReturnParameters)
    /// An opcode this module does not model (or a command answered by Command Status), or the
    /// NOP opcode 0x0000 that only grants credits: the raw return parameters.
    case raw(HCIOpcode, [UInt8])

    /// Opcodes of modelled commands completed by Command Complete with a status-only return.
    static let statusOnlyOpcodes: Set<HCIOpcode> = [
        .setEventMask, .reset, .leSetEventMask, .leSetRandomAddress, .leSetAdvertisingParameters,
        .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable, .leSetScanParameters,
        .leSetScanEnable, .leCreateConnectionCancel, .leSetExtendedAdvertisingData,
        .leSetExtendedAdvertisingEnable, .leSetExtendedScanParameters, .leSetExtendedScanEnable,
        .writeLocalName,
        .writeLEHostSupport,
        .leClearFilterAcceptList,
        .leAddDeviceToFilterAcceptList,
        .leRemoveDeviceFromFilterAcceptList,
        .leWriteSuggestedDefaultDataLength,
        .leSetDefaultPHY,
        .leSetAdvertisingSetRandomAddress,
        .leSetExtendedScanResponseData,
        .leRemoveAdvertisingSet,
        .leClearAdvertisingSets,
    ]

    /// Decodes `returnParameters` of a Command Complete for `opcode`. Strict: a modelled opcode
    /// with success status must have exactly its return parameters. A failure status followed by
    /// fewer octets than the full return parameters becomes `.failed`.
    public init(opcode: HCIOpcode, returnParameters: [UInt8]) throws(HCIError) {
        func parse<R: HCIReturnParameters>(_ type: R.Type) throws(HCIError) -> R {
            var reader = ByteReader(returnParameters)
            do {
                return try R(parsing: &reader)
            } catch {
                throw CommandCompleteEvent.rewrap(error, opcode: opcode)
            }
        }
        if Self.statusOnlyOpcodes.contains(opcode) {
            self = .status(opcode, try parse(StatusReturnParameters.self))
            return
        }
        do {
            switch opcode {
            case .readLocalVersionInformation:
                self = .readLocalVersionInformation(try parse(ReadLocalVersionInformationCommand.ReturnParameters.self))
            case .readLocalSupportedCommands:
                self = .readLocalSupportedCommands(try parse(ReadLocalSupportedCommandsCommand.ReturnParameters.self))
            case .readLocalSupportedFeatures:
                self = .readLocalSupportedFeatures(try parse(ReadLocalSupportedFeaturesCommand.ReturnParameters.self))
            case .readBufferSize: self = .readBufferSize(try parse(ReadBufferSizeCommand.ReturnParameters.self))
            case .readBDADDR: self = .readBDADDR(try parse(ReadBDADDRCommand.ReturnParameters.self))
            case .readRSSI: self = .readRSSI(try parse(ReadRSSICommand.ReturnParameters.self))
            case .leReadBufferSizeV1:
                self = .leReadBufferSizeV1(try parse(LEReadBufferSizeV1Command.ReturnParameters.self))
            case .leReadBufferSizeV2:
                self = .leReadBufferSizeV2(try parse(LEReadBufferSizeV2Command.ReturnParameters.self))
            case .leReadLocalSupportedFeatures:
                self = .leReadLocalSupportedFeatures(
                    try parse(LEReadLocalSupportedFeaturesCommand.ReturnParameters.self))
            case .leReadPHY: self = .leReadPHY(try parse(LEReadPHYCommand.ReturnParameters.self))
            case .leSetDataLength: self = .leSetDataLength(try parse(ConnectionHandleReturnParameters.self))
            case .leRemoteConnectionParameterRequestReply:
                self = .leRemoteConnectionParameterRequestReply(try parse(ConnectionHandleReturnParameters.self))
            case .leRemoteConnectionParameterRequestNegativeReply:
                self = .leRemoteConnectionParameterRequestNegativeReply(
                    try parse(ConnectionHandleReturnParameters.self))
            case .leSetExtendedAdvertisingParametersV1:
                self = .leSetExtendedAdvertisingParametersV1(
                    try parse(LESetExtendedAdvertisingParametersV1Command.ReturnParameters.self))
            case .readLocalName: self = .readLocalName(try parse(ReadLocalNameCommand.ReturnParameters.self))
            case .leReadFilterAcceptListSize:
                self = .leReadFilterAcceptListSize(try parse(LEReadFilterAcceptListSizeCommand.ReturnParameters.self))
            case .leRand: self = .leRand(try parse(LERandCommand.ReturnParameters.self))
            case .leReadSupportedStates:
                self = .leReadSupportedStates(try parse(LEReadSupportedStatesCommand.ReturnParameters.self))
            case .leReadSuggestedDefaultDataLength:
                self = .leReadSuggestedDefaultDataLength(
                    try parse(LEReadSuggestedDefaultDataLengthCommand.ReturnParameters.self))
            case .leReadMaximumDataLength:
                self = .leReadMaximumDataLength(try parse(LEReadMaximumDataLengthCommand.ReturnParameters.self))
            case .leReadMaximumAdvertisingDataLength:
                self = .leReadMaximumAdvertisingDataLength(
                    try parse(LEReadMaximumAdvertisingDataLengthCommand.ReturnParameters.self))
            case .leReadNumberOfSupportedAdvertisingSets:
                self = .leReadNumberOfSupportedAdvertisingSets(
                    try parse(LEReadNumberOfSupportedAdvertisingSetsCommand.ReturnParameters.self))
            case .leSetExtendedAdvertisingParametersV2:
                self = .leSetExtendedAdvertisingParametersV2(
                    try parse(LESetExtendedAdvertisingParametersV2Command.ReturnParameters.self))
            default:
                self = .raw(opcode, returnParameters)
            }
        } catch {
            // Failure status with the rest cut short: a status-only failure, not malformed.
            if let first = returnParameters.first, first != HCIStatus.success.rawValue,
                case .malformed(_, .truncated, _) = error
            {
                self = .failed(opcode, HCIStatus(rawValue: first))
                return
            }
            throw error
        }
    }

    /// The command's opcode.
    public var opcode: HCIOpcode {
        switch self {
        case .status(let opcode, _), .failed(let opcode, _), .raw(let opcode, _): return opcode
        case .readLocalVersionInformation: return .readLocalVersionInformation
        case .readLocalSupportedCommands: return .readLocalSupportedCommands
        case .readLocalSupportedFeatures: return .readLocalSupportedFeatures
        case .readBufferSize: return .readBufferSize
        case .readBDADDR: return .readBDADDR
        case .readRSSI: return .readRSSI
        case .leReadBufferSizeV1: return .leReadBufferSizeV1
        case .leReadBufferSizeV2: return .leReadBufferSizeV2
        case .leReadLocalSupportedFeatures: return .leReadLocalSupportedFeatures
        case .leReadPHY: return .leReadPHY
        case .leSetDataLength: return .leSetDataLength
        case .leRemoteConnectionParameterRequestReply: return .leRemoteConnectionParameterRequestReply
        case .leRemoteConnectionParameterRequestNegativeReply: return .leRemoteConnectionParameterRequestNegativeReply
        case .leSetExtendedAdvertisingParametersV1: return .leSetExtendedAdvertisingParametersV1
        case .leSetExtendedAdvertisingParametersV2: return .leSetExtendedAdvertisingParametersV2
        case .readLocalName: return .readLocalName
        case .leReadFilterAcceptListSize: return .leReadFilterAcceptListSize
        case .leRand: return .leRand
        case .leReadSupportedStates: return .leReadSupportedStates
        case .leReadSuggestedDefaultDataLength: return .leReadSuggestedDefaultDataLength
        case .leReadMaximumDataLength: return .leReadMaximumDataLength
        case .leReadMaximumAdvertisingDataLength: return .leReadMaximumAdvertisingDataLength
        case .leReadNumberOfSupportedAdvertisingSets: return .leReadNumberOfSupportedAdvertisingSets
        }
    }

    /// The typed return parameters; `nil` for `.failed` and `.raw`.
    public var parameters: (any HCIReturnParameters)? {
        switch self {
        case .status(_, let p): return p
        case .failed, .raw: return nil
        case .readLocalVersionInformation(let p): return p
        case .readLocalSupportedCommands(let p): return p
        case .readLocalSupportedFeatures(let p): return p
        case .readBufferSize(let p): return p
        case .readBDADDR(let p): return p
        case .readRSSI(let p): return p
        case .leReadBufferSizeV1(let p): return p
        case .leReadBufferSizeV2(let p): return p
        case .leReadLocalSupportedFeatures(let p): return p
        case .leReadPHY(let p): return p
        case .leSetDataLength(let p), .leRemoteConnectionParameterRequestReply(let p),
            .leRemoteConnectionParameterRequestNegativeReply(let p):
            return p
        case .leSetExtendedAdvertisingParametersV1(let p), .leSetExtendedAdvertisingParametersV2(let p): return p
        case .readLocalName(let p): return p
        case .leReadFilterAcceptListSize(let p): return p
        case .leRand(let p): return p
        case .leReadSupportedStates(let p): return p
        case .leReadSuggestedDefaultDataLength(let p): return p
        case .leReadMaximumDataLength(let p): return p
        case .leReadMaximumAdvertisingDataLength(let p): return p
        case .leReadNumberOfSupportedAdvertisingSets(let p): return p
        }
    }

    /// The status; `nil` only for a raw return with no parameters (NOP).
    public var status: HCIStatus? {
        switch self {
        case .failed(_, let status): return status
        case .raw(_, let bytes): return bytes.first.map(HCIStatus.init(rawValue:))
        default: return parameters?.status
        }
    }

    /// `"Read BD ADDR: Success (0x00), address 00:1B:DC:07:32:F4"`.
    public var description: String {
        let name = opcode.rawValue == 0 ? "NOP" : opcode.displayName
        switch self {
        case .failed(_, let status): return "\(name): \(status)"
        case .raw(_, let bytes):
            if bytes.isEmpty { return name }
            let status = HCIStatus(rawValue: bytes[0])
            return bytes.count == 1 ? "\(name): \(status)" : "\(name): \(status), \(Hex.encode(bytes.dropFirst()))"
        default:
            return "\(name): " + (parameters?.description ?? "")
        }
    }
}
