import Bluetooth

/// A command packet decoded into its typed command when the opcode is one this module models;
/// any other opcode stays `.unknown` with its raw packet (an unknown command never fails a stream).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7
public enum AnyHCICommand: Hashable, Sendable, CustomStringConvertible {
    case disconnect(DisconnectCommand)
    case setEventMask(SetEventMaskCommand)
    case reset(ResetCommand)
    case readLocalVersionInformation(ReadLocalVersionInformationCommand)
    case readLocalSupportedCommands(ReadLocalSupportedCommandsCommand)
    case readLocalSupportedFeatures(ReadLocalSupportedFeaturesCommand)
    case readBufferSize(ReadBufferSizeCommand)
    case readBDADDR(ReadBDADDRCommand)
    case readRSSI(ReadRSSICommand)
    case leSetEventMask(LESetEventMaskCommand)
    case leReadBufferSizeV1(LEReadBufferSizeV1Command)
    case leReadBufferSizeV2(LEReadBufferSizeV2Command)
    case leReadLocalSupportedFeatures(LEReadLocalSupportedFeaturesCommand)
    case leSetRandomAddress(LESetRandomAddressCommand)
    case leSetAdvertisingParameters(LESetAdvertisingParametersCommand)
    case leSetAdvertisingData(LESetAdvertisingDataCommand)
    case leSetScanResponseData(LESetScanResponseDataCommand)
    case leSetAdvertisingEnable(LESetAdvertisingEnableCommand)
    case leSetScanParameters(LESetScanParametersCommand)
    case leSetScanEnable(LESetScanEnableCommand)
    case leCreateConnection(LECreateConnectionCommand)
    case leCreateConnectionCancel(LECreateConnectionCancelCommand)
    case leConnectionUpdate(LEConnectionUpdateCommand)
    case leEnableEncryption(LEEnableEncryptionCommand)
    case leLongTermKeyRequestReply(LELongTermKeyRequestReplyCommand)
    case leLongTermKeyRequestNegativeReply(LELongTermKeyRequestNegativeReplyCommand)
    case leRemoteConnectionParameterRequestReply(LERemoteConnectionParameterRequestReplyCommand)
    case leRemoteConnectionParameterRequestNegativeReply(LERemoteConnectionParameterRequestNegativeReplyCommand)
    case leSetDataLength(LESetDataLengthCommand)
    case leReadPHY(LEReadPHYCommand)
    case leSetPHY(LESetPHYCommand)
    case leSetExtendedAdvertisingParametersV1(LESetExtendedAdvertisingParametersV1Command)
    case leSetExtendedAdvertisingData(LESetExtendedAdvertisingDataCommand)
    case leSetExtendedAdvertisingEnable(LESetExtendedAdvertisingEnableCommand)
    case leSetExtendedScanParameters(LESetExtendedScanParametersCommand)
    case leSetExtendedScanEnable(LESetExtendedScanEnableCommand)
    case leExtendedCreateConnectionV1(LEExtendedCreateConnectionV1Command)
    case writeLocalName(WriteLocalNameCommand)
    case readLocalName(ReadLocalNameCommand)
    case writeLEHostSupport(WriteLEHostSupportCommand)
    case leReadFilterAcceptListSize(LEReadFilterAcceptListSizeCommand)
    case leClearFilterAcceptList(LEClearFilterAcceptListCommand)
    case leAddDeviceToFilterAcceptList(LEAddDeviceToFilterAcceptListCommand)
    case leRemoveDeviceFromFilterAcceptList(LERemoveDeviceFromFilterAcceptListCommand)
    case leRand(LERandCommand)
    case leReadSupportedStates(LEReadSupportedStatesCommand)
    case leReadSuggestedDefaultDataLength(LEReadSuggestedDefaultDataLengthCommand)
    case leWriteSuggestedDefaultDataLength(LEWriteSuggestedDefaultDataLengthCommand)
    case leReadMaximumDataLength(LEReadMaximumDataLengthCommand)
    case leSetDefaultPHY(LESetDefaultPHYCommand)
    case leSetAdvertisingSetRandomAddress(LESetAdvertisingSetRandomAddressCommand)
    case leSetExtendedScanResponseData(LESetExtendedScanResponseDataCommand)
    case leReadMaximumAdvertisingDataLength(LEReadMaximumAdvertisingDataLengthCommand)
    case leReadNumberOfSupportedAdvertisingSets(LEReadNumberOfSupportedAdvertisingSetsCommand)
    case leRemoveAdvertisingSet(LERemoveAdvertisingSetCommand)
    case leClearAdvertisingSets(LEClearAdvertisingSetsCommand)
    case leSetExtendedAdvertisingParametersV2(LESetExtendedAdvertisingParametersV2Command)
    case leExtendedCreateConnectionV2(LEExtendedCreateConnectionV2Command)
    /// An opcode this module does not model.
    case unknown(HCICommandPacket)

