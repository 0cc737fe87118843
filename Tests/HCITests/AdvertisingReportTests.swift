import Bluetooth
import Testing

@testable import HCI

private func bytes(_ text: String) -> [UInt8] { Hex.decode(text)! }

/// An LE Meta event's hex with Parameter_Total_Length computed from `parameters`.
private func meta(_ parameters: String) -> String {
    let count = Hex.decode(parameters)!.count
    return "3e" + Hex.encode([UInt8(count)]) + parameters
}

private let a1 = BluetoothAddress("A4:C1:38:BF:6F:AB")!
private let a2 = BluetoothAddress("C0:FF:EE:00:00:01")!
private let a3 = BluetoothAddress("11:22:33:44:55:66")!

struct AdvertisingReportVector: CustomTestStringConvertible, Sendable {
    var name: String
    var hex: String
    var meta: LEMetaEvent
    var testDescription: String { name }
}

let advertisingReportVectors: [AdvertisingReportVector] = [
    AdvertisingReportVector(
        name: "legacy, 1 report (horizon capture)",
        hex: "3e2b02010000ab6fbf38c1a41f0d09475648353037325f36464142030388ec02010509ff88ec0002d0174200cf",
        meta: .advertisingReport(LEAdvertisingReportEvent(reports: [
            LEAdvertisingReport(
                eventType: .advInd, addressType: .public, address: a1,
                data: bytes("0d09475648353037325f36464142030388ec02010509ff88ec0002d0174200"), rssi: -49)
        ]))),
    AdvertisingReportVector(
        name: "legacy, 2 reports of different lengths",
        hex: meta("02 02" + "00 00 ab6fbf38c1a4 03 020106 c5" + "04 01 010000eeffc0 06 05094142 4344 b0"),
        meta: .advertisingReport(LEAdvertisingReportEvent(reports: [
            LEAdvertisingReport(eventType: .advInd, addressType: .public, address: a1, data: bytes("020106"), rssi: -59),
            LEAdvertisingReport(eventType: .scanRsp, addressType: .random, address: a2, data: bytes("050941424344"), rssi: -80),
        ]))),
    AdvertisingReportVector(
        name: "legacy, 3 reports incl. empty data and RSSI n/a",
        hex: meta("0203" + "03 00 ab6fbf38c1a4 00 7f" + "02 01 010000eeffc0 04 03ff4c00 d0"
            + "00 02 665544332211 08 020104 04ff590001 ff"),
        meta: .advertisingReport(LEAdvertisingReportEvent(reports: [
            LEAdvertisingReport(eventType: .advNonconnInd, addressType: .public, address: a1, data: [], rssi: 127),
            LEAdvertisingReport(eventType: .advScanInd, addressType: .random, address: a2, data: bytes("03ff4c00"), rssi: -48),
            LEAdvertisingReport(eventType: .advInd, addressType: .publicIdentity, address: a3, data: bytes("02010404ff590001"), rssi: -1),
        ]))),
    AdvertisingReportVector(
        name: "directed, 2 reports",
        hex: meta("0b02" + "01 01 010000eeffc0 01 665544332211 c8" + "01 00 ab6fbf38c1a4 fe 665544332211 7f"),
        meta: .directedAdvertisingReport(LEDirectedAdvertisingReportEvent(reports: [
            LEDirectedAdvertisingReport(addressType: .random, address: a2, directAddressType: .random, directAddress: a3, rssi: -56),
            LEDirectedAdvertisingReport(addressType: .public, address: a1, directAddressType: .unresolvedRandom, directAddress: a3, rssi: 127),
        ]))),
    AdvertisingReportVector(
        name: "extended, 1 report, malformed AD inside (smartpen capture)",
        hex: "3e200d010000007635e2e01bcc0100ff7fc5000000000000000000060c002beeddcc",
        meta: .extendedAdvertisingReport(LEExtendedAdvertisingReportEvent(reports: [
            LEExtendedAdvertisingReport(
                eventType: LEExtendedAdvertisingEventType(rawValue: 0), addressType: .public,
                address: BluetoothAddress("CC:1B:E0:E2:35:76")!, primaryPHY: .le1M, secondaryPHY: .none,
                advertisingSID: 0xFF, txPower: 127, rssi: -59, data: bytes("0c002beeddcc"))
        ]))),
    AdvertisingReportVector(
        name: "extended, 3 reports: legacy ADV_IND, chained fragment, anonymous directed",
        hex: meta("0d03"
            + "1300 01 010000eeffc0 01 00 ff 7f c4 0000 00 000000000000 03 020106"
            + "2100 00 ab6fbf38c1a4 01 02 05 f6 b0 5000 00 000000000000 08 07ff590001020304"
            + "0400 ff 000000000000 03 03 0a 00 a6 0000 02 665544332211 00"),
        meta: .extendedAdvertisingReport(LEExtendedAdvertisingReportEvent(reports: [
            LEExtendedAdvertisingReport(eventType: .legacyAdvInd, addressType: .random, address: a2, rssi: -60, data: bytes("020106")),
            LEExtendedAdvertisingReport(
                eventType: LEExtendedAdvertisingEventType(rawValue: 0x21), addressType: .public, address: a1,
                primaryPHY: .le1M, secondaryPHY: .le2M, advertisingSID: 5, txPower: -10, rssi: -80,
                periodicAdvertisingInterval: 0x50, data: bytes("07ff590001020304")),
            LEExtendedAdvertisingReport(
                eventType: .directed, addressType: .anonymous, address: .zero, primaryPHY: .leCoded,
                secondaryPHY: .leCoded, advertisingSID: 10, txPower: 0, rssi: -90, directAddressType: .publicIdentity,
                directAddress: a3, data: []),
        ]))),
]

