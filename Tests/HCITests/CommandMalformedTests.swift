import Bluetooth
import Testing

@testable import HCI

/// A packet (after the H4 indicator) that must fail with exactly `error`.
struct CommandMalformedCase: Sendable, CustomTestStringConvertible {
    let name: String
    let hex: String
    let error: HCIError

    init(_ name: String, _ hex: String, _ error: HCIError) {
        self.name = name
        self.hex = hex
        self.error = error
    }

    var testDescription: String { name }
}

private func invalid(_ opcode: HCIOpcode, _ field: String, _ value: Int, at offset: Int) -> HCIError {
    .malformed(context: opcode.description, reason: .invalidValue(field: field, value: value), offset: offset)
}

private func badLength(_ opcode: HCIOpcode, _ field: String, _ value: Int, at offset: Int) -> HCIError {
    .malformed(context: opcode.description, reason: .invalidLength(field: field, value: value), offset: offset)
}

private func truncated(_ context: String, needed: Int, available: Int, at offset: Int) -> HCIError {
    .malformed(context: context, reason: .truncated(needed: needed, available: available), offset: offset)
}

private func trailing(_ context: String, _ count: Int, at offset: Int) -> HCIError {
    .malformed(context: context, reason: .trailingBytes(count: count), offset: offset)
}