    /// Every command type this enum decodes, for tables and tests.
    public static let commandTypes: [any HCICommand.Type] = [
        DisconnectCommand.self, SetEventMaskCommand.self, ResetCommand.self,
        ReadLocalVersionInformationCommand.self, ReadLocalSupportedCommandsCommand.self,
        ReadLocalSupportedFeaturesCommand.self, ReadBufferSizeCommand.self, ReadBDADDRCommand.self,
        ReadRSSICommand.self, LESetEventMaskCommand.self, LEReadBufferSizeV1Command.self,
        LEReadBufferSizeV2Command.self, LEReadLocalSupportedFeaturesCommand.self, LESetRandomAddressCommand.self,
        LESetAdvertisingParametersCommand.self, LESetAdvertisingDataCommand.self,
        LESetScanResponseDataCommand.self, LESetAdvertisingEnableCommand.self, LESetScanParametersCommand.self,
        LESetScanEnableCommand.self, LECreateConnectionCommand.self, LECreateConnectionCancelCommand.self,
        LEConnectionUpdateCommand.self, LERemoteConnectionParameterRequestReplyCommand.self,
        LERemoteConnectionParameterRequestNegativeReplyCommand.self, LESetDataLengthCommand.self,
        LEReadPHYCommand.self, LESetPHYCommand.self, LESetExtendedAdvertisingParametersV1Command.self,
        LESetExtendedAdvertisingDataCommand.self, LESetExtendedAdvertisingEnableCommand.self,
        LESetExtendedScanParametersCommand.self, LESetExtendedScanEnableCommand.self,
        LEExtendedCreateConnectionV1Command.self,
        WriteLocalNameCommand.self,
        ReadLocalNameCommand.self,
        WriteLEHostSupportCommand.self,
        LEReadFilterAcceptListSizeCommand.self,
        LEClearFilterAcceptListCommand.self,
        LEAddDeviceToFilterAcceptListCommand.self,
        LERemoveDeviceFromFilterAcceptListCommand.self,
        LERandCommand.self,
        LEReadSupportedStatesCommand.self,
        LEReadSuggestedDefaultDataLengthCommand.self,
        LEWriteSuggestedDefaultDataLengthCommand.self,
        LEReadMaximumDataLengthCommand.self,
        LESetDefaultPHYCommand.self,
        LESetAdvertisingSetRandomAddressCommand.self,
        LESetExtendedScanResponseDataCommand.self,
        LEReadMaximumAdvertisingDataLengthCommand.self,
        LEReadNumberOfSupportedAdvertisingSetsCommand.self,
        LERemoveAdvertisingSetCommand.self,
        LEClearAdvertisingSetsCommand.self,
        LESetExtendedAdvertisingParametersV2Command.self,
        LEExtendedCreateConnectionV2Command.self,
    ]

