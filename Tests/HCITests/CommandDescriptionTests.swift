import Bluetooth
import Testing

@testable import HCI

@Suite("HCI command descriptions")
struct CommandDescriptionTests {
    static let cases: [(AnyHCICommand, String)] = [
        (
            .leSetScanParameters(
                LESetScanParametersCommand(leScanType: .active, leScanInterval: 0x0010, leScanWindow: 0x0010)),
            "LE Set Scan Parameters: active, interval 10.000 ms (0x0010), window 10.000 ms, own public, accept all"
        ),
        (
            .disconnect(DisconnectCommand(connectionHandle: 0x40)),
            "Disconnect: handle 64, reason Remote User Terminated Connection (0x13)"
        ),
        (.reset(ResetCommand()), "Reset"),
        (
            .leSetScanEnable(LESetScanEnableCommand(leScanEnable: true, filterDuplicates: true)),
            "LE Set Scan Enable: enable, duplicates filtered"
        ),
        (
            .leConnectionUpdate(
                LEConnectionUpdateCommand(
                    connectionHandle: 1,
                    connectionParameters: .init(
                        connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 42))),
            "LE Connection Update: handle 1, interval 30.000–50.000 ms, latency 0, timeout 420.000 ms, CE 0.000 ms"
        ),
        (
            .leSetAdvertisingData(LESetAdvertisingDataCommand(advertisingData: [2, 1, 6])),
            "LE Set Advertising Data: 3 octets 020106"
        ),
        (
            .leSetExtendedAdvertisingEnable(
                LESetExtendedAdvertisingEnableCommand(
                    enable: true, sets: [.init(advertisingHandle: 0), .init(advertisingHandle: 1, duration: 100)])),
            "LE Set Extended Advertising Enable: enable handle 0; handle 1 for 1000.000 ms"
        ),
        (
            .leSetExtendedAdvertisingEnable(LESetExtendedAdvertisingEnableCommand(enable: false, sets: [])),
            "LE Set Extended Advertising Enable: disable all sets"
        ),
        (
            .leSetExtendedScanParameters(
                LESetExtendedScanParametersCommand(
                    le1M: .init(scanType: .passive, scanInterval: 0x60, scanWindow: 0x30),
                    leCoded: .init(scanType: .active, scanInterval: 0x120, scanWindow: 0x90))),
            "LE Set Extended Scan Parameters: own public, accept all, LE 1M: passive, interval 60.000 ms (0x0060), "
                + "window 30.000 ms, LE Coded: active, interval 180.000 ms (0x0120), window 90.000 ms"
        ),
        (
            .leSetRandomAddress(LESetRandomAddressCommand(randomAddress: BluetoothAddress("C0:00:11:22:33:44")!)),
            "LE Set Random Address: C0:00:11:22:33:44 (static)"
        ),
        (
            .leReadPHY(LEReadPHYCommand(connectionHandle: 0x0040)),
            "LE Read PHY: handle 64"
        ),
        (
            .unknown(try! HCICommandPacket(opcode: .writeScanEnable, parameters: [3])),
            "Write Scan Enable (0x0c1a): 03"
        ),
        (.unknown(try! HCICommandPacket(opcode: HCIOpcode(rawValue: 0xFC01))), "Vendor command 0xfc01"),
        (
            .unknown(try! HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2004), parameters: [1])),
            "Unknown command 0x2004: 01"
        ),
        (
            .unknown(try! HCICommandPacket(opcode: HCIOpcode(rawValue: 0x0C52), parameters: [0])),
            "Write Extended Inquiry Response (0x0c52): 00"
        ),
        (
            .writeLocalName(WriteLocalNameCommand(localName: HCILocalName("Pixel 6 Pro"))),
            "Write Local Name: \"Pixel 6 Pro\""
        ),
        (
            .leAddDeviceToFilterAcceptList(.init(addressType: .random, address: commandTestPeer)),
            "LE Add Device To Filter Accept List: 11:22:33:44:55:66 (random)"
        ),
    ]

    @Test(arguments: 0..<cases.count)
    func readableOneLine(_ index: Int) {
        let (command, text) = Self.cases[index]
        #expect(command.description == text)
    }

    @Test func everyVectorDescribesOnOneLine() {
        for vector in CommandTestVectors.all {
            let text = vector.expected.description
            #expect(!text.contains("\n"), "\(vector.name)")
            if vector.expected.command != nil {
                #expect(text.hasPrefix(vector.expected.opcode.displayName), "\(vector.name): \(text)")
            }
        }
    }
}