enum CommandMalformedTable {
    static let cases: [CommandMalformedCase] = [
        // Packet framing: Parameter_Total_Length against the bytes present.
        CommandMalformedCase(
            "total length beyond bytes", "0c200301 01", truncated("HCI command packet", needed: 3, available: 2, at: 3)),
        CommandMalformedCase("bytes beyond total length", "0c200101 01", trailing("HCI command packet", 1, at: 4)),
        CommandMalformedCase("header cut", "0c", truncated("HCI command packet", needed: 2, available: 1, at: 0)),
        // Parameter_Total_Length consistent with the bytes but wrong for the command.
        CommandMalformedCase("Reset with a parameter", "030c0100", trailing("HCI_Reset", 1, at: 0)),
        CommandMalformedCase("Scan Enable with 3 octets", "0c2003010100", trailing("HCI_LE_Set_Scan_Enable", 1, at: 2)),
        CommandMalformedCase(
            "Scan Enable with 1 octet", "0c200101", truncated("HCI_LE_Set_Scan_Enable", needed: 1, available: 0, at: 1)),
        CommandMalformedCase(
            "Read RSSI with 1 octet", "05140140", truncated("HCI_Read_RSSI", needed: 2, available: 1, at: 0)),
        // Enumerated values the spec forbids.
        CommandMalformedCase(
            "LE_Scan_Type 2", "0b200702100010000000", invalid(.leSetScanParameters, "LE_Scan_Type", 2, at: 0)),
        CommandMalformedCase(
            "Own_Address_Type 4", "0b200701100010000400", invalid(.leSetScanParameters, "Own_Address_Type", 4, at: 5)),
        CommandMalformedCase(
            "Scanning_Filter_Policy 4", "0b200701100010000004",
            invalid(.leSetScanParameters, "Scanning_Filter_Policy", 4, at: 6)),
        CommandMalformedCase("LE_Scan_Enable 2", "0c20020200", invalid(.leSetScanEnable, "LE_Scan_Enable", 2, at: 0)),
        CommandMalformedCase(
            "Filter_Duplicates 2 (legacy)", "0c20020102", invalid(.leSetScanEnable, "Filter_Duplicates", 2, at: 1)),
        CommandMalformedCase(
            "Advertising_Enable 2", "0a200102", invalid(.leSetAdvertisingEnable, "Advertising_Enable", 2, at: 0)),
        CommandMalformedCase(
            "Advertising_Type 5", "06200f a000 a000 05 00 00 000000000000 07 00",
            invalid(.leSetAdvertisingParameters, "Advertising_Type", 5, at: 4)),
        CommandMalformedCase(
            "Peer_Address_Type 2 (advertising)", "06200f a000 a000 00 00 02 000000000000 07 00",
            invalid(.leSetAdvertisingParameters, "Peer_Address_Type", 2, at: 6)),
        CommandMalformedCase(
            "Advertising_Channel_Map 0", "06200f a000 a000 00 00 00 000000000000 00 00",
            invalid(.leSetAdvertisingParameters, "Advertising_Channel_Map", 0, at: 13)),
        CommandMalformedCase(
            "Advertising_Channel_Map reserved bit", "06200f a000 a000 00 00 00 000000000000 0f 00",
            invalid(.leSetAdvertisingParameters, "Advertising_Channel_Map", 0x0F, at: 13)),
        CommandMalformedCase(
            "Advertising_Filter_Policy 4", "06200f a000 a000 00 00 00 000000000000 07 04",
            invalid(.leSetAdvertisingParameters, "Advertising_Filter_Policy", 4, at: 14)),
        CommandMalformedCase(
            "Disconnect handle 0x0F00", "060403000f13", invalid(.disconnect, "Connection_Handle", 0x0F00, at: 0)),
        CommandMalformedCase("Disconnect Reason 0x16", "060403400016", invalid(.disconnect, "Reason", 0x16, at: 2)),
        CommandMalformedCase("Read RSSI handle 0xFFFF", "051402ffff", invalid(.readRSSI, "Handle", 0xFFFF, at: 0)),
        CommandMalformedCase(
            "Initiator_Filter_Policy 2", "0d2019 6000 3000 02 01 f43207dc1b00 00 1800 2800 0000 2a00 0000 0000",
            invalid(.leCreateConnection, "Initiator_Filter_Policy", 2, at: 4)),
        CommandMalformedCase(
            "Peer_Address_Type 4 (connection)", "0d2019 6000 3000 00 04 f43207dc1b00 00 1800 2800 0000 2a00 0000 0000",
            invalid(.leCreateConnection, "Peer_Address_Type", 4, at: 5)),
        // Extended scanning: Scanning_PHYs decides the array; reserved or empty masks are refused.
        CommandMalformedCase(
            "Scanning_PHYs LE 2M", "412008 000002 0110001000",
            invalid(.leSetExtendedScanParameters, "Scanning_PHYs", 2, at: 2)),
        CommandMalformedCase(
            "Scanning_PHYs empty", "412003 000000", invalid(.leSetExtendedScanParameters, "Scanning_PHYs", 0, at: 2)),
        CommandMalformedCase(
            "Scanning_PHYs two but one entry", "412008 000005 0110001000",
            truncated("HCI_LE_Set_Extended_Scan_Parameters", needed: 1, available: 0, at: 8)),
        CommandMalformedCase(
            "Scanning_PHYs one but two entries", "41200d 000001 0110001000 0110001000",
            trailing("HCI_LE_Set_Extended_Scan_Parameters", 5, at: 8)),
        CommandMalformedCase(
            "Scan_Type 2 in a PHY entry", "412008 000001 0210001000",
            invalid(.leSetExtendedScanParameters, "Scan_Type", 2, at: 3)),
        CommandMalformedCase(
            "Extended Filter_Duplicates 3", "422006 0103 0000 0000",
            invalid(.leSetExtendedScanEnable, "Filter_Duplicates", 3, at: 1)),
        CommandMalformedCase(
            "Initiating_PHYs reserved bit", "43201a 000000665544332211 08 6000600018002800 0000f40100000000",
            invalid(.leExtendedCreateConnectionV1, "Initiating_PHYs", 8, at: 9)),
        CommandMalformedCase(
            "Initiating_PHYs empty", "43200a 000000665544332211 00",
            invalid(.leExtendedCreateConnectionV1, "Initiating_PHYs", 0, at: 9)),
        CommandMalformedCase(
            "Initiating_PHYs two, one entry", "43201a 000000665544332211 03 6000600018002800 0000f40100000000",
            truncated("HCI_LE_Extended_Create_Connection [v1]", needed: 2, available: 0, at: 26)),
        // Legacy data fields: length octet over 31.
        CommandMalformedCase(
            "Advertising_Data_Length 32", "082020 20" + String(repeating: "00", count: 31),
            badLength(.leSetAdvertisingData, "Advertising_Data_Length", 32, at: 0)),
        CommandMalformedCase(
            "Scan_Response_Data_Length 255", "092020 ff" + String(repeating: "00", count: 31),
            badLength(.leSetScanResponseData, "Scan_Response_Data_Length", 255, at: 0)),
        CommandMalformedCase(
            "Advertising data field short", "082004 03020106",
            truncated("HCI_LE_Set_Advertising_Data", needed: 31, available: 3, at: 1)),
        // Extended advertising.
        CommandMalformedCase(
            "Advertising_Data_Length beyond bytes", "372007 01 03 00 05 020106",
            truncated("HCI_LE_Set_Extended_Advertising_Data", needed: 5, available: 3, at: 4)),
        CommandMalformedCase(
            "Advertising_Data_Length short of bytes", "372007 01 03 00 02 020106",
            trailing("HCI_LE_Set_Extended_Advertising_Data", 1, at: 6)),
        CommandMalformedCase(
            "Operation 5", "372004 01 05 00 00", invalid(.leSetExtendedAdvertisingData, "Operation", 5, at: 1)),
        CommandMalformedCase(
            "Fragment_Preference 2", "372004 01 03 02 00",
            invalid(.leSetExtendedAdvertisingData, "Fragment_Preference", 2, at: 2)),
        CommandMalformedCase(
            "Advertising_Handle 0xF0", "372004 f0 03 00 00",
            invalid(.leSetExtendedAdvertisingData, "Advertising_Handle", 0xF0, at: 0)),
        CommandMalformedCase(
            "Primary_Advertising_PHY LE 2M", "362019 00 1300 a00000 a00000 07 01 00 000000000000 00 7f 02 00 01 00 00",
            invalid(.leSetExtendedAdvertisingParametersV1, "Primary_Advertising_PHY", 2, at: 20)),
        CommandMalformedCase(
            "Secondary_Advertising_PHY 4", "362019 00 1300 a00000 a00000 07 01 00 000000000000 00 7f 01 00 04 00 00",
            invalid(.leSetExtendedAdvertisingParametersV1, "Secondary_Advertising_PHY", 4, at: 22)),
        CommandMalformedCase(
            "Advertising_SID 0x10", "362019 00 1300 a00000 a00000 07 01 00 000000000000 00 7f 01 00 01 10 00",
            invalid(.leSetExtendedAdvertisingParametersV1, "Advertising_SID", 0x10, at: 23)),
        CommandMalformedCase(
            "Scan_Request_Notification_Enable 2",
            "362019 00 1300 a00000 a00000 07 01 00 000000000000 00 7f 01 00 01 00 02",
            invalid(.leSetExtendedAdvertisingParametersV1, "Scan_Request_Notification_Enable", 2, at: 24)),
        CommandMalformedCase(
            "Primary_Advertising_Channel_Map 0",
            "362019 00 1300 a00000 a00000 00 01 00 000000000000 00 7f 01 00 01 00 00",
            invalid(.leSetExtendedAdvertisingParametersV1, "Primary_Advertising_Channel_Map", 0, at: 9)),
        CommandMalformedCase(
            "Num_Sets 3 with two sets", "39200a 01 03 00000000 01640005",
            truncated("HCI_LE_Set_Extended_Advertising_Enable", needed: 1, available: 0, at: 10)),
        CommandMalformedCase(
            "Num_Sets 1 with two sets", "39200a 01 01 00000000 01640005",
            trailing("HCI_LE_Set_Extended_Advertising_Enable", 4, at: 6)),
        CommandMalformedCase(
            "Num_Sets 0 when enabling", "39200201 00", badLength(.leSetExtendedAdvertisingEnable, "Num_Sets", 0, at: 1)),
        CommandMalformedCase(
            "Num_Sets 0x40", "39200201 40", badLength(.leSetExtendedAdvertisingEnable, "Num_Sets", 0x40, at: 1)),
        CommandMalformedCase(
            "Advertising_Handle 0xF0 in a set", "39200601 01 f0000000",
            invalid(.leSetExtendedAdvertisingEnable, "Advertising_Handle", 0xF0, at: 2)),
        CommandMalformedCase(
            "LE Read PHY handle 0x1000", "3020020010", invalid(.leReadPHY, "Connection_Handle", 0x1000, at: 0)),
        CommandMalformedCase(
            "Filter accept list Address_Type 2", "112007 02 665544332211",
            invalid(.leAddDeviceToFilterAcceptList, "Address_Type", 2, at: 0)),
        CommandMalformedCase(
            "LE_Supported_Host 2", "6d0c02 02 00", invalid(.writeLEHostSupport, "LE_Supported_Host", 2, at: 0)),
        CommandMalformedCase(
            "Write Local Name 247 octets", "130cf7" + String(repeating: "41", count: 247),
            truncated("HCI_Write_Local_Name", needed: 248, available: 247, at: 0)),
        CommandMalformedCase(
            "Scan_Response_Data_Length beyond bytes", "382006 00 03 00 04 0201",
            truncated("HCI_LE_Set_Extended_Scan_Response_Data", needed: 4, available: 2, at: 4)),
        CommandMalformedCase(
            "Remove Advertising_Handle 0xF0", "3c2001 f0",
            invalid(.leRemoveAdvertisingSet, "Advertising_Handle", 0xF0, at: 0)),
        CommandMalformedCase(
            "Set Random Address Advertising_Handle 0xFF", "352007 ff ef3f6c8eca5a",
            invalid(.leSetAdvertisingSetRandomAddress, "Advertising_Handle", 0xFF, at: 0)),
        CommandMalformedCase(
            "v2 Subevent 0x80", "85201c 02 80 00 00 00 665544332211 01 6000 6000 1800 2800 0000 f401 0000 0000",
            invalid(.leExtendedCreateConnectionV2, "Subevent", 0x80, at: 1)),
        CommandMalformedCase(
            "v2 Advertising_Handle 0xF0",
            "85201c f0 05 00 00 00 665544332211 01 6000 6000 1800 2800 0000 f401 0000 0000",
            invalid(.leExtendedCreateConnectionV2, "Advertising_Handle", 0xF0, at: 0)),
        CommandMalformedCase(
            "v2 Initiating_PHYs empty", "85200c ff ff 00 00 00 665544332211 00",
            invalid(.leExtendedCreateConnectionV2, "Initiating_PHYs", 0, at: 11)),
        CommandMalformedCase(
            "v2 Primary_Advertising_PHY_Options 5",
            "7f201b 01 0100 200300 400600 07 01 00 000000000000 00 f6 03 00 03 05 01 05 00",
            invalid(.leSetExtendedAdvertisingParametersV2, "Primary_Advertising_PHY_Options", 5, at: 25)),
        CommandMalformedCase(
            "v2 Advertising_SID 0x10",
            "7f201b 01 0100 200300 400600 07 01 00 000000000000 00 f6 03 00 03 10 01 00 00",
            invalid(.leSetExtendedAdvertisingParametersV2, "Advertising_SID", 0x10, at: 23)),
        CommandMalformedCase(
            "v2 parameters cut inside the v1 part", "7f2017 01 0100 200300 400600 07 01 00 000000000000 00 f6 03 00 03",
            truncated("HCI_LE_Set_Extended_Advertising_Parameters [v2]", needed: 25, available: 23, at: 0)),
    ]
}