    /// Decodes a packet: a modelled opcode must have well-formed parameters (else the typed
    /// parser's error is thrown); any other opcode becomes `.unknown`.
    public init(_ packet: HCICommandPacket) throws(HCIError) {
        var r = ByteReader(packet.parameters)
        switch packet.opcode {
        case .disconnect: self = .disconnect(try DisconnectCommand(parsingParameters: &r))
        case .setEventMask: self = .setEventMask(try SetEventMaskCommand(parsingParameters: &r))
        case .reset: self = .reset(try ResetCommand(parsingParameters: &r))
        case .readLocalVersionInformation:
            self = .readLocalVersionInformation(try ReadLocalVersionInformationCommand(parsingParameters: &r))
        case .readLocalSupportedCommands:
            self = .readLocalSupportedCommands(try ReadLocalSupportedCommandsCommand(parsingParameters: &r))
        case .readLocalSupportedFeatures:
            self = .readLocalSupportedFeatures(try ReadLocalSupportedFeaturesCommand(parsingParameters: &r))
        case .readBufferSize: self = .readBufferSize(try ReadBufferSizeCommand(parsingParameters: &r))
        case .readBDADDR: self = .readBDADDR(try ReadBDADDRCommand(parsingParameters: &r))
        case .readRSSI: self = .readRSSI(try ReadRSSICommand(parsingParameters: &r))
        case .leSetEventMask: self = .leSetEventMask(try LESetEventMaskCommand(parsingParameters: &r))
        case .leReadBufferSizeV1: self = .leReadBufferSizeV1(try LEReadBufferSizeV1Command(parsingParameters: &r))
        case .leReadBufferSizeV2: self = .leReadBufferSizeV2(try LEReadBufferSizeV2Command(parsingParameters: &r))
        case .leReadLocalSupportedFeatures:
            self = .leReadLocalSupportedFeatures(try LEReadLocalSupportedFeaturesCommand(parsingParameters: &r))
        case .leSetRandomAddress: self = .leSetRandomAddress(try LESetRandomAddressCommand(parsingParameters: &r))
        case .leSetAdvertisingParameters:
            self = .leSetAdvertisingParameters(try LESetAdvertisingParametersCommand(parsingParameters: &r))
        case .leSetAdvertisingData: self = .leSetAdvertisingData(try LESetAdvertisingDataCommand(parsingParameters: &r))
        case .leSetScanResponseData:
            self = .leSetScanResponseData(try LESetScanResponseDataCommand(parsingParameters: &r))
        case .leSetAdvertisingEnable:
            self = .leSetAdvertisingEnable(try LESetAdvertisingEnableCommand(parsingParameters: &r))
        case .leSetScanParameters: self = .leSetScanParameters(try LESetScanParametersCommand(parsingParameters: &r))
        case .leSetScanEnable: self = .leSetScanEnable(try LESetScanEnableCommand(parsingParameters: &r))
        case .leCreateConnection: self = .leCreateConnection(try LECreateConnectionCommand(parsingParameters: &r))
        case .leCreateConnectionCancel:
            self = .leCreateConnectionCancel(try LECreateConnectionCancelCommand(parsingParameters: &r))
        case .leConnectionUpdate: self = .leConnectionUpdate(try LEConnectionUpdateCommand(parsingParameters: &r))
        case .leEnableEncryption: self = .leEnableEncryption(try LEEnableEncryptionCommand(parsingParameters: &r))
        case .leLongTermKeyRequestReply:
            self = .leLongTermKeyRequestReply(try LELongTermKeyRequestReplyCommand(parsingParameters: &r))
        case .leLongTermKeyRequestNegativeReply:
            self = .leLongTermKeyRequestNegativeReply(try LELongTermKeyRequestNegativeReplyCommand(parsingParameters: &r))
        case .leRemoteConnectionParameterRequestReply:
            self = .leRemoteConnectionParameterRequestReply(
                try LERemoteConnectionParameterRequestReplyCommand(parsingParameters: &r))
        case .leRemoteConnectionParameterRequestNegativeReply:
            self = .leRemoteConnectionParameterRequestNegativeReply(
                try LERemoteConnectionParameterRequestNegativeReplyCommand(parsingParameters: &r))
        case .leSetDataLength: self = .leSetDataLength(try LESetDataLengthCommand(parsingParameters: &r))
        case .leReadPHY: self = .leReadPHY(try LEReadPHYCommand(parsingParameters: &r))
        case .leSetPHY: self = .leSetPHY(try LESetPHYCommand(parsingParameters: &r))
        case .leSetExtendedAdvertisingParametersV1:
            self = .leSetExtendedAdvertisingParametersV1(
                try LESetExtendedAdvertisingParametersV1Command(parsingParameters: &r))
        case .leSetExtendedAdvertisingData:
            self = .leSetExtendedAdvertisingData(try LESetExtendedAdvertisingDataCommand(parsingParameters: &r))
        case .leSetExtendedAdvertisingEnable:
            self = .leSetExtendedAdvertisingEnable(try LESetExtendedAdvertisingEnableCommand(parsingParameters: &r))
        case .leSetExtendedScanParameters:
            self = .leSetExtendedScanParameters(try LESetExtendedScanParametersCommand(parsingParameters: &r))
        case .leSetExtendedScanEnable:
            self = .leSetExtendedScanEnable(try LESetExtendedScanEnableCommand(parsingParameters: &r))
        case .leExtendedCreateConnectionV1:
            self = .leExtendedCreateConnectionV1(try LEExtendedCreateConnectionV1Command(parsingParameters: &r))
        case .writeLocalName: self = .writeLocalName(try WriteLocalNameCommand(parsingParameters: &r))
        case .readLocalName: self = .readLocalName(try ReadLocalNameCommand(parsingParameters: &r))
        case .writeLEHostSupport: self = .writeLEHostSupport(try WriteLEHostSupportCommand(parsingParameters: &r))
        case .leReadFilterAcceptListSize:
            self = .leReadFilterAcceptListSize(try LEReadFilterAcceptListSizeCommand(parsingParameters: &r))
        case .leClearFilterAcceptList:
            self = .leClearFilterAcceptList(try LEClearFilterAcceptListCommand(parsingParameters: &r))
        case .leAddDeviceToFilterAcceptList:
            self = .leAddDeviceToFilterAcceptList(try LEAddDeviceToFilterAcceptListCommand(parsingParameters: &r))
        case .leRemoveDeviceFromFilterAcceptList:
            self = .leRemoveDeviceFromFilterAcceptList(
                try LERemoveDeviceFromFilterAcceptListCommand(parsingParameters: &r))
        case .leRand: self = .leRand(try LERandCommand(parsingParameters: &r))
        case .leReadSupportedStates:
            self = .leReadSupportedStates(try LEReadSupportedStatesCommand(parsingParameters: &r))
        case .leReadSuggestedDefaultDataLength:
            self = .leReadSuggestedDefaultDataLength(try LEReadSuggestedDefaultDataLengthCommand(parsingParameters: &r))
        case .leWriteSuggestedDefaultDataLength:
            self = .leWriteSuggestedDefaultDataLength(
                try LEWriteSuggestedDefaultDataLengthCommand(parsingParameters: &r))
        case .leReadMaximumDataLength:
            self = .leReadMaximumDataLength(try LEReadMaximumDataLengthCommand(parsingParameters: &r))
        case .leSetDefaultPHY: self = .leSetDefaultPHY(try LESetDefaultPHYCommand(parsingParameters: &r))
        case .leSetAdvertisingSetRandomAddress:
            self = .leSetAdvertisingSetRandomAddress(try LESetAdvertisingSetRandomAddressCommand(parsingParameters: &r))
        case .leSetExtendedScanResponseData:
            self = .leSetExtendedScanResponseData(try LESetExtendedScanResponseDataCommand(parsingParameters: &r))
        case .leReadMaximumAdvertisingDataLength:
            self = .leReadMaximumAdvertisingDataLength(
                try LEReadMaximumAdvertisingDataLengthCommand(parsingParameters: &r))
        case .leReadNumberOfSupportedAdvertisingSets:
            self = .leReadNumberOfSupportedAdvertisingSets(
                try LEReadNumberOfSupportedAdvertisingSetsCommand(parsingParameters: &r))
        case .leRemoveAdvertisingSet:
            self = .leRemoveAdvertisingSet(try LERemoveAdvertisingSetCommand(parsingParameters: &r))
        case .leClearAdvertisingSets:
            self = .leClearAdvertisingSets(try LEClearAdvertisingSetsCommand(parsingParameters: &r))
        case .leSetExtendedAdvertisingParametersV2:
            self = .leSetExtendedAdvertisingParametersV2(
                try LESetExtendedAdvertisingParametersV2Command(parsingParameters: &r))
        case .leExtendedCreateConnectionV2:
            self = .leExtendedCreateConnectionV2(try LEExtendedCreateConnectionV2Command(parsingParameters: &r))
        default: self = .unknown(packet)
        }
    }

