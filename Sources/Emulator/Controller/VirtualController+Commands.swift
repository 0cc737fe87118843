import Bluetooth
import HCI
import L2CAP

/// HCI command handling of the virtual controller.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.1 (link control), §7.3, §7.4, §7.5, §7.8 (LE)
extension VirtualController {
    /// The legacy commands this controller implements.
    public static let legacyCommands: [HCIOpcode] = [
        .disconnect, .setEventMask, .reset, .readLocalVersionInformation, .readLocalSupportedFeatures,
        .readBufferSize, .readBDADDR, .readRSSI, .leSetEventMask, .leReadBufferSizeV1, .leReadLocalSupportedFeatures,
        .leSetRandomAddress, .leSetScanParameters, .leSetScanEnable, .leCreateConnection, .leCreateConnectionCancel,
        .leConnectionUpdate, .leRand, .writeLEHostSupport, .leSetAdvertisingParameters, .leSetAdvertisingData,
        .leSetScanResponseData, .leSetAdvertisingEnable, .leReadFilterAcceptListSize, .leClearFilterAcceptList,
        .leAddDeviceToFilterAcceptList, .leRemoveDeviceFromFilterAcceptList, .leEnableEncryption,
        .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply, .leSetPHY, .leReadPHY, .leSetDataLength,
        .leReadMaximumDataLength,
    ]

    /// The extended advertising, scanning and initiating commands (with
    /// `Configuration.extendedAdvertising`).
    public static let extendedCommands: [HCIOpcode] = [
        .leSetExtendedScanParameters, .leSetExtendedScanEnable, .leExtendedCreateConnectionV1,
        .leSetExtendedAdvertisingParametersV1, .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData,
        .leSetExtendedAdvertisingEnable, .leSetAdvertisingSetRandomAddress, .leReadMaximumAdvertisingDataLength,
        .leReadNumberOfSupportedAdvertisingSets, .leRemoveAdvertisingSet, .leClearAdvertisingSets,
    ]

    /// The commands this controller implements.
    public nonisolated var implementedCommands: [HCIOpcode] {
        configuration.extendedAdvertising ? Self.legacyCommands + Self.extendedCommands : Self.legacyCommands
    }

    /// Supported-commands bitmap with exactly the implemented commands set.
    public nonisolated var supportedCommands: HCISupportedCommands {
        var octets = [UInt8](repeating: 0, count: HCISupportedCommands.octetCount)
        for opcode in implementedCommands {
            guard let position = HCISupportedCommands.positions[opcode] else { continue }
            octets[position.octet] |= 1 << UInt8(position.bit)
        }
        return HCISupportedCommands(octets: octets)!
    }

    /// LMP features: BR/EDR Not Supported (bit 37) and LE Supported (Controller) (bit 38).
    public static let lmpFeatures = LMPFeatures(
        rawValue: 1 << UInt64(LMPFeatures.brEDRNotSupported) | 1 << UInt64(LMPFeatures.leSupportedController))

    /// LE features: LE Data Packet Length Extension, LE 2M PHY and LE Coded PHY, and LE Extended
    /// Advertising (bit 12) with `Configuration.extendedAdvertising`; none of the other optional
    /// link-layer features (no encryption bit, no LL parameter request procedure).
    public nonisolated var leFeatures: LEFeatures {
        let link: LEFeatures = [.leDataPacketLengthExtension, .le2MPHY, .leCodedPHY]
        return configuration.extendedAdvertising ? link.union(.leExtendedAdvertising) : link
    }

    /// The version reported: HCI/LMP 5.0, company 0xFFFF (for testing).
    public static let version = ReadLocalVersionInformationCommand.ReturnParameters(
        hciVersion: CoreVersion(rawValue: 0x09), hciSubversion: 0x0001, lmpVersion: CoreVersion(rawValue: 0x09),
        companyID: 0xFFFF, lmpSubversion: 0x0001)