@Suite("HCI command malformed input")
struct CommandMalformedTests {
    @Test(arguments: CommandMalformedTable.cases)
    func rejects(_ entry: CommandMalformedCase) {
        var reader = ByteReader(Hex.decode(entry.hex)!)
        #expect(throws: entry.error) { try AnyHCICommand(parsing: &reader) }
    }

    /// Every strict prefix of a valid packet is truncated, never a trap or another error.
    @Test(arguments: CommandTestVectors.all)
    func packetTruncationSweep(_ vector: CommandVector) {
        let bytes = vector.bytes
        for length in 0..<bytes.count {
            var reader = ByteReader(Array(bytes[0..<length]))
            do {
                _ = try AnyHCICommand(parsing: &reader)
                Issue.record("\(vector.name): prefix of \(length) octets decoded")
            } catch {
                guard case .malformed(_, .truncated, _) = error else {
                    Issue.record("\(vector.name): prefix of \(length) octets threw \(error)")
                    continue
                }
            }
        }
    }

    /// Every strict prefix of a command's parameters fails in the typed parser as truncated.
    @Test(arguments: CommandTestVectors.all)
    func parameterTruncationSweep(_ vector: CommandVector) {
        guard let command = vector.expected.command else { return }
        let parameters = vector.parameters
        for length in 0..<parameters.count {
            var reader = ByteReader(Array(parameters[0..<length]))
            do {
                _ = try type(of: command).init(parsingParameters: &reader)
                Issue.record("\(vector.name): \(length) parameter octets decoded")
            } catch {
                guard case .malformed(let context, .truncated, _) = error else {
                    Issue.record("\(vector.name): \(length) parameter octets threw \(error)")
                    continue
                }
                #expect(context == type(of: command).opcode.description)
            }
        }
    }