@Suite("Advertising reports: byte vectors")
struct AdvertisingReportVectorTests {
    @Test(arguments: advertisingReportVectors)
    func decodeAndReencode(_ vector: AdvertisingReportVector) throws {
        let wire = bytes(vector.hex)
        let event = try HCIEvent(bytes: wire)
        #expect(event == .leMeta(vector.meta))
        #expect(try HCIEvent.leMeta(vector.meta).encoded() == wire)
        #expect(!event.description.isEmpty)
    }

    @Test(arguments: advertisingReportVectors)
    func truncationSweep(_ vector: AdvertisingReportVector) {
        let wire = bytes(vector.hex)
        for count in 0..<wire.count {
            #expect(throws: HCIError.self) { try HCIEvent(bytes: Array(wire[..<count])) }
            if count >= 3 {
                var consistent = Array(wire[..<count])
                consistent[1] = UInt8(count - 2)
                #expect(throws: HCIError.self, "prefix \(count)") { try HCIEvent(bytes: consistent) }
            }
        }
    }

    @Test func extendedEventTypeFields() {
        let type = LEExtendedAdvertisingEventType(rawValue: 0x0033)
        #expect(type.isConnectable && type.isScannable && type.isLegacy)
        #expect(type.dataStatus == .incompleteMoreData)
        var copy = type
        copy.dataStatus = .truncated
        #expect(copy.rawValue == 0x0053)
        #expect(LEExtendedAdvertisingEventType.legacyScanRspToAdvInd.legacyPDUName == "SCAN_RSP")
        #expect(LEExtendedAdvertisingEventType(rawValue: 0x0013).description == "legacy ADV_IND")
        #expect(LEAddressType.anonymous.description == "anonymous")
        #expect(LEAddressType.randomIdentity.addressType == .random)
        #expect(LEAddressType.anonymous.addressType == nil)
    }

    @Test func malformedADDoesNotFailTheReport() throws {
        let event = try HCIEvent(bytes: bytes("3e200d010000007635e2e01bcc0100ff7fc5000000000000000000060c002beeddcc"))
        guard case .leMeta(.extendedAdvertisingReport(let ext)) = event else {
            Issue.record("not an extended report: \(event)")
            return
        }
        let ad = ext.reports[0].advertisingData
        #expect(ad.problem == .lengthOverrun(offset: 0, length: 12, available: 5))
        #expect(ad.wiresharkElements == [ADElement(type: ADType(rawValue: 0), data: bytes("2beeddcc"), offset: 0)])
    }
}

struct AdvertisingMalformedEntry: CustomTestStringConvertible, Sendable {
    var name: String
    var hex: String
    var error: HCIError
    var testDescription: String { name }
}