    /// Parses the bytes after the H4 indicator (strict packet framing) and decodes them.
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        try self.init(try HCICommandPacket(parsing: &reader))
    }

    /// The typed command; `nil` for `.unknown`.
    public var command: (any HCICommand)? {
        switch self {
        case .disconnect(let c): return c
        case .setEventMask(let c): return c
        case .reset(let c): return c
        case .readLocalVersionInformation(let c): return c
        case .readLocalSupportedCommands(let c): return c
        case .readLocalSupportedFeatures(let c): return c
        case .readBufferSize(let c): return c
        case .readBDADDR(let c): return c
        case .readRSSI(let c): return c
        case .leSetEventMask(let c): return c
        case .leReadBufferSizeV1(let c): return c
        case .leReadBufferSizeV2(let c): return c
        case .leReadLocalSupportedFeatures(let c): return c
        case .leSetRandomAddress(let c): return c
        case .leSetAdvertisingParameters(let c): return c
        case .leSetAdvertisingData(let c): return c
        case .leSetScanResponseData(let c): return c
        case .leSetAdvertisingEnable(let c): return c
        case .leSetScanParameters(let c): return c
        case .leSetScanEnable(let c): return c
        case .leCreateConnection(let c): return c
        case .leCreateConnectionCancel(let c): return c
        case .leConnectionUpdate(let c): return c
        case .leEnableEncryption(let c): return c
        case .leLongTermKeyRequestReply(let c): return c
        case .leLongTermKeyRequestNegativeReply(let c): return c
        case .leRemoteConnectionParameterRequestReply(let c): return c
        case .leRemoteConnectionParameterRequestNegativeReply(let c): return c
        case .leSetDataLength(let c): return c
        case .leReadPHY(let c): return c
        case .leSetPHY(let c): return c
        case .leSetExtendedAdvertisingParametersV1(let c): return c
        case .leSetExtendedAdvertisingData(let c): return c
        case .leSetExtendedAdvertisingEnable(let c): return c
        case .leSetExtendedScanParameters(let c): return c
        case .leSetExtendedScanEnable(let c): return c
        case .leExtendedCreateConnectionV1(let c): return c
        case .writeLocalName(let c): return c
        case .readLocalName(let c): return c
        case .writeLEHostSupport(let c): return c
        case .leReadFilterAcceptListSize(let c): return c
        case .leClearFilterAcceptList(let c): return c
        case .leAddDeviceToFilterAcceptList(let c): return c
        case .leRemoveDeviceFromFilterAcceptList(let c): return c
        case .leRand(let c): return c
        case .leReadSupportedStates(let c): return c
        case .leReadSuggestedDefaultDataLength(let c): return c
        case .leWriteSuggestedDefaultDataLength(let c): return c
        case .leReadMaximumDataLength(let c): return c
        case .leSetDefaultPHY(let c): return c
        case .leSetAdvertisingSetRandomAddress(let c): return c
        case .leSetExtendedScanResponseData(let c): return c
        case .leReadMaximumAdvertisingDataLength(let c): return c
        case .leReadNumberOfSupportedAdvertisingSets(let c): return c
        case .leRemoveAdvertisingSet(let c): return c
        case .leClearAdvertisingSets(let c): return c
        case .leSetExtendedAdvertisingParametersV2(let c): return c
        case .leExtendedCreateConnectionV2(let c): return c
        case .unknown: return nil
        }
    }

    public var opcode: HCIOpcode {
        if case .unknown(let packet) = self { return packet.opcode }
        // Every case but `.unknown` carries a command.
        return type(of: command!).opcode
    }

    /// The packet to send; throws when a typed command breaks its limits.
    public func packet() throws(HCIError) -> HCICommandPacket {
        if case .unknown(let packet) = self { return packet }
        return try HCICommandPacket(command!)
    }

    /// btmon-like one line: the typed description, or the name/opcode and hex for `.unknown`.
    public var description: String {
        if case .unknown(let packet) = self {
            let known = HCIOpcode.names[packet.opcode.rawValue] != nil
            let head =
                known
                ? "\(packet.opcode.displayName) (\(CommandFormat.hex(packet.opcode.rawValue, digits: 4)))"
                : packet.opcode.displayName
            return packet.parameters.isEmpty ? head : head + ": " + Hex.encode(packet.parameters)
        }
        return command!.description
    }
}
