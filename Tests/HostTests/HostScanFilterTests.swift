import Host
import Bluetooth
import HCI
import L2CAP
import Testing

/// `ScanFilter`: what `scan --name`, `--service` and `--min-rssi` let through, for merged
/// devices and raw reports alike.
@Suite("Host: scan filter")
struct HostScanFilterTests {
    static let address = BluetoothAddress("C0:11:22:33:44:55")!

    /// A device whose ADV carries Flags and the Battery service, and whose scan response
    /// carries its name.
    static func device(name: String?, rssi: Int8?) -> DiscoveredDevice {
        var aggregator = ScanAggregator()
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0F, 0x18]
        let response: [UInt8] = name.map { [UInt8($0.utf8.count + 1), 0x09] + Array($0.utf8) } ?? []
        _ = aggregator.receive(ScanReport(LEAdvertisingReport(eventType: .advInd, addressType: .random, address: address, data: ad, rssi: rssi ?? 127)))
        _ = aggregator.receive(ScanReport(LEAdvertisingReport(eventType: .scanRsp, addressType: .random, address: address, data: response, rssi: rssi ?? 127)))
        return aggregator.device(address, type: .random)!
    }

    @Test func noConditionLetsEverythingThrough() {
        #expect(ScanFilter().isEmpty)
        #expect(ScanFilter().matches(Self.device(name: nil, rssi: nil)))
    }

    @Test func nameIsASubstringWithCaseIgnored() {
        let device = Self.device(name: "CC2650 SensorTag", rssi: -60)
        #expect(ScanFilter(name: "sensortag").matches(device))
        #expect(ScanFilter(name: "SENSOR").matches(device))
        #expect(!ScanFilter(name: "bluefruit").matches(device))
        #expect(!ScanFilter(name: "tag").matches(Self.device(name: nil, rssi: -60)), "no name: no match")
        var changed = ScanFilter(name: "nothing")
        changed.name = "CC26"
        #expect(changed.matches(device), "a changed name is the one matched")
    }

    @Test func serviceAndRSSI() {
        let device = Self.device(name: "x", rssi: -70)
        #expect(ScanFilter(service: BluetoothUUID.bit16(0x180F)).matches(device))
        #expect(!ScanFilter(service: BluetoothUUID.bit16(0x1809)).matches(device))
        #expect(ScanFilter(minimumRSSI: -70).matches(device))
        #expect(!ScanFilter(minimumRSSI: -69).matches(device))
        #expect(ScanFilter(minimumRSSI: -20).matches(Self.device(name: "x", rssi: nil)), "no RSSI: passes")
    }

    @Test func aRawReportIsJudgedOnItsOwnData() {
        let response = ScanReport(LEAdvertisingReport(eventType: .scanRsp, addressType: .random, address: Self.address, data: [0x04, 0x09, 0x55, 0x41, 0x52], rssi: -50))
        #expect(ScanFilter(name: "uar").matches(response))
        let advertisement = ScanReport(LEAdvertisingReport(eventType: .advInd, addressType: .random, address: Self.address, data: [0x02, 0x01, 0x06], rssi: -50))
        #expect(!ScanFilter(name: "uar").matches(advertisement))
    }
}