    func execute(_ packet: HCICommandPacket) async {
        if configuration.unansweredCommands.contains(packet.opcode) {
            logger.debug("virtual controller: leaving \(packet.opcode) unanswered")
            return
        }
        // A command this controller does not implement is unknown to it, whatever its parameters.
        guard packet.opcode == .readLocalSupportedCommands || implementedCommands.contains(packet.opcode) else {
            await complete(opcode: packet.opcode, returnParameters: [HCIStatus.unknownHCICommand.rawValue])
            return
        }
        let command: AnyHCICommand
        do {
            command = try AnyHCICommand(packet)
        } catch {
            logger.warning("virtual controller: malformed \(packet.opcode): \(error)")
            await refuse(packet.opcode, .invalidHCICommandParameters)
            return
        }
        switch command {
        case .reset:
            await reset()
            await complete(ResetCommand.self, StatusReturnParameters())
        case .readLocalVersionInformation:
            await complete(ReadLocalVersionInformationCommand.self, Self.version)
        case .readLocalSupportedCommands:
            await complete(
                ReadLocalSupportedCommandsCommand.self, .init(supportedCommands: supportedCommands))
        case .readLocalSupportedFeatures:
            await complete(ReadLocalSupportedFeaturesCommand.self, .init(lmpFeatures: Self.lmpFeatures))
        case .readBufferSize:
            // The same 27-octet buffers (a host that reads only these finds them too); LE Read
            // Buffer Size reports them as LE buffers, which a host prefers.
            await complete(
                ReadBufferSizeCommand.self,
                .init(
                    aclDataPacketLength: configuration.aclBufferLength, synchronousDataPacketLength: 0,
                    totalNumACLDataPackets: UInt16(configuration.aclBufferCount), totalNumSynchronousDataPackets: 0))
        case .readBDADDR:
            await complete(ReadBDADDRCommand.self, .init(address: configuration.address))
        case .readRSSI(let command):
            guard let connection = connections[command.handle] else {
                await complete(
                    ReadRSSICommand.self, .init(status: .unknownConnectionIdentifier, handle: command.handle, rssi: 0))
                return
            }
            await complete(ReadRSSICommand.self, .init(handle: command.handle, rssi: connection.rssi))
        case .setEventMask(let command):
            eventMask = command.eventMask
            await complete(SetEventMaskCommand.self, StatusReturnParameters())
        case .leSetEventMask(let command):
            leEventMask = command.leEventMask
            await complete(LESetEventMaskCommand.self, StatusReturnParameters())
        case .leReadBufferSizeV1:
            await complete(
                LEReadBufferSizeV1Command.self,
                .init(
                    leACLDataPacketLength: configuration.aclBufferLength,
                    totalNumLEACLDataPackets: configuration.aclBufferCount))
        case .leReadLocalSupportedFeatures:
            await complete(LEReadLocalSupportedFeaturesCommand.self, .init(leFeatures: leFeatures))
        case .leSetRandomAddress(let command):
            guard !scanning, initiating == nil else {
                await complete(LESetRandomAddressCommand.self, StatusReturnParameters(status: .commandDisallowed))
                return
            }
            randomAddress = command.randomAddress
            await complete(LESetRandomAddressCommand.self, StatusReturnParameters())
        case .leSetExtendedScanParameters(let command):
            await setExtendedScanParameters(command)
        case .leSetExtendedScanEnable(let command):
            await setExtendedScanEnable(command)
        case .leExtendedCreateConnectionV1(let command):
            await extendedCreateConnection(command)
        case .leSetExtendedAdvertisingParametersV1(let command):
            await setExtendedAdvertisingParameters(command)
        case .leSetExtendedAdvertisingData(let command):
            await setExtendedAdvertisingData(command)
        case .leSetExtendedScanResponseData(let command):
            await setExtendedScanResponseData(command)
        case .leSetExtendedAdvertisingEnable(let command):
            await setExtendedAdvertisingEnable(command)
        case .leSetAdvertisingSetRandomAddress(let command):
            await setAdvertisingSetRandomAddress(command)
        case .leReadMaximumAdvertisingDataLength:
            await complete(
                LEReadMaximumAdvertisingDataLengthCommand.self,
                .init(maxAdvertisingDataLength: UInt16(Self.legacyDataLength)))
        case .leReadNumberOfSupportedAdvertisingSets:
            await complete(LEReadNumberOfSupportedAdvertisingSetsCommand.self, .init(numSupportedAdvertisingSets: 1))
        case .leRemoveAdvertisingSet(let command):
            let status = await removeAdvertisingSet(command.advertisingHandle)
            await complete(LERemoveAdvertisingSetCommand.self, StatusReturnParameters(status: status))
        case .leClearAdvertisingSets:
            let status = await removeAdvertisingSet(nil)
            await complete(LEClearAdvertisingSetsCommand.self, StatusReturnParameters(status: status))
        case .leSetScanParameters(let command):
            guard claim(extended: false) else {
                await complete(LESetScanParametersCommand.self, StatusReturnParameters(status: .commandDisallowed))
                return
            }
            guard !scanning else {
                await complete(LESetScanParametersCommand.self, StatusReturnParameters(status: .commandDisallowed))
                return
            }
            guard command.leScanWindow <= command.leScanInterval, (0x0004...0x4000).contains(command.leScanInterval),
                command.leScanWindow >= 0x0004
            else {
                await complete(
                    LESetScanParametersCommand.self, StatusReturnParameters(status: .invalidHCICommandParameters))
                return
            }
            scanParameters = command
            await complete(LESetScanParametersCommand.self, StatusReturnParameters())
        case .leSetScanEnable(let command):
            guard claim(extended: false) else {
                await complete(LESetScanEnableCommand.self, StatusReturnParameters(status: .commandDisallowed))
                return
            }
            if command.leScanEnable, scanParameters.ownAddressType == LEOwnAddressType.random, randomAddress == nil {
                await complete(
                    LESetScanEnableCommand.self, StatusReturnParameters(status: .invalidHCICommandParameters))
                return
            }
            if command.leScanEnable && !scanning { reported = [] }
            scanning = command.leScanEnable
            extendedReports = false
            filterDuplicates = command.filterDuplicates
            await complete(LESetScanEnableCommand.self, StatusReturnParameters())
            scheduleAdvertisingEvents()
        case .leCreateConnection(let command):
            guard claim(extended: false) else {
                await status(LECreateConnectionCommand.opcode, .commandDisallowed)
                return
            }
            await createConnection(command, extended: false)
        case .leCreateConnectionCancel:
            await cancelCreateConnection()
        case .leEnableEncryption(let command):
            await enableEncryption(command)
        case .leLongTermKeyRequestReply(let command):
            await answerLongTermKeyRequest(handle: command.connectionHandle, key: command.longTermKey)
        case .leLongTermKeyRequestNegativeReply(let command):
            await answerLongTermKeyRequest(handle: command.connectionHandle, key: nil)
        case .leReadFilterAcceptListSize:
            await complete(
                LEReadFilterAcceptListSizeCommand.self, .init(filterAcceptListSize: UInt8(Self.filterAcceptListSize)))
        case .leClearFilterAcceptList:
            guard filterAcceptListChangeAllowed else {
                await complete(LEClearFilterAcceptListCommand.self, StatusReturnParameters(status: .commandDisallowed))
                return
            }
            filterAcceptList = []
            await complete(LEClearFilterAcceptListCommand.self, StatusReturnParameters())
        case .leAddDeviceToFilterAcceptList(let command):
            let entry = FilterAcceptListEntry(type: command.addressType, address: command.address)
            var result = HCIStatus.success
            if !filterAcceptListChangeAllowed {
                result = .commandDisallowed
            } else if !filterAcceptList.contains(entry) {
                if filterAcceptList.count >= Self.filterAcceptListSize {
                    result = .memoryCapacityExceeded
                } else {
                    filterAcceptList.append(entry)
                }
            }
            await complete(LEAddDeviceToFilterAcceptListCommand.self, StatusReturnParameters(status: result))
        case .leRemoveDeviceFromFilterAcceptList(let command):
            guard filterAcceptListChangeAllowed else {
                await complete(
                    LERemoveDeviceFromFilterAcceptListCommand.self, StatusReturnParameters(status: .commandDisallowed))
                return
            }
            filterAcceptList.removeAll { $0 == FilterAcceptListEntry(type: command.addressType, address: command.address) }
            await complete(LERemoveDeviceFromFilterAcceptListCommand.self, StatusReturnParameters())
        case .disconnect(let command):
            await disconnect(command)
        case .leConnectionUpdate(let command):
            await updateConnection(command)
        case .leSetPHY(let command):
            await setPHY(command)
        case .leReadPHY(let command):
            guard let connection = connections[command.connectionHandle] else {
                await complete(opcode: packet.opcode, returnParameters: [HCIStatus.unknownConnectionIdentifier.rawValue])
                return
            }
            await complete(
                LEReadPHYCommand.self,
                .init(
                    connectionHandle: command.connectionHandle, txPHY: LEPHYType(rawValue: connection.txPHY.rawValue) ?? .le1M,
                    rxPHY: LEPHYType(rawValue: connection.rxPHY.rawValue) ?? .le1M))
        case .leSetDataLength(let command):
            await setDataLength(command)
        case .leReadMaximumDataLength:
            await complete(
                LEReadMaximumDataLengthCommand.self,
                .init(
                    supportedMaxTXOctets: Self.maximumDataLength.octets, supportedMaxTXTime: Self.maximumDataLength.time,
                    supportedMaxRXOctets: Self.maximumDataLength.octets, supportedMaxRXTime: Self.maximumDataLength.time))
        case .leRand:
            var random = SystemRandomNumberGenerator()
            await complete(LERandCommand.self, .init(randomNumber: random.next()))
        case .leSetAdvertisingParameters(let command):
            await setAdvertisingParameters(command)
        case .leSetAdvertisingData(let command):
            advertisingData = command.advertisingData
            advertiser?.update(advertisingData: advertisingData)
            await complete(LESetAdvertisingDataCommand.self, StatusReturnParameters())
        case .leSetScanResponseData(let command):
            scanResponseData = command.scanResponseData
            advertiser?.update(scanResponseData: scanResponseData)
            await complete(LESetScanResponseDataCommand.self, StatusReturnParameters())
        case .leSetAdvertisingEnable(let command):
            await setAdvertisingEnable(command.advertisingEnable)
        case .writeLEHostSupport:
            await complete(WriteLEHostSupportCommand.self, StatusReturnParameters())
        default:
            await complete(opcode: packet.opcode, returnParameters: [HCIStatus.unknownHCICommand.rawValue])
        }
    }

