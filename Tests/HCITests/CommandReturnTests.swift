import Bluetooth
import Testing

@testable import HCI

/// Return parameters of a Command Complete for `opcode` and the typed value they decode to.
struct CommandReturnVector: Sendable, CustomTestStringConvertible {
    let name: String
    let opcode: HCIOpcode
    let hex: String
    let expected: HCICommandReturn

    init(_ name: String, _ opcode: HCIOpcode, _ hex: String, _ expected: HCICommandReturn) {
        self.name = name
        self.opcode = opcode
        self.hex = hex
        self.expected = expected
    }

    var bytes: [UInt8] { Hex.decode(hex)! }
    var testDescription: String { name }
    var isSuccess: Bool { bytes.first == 0 }
}

private let commandsBitmap: [UInt8] = {
    var octets = [UInt8](repeating: 0, count: 64)
    octets[5] = 0xC0  // Set Event Mask, Reset
    octets[25] = 0xF7
    octets[63] = 0x80
    return octets
}()

enum CommandReturnVectors {
    static let all: [CommandReturnVector] = [
        CommandReturnVector("Reset success", .reset, "00", .status(.reset, .init(status: .success))),
        CommandReturnVector("Reset refused", .reset, "0c", .status(.reset, .init(status: .commandDisallowed))),
        CommandReturnVector(
            "LE Set Scan Parameters", .leSetScanParameters, "00", .status(.leSetScanParameters, .init())),
        CommandReturnVector(
            "LE Set Scan Enable refused", .leSetScanEnable, "0c",
            .status(.leSetScanEnable, .init(status: .commandDisallowed))),
        CommandReturnVector(
            "LE Create Connection Cancel", .leCreateConnectionCancel, "00", .status(.leCreateConnectionCancel, .init())),
        CommandReturnVector(
            "LE Create Connection Cancel without pending", .leCreateConnectionCancel, "0c",
            .status(.leCreateConnectionCancel, .init(status: .commandDisallowed))),
        CommandReturnVector(
            "LE Set Extended Advertising Enable", .leSetExtendedAdvertisingEnable, "00",
            .status(.leSetExtendedAdvertisingEnable, .init())),
        CommandReturnVector(
            "LE Set Extended Advertising Enable unknown set", .leSetExtendedAdvertisingEnable, "42",
            .status(.leSetExtendedAdvertisingEnable, .init(status: .unknownAdvertisingIdentifier))),
        CommandReturnVector(
            "Read BD_ADDR", .readBDADDR, "00 f43207dc1b00",
            .readBDADDR(.init(address: commandTestAddress))),
        CommandReturnVector("Read BD_ADDR failed", .readBDADDR, "03", .failed(.readBDADDR, .hardwareFailure)),
        CommandReturnVector(
            "Read Local Version Information", .readLocalVersionInformation, "00 0d 3412 0d 0f00 7856",
            .readLocalVersionInformation(
                .init(
                    hciVersion: .v5_4, hciSubversion: 0x1234, lmpVersion: .v5_4, companyID: 0x000F,
                    lmpSubversion: 0x5678))),
        CommandReturnVector(
            "Read Local Version Information failed", .readLocalVersionInformation, "01",
            .failed(.readLocalVersionInformation, .unknownHCICommand)),
        CommandReturnVector(
            "Read Local Supported Commands", .readLocalSupportedCommands, "00" + Hex.encode(commandsBitmap),
            .readLocalSupportedCommands(.init(supportedCommands: HCISupportedCommands(octets: commandsBitmap)!))),
        CommandReturnVector(
            "Read Local Supported Commands failed", .readLocalSupportedCommands, "1f",
            .failed(.readLocalSupportedCommands, .unspecifiedError)),
        CommandReturnVector(
            "Read Local Supported Features", .readLocalSupportedFeatures, "00 ffff8ffed83f5b87",
            .readLocalSupportedFeatures(.init(lmpFeatures: LMPFeatures(rawValue: 0x875B_3FD8_FE8F_FFFF)))),
        CommandReturnVector(
            "Read Local Supported Features failed", .readLocalSupportedFeatures, "01",
            .failed(.readLocalSupportedFeatures, .unknownHCICommand)),
        CommandReturnVector(
            "Read Buffer Size", .readBufferSize, "00 fd03 40 0800 0a00",
            .readBufferSize(
                .init(
                    aclDataPacketLength: 0x03FD, synchronousDataPacketLength: 0x40, totalNumACLDataPackets: 8,
                    totalNumSynchronousDataPackets: 10))),
        CommandReturnVector(
            "Read Buffer Size failed", .readBufferSize, "01", .failed(.readBufferSize, .unknownHCICommand)),
        CommandReturnVector(
            "LE Read Buffer Size v1", .leReadBufferSizeV1, "00 fb00 0f",
            .leReadBufferSizeV1(.init(leACLDataPacketLength: 251, totalNumLEACLDataPackets: 15))),
        CommandReturnVector(
            "LE Read Buffer Size v1 failed", .leReadBufferSizeV1, "01", .failed(.leReadBufferSizeV1, .unknownHCICommand)
        ),
        CommandReturnVector(
            "LE Read Buffer Size v2", .leReadBufferSizeV2, "00 1b00 03 6400 02",
            .leReadBufferSizeV2(
                .init(
                    leACLDataPacketLength: 27, totalNumLEACLDataPackets: 3, isoDataPacketLength: 100,
                    totalNumISODataPackets: 2))),
        CommandReturnVector(
            "LE Read Buffer Size v2 failed", .leReadBufferSizeV2, "01", .failed(.leReadBufferSizeV2, .unknownHCICommand)
        ),
        CommandReturnVector(
            "LE Read Local Supported Features", .leReadLocalSupportedFeatures, "00 ff79010000000000",
            .leReadLocalSupportedFeatures(.init(leFeatures: LEFeatures(rawValue: 0x0001_79FF)))),
        CommandReturnVector(
            "LE Read Local Supported Features failed", .leReadLocalSupportedFeatures, "01",
            .failed(.leReadLocalSupportedFeatures, .unknownHCICommand)),
        CommandReturnVector(
            "LE Read PHY", .leReadPHY, "00 4000 02 03",
            .leReadPHY(.init(connectionHandle: 0x40, txPHY: .le2M, rxPHY: .leCoded))),
        CommandReturnVector(
            "LE Read PHY unknown connection", .leReadPHY, "02", .failed(.leReadPHY, .unknownConnectionIdentifier)),
        CommandReturnVector(
            "LE Read PHY unknown connection with handle", .leReadPHY, "02 4000",
            .failed(.leReadPHY, .unknownConnectionIdentifier)),
        CommandReturnVector("Read RSSI", .readRSSI, "00 4000 c4", .readRSSI(.init(handle: 0x40, rssi: -60))),
        CommandReturnVector(
            "Read RSSI unknown connection", .readRSSI, "02", .failed(.readRSSI, .unknownConnectionIdentifier)),
        CommandReturnVector(
            "Read RSSI failed with full parameters", .readRSSI, "02 4000 00",
            .readRSSI(.init(status: .unknownConnectionIdentifier, handle: 0x40, rssi: 0))),
        CommandReturnVector(
            "LE Set Data Length", .leSetDataLength, "00 4000", .leSetDataLength(.init(connectionHandle: 0x40))),
        CommandReturnVector(
            "LE Set Data Length failed", .leSetDataLength, "02", .failed(.leSetDataLength, .unknownConnectionIdentifier)
        ),
        CommandReturnVector(
            "LE Remote Connection Parameter Request Reply", .leRemoteConnectionParameterRequestReply, "00 4000",
            .leRemoteConnectionParameterRequestReply(.init(connectionHandle: 0x40))),
        CommandReturnVector(
            "LE Remote Connection Parameter Request Reply failed", .leRemoteConnectionParameterRequestReply, "02",
            .failed(.leRemoteConnectionParameterRequestReply, .unknownConnectionIdentifier)),
        CommandReturnVector(
            "LE Remote Connection Parameter Request Negative Reply", .leRemoteConnectionParameterRequestNegativeReply,
            "00 4000",
            .leRemoteConnectionParameterRequestNegativeReply(.init(connectionHandle: 0x40))),
        CommandReturnVector(
            "LE Remote Connection Parameter Request Negative Reply failed",
            .leRemoteConnectionParameterRequestNegativeReply, "12",
            .failed(.leRemoteConnectionParameterRequestNegativeReply, .invalidHCICommandParameters)),
        CommandReturnVector(
            "LE Set Extended Advertising Parameters", .leSetExtendedAdvertisingParametersV1, "00 f9",
            .leSetExtendedAdvertisingParametersV1(.init(selectedTxPower: -7))),
        CommandReturnVector(
            "LE Set Extended Advertising Parameters failed", .leSetExtendedAdvertisingParametersV1, "12",
            .failed(.leSetExtendedAdvertisingParametersV1, .invalidHCICommandParameters)),
        CommandReturnVector(
            "LE Set Extended Advertising Parameters v2", .leSetExtendedAdvertisingParametersV2, "00 f9",
            .leSetExtendedAdvertisingParametersV2(.init(selectedTxPower: -7))),
        CommandReturnVector(
            "LE Set Extended Advertising Parameters v2 failed", .leSetExtendedAdvertisingParametersV2, "12",
            .failed(.leSetExtendedAdvertisingParametersV2, .invalidHCICommandParameters)),
        CommandReturnVector("Unknown opcode stays raw", .writeScanEnable, "00", .raw(.writeScanEnable, [0x00])),
        CommandReturnVector("Write LE Host Support", .writeLEHostSupport, "00", .status(.writeLEHostSupport, .init())),
        CommandReturnVector(
            "LE Clear Filter Accept List", .leClearFilterAcceptList, "00", .status(.leClearFilterAcceptList, .init())),
        CommandReturnVector(
            "LE Set Extended Scan Response Data refused", .leSetExtendedScanResponseData, "12",
            .status(.leSetExtendedScanResponseData, .init(status: .invalidHCICommandParameters))),
        CommandReturnVector(
            "Read Local Name", .readLocalName, "00" + Hex.encode(HCILocalName("MTK CONNAC #1").octets),
            .readLocalName(.init(localName: HCILocalName("MTK CONNAC #1")))),
        CommandReturnVector(
            "Read Local Name with bytes after the NUL", .readLocalName,
            "00 4142 00 ff" + String(repeating: "00", count: 244),
            .readLocalName(
                .init(localName: HCILocalName(octets: [0x41, 0x42, 0x00, 0xFF] + [UInt8](repeating: 0, count: 244))!))),
        CommandReturnVector(
            "Read Local Name failed", .readLocalName, "01", .failed(.readLocalName, .unknownHCICommand)),
        CommandReturnVector(
            "LE Read Filter Accept List Size", .leReadFilterAcceptListSize, "00 40",
            .leReadFilterAcceptListSize(.init(filterAcceptListSize: 64))),
        CommandReturnVector(
            "LE Read Filter Accept List Size failed", .leReadFilterAcceptListSize, "01",
            .failed(.leReadFilterAcceptListSize, .unknownHCICommand)),
        CommandReturnVector(
            "LE Rand", .leRand, "00 8cbc154ce8acec0d", .leRand(.init(randomNumber: 0x0DEC_ACE8_4C15_BC8C))),
        CommandReturnVector("LE Rand failed", .leRand, "01", .failed(.leRand, .unknownHCICommand)),
        CommandReturnVector(
            "LE Read Supported States", .leReadSupportedStates, "00 ffffffffff030000",
            .leReadSupportedStates(.init(leStates: 0x0000_03FF_FFFF_FFFF))),
        CommandReturnVector(
            "LE Read Supported States failed", .leReadSupportedStates, "01",
            .failed(.leReadSupportedStates, .unknownHCICommand)),
        CommandReturnVector(
            "LE Read Suggested Default Data Length", .leReadSuggestedDefaultDataLength, "00 1b00 4801",
            .leReadSuggestedDefaultDataLength(.init(suggestedMaxTXOctets: 27, suggestedMaxTXTime: 328))),
        CommandReturnVector(
            "LE Read Suggested Default Data Length failed", .leReadSuggestedDefaultDataLength, "01",
            .failed(.leReadSuggestedDefaultDataLength, .unknownHCICommand)),
        CommandReturnVector(
            "LE Read Maximum Data Length", .leReadMaximumDataLength, "00 fb00 9042 fb00 9042",
            .leReadMaximumDataLength(
                .init(
                    supportedMaxTXOctets: 251, supportedMaxTXTime: 0x4290, supportedMaxRXOctets: 251,
                    supportedMaxRXTime: 0x4290))),
        CommandReturnVector(
            "LE Read Maximum Data Length failed", .leReadMaximumDataLength, "01",
            .failed(.leReadMaximumDataLength, .unknownHCICommand)),
        CommandReturnVector(
            "LE Read Maximum Advertising Data Length", .leReadMaximumAdvertisingDataLength, "00 7206",
            .leReadMaximumAdvertisingDataLength(.init(maxAdvertisingDataLength: 1650))),
        CommandReturnVector(
            "LE Read Maximum Advertising Data Length failed", .leReadMaximumAdvertisingDataLength, "01",
            .failed(.leReadMaximumAdvertisingDataLength, .unknownHCICommand)),
        CommandReturnVector(
            "LE Read Number of Supported Advertising Sets", .leReadNumberOfSupportedAdvertisingSets, "00 10",
            .leReadNumberOfSupportedAdvertisingSets(.init(numSupportedAdvertisingSets: 16))),
        CommandReturnVector(
            "LE Read Number of Supported Advertising Sets failed", .leReadNumberOfSupportedAdvertisingSets, "01",
            .failed(.leReadNumberOfSupportedAdvertisingSets, .unknownHCICommand)),
        CommandReturnVector(
            "Vendor opcode stays raw", HCIOpcode(rawValue: 0xFC01), "00 0102",
            .raw(HCIOpcode(rawValue: 0xFC01), [0, 1, 2])),
        CommandReturnVector("NOP", HCIOpcode(rawValue: 0), "", .raw(HCIOpcode(rawValue: 0), [])),
        CommandReturnVector(
            "Command Status command in Command Complete stays raw", .disconnect, "0c", .raw(.disconnect, [0x0C])),
    ]
}

