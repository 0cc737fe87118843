import Bluetooth
import Testing

@testable import HCI

/// One command packet (bytes after the H4 indicator) and the typed command it must decode to.
struct CommandVector: Sendable, CustomTestStringConvertible {
    let name: String
    let hex: String
    let expected: AnyHCICommand

    init(_ name: String, _ hex: String, _ expected: AnyHCICommand) {
        self.name = name
        self.hex = hex
        self.expected = expected
    }

    var bytes: [UInt8] { Hex.decode(hex)! }
    var parameters: [UInt8] { Array(bytes.dropFirst(3)) }
    var testDescription: String { name }
}

func commandZeros(_ count: Int) -> String { String(repeating: "00", count: count) }

let commandTestAddress = BluetoothAddress("00:1B:DC:07:32:F4")!
let commandTestPeer = BluetoothAddress("11:22:33:44:55:66")!

enum CommandTestVectors {
    static let all: [CommandVector] = [
        CommandVector("Reset", "030c00", .reset(ResetCommand())),
        CommandVector(
            "Set Event Mask", "010c08fffffbff07f8bf3d",
            .setEventMask(SetEventMaskCommand(eventMask: HCIEventMask(rawValue: 0x3DBF_F807_FFFB_FFFF)))),
        CommandVector("Read Local Version Information", "011000", .readLocalVersionInformation(.init())),
        CommandVector("Read Local Supported Commands", "021000", .readLocalSupportedCommands(.init())),
        CommandVector("Read Local Supported Features", "031000", .readLocalSupportedFeatures(.init())),
        CommandVector("Read Buffer Size", "051000", .readBufferSize(.init())),
        CommandVector("Read BD_ADDR", "091000", .readBDADDR(.init())),
        CommandVector("Read RSSI", "05140240 00", .readRSSI(ReadRSSICommand(handle: 0x0040))),
        CommandVector(
            "Disconnect", "0604034000 13",
            .disconnect(DisconnectCommand(connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection))),
        CommandVector(
            "LE Set Event Mask", "012008ff1f0a0000000000",
            .leSetEventMask(LESetEventMaskCommand(leEventMask: HCIEventMask(rawValue: 0x0A1FFF)))),
        CommandVector("LE Read Buffer Size v1", "022000", .leReadBufferSizeV1(.init())),
        CommandVector("LE Read Buffer Size v2", "602000", .leReadBufferSizeV2(.init())),
        CommandVector("LE Read Local Supported Features", "032000", .leReadLocalSupportedFeatures(.init())),
        CommandVector(
            "LE Set Random Address", "052006443322 1100c0",
            .leSetRandomAddress(LESetRandomAddressCommand(randomAddress: BluetoothAddress("C0:00:11:22:33:44")!))),
        CommandVector(
            "LE Set Scan Parameters", "0b200701100010000000",
            .leSetScanParameters(
                LESetScanParametersCommand(
                    leScanType: .active, leScanInterval: 0x0010, leScanWindow: 0x0010, ownAddressType: .public,
                    scanningFilterPolicy: .acceptAll))),
        CommandVector(
            "LE Set Scan Parameters passive filtered", "0b2007006000300001 03",
            .leSetScanParameters(
                LESetScanParametersCommand(
                    leScanType: .passive, leScanInterval: 0x0060, leScanWindow: 0x0030, ownAddressType: .random,
                    scanningFilterPolicy: .filterAcceptListExtended))),
        CommandVector(
            "LE Set Scan Enable", "0c20020101",
            .leSetScanEnable(LESetScanEnableCommand(leScanEnable: true, filterDuplicates: true))),
        CommandVector(
            "LE Set Scan Enable off", "0c20020000",
            .leSetScanEnable(LESetScanEnableCommand(leScanEnable: false, filterDuplicates: false))),
        CommandVector(
            "LE Set Extended Scan Parameters 1M+Coded", "41200d 010005 0160003000 0020019000",
            .leSetExtendedScanParameters(
                LESetExtendedScanParametersCommand(
                    ownAddressType: .random, scanningFilterPolicy: .acceptAll,
                    le1M: .init(scanType: .active, scanInterval: 0x0060, scanWindow: 0x0030),
                    leCoded: .init(scanType: .passive, scanInterval: 0x0120, scanWindow: 0x0090)))),
        CommandVector(
            "LE Set Extended Scan Parameters Coded only", "412008 000104 0110001000",
            .leSetExtendedScanParameters(
                LESetExtendedScanParametersCommand(
                    ownAddressType: .public, scanningFilterPolicy: .filterAcceptList, le1M: nil,
                    leCoded: .init(scanType: .active, scanInterval: 0x0010, scanWindow: 0x0010)))),
        CommandVector(
            "LE Set Extended Scan Enable", "422006 0101 0000 0000",
            .leSetExtendedScanEnable(LESetExtendedScanEnableCommand(enable: true, filterDuplicates: .enabled))),
        CommandVector(
            "LE Set Extended Scan Enable with duration and period", "422006 0102 e803 0100",
            .leSetExtendedScanEnable(
                LESetExtendedScanEnableCommand(
                    enable: true, filterDuplicates: .resetEachPeriod, duration: 0x03E8, period: 0x0001))),
        CommandVector(
            "LE Create Connection", "0d2019 6000 3000 00 01 f43207dc1b00 00 1800 2800 0000 2a00 0000 0000",
            .leCreateConnection(
                LECreateConnectionCommand(
                    leScanInterval: 0x0060, leScanWindow: 0x0030, initiatorFilterPolicy: .peerAddress,
                    peerAddressType: .random, peerAddress: commandTestAddress, ownAddressType: .public,
                    connectionParameters: .init(
                        connectionIntervalMin: 0x0018, connectionIntervalMax: 0x0028, maxLatency: 0,
                        supervisionTimeout: 0x002A)))),
        CommandVector("LE Create Connection Cancel", "0e2000", .leCreateConnectionCancel(.init())),
        CommandVector(
            "LE Extended Create Connection 1M+Coded",
            "43202a 00 01 00 665544332211 05 "
                + "6000 6000 1800 2800 0000 f401 0000 0000 "
                + "2001 9000 5000 5000 0200 800c 0100 0200",
            .leExtendedCreateConnectionV1(
                LEExtendedCreateConnectionV1Command(
                    initiatorFilterPolicy: .peerAddress, ownAddressType: .random, peerAddressType: .public,
                    peerAddress: commandTestPeer,
                    le1M: .init(
                        scanInterval: 0x0060, scanWindow: 0x0060,
                        connectionParameters: .init(
                            connectionIntervalMin: 0x0018, connectionIntervalMax: 0x0028, supervisionTimeout: 0x01F4)),
                    leCoded: .init(
                        scanInterval: 0x0120, scanWindow: 0x0090,
                        connectionParameters: .init(
                            connectionIntervalMin: 0x0050, connectionIntervalMax: 0x0050, maxLatency: 2,
                            supervisionTimeout: 0x0C80, minCELength: 1, maxCELength: 2))))),
        CommandVector(
            "LE Extended Create Connection all three PHYs",
            "43203a 01 00 03 665544332211 07 "
                + "6000 6000 1800 2800 0000 f401 0000 0000 "
                + "0000 0000 0600 0600 0000 6400 0000 0000 "
                + "2001 9000 5000 5000 0200 800c 0100 0200",
            .leExtendedCreateConnectionV1(
                LEExtendedCreateConnectionV1Command(
                    initiatorFilterPolicy: .filterAcceptList, ownAddressType: .public,
                    peerAddressType: .randomIdentity, peerAddress: commandTestPeer,
                    le1M: .init(
                        scanInterval: 0x0060, scanWindow: 0x0060,
                        connectionParameters: .init(
                            connectionIntervalMin: 0x0018, connectionIntervalMax: 0x0028, supervisionTimeout: 0x01F4)),
                    le2M: .init(
                        scanInterval: 0, scanWindow: 0,
                        connectionParameters: .init(
                            connectionIntervalMin: 6, connectionIntervalMax: 6, supervisionTimeout: 0x0064)),
                    leCoded: .init(
                        scanInterval: 0x0120, scanWindow: 0x0090,
                        connectionParameters: .init(
                            connectionIntervalMin: 0x0050, connectionIntervalMax: 0x0050, maxLatency: 2,
                            supervisionTimeout: 0x0C80, minCELength: 1, maxCELength: 2))))),
        CommandVector(
            "LE Connection Update", "13200e 4000 1800 2800 0400 2c01 0000 0000",
            .leConnectionUpdate(
                LEConnectionUpdateCommand(
                    connectionHandle: 0x0040,
                    connectionParameters: .init(
                        connectionIntervalMin: 0x0018, connectionIntervalMax: 0x0028, maxLatency: 4,
                        supervisionTimeout: 0x012C)))),
        CommandVector(
            "LE Remote Connection Parameter Request Reply", "20200e 4000 0600 0c00 0000 f401 0200 0400",
            .leRemoteConnectionParameterRequestReply(
                LERemoteConnectionParameterRequestReplyCommand(
                    connectionHandle: 0x0040,
                    connectionParameters: .init(
                        connectionIntervalMin: 6, connectionIntervalMax: 12, maxLatency: 0,
                        supervisionTimeout: 0x01F4, minCELength: 2, maxCELength: 4)))),
        CommandVector(
            "LE Remote Connection Parameter Request Negative Reply", "212003 4000 3b",
            .leRemoteConnectionParameterRequestNegativeReply(
                LERemoteConnectionParameterRequestNegativeReplyCommand(
                    connectionHandle: 0x0040, reason: .unacceptableConnectionParameters))),
        CommandVector(
            "LE Set Data Length", "222006 4000 fb00 4808",
            .leSetDataLength(LESetDataLengthCommand(connectionHandle: 0x0040, txOctets: 251, txTime: 2120))),
        CommandVector("LE Read PHY", "302002 4000", .leReadPHY(LEReadPHYCommand(connectionHandle: 0x0040))),
        CommandVector(
            "LE Set PHY 2M", "322007 4000 00 02 02 0000",
            .leSetPHY(LESetPHYCommand(connectionHandle: 0x0040, allPHYs: [], txPHYs: .le2M, rxPHYs: .le2M))),
        CommandVector(
            "LE Set PHY any, prefer S=8", "322007 ef0e 03 07 07 0200",
            .leSetPHY(
                LESetPHYCommand(
                    connectionHandle: 0x0EEF, allPHYs: [.noTXPreference, .noRXPreference],
                    txPHYs: [.le1M, .le2M, .leCoded], rxPHYs: [.le1M, .le2M, .leCoded], phyOptions: .preferS8))),
        CommandVector(
            "LE Set Advertising Parameters undirected", "06200f a000 a000 00 00 00 000000000000 07 00",
            .leSetAdvertisingParameters(
                LESetAdvertisingParametersCommand(advertisingIntervalMin: 0x00A0, advertisingIntervalMax: 0x00A0))),
        CommandVector(
            "LE Set Advertising Parameters directed", "06200f 0008 0008 04 01 01 665544332211 01 03",
            .leSetAdvertisingParameters(
                LESetAdvertisingParametersCommand(
                    advertisingIntervalMin: 0x0800, advertisingIntervalMax: 0x0800,
                    advertisingType: .connectableDirectedLowDuty, ownAddressType: .random, peerAddressType: .random,
                    peerAddress: commandTestPeer, advertisingChannelMap: .channel37,
                    advertisingFilterPolicy: .filterBoth))),
        CommandVector(
            "LE Set Advertising Data", "082020 03 020106" + commandZeros(28),
            .leSetAdvertisingData(LESetAdvertisingDataCommand(advertisingData: [0x02, 0x01, 0x06]))),
        CommandVector(
            "LE Set Advertising Data empty", "082020 00" + commandZeros(31),
            .leSetAdvertisingData(LESetAdvertisingDataCommand(advertisingData: []))),
        CommandVector(
            "LE Set Scan Response Data", "092020 0b 0a0953656e736f72546167" + commandZeros(20),
            .leSetScanResponseData(
                LESetScanResponseDataCommand(scanResponseData: [0x0A, 0x09] + Array("SensorTag".utf8)))),
        CommandVector(
            "LE Set Scan Response Data full", "092020 1f" + String(repeating: "ab", count: 31),
            .leSetScanResponseData(LESetScanResponseDataCommand(scanResponseData: Array(repeating: 0xAB, count: 31)))),
        CommandVector(
            "LE Set Advertising Enable", "0a200101",
            .leSetAdvertisingEnable(LESetAdvertisingEnableCommand(advertisingEnable: true))),
        CommandVector(
            "LE Set Extended Advertising Parameters legacy",
            "362019 00 1300 a00000 a00000 07 01 00 000000000000 00 7f 01 00 01 00 00",
            .leSetExtendedAdvertisingParametersV1(
                LESetExtendedAdvertisingParametersV1Command(
                    advertisingHandle: 0, advertisingEventProperties: [.connectable, .scannable, .useLegacyPDUs],
                    primaryAdvertisingIntervalMin: 0xA0, primaryAdvertisingIntervalMax: 0xA0, ownAddressType: .random))),
        CommandVector(
            "LE Set Extended Advertising Parameters coded",
            "362019 01 0100 200300 400600 07 01 00 000000000000 00 f6 03 00 03 05 01",
            .leSetExtendedAdvertisingParametersV1(
                LESetExtendedAdvertisingParametersV1Command(
                    advertisingHandle: 1, advertisingEventProperties: .connectable,
                    primaryAdvertisingIntervalMin: 0x0320, primaryAdvertisingIntervalMax: 0x0640,
                    ownAddressType: .random, advertisingTxPower: -10, primaryAdvertisingPHY: .leCoded,
                    secondaryAdvertisingPHY: .leCoded, advertisingSID: 5, scanRequestNotificationEnable: true))),
        CommandVector(
            "LE Set Extended Advertising Data", "372007 01 03 01 03 020106",
            .leSetExtendedAdvertisingData(
                LESetExtendedAdvertisingDataCommand(
                    advertisingHandle: 1, operation: .complete, shouldNotFragment: true,
                    advertisingData: [0x02, 0x01, 0x06]))),
        CommandVector(
            "LE Set Extended Advertising Data first fragment 251",
            "3720ff 00 01 00 fb" + String(repeating: "5a", count: 251),
            .leSetExtendedAdvertisingData(
                LESetExtendedAdvertisingDataCommand(
                    advertisingHandle: 0, operation: .firstFragment, advertisingData: Array(repeating: 0x5A, count: 251)
                ))),
        CommandVector(
            "LE Set Extended Advertising Enable three sets", "39200e 01 03 00000000 01640005 02e80300",
            .leSetExtendedAdvertisingEnable(
                LESetExtendedAdvertisingEnableCommand(
                    enable: true,
                    sets: [
                        .init(advertisingHandle: 0),
                        .init(advertisingHandle: 1, duration: 0x0064, maxExtendedAdvertisingEvents: 5),
                        .init(advertisingHandle: 2, duration: 0x03E8),
                    ]))),
        CommandVector(
            "LE Set Extended Advertising Enable disable all", "39200200 00",
            .leSetExtendedAdvertisingEnable(LESetExtendedAdvertisingEnableCommand(enable: false, sets: []))),
        CommandVector(
            "Write Local Name", "130cf8" + Hex.encode(Array("Fire Tablet".utf8)) + commandZeros(248 - 11),
            .writeLocalName(WriteLocalNameCommand(localName: HCILocalName("Fire Tablet")))),
        CommandVector("Read Local Name", "140c00", .readLocalName(.init())),
        CommandVector(
            "Write LE Host Support", "6d0c02 01 00",
            .writeLEHostSupport(WriteLEHostSupportCommand(leSupportedHost: true))),
        CommandVector(
            "Write LE Host Support with legacy simultaneous octet", "6d0c02 01 01",
            .writeLEHostSupport(WriteLEHostSupportCommand(leSupportedHost: true, unused: 1))),
        CommandVector("LE Read Filter Accept List Size", "0f2000", .leReadFilterAcceptListSize(.init())),
        CommandVector("LE Clear Filter Accept List", "102000", .leClearFilterAcceptList(.init())),
        CommandVector(
            "LE Add Device To Filter Accept List", "112007 01 665544332211",
            .leAddDeviceToFilterAcceptList(.init(addressType: .random, address: commandTestPeer))),
        CommandVector(
            "LE Add Device To Filter Accept List anonymous", "112007 ff 000000000000",
            .leAddDeviceToFilterAcceptList(.init(addressType: .anonymous, address: .zero))),
        CommandVector(
            "LE Remove Device From Filter Accept List", "122007 00 f43207dc1b00",
            .leRemoveDeviceFromFilterAcceptList(.init(addressType: .public, address: commandTestAddress))),
        CommandVector("LE Rand", "182000", .leRand(.init())),
        CommandVector("LE Read Supported States", "1c2000", .leReadSupportedStates(.init())),
        CommandVector("LE Read Suggested Default Data Length", "232000", .leReadSuggestedDefaultDataLength(.init())),
        CommandVector(
            "LE Write Suggested Default Data Length", "242004 fb00 4808",
            .leWriteSuggestedDefaultDataLength(.init(suggestedMaxTXOctets: 251, suggestedMaxTXTime: 2120))),
        CommandVector("LE Read Maximum Data Length", "2f2000", .leReadMaximumDataLength(.init())),
        CommandVector(
            "LE Set Default PHY", "312003 00 03 03",
            .leSetDefaultPHY(.init(txPHYs: [.le1M, .le2M], rxPHYs: [.le1M, .le2M]))),
        CommandVector(
            "LE Set Default PHY no preference", "312003 03 00 00",
            .leSetDefaultPHY(.init(allPHYs: [.noTXPreference, .noRXPreference], txPHYs: [], rxPHYs: []))),
        CommandVector(
            "LE Set Advertising Set Random Address", "352007 00 ef3f6c8eca5a",
            .leSetAdvertisingSetRandomAddress(
                .init(advertisingHandle: 0, randomAddress: BluetoothAddress("5A:CA:8E:6C:3F:EF")!))),
        CommandVector(
            "LE Set Extended Scan Response Data", "382007 00 03 01 03 020a00",
            .leSetExtendedScanResponseData(
                .init(
                    advertisingHandle: 0, operation: .complete, shouldNotFragment: true, scanResponseData: [2, 0x0A, 0])
            )),
        CommandVector(
            "LE Read Maximum Advertising Data Length", "3a2000", .leReadMaximumAdvertisingDataLength(.init())),
        CommandVector(
            "LE Read Number of Supported Advertising Sets", "3b2000",
            .leReadNumberOfSupportedAdvertisingSets(.init())),
        CommandVector("LE Remove Advertising Set", "3c2001 02", .leRemoveAdvertisingSet(.init(advertisingHandle: 2))),
        CommandVector("LE Clear Advertising Sets", "3d2000", .leClearAdvertisingSets(.init())),
        CommandVector(
            "LE Set Extended Advertising Parameters v2",
            "7f201b 01 0100 200300 400600 07 01 00 000000000000 00 f6 03 00 03 05 01 03 04",
            .leSetExtendedAdvertisingParametersV2(
                LESetExtendedAdvertisingParametersV2Command(
                    parameters: LESetExtendedAdvertisingParametersV1Command(
                        advertisingHandle: 1, advertisingEventProperties: .connectable,
                        primaryAdvertisingIntervalMin: 0x0320, primaryAdvertisingIntervalMax: 0x0640,
                        ownAddressType: .random, advertisingTxPower: -10, primaryAdvertisingPHY: .leCoded,
                        secondaryAdvertisingPHY: .leCoded, advertisingSID: 5, scanRequestNotificationEnable: true),
                    primaryAdvertisingPHYOptions: .requireS2, secondaryAdvertisingPHYOptions: .requireS8))),
        CommandVector(
            "LE Extended Create Connection v2 1M+Coded",
            "85202c ff ff 00 01 00 665544332211 05 "
                + "6000 6000 1800 2800 0000 f401 0000 0000 "
                + "2001 9000 5000 5000 0200 800c 0100 0200",
            .leExtendedCreateConnectionV2(
                LEExtendedCreateConnectionV2Command(
                    parameters: LEExtendedCreateConnectionV1Command(
                        initiatorFilterPolicy: .peerAddress, ownAddressType: .random, peerAddressType: .public,
                        peerAddress: commandTestPeer,
                        le1M: .init(
                            scanInterval: 0x0060, scanWindow: 0x0060,
                            connectionParameters: .init(
                                connectionIntervalMin: 0x0018, connectionIntervalMax: 0x0028,
                                supervisionTimeout: 0x01F4)),
                        leCoded: .init(
                            scanInterval: 0x0120, scanWindow: 0x0090,
                            connectionParameters: .init(
                                connectionIntervalMin: 0x0050, connectionIntervalMax: 0x0050, maxLatency: 2,
                                supervisionTimeout: 0x0C80, minCELength: 1, maxCELength: 2)))))),
        CommandVector(
            "LE Extended Create Connection v2 from PAwR",
            "85201c 02 05 00 00 00 665544332211 01 6000 6000 1800 2800 0000 f401 0000 0000",
            .leExtendedCreateConnectionV2(
                LEExtendedCreateConnectionV2Command(
                    advertisingHandle: 2, subevent: 5,
                    parameters: LEExtendedCreateConnectionV1Command(
                        peerAddressType: .public, peerAddress: commandTestPeer,
                        le1M: .init(
                            scanInterval: 0x0060, scanWindow: 0x0060,
                            connectionParameters: .init(
                                connectionIntervalMin: 0x0018, connectionIntervalMax: 0x0028,
                                supervisionTimeout: 0x01F4)))))),
        CommandVector(
            "Unknown opcode (Write Scan Enable) stays raw", "1a0c0100",
            .unknown(try! HCICommandPacket(opcode: .writeScanEnable, parameters: [0x00]))),
        CommandVector(
            "Vendor opcode stays raw", "01fc03aabbcc",
            .unknown(try! HCICommandPacket(opcode: HCIOpcode(rawValue: 0xFC01), parameters: [0xAA, 0xBB, 0xCC]))),
    ]
}