    /// Answers `C` with Command Complete.
    func complete<C: HCICommand>(_ command: C.Type, _ returnParameters: C.ReturnParameters) async {
        await emit(.commandComplete(CommandCompleteEvent(completing: command, returning: returnParameters)))
    }

    func complete(opcode: HCIOpcode, returnParameters: [UInt8]) async {
        await emit(
            .commandComplete(
                CommandCompleteEvent(numHCICommandPackets: 1, opcode: opcode, returnParameters: returnParameters)))
    }

    func status(_ opcode: HCIOpcode, _ status: HCIStatus) async {
        await emit(.commandStatus(CommandStatusEvent(status: status, numHCICommandPackets: 1, opcode: opcode)))
    }

    /// Refuses a command with `status`: Command Status for the commands answered that way,
    /// Command Complete otherwise.
    func refuse(_ opcode: HCIOpcode, _ status: HCIStatus) async {
        switch opcode {
        case .disconnect, .leCreateConnection, .leConnectionUpdate, .leExtendedCreateConnectionV1,
            .leExtendedCreateConnectionV2, .leSetPHY, .leEnableEncryption:
            await self.status(opcode, status)
        default:
            await complete(opcode: opcode, returnParameters: [status.rawValue])
        }
    }

    /// HCI_Reset: every connection dropped without events, scanning and initiating stopped,
    /// masks back to their defaults.
    func reset() async {
        generation += 1
        filterAcceptList = []
        tick?.cancel()
        tick = nil
        scanning = false
        filterDuplicates = false
        reported = []
        initiating = nil
        randomAddress = nil
        eventMask = SetEventMaskCommand.defaultMask
        leEventMask = Self.defaultLEEventMask
        reassembler = L2CAPReassembler()
        stopExtendedAdvertising()
        advertisingSet = nil
        commandKind = nil
        extendedReports = false
        initiatingExtended = false
        scanTimeout?.cancel()
        scanTimeout = nil
        stopAdvertising()
        advertisingParameters = LESetAdvertisingParametersCommand(
            advertisingIntervalMin: 0x0800, advertisingIntervalMax: 0x0800)
        advertisingData = []
        scanResponseData = []
        let dropped = connections
        connections = [:]
        for (_, connection) in dropped {
            await connection.remoteDisconnected(.remoteDeviceTerminatedConnectionDueToPowerOff)
        }
    }
}