@Suite("HCI command return parameters")
struct CommandReturnTests {
    @Test(arguments: CommandReturnVectors.all)
    func decodesTypedReturn(_ vector: CommandReturnVector) throws {
        let event = CommandCompleteEvent(numHCICommandPackets: 1, opcode: vector.opcode, returnParameters: vector.bytes)
        let typed = try event.typedReturn
        #expect(typed == vector.expected)
        #expect(typed.opcode == vector.opcode)
        #expect(typed.status == vector.bytes.first.map(HCIStatus.init(rawValue:)))
        #expect(!typed.description.isEmpty && !typed.description.contains("\n"))
        // Typed parameters re-encode to the same bytes.
        if let parameters = typed.parameters {
            #expect(parameters.bytes == vector.bytes)
        }
    }

    /// The event around the return parameters survives a parse/write round trip.
    @Test(arguments: CommandReturnVectors.all)
    func eventRoundTrip(_ vector: CommandReturnVector) throws {
        var writer = ByteWriter()
        CommandCompleteEvent(numHCICommandPackets: 2, opcode: vector.opcode, returnParameters: vector.bytes).write(
            to: &writer)
        var reader = ByteReader(writer.bytes)
        let event = try CommandCompleteEvent(parsing: &reader)
        #expect(event.returnParameters == vector.bytes)
        #expect(try event.typedReturn == vector.expected)
    }