/// Decodes `packet` as the concrete type of `command` (opens the existential).
func commandDecodedAgain<C: HCICommand>(_ command: C, from packet: HCICommandPacket) throws -> AnyHashable {
    AnyHashable(try packet.decode(as: C.self))
}

@Suite("HCI command vectors")
struct CommandVectorTests {
    @Test(arguments: CommandTestVectors.all)
    func decodesAndReencodes(_ vector: CommandVector) throws {
        var reader = ByteReader(vector.bytes)
        let decoded = try AnyHCICommand(parsing: &reader)
        #expect(decoded == vector.expected)
        #expect(try decoded.packet().encode() == vector.bytes)
        #expect(decoded.opcode.rawValue == UInt16(vector.bytes[0]) | UInt16(vector.bytes[1]) << 8)
        #expect(!decoded.description.isEmpty)
    }

    @Test(arguments: CommandTestVectors.all)
    func typedCommandEncodesToVector(_ vector: CommandVector) throws {
        guard let command = vector.expected.command else { return }
        let packet = try HCICommandPacket(command)
        #expect(packet.encode() == vector.bytes)
        #expect(packet.parameters == vector.parameters)
        #expect(packet.encodedLength == vector.bytes.count)
        // Decoding through the generic path gives the same typed value back.
        #expect(try commandDecodedAgain(command, from: packet) == AnyHashable(command))
    }