let advertisingMalformedEntries: [AdvertisingMalformedEntry] = [
    AdvertisingMalformedEntry(
        name: "legacy Num_Reports 0", hex: "3e020200",
        error: .malformed(context: "HCI_LE_Advertising_Report", reason: .invalidValue(field: "Num_Reports", value: 0), offset: 3)),
    AdvertisingMalformedEntry(
        name: "legacy Num_Reports 26", hex: "3e02021a",
        error: .malformed(context: "HCI_LE_Advertising_Report", reason: .invalidValue(field: "Num_Reports", value: 26), offset: 3)),
    AdvertisingMalformedEntry(
        name: "legacy Num_Reports 2, one report present", hex: meta("0202" + "00 00 ab6fbf38c1a4 00 c5"),
        error: .malformed(context: "HCI_LE_Advertising_Report", reason: .invalidLength(field: "Num_Reports", value: 2), offset: 3)),
    AdvertisingMalformedEntry(
        name: "legacy Num_Reports 1, two reports present", hex: meta("0201" + "00 00 ab6fbf38c1a4 00 c5" + "00 00 ab6fbf38c1a4 00 c5"),
        error: .malformed(context: "HCI_LE_Advertising_Report", reason: .trailingBytes(count: 10), offset: 14)),
    AdvertisingMalformedEntry(
        name: "legacy Data_Length over 31", hex: meta("0201" + "00 00 ab6fbf38c1a4 20 c5"),
        error: .malformed(context: "HCI_LE_Advertising_Report", reason: .invalidLength(field: "Data_Length", value: 32), offset: 12)),
    AdvertisingMalformedEntry(
        name: "legacy Data_Length past the end", hex: meta("0201" + "00 00 ab6fbf38c1a4 03 0201 c5"),
        error: .malformed(context: "HCI_LE_Advertising_Report", reason: .truncated(needed: 1, available: 0), offset: 16)),
    AdvertisingMalformedEntry(
        name: "legacy second report's Data_Length past the end", hex: meta("0202" + "00 00 ab6fbf38c1a4 00 c5" + "00 00 ab6fbf38c1a4 05 0201 06 c5"),
        error: .malformed(context: "HCI_LE_Advertising_Report", reason: .truncated(needed: 5, available: 4), offset: 23)),
    AdvertisingMalformedEntry(
        name: "directed Num_Reports 1 with 15 octets", hex: meta("0b01" + "01 01 010000eeffc0 01 665544332211"),
        error: .malformed(context: "HCI_LE_Directed_Advertising_Report", reason: .invalidLength(field: "Num_Reports", value: 1), offset: 3)),
    AdvertisingMalformedEntry(
        name: "extended Num_Reports 0", hex: "3e020d00",
        error: .malformed(context: "HCI_LE_Extended_Advertising_Report", reason: .invalidValue(field: "Num_Reports", value: 0), offset: 3)),
    AdvertisingMalformedEntry(
        name: "extended Num_Reports 11", hex: "3e020d0b",
        error: .malformed(context: "HCI_LE_Extended_Advertising_Report", reason: .invalidValue(field: "Num_Reports", value: 11), offset: 3)),
    AdvertisingMalformedEntry(
        name: "extended Num_Reports 2, one report", hex: meta("0d02" + "1300 01 010000eeffc0 01 00 ff 7f c4 0000 00 000000000000 03 020106"),
        error: .malformed(context: "HCI_LE_Extended_Advertising_Report", reason: .invalidLength(field: "Num_Reports", value: 2), offset: 3)),
    AdvertisingMalformedEntry(
        name: "extended Data_Length past the end", hex: meta("0d01" + "1300 01 010000eeffc0 01 00 ff 7f c4 0000 00 000000000000 04 020106"),
        error: .malformed(context: "HCI_LE_Extended_Advertising_Report", reason: .truncated(needed: 4, available: 3), offset: 28)),
    AdvertisingMalformedEntry(
        name: "extended trailing octet", hex: meta("0d01" + "1300 01 010000eeffc0 01 00 ff 7f c4 0000 00 000000000000 03 020106 00"),
        error: .malformed(context: "HCI_LE_Extended_Advertising_Report", reason: .trailingBytes(count: 1), offset: 31)),
]

@Suite("Advertising reports: malformed")
struct AdvertisingReportMalformedTests {
    @Test(arguments: advertisingMalformedEntries)
    func rejects(_ entry: AdvertisingMalformedEntry) {
        #expect(throws: entry.error) { try HCIEvent(bytes: bytes(entry.hex)) }
    }

    @Test func encodeRejectsOutOfRange() {
        let report = LEAdvertisingReport(eventType: .advInd, addressType: .public, address: a1, data: Array(repeating: 0, count: 32), rssi: 0)
        #expect(throws: HCIError.self) { try HCIEvent.leMeta(.advertisingReport(.init(reports: [report]))).encoded() }
        #expect(throws: HCIError.self) { try HCIEvent.leMeta(.advertisingReport(.init(reports: []))).encoded() }
        let big = LEExtendedAdvertisingReport(eventType: .connectable, addressType: .public, address: a1, rssi: 0, data: Array(repeating: 0, count: 230))
        #expect(throws: HCIError.self) { try HCIEvent.leMeta(.extendedAdvertisingReport(.init(reports: [big]))).encoded() }
    }
}

@Suite("Advertising reports: descriptions")
struct AdvertisingReportDescriptionTests {
    @Test func btmonLikeLines() throws {
        let legacy = try HCIEvent(bytes: bytes(advertisingReportVectors[1].hex))
        #expect(legacy.description == "LE Advertising Report: ADV_IND A4:C1:38:BF:6F:AB (public) rssi -59 dBm data 020106;"
            + " SCAN_RSP C0:FF:EE:00:00:01 (random) rssi -80 dBm data 050941424344")
        let extended = try HCIEvent(bytes: bytes(advertisingReportVectors[5].hex))
        #expect(extended.description == "LE Extended Advertising Report: legacy ADV_IND C0:FF:EE:00:00:01 (random) LE 1M rssi -60 dBm data 020106;"
            + " connectable incomplete, more data to come A4:C1:38:BF:6F:AB (public) LE 1M/LE 2M SID 5 tx -10 dBm rssi -80 dBm"
            + " periodic 100.00 ms data 07ff590001020304;"
            + " directed 00:00:00:00:00:00 (anonymous) LE Coded/LE Coded SID 10 tx 0 dBm rssi -90 dBm to 11:22:33:44:55:66 (public identity) no data")
    }
}