    /// Every strict prefix of a successful return is truncated (never `.failed`, never a trap).
    @Test(arguments: CommandReturnVectors.all.filter { $0.isSuccess && $0.expected.parameters != nil })
    func truncationSweep(_ vector: CommandReturnVector) {
        let bytes = vector.bytes
        for length in 0..<bytes.count {
            do {
                let typed = try HCICommandReturn(opcode: vector.opcode, returnParameters: Array(bytes[0..<length]))
                Issue.record("\(vector.name): \(length) octets decoded as \(typed)")
            } catch {
                guard case .malformed(let context, .truncated, _) = error else {
                    Issue.record("\(vector.name): \(length) octets threw \(error)")
                    continue
                }
                #expect(context == "\(vector.opcode) return parameters")
            }
        }
    }

    @Test func decodeReturnForCommandType() throws {
        let event = CommandCompleteEvent(
            numHCICommandPackets: 1, opcode: .readBDADDR, returnParameters: Hex.decode("00f43207dc1b00")!)
        #expect(try event.decodeReturn(for: ReadBDADDRCommand.self).address == commandTestAddress)

        let phy = CommandCompleteEvent(
            numHCICommandPackets: 1, opcode: .leReadPHY, returnParameters: [0, 0x40, 0, 1, 2])
        let phys = try phy.decodeReturn(for: LEReadPHYCommand.self)
        #expect(phys.txPHY == .le1M && phys.rxPHY == .le2M && phys.connectionHandle == 0x40)

        let reset = CommandCompleteEvent(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0])
        #expect(try reset.decodeReturn(for: ResetCommand.self) == StatusReturnParameters())
    }

    @Test func buildsCompletionForCommand() throws {
        let event = CommandCompleteEvent(
            completing: ReadBDADDRCommand.self, numHCICommandPackets: 2,
            returning: .init(address: commandTestAddress))
        #expect(event.opcode == .readBDADDR && event.numHCICommandPackets == 2)
        #expect(event.returnParameters == Hex.decode("00f43207dc1b00")!)
        #expect(try event.decodeReturn(for: ReadBDADDRCommand.self).address == commandTestAddress)
        let reset = CommandCompleteEvent(completing: ResetCommand.self, returning: .init())
        #expect(reset.returnParameters == [0] && reset.numHCICommandPackets == 1)
    }

    @Test func commandStatusCheck() throws {
        try CommandStatusEvent(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection)
            .check(for: LECreateConnectionCommand.self)
        #expect(throws: HCIError.commandFailed(opcode: .disconnect, status: .unknownConnectionIdentifier)) {
            try CommandStatusEvent(status: .unknownConnectionIdentifier, numHCICommandPackets: 1, opcode: .disconnect)
                .check(for: DisconnectCommand.self)
        }
        #expect(
            throws: HCIError.malformed(
                context: "HCI_Command_Status for HCI_Disconnect",
                reason: .invalidValue(field: "Command_Opcode", value: 0x2032), offset: 2)
        ) {
            try CommandStatusEvent(status: .success, numHCICommandPackets: 1, opcode: .leSetPHY)
                .check(for: DisconnectCommand.self)
        }
    }

    @Test func decodeReturnFailureIsCommandFailed() {
        // Status only, as controllers send on failure.
        let short = CommandCompleteEvent(numHCICommandPackets: 1, opcode: .readRSSI, returnParameters: [0x02])
        #expect(throws: HCIError.commandFailed(opcode: .readRSSI, status: .unknownConnectionIdentifier)) {
            try short.decodeReturn(for: ReadRSSICommand.self)
        }
        // Full parameters with a failure status: still a failure.
        let full = CommandCompleteEvent(
            numHCICommandPackets: 1, opcode: .readRSSI, returnParameters: [0x02, 0x40, 0, 0])
        #expect(throws: HCIError.commandFailed(opcode: .readRSSI, status: .unknownConnectionIdentifier)) {
            try full.decodeReturn(for: ReadRSSICommand.self)
        }
        let refused = CommandCompleteEvent(numHCICommandPackets: 1, opcode: .leSetScanEnable, returnParameters: [0x0C])
        #expect(throws: HCIError.commandFailed(opcode: .leSetScanEnable, status: .commandDisallowed)) {
            try refused.decodeReturn(for: LESetScanEnableCommand.self)
        }
    }

    static let malformed: [(String, HCIOpcode, String, HCIError)] = [
        (
            "BD_ADDR short", .readBDADDR, "00 f43207dc1b",
            .malformed(
                context: "HCI_Read_BD_ADDR return parameters", reason: .truncated(needed: 6, available: 5), offset: 1)
        ),
        (
            "BD_ADDR long", .readBDADDR, "00 f43207dc1b0000",
            .malformed(context: "HCI_Read_BD_ADDR return parameters", reason: .trailingBytes(count: 1), offset: 7)
        ),
        (
            "status-only return with more", .reset, "0000",
            .malformed(context: "HCI_Reset return parameters", reason: .trailingBytes(count: 1), offset: 1)
        ),
        (
            "empty return of a known command", .reset, "",
            .malformed(context: "HCI_Reset return parameters", reason: .truncated(needed: 1, available: 0), offset: 0)
        ),
        (
            "TX_PHY 4", .leReadPHY, "00 4000 04 01",
            .malformed(
                context: "HCI_LE_Read_PHY return parameters", reason: .invalidValue(field: "TX_PHY", value: 4),
                offset: 3)
        ),
        (
            "RX_PHY 0", .leReadPHY, "00 4000 01 00",
            .malformed(
                context: "HCI_LE_Read_PHY return parameters", reason: .invalidValue(field: "RX_PHY", value: 0),
                offset: 4)
        ),
        (
            "handle 0x0F00", .leSetDataLength, "00 000f",
            .malformed(
                context: "HCI_LE_Set_Data_Length return parameters",
                reason: .invalidValue(field: "Connection_Handle", value: 0x0F00), offset: 1)
        ),
        (
            "failure with trailing octets", .readRSSI, "02 4000 00 00",
            .malformed(context: "HCI_Read_RSSI return parameters", reason: .trailingBytes(count: 1), offset: 4)
        ),
        (
            "supported commands 63 octets", .readLocalSupportedCommands, "00" + String(repeating: "00", count: 63),
            .malformed(
                context: "HCI_Read_Local_Supported_Commands return parameters",
                reason: .truncated(needed: 64, available: 63), offset: 1)
        ),
    ]

    @Test(arguments: 0..<malformed.count)
    func rejectsMalformedReturn(_ index: Int) {
        let (_, opcode, hex, error) = Self.malformed[index]
        #expect(throws: error) { try HCICommandReturn(opcode: opcode, returnParameters: Hex.decode(hex)!) }
    }

    @Test func decodeReturnChecksOpcodeAndLength() {
        let event = CommandCompleteEvent(numHCICommandPackets: 1, opcode: .reset, returnParameters: [0])
        #expect(
            throws: HCIError.malformed(
                context: "HCI_Command_Complete for HCI_Read_BD_ADDR",
                reason: .invalidValue(field: "Command_Opcode", value: 0x0C03), offset: 1)
        ) {
            try event.decodeReturn(for: ReadBDADDRCommand.self)
        }
        let long = CommandCompleteEvent(
            numHCICommandPackets: 1, opcode: .readBDADDR, returnParameters: Hex.decode("00f43207dc1b0000")!)
        #expect(
            throws: HCIError.malformed(
                context: "HCI_Read_BD_ADDR return parameters", reason: .trailingBytes(count: 1), offset: 7)
        ) {
            try long.decodeReturn(for: ReadBDADDRCommand.self)
        }
        let empty = CommandCompleteEvent(numHCICommandPackets: 1, opcode: .readBDADDR, returnParameters: [])
        #expect(
            throws: HCIError.malformed(
                context: "HCI_Read_BD_ADDR return parameters", reason: .truncated(needed: 1, available: 0), offset: 0)
        ) {
            try empty.decodeReturn(for: ReadBDADDRCommand.self)
        }
    }

    @Test func namedFeatureBitsAndBitmaps() throws {
        let features = LEFeatures(rawValue: 0x0001_79FF)
        #expect(features.contains(.leExtendedAdvertising))
        #expect(features.contains(.leCodedPHY))
        #expect(features.contains(.le2MPHY))
        #expect(features.contains(.leDataPacketLengthExtension))
        #expect(features.contains(.minimumNumberOfUsedChannelsProcedure))
        #expect(!features.contains(.lePowerClass1))
        #expect(features.names.contains("LE Extended Advertising"))
        #expect(LEFeatures(rawValue: 1 << 50).names == ["bit 50"])

        let commands = try #require(HCISupportedCommands(octets: commandsBitmap))
        #expect(commands.supports(octet: 5, bit: 7))
        #expect(commands.supports(octet: 5, bit: 6))
        #expect(!commands.supports(octet: 5, bit: 5))
        #expect(commands.supports(octet: 63, bit: 7))
        #expect(!commands.supports(octet: 64, bit: 0))
        #expect(!commands.supports(octet: 0, bit: 8))
        #expect(commands.count == 2 + 7 + 1)
        #expect(HCISupportedCommands(octets: [0]) == nil)
        #expect(commands.supports(.reset) == true)
        #expect(commands.supports(.setEventMask) == true)
        #expect(commands.supports(.disconnect) == false)
        #expect(commands.supports(.readLocalSupportedCommands) == nil)
        // Every modelled command but Read Local Supported Commands has a position.
        for type in AnyHCICommand.commandTypes where type.opcode != .readLocalSupportedCommands {
            #expect(HCISupportedCommands.positions[type.opcode] != nil, "\(type.opcode)")
        }

        let lmp = LMPFeatures(rawValue: 0x875B_3FD8_FE8F_FFFF)
        #expect(lmp.contains(bit: LMPFeatures.leSupportedController))
    }

    static let descriptions: [(HCIOpcode, String, String)] = [
        (.readBDADDR, "00f43207dc1b00", "Read BD ADDR: Success (0x00), address 00:1B:DC:07:32:F4"),
        (.readBDADDR, "03", "Read BD ADDR: Hardware Failure (0x03)"),
        (.reset, "00", "Reset: Success (0x00)"),
        (.readRSSI, "004000c4", "Read RSSI: Success (0x00), handle 64, RSSI -60 dBm"),
        (.leReadPHY, "0040000203", "LE Read PHY: Success (0x00), handle 64, TX LE 2M, RX LE Coded"),
        (.leReadBufferSizeV1, "00fb000f", "LE Read Buffer Size [v1]: Success (0x00), LE ACL 251 octets x 15"),
        (
            .readLocalVersionInformation, "000d34120d0f007856",
            "Read Local Version Information: Success (0x00), HCI 5.4 (0x0d) revision 0x1234, LMP 5.4 (0x0d) subversion 0x5678, company 0x000f"
        ),
        (.writeScanEnable, "00", "Write Scan Enable: Success (0x00)"),
        (.writeScanEnable, "0c01", "Write Scan Enable: Command Disallowed (0x0c), 01"),
        (
            .leReadMaximumAdvertisingDataLength, "007206",
            "LE Read Maximum Advertising Data Length: Success (0x00), 1650 octets"
        ),
        (HCIOpcode(rawValue: 0), "", "NOP"),
    ]

    @Test(arguments: 0..<descriptions.count)
    func readableReturn(_ index: Int) throws {
        let (opcode, hex, text) = Self.descriptions[index]
        #expect(try HCICommandReturn(opcode: opcode, returnParameters: Hex.decode(hex)!).description == text)
    }
}