    @Test func everyModelledCommandHasAVector() {
        let covered = Set(CommandTestVectors.all.compactMap { $0.expected.command.map { type(of: $0).opcode } })
        for type in AnyHCICommand.commandTypes {
            #expect(covered.contains(type.opcode), "no vector for \(type.opcode)")
        }
        #expect(AnyHCICommand.commandTypes.count == 55)
    }

    @Test func unknownOpcodeNeverFails() throws {
        // Any parameters are fine for an opcode we do not model, including none and 255.
        for parameters in [[], [UInt8](repeating: 0xFF, count: 255)] {
            let packet = try HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2099), parameters: parameters)
            var reader = ByteReader(packet.encode())
            #expect(try AnyHCICommand(parsing: &reader) == .unknown(packet))
        }
    }

    @Test func completionKinds() {
        #expect(DisconnectCommand.completion == .commandStatus)
        #expect(LECreateConnectionCommand.completion == .commandStatus)
        #expect(LEExtendedCreateConnectionV1Command.completion == .commandStatus)
        #expect(LEConnectionUpdateCommand.completion == .commandStatus)
        #expect(LESetPHYCommand.completion == .commandStatus)
        #expect(ResetCommand.completion == .commandComplete)
        #expect(LEReadPHYCommand.completion == .commandComplete)
    }

    @Test func derivedPHYMasks() {
        let scan = LESetExtendedScanParametersCommand(
            le1M: .init(scanType: .active, scanInterval: 16, scanWindow: 16),
            leCoded: .init(scanType: .active, scanInterval: 16, scanWindow: 16))
        #expect(scan.scanningPHYs == [.le1M, .leCoded])
        #expect(scan.scanningPHYs.phys == [.le1M, .leCoded])
        #expect(LEPHYMask(rawValue: 0x07).description == "LE 1M/LE 2M/LE Coded")
        #expect(LEPHYMask(rawValue: 0x0A).description == "LE 2M/0x08")
        #expect(LEPHYMask(rawValue: 0).description == "none")
    }
}