    /// Fields that break the limits the parser enforces cannot be encoded either.
    @Test func encodeRefusesWhatParseRefuses() {
        let cases: [(String, () throws(HCIError) -> HCICommandPacket)] = [
            (
                "advertising data 32",
                { () throws(HCIError) in
                    try HCICommandPacket(LESetAdvertisingDataCommand(advertisingData: .init(repeating: 0, count: 32)))
                }
            ),
            (
                "scan response 40",
                { () throws(HCIError) in
                    try HCICommandPacket(LESetScanResponseDataCommand(scanResponseData: .init(repeating: 0, count: 40)))
                }
            ),
            (
                "ext data 252",
                { () throws(HCIError) in
                    try HCICommandPacket(
                        LESetExtendedAdvertisingDataCommand(
                            advertisingHandle: 0, advertisingData: .init(repeating: 0, count: 252)))
                }
            ),
            (
                "ext data handle 0xF0",
                { () throws(HCIError) in
                    try HCICommandPacket(
                        LESetExtendedAdvertisingDataCommand(advertisingHandle: 0xF0, advertisingData: []))
                }
            ),
            (
                "enable with no sets",
                { () throws(HCIError) in
                    try HCICommandPacket(LESetExtendedAdvertisingEnableCommand(enable: true, sets: []))
                }
            ),
            (
                "64 sets",
                { () throws(HCIError) in
                    try HCICommandPacket(
                        LESetExtendedAdvertisingEnableCommand(
                            enable: true, sets: .init(repeating: .init(advertisingHandle: 0), count: 64)))
                }
            ),
            (
                "disconnect handle",
                { () throws(HCIError) in try HCICommandPacket(DisconnectCommand(connectionHandle: 0x0F00)) }
            ),
            (
                "disconnect reason",
                { () throws(HCIError) in
                    try HCICommandPacket(DisconnectCommand(connectionHandle: 1, reason: .connectionTimeout))
                }
            ),
            (
                "read PHY handle",
                { () throws(HCIError) in try HCICommandPacket(LEReadPHYCommand(connectionHandle: 0xFFFF)) }
            ),
            (
                "channel map",
                { () throws(HCIError) in
                    try HCICommandPacket(
                        LESetAdvertisingParametersCommand(
                            advertisingIntervalMin: 32, advertisingIntervalMax: 32, advertisingChannelMap: []))
                }
            ),
            (
                "ext scan no PHY",
                { () throws(HCIError) in try HCICommandPacket(LESetExtendedScanParametersCommand(le1M: nil)) }
            ),
            (
                "ext create no PHY",
                { () throws(HCIError) in
                    try HCICommandPacket(
                        LEExtendedCreateConnectionV1Command(peerAddressType: .public, peerAddress: .zero, le1M: nil))
                }
            ),
            (
                "primary 2M",
                { () throws(HCIError) in
                    try HCICommandPacket(
                        LESetExtendedAdvertisingParametersV1Command(
                            advertisingHandle: 0, advertisingEventProperties: .connectable,
                            primaryAdvertisingIntervalMin: 32, primaryAdvertisingIntervalMax: 32,
                            primaryAdvertisingPHY: .le2M))
                }
            ),
            (
                "interval over 24 bits",
                { () throws(HCIError) in
                    try HCICommandPacket(
                        LESetExtendedAdvertisingParametersV1Command(
                            advertisingHandle: 0, advertisingEventProperties: .connectable,
                            primaryAdvertisingIntervalMin: 0x100_0000, primaryAdvertisingIntervalMax: 32))
                }
            ),
            (
                "SID 16",
                { () throws(HCIError) in
                    try HCICommandPacket(
                        LESetExtendedAdvertisingParametersV1Command(
                            advertisingHandle: 0, advertisingEventProperties: .connectable,
                            primaryAdvertisingIntervalMin: 32, primaryAdvertisingIntervalMax: 32, advertisingSID: 16))
                }
            ),
            (
                "parameters 256",
                { () throws(HCIError) in
                    try HCICommandPacket(opcode: .reset, parameters: .init(repeating: 0, count: 256))
                }
            ),
        ]
        for (name, make) in cases {
            do {
                let packet = try make()
                Issue.record("\(name) encoded as \(packet)")
            } catch {
                guard case .malformed(_, let reason, _) = error else {
                    Issue.record("\(name): \(error)")
                    continue
                }
                switch reason {
                case .invalidLength, .invalidValue: break
                default: Issue.record("\(name): \(reason)")
                }
            }
        }
    }

    @Test func decodeAsOtherCommandIsRefused() throws {
        let packet = try HCICommandPacket(ResetCommand())
        #expect(
            throws: HCIError.malformed(
                context: "HCI command HCI_Reset", reason: .invalidValue(field: "Opcode", value: 0x0C03), offset: 0)
        ) {
            try packet.decode(as: LESetScanEnableCommand.self)
        }
    }
}
