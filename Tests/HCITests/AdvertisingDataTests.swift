import Bluetooth
import Testing

@testable import HCI

private func bytes(_ text: String) -> [UInt8] { Hex.decode(text)! }

struct AdvertisingADVector: CustomTestStringConvertible, Sendable {
    var hex: String
    var structure: ADStructure
    var testDescription: String { structure.type.description }
}

let advertisingADVectors: [AdvertisingADVector] = [
    AdvertisingADVector(hex: "020106", structure: .flags([.leGeneralDiscoverableMode, .brEdrNotSupported])),
    AdvertisingADVector(hex: "05020f180a18", structure: .incompleteServiceUUIDs(.bits16, [0x180F, 0x180A])),
    AdvertisingADVector(hex: "0103", structure: .completeServiceUUIDs(.bits16, [])),
    AdvertisingADVector(hex: "030326fe", structure: .completeServiceUUIDs(.bits16, [0xFE26])),
    AdvertisingADVector(hex: "050478563412", structure: .incompleteServiceUUIDs(.bits32, [.bit32(0x1234_5678)])),
    AdvertisingADVector(hex: "0905785634120f180000", structure: .completeServiceUUIDs(.bits32, [.bit32(0x1234_5678), .bit32(0x180F)])),
    AdvertisingADVector(
        hex: "1106" + "9ecadc240ee5a9e093f3a3b50100406e",
        structure: .incompleteServiceUUIDs(.bits128, [BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!])),
    AdvertisingADVector(
        hex: "1107" + "9ecadc240ee5a9e093f3a3b50100406e",
        structure: .completeServiceUUIDs(.bits128, [BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!])),
    AdvertisingADVector(hex: "0508536e7361", structure: .shortenedLocalName(Array("Snsa".utf8))),
    AdvertisingADVector(hex: "0b0953656e736f7254616720", structure: .completeLocalName(Array("SensorTag ".utf8))),
    AdvertisingADVector(hex: "020af8", structure: .txPowerLevel(-8)),
    AdvertisingADVector(hex: "0512 0600 8000", structure: .peripheralConnectionIntervalRange(min: 6, max: 0x80)),
    AdvertisingADVector(hex: "03140d18", structure: .serviceSolicitationUUIDs(.bits16, [0x180D])),
    AdvertisingADVector(hex: "051f78563412", structure: .serviceSolicitationUUIDs(.bits32, [.bit32(0x1234_5678)])),
    AdvertisingADVector(
        hex: "1115" + "9ecadc240ee5a9e093f3a3b50100406e",
        structure: .serviceSolicitationUUIDs(.bits128, [BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!])),
    AdvertisingADVector(hex: "0516aafe1000", structure: .serviceData(.bit16(0xFEAA), bytes("1000"))),
    AdvertisingADVector(hex: "0720785634120102", structure: .serviceData(.bit32(0x1234_5678), bytes("0102"))),
    AdvertisingADVector(
        hex: "1221" + "9ecadc240ee5a9e093f3a3b50100406e" + "ff",
        structure: .serviceData(BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!, [0xFF])),
    AdvertisingADVector(hex: "031940 03", structure: .appearance(0x0340)),
    AdvertisingADVector(
        hex: "0d17 665544332211 abcdefabcdef",
        structure: .publicTargetAddresses([BluetoothAddress("11:22:33:44:55:66")!, BluetoothAddress("EF:CD:AB:EF:CD:AB")!])),
    AdvertisingADVector(hex: "0718 665544332211", structure: .randomTargetAddresses([BluetoothAddress("11:22:33:44:55:66")!])),
    AdvertisingADVector(hex: "031a 2000", structure: .advertisingInterval(0x20)),
    AdvertisingADVector(hex: "081b 665544332211 01", structure: .leBluetoothDeviceAddress(BluetoothAddress("11:22:33:44:55:66")!, .random)),
    AdvertisingADVector(hex: "021c02", structure: .leRole(2)),
    AdvertisingADVector(hex: "0b24 17 2f2f6578616d706c65", structure: .uri(bytes("17 2f2f6578616d706c65"))),
    AdvertisingADVector(hex: "07ff 4c00 02150102", structure: .manufacturerSpecificData(companyID: 0x004C, data: bytes("02150102"))),
    AdvertisingADVector(hex: "03ff 5900", structure: .manufacturerSpecificData(companyID: 0x0059, data: [])),
    AdvertisingADVector(hex: "040d 0c025a", structure: .other(.classOfDevice, bytes("0c025a"))),
    AdvertisingADVector(hex: "02 ee 01", structure: .other(ADType(rawValue: 0xEE), [1])),
]

@Suite("Advertising data: AD structures")
struct AdvertisingDataTests {
    @Test(arguments: advertisingADVectors)
    func decodeAndReencode(_ vector: AdvertisingADVector) throws {
        let wire = bytes(vector.hex)
        let ad = AdvertisingData(wire)
        #expect(ad.problems.isEmpty)
        #expect(ad.structures == [vector.structure])
        #expect(ad.elements.count == 1)
        #expect(ad.elements.first?.type == vector.structure.type)
        #expect(try AdvertisingData.encode([vector.structure], maxLength: 255) == wire)
        #expect(!ad.description.isEmpty)
    }

    @Test func realAdvertisement() throws {
        // Horizon treadmill ADV_IND (capture frame 133): name, 16-bit UUID, flags, manufacturer data.
        let wire = bytes("0d09475648353037325f36464142030388ec02010509ff88ec0002d0174200")
        let ad = AdvertisingData(wire)
        #expect(ad.isWellFormed)
        #expect(ad.structures == [
            .completeLocalName(Array("GVH5072_6FAB".utf8)), .completeServiceUUIDs(.bits16, [0xEC88]),
            .flags([.leLimitedDiscoverableMode, .brEdrNotSupported]),
            .manufacturerSpecificData(companyID: 0xEC88, data: bytes("0002d0174200")),
        ])
        #expect(try AdvertisingData.encode(ad.structures) == wire)
    }

    @Test func zeroLengthIsEarlyTermination() {
        // Capture frame 235: name then zero padding to 27 octets (not malformed for Wireshark).
        let ad = AdvertisingData(bytes("0a09493649412d3138353600000000000000000000000000000000"))
        #expect(ad.isWellFormed)
        #expect(ad.structures == [.completeLocalName(Array("I6IA-1856".utf8))])
        #expect(ad.earlyTerminationOffset == 11)
        let leading = AdvertisingData(bytes("002ac932ebcf"))
        #expect(leading.structures.isEmpty && leading.isWellFormed && leading.earlyTerminationOffset == 0)
    }

    @Test func emptyData() {
        let ad = AdvertisingData([UInt8]())
        #expect(ad.structures.isEmpty && ad.isWellFormed && ad.earlyTerminationOffset == nil)
    }

    /// Wireshark's view of the 120 malformed smartpen reports: the complete structures, then the
    /// overrunning one with the octets that were there.
    @Test(arguments: [
        ("0c002beeddcc", [ADElement(type: ADType(rawValue: 0), data: bytes("2beeddcc"), offset: 0)], ADProblem.lengthOverrun(offset: 0, length: 12, available: 5)),
        ("010020eeddcc", [ADElement(type: ADType(rawValue: 0), data: [], offset: 0), ADElement(type: ADType(rawValue: 0xEE), data: bytes("ddcc"), offset: 2)], .lengthOverrun(offset: 2, length: 32, available: 3)),
        ("030028eeddcc", [ADElement(type: ADType(rawValue: 0), data: bytes("28ee"), offset: 0), ADElement(type: ADType(rawValue: 0xCC), data: [], offset: 4)], .lengthOverrun(offset: 4, length: 0xDD, available: 1)),
        ("02001deeddcc", [ADElement(type: ADType(rawValue: 0), data: bytes("1d"), offset: 0), ADElement(type: ADType(rawValue: 0xDD), data: bytes("cc"), offset: 3)], .lengthOverrun(offset: 3, length: 0xEE, available: 2)),
        ("082211aaaaaa", [ADElement(type: ADType(rawValue: 0x22), data: bytes("11aaaaaa"), offset: 0)], .lengthOverrun(offset: 0, length: 8, available: 5)),
    ])
    func overrunMatchesWireshark(_ hex: String, _ expected: [ADElement], _ problem: ADProblem) {
        let ad = AdvertisingData(bytes(hex))
        #expect(ad.wiresharkElements == expected)
        #expect(ad.problems == [problem])
    }

    @Test func lengthOctetAloneAtTheEnd() {
        let ad = AdvertisingData(bytes("02010605"))
        #expect(ad.structures == [.flags(ADFlags(rawValue: 6))])
        #expect(ad.problems == [.lengthOverrun(offset: 3, length: 5, available: 0)])
        #expect(ad.truncatedElement == nil)
    }

    @Test(arguments: [
        ("0101", ADType.flags), ("030106 00", .flags), ("0402 0f18 0a", .incompleteListOf16BitServiceUUIDs),
        ("0405 010203", .completeListOf32BitServiceUUIDs), ("0307 0102", .completeListOf128BitServiceUUIDs),
        ("030af8f8", .txPowerLevel), ("0412 060080", .peripheralConnectionIntervalRange), ("0216 aa", .serviceData16BitUUID),
        ("0419 400300", .appearance), ("0617 6655443322", .publicTargetAddress), ("0118", .randomTargetAddress),
        ("021a20", .advertisingInterval), ("081b 665544332211 02", .leBluetoothDeviceAddress), ("011c", .leRole),
        ("02ff4c", .manufacturerSpecificData), ("0421 010203", .serviceData128BitUUID),
    ])
    func invalidContentIsKeptRaw(_ hex: String, _ type: ADType) {
        let wire = bytes(hex)
        let ad = AdvertisingData(wire)
        #expect(ad.structures == [.other(type, Array(wire.dropFirst(2)))])
        #expect(ad.problems == [.invalidContent(offset: 0, type: type, length: wire.count - 2)])
        #expect((try? AdvertisingData.encode(ad.structures)) == wire)
    }

    @Test func unknownTypeIsNotAProblem() {
        let ad = AdvertisingData(bytes("03 2f 0102 02 0106"))
        #expect(ad.isWellFormed)
        #expect(ad.structures == [.other(ADType(rawValue: 0x2F), [1, 2]), .flags(ADFlags(rawValue: 6))])
    }

    @Test func builderLimits() {
        let name = ADStructure.completeLocalName(Array(repeating: 0x41, count: 30))
        #expect(throws: HCIError.invalidArgument(context: "advertising data", reason: "32 octets, at most 31")) {
            try AdvertisingData.encode([name])
        }
        #expect((try? AdvertisingData.encode([name], maxLength: 1650))?.count == 32)
        #expect(throws: HCIError.self) { try AdvertisingData.encode([.other(.uri, Array(repeating: 0, count: 255))], maxLength: 1650) }
        #expect(throws: HCIError.self) {
            try AdvertisingData.encode([.completeServiceUUIDs(.bits16, [BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!])])
        }
        #expect((try? AdvertisingData.encode([.completeServiceUUIDs(.bits32, [0x180F])])) == bytes("05050f180000"))
        #expect((try? AdvertisingData.encode([.completeServiceUUIDs(.bits128, [0x180F])])) == bytes("1107fb349b5f80000080001000000f180000"))
    }

    @Test func summaryMergesAdvertisingAndScanResponse() {
        var summary = AdvertisingData(bytes("020106 0508536e7361 03030f18 0516aafe1000 05ff4c000100 020af8")).summary
        #expect(summary.name == "Snsa" && !summary.isCompleteName)
        summary.merge(AdvertisingData(bytes("0c0953656e736f72546167000003030a18 0516aafe2000 05ff4c000200 04ff590003")))
        #expect(summary.name == "SensorTag" && summary.isCompleteName)
        #expect(summary.serviceUUIDs == [0x180F, 0x180A])
        #expect(summary.serviceData == [.init(uuid: 0xFEAA, data: bytes("2000"))])
        #expect(summary.manufacturerData == [.init(companyID: 0x004C, data: bytes("0200")), .init(companyID: 0x0059, data: bytes("03"))])
        #expect(summary.txPowerLevel == -8)
        #expect(summary.flags == [.leGeneralDiscoverableMode, .brEdrNotSupported])
        // A shortened name after the complete one does not replace it.
        summary.merge(.shortenedLocalName(Array("S".utf8)))
        #expect(summary.name == "SensorTag")
    }
}
