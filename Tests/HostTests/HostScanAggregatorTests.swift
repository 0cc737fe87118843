import TestSupport
import Host
import Bluetooth
import HCI
import L2CAP
import Testing

/// `ScanAggregator`: ADV + SCAN_RSP merged per device, change detection, bounds, extended chains.
@Suite("Host: scan aggregator")
struct HostScanAggregatorTests {
    static let tag = BluetoothAddress("54:6C:0E:12:34:56")!
    static let uart = BluetoothAddress("DE:AD:BE:EF:0B:F1")!
    /// Flags 0x06, TX power 0 dBm, incomplete 16-bit UUIDs AA80 (the SensorTag's ADV_IND).
    static let tagAdv = leBytes("02 01 06 02 0A 00 03 02 80 AA")
    /// Complete Local Name "CC2650 SensorTag" (its SCAN_RSP).
    static let tagScanResponse = [17, 0x09] + Array("CC2650 SensorTag".utf8)

    static func legacy(
        _ type: LEAdvertisingEventType, _ data: [UInt8], address: BluetoothAddress = tag,
        addressType: LEAddressType = .public, rssi: Int8 = -50
    ) -> LEMetaEvent {
        .advertisingReport(
            LEAdvertisingReportEvent(reports: [
                LEAdvertisingReport(eventType: type, addressType: addressType, address: address, data: data, rssi: rssi)
            ]))
    }

    @Test func advertisingThenScanResponseMergesIntoOneDevice() throws {
        var aggregator = ScanAggregator()
        let first = aggregator.receive(Self.legacy(.advInd, Self.tagAdv))
        guard case .discovered(let seen)? = first.first, first.count == 1 else {
            Issue.record("expected one .discovered, got \(first)")
            return
        }
        #expect(seen.name == nil)
        #expect(seen.isConnectable)
        #expect(seen.txPower == 0)
        #expect(seen.serviceUUIDs == [BluetoothUUID(0xAA80)])

        let second = aggregator.receive(Self.legacy(.scanRsp, Self.tagScanResponse))
        guard case .updated(let merged)? = second.first, second.count == 1 else {
            Issue.record("expected one .updated, got \(second)")
            return
        }
        #expect(merged.name == "CC2650 SensorTag")
        #expect(merged.serviceUUIDs == [BluetoothUUID(0xAA80)])
        #expect(merged.isConnectable)  // a scan response does not change connectability
        #expect(merged.mergedData == Self.tagAdv + Self.tagScanResponse)
        #expect(merged.reports.map(\.kind) == [.advInd, .scanRsp])
        #expect(merged.addressType == .public)
        #expect(aggregator.devices.count == 1)
    }

    @Test func unchangedDataGivesNoEventEvenWhenTheRSSIMoves() {
        var aggregator = ScanAggregator()
        _ = aggregator.receive(Self.legacy(.advInd, Self.tagAdv, rssi: -50))
        #expect(aggregator.receive(Self.legacy(.advInd, Self.tagAdv, rssi: -70)).isEmpty)
        #expect(aggregator.device(Self.tag, type: .public)?.rssi == -70)
        #expect(aggregator.device(Self.tag, type: .public)?.reports.count == 2)
        // Changed advertising data is an update.
        let changed = aggregator.receive(Self.legacy(.advInd, leBytes("02 01 06")))
        #expect(changed.count == 1)
        if case .updated(let device)? = changed.first { #expect(device.serviceUUIDs.isEmpty) }
        // So is a change of connectability alone.
        #expect(aggregator.receive(Self.legacy(.advScanInd, leBytes("02 01 06"))).count == 1)
        #expect(aggregator.device(Self.tag, type: .public)?.isConnectable == false)
    }

    @Test func devicesAreKeyedByAddressAndType() {
        var aggregator = ScanAggregator()
        _ = aggregator.receive(Self.legacy(.advInd, Self.tagAdv, addressType: .public))
        let other = aggregator.receive(Self.legacy(.advInd, Self.tagAdv, addressType: .random))
        #expect(other.count == 1)
        #expect(aggregator.devices.count == 2)
        // Identity address types map to their on-air type.
        #expect(aggregator.receive(Self.legacy(.advInd, Self.tagAdv, addressType: .publicIdentity)).isEmpty)
    }

    @Test func allReportsModeEmitsEveryReportAndTheDeviceEvents() {
        var aggregator = ScanAggregator(mode: .allReports)
        let first = aggregator.receive(Self.legacy(.advInd, Self.tagAdv))
        #expect(first.count == 2)
        if case .report(let report)? = first.first {
            #expect(report.kind == .advInd)
            #expect(report.data == Self.tagAdv)
            #expect(report.rssi == -50)
        } else {
            Issue.record("expected the raw report first, got \(first)")
        }
        let again = aggregator.receive(Self.legacy(.advInd, Self.tagAdv))
        #expect(again.count == 1)
        if case .report? = again.first {} else { Issue.record("expected a raw report, got \(again)") }
    }

    @Test func multiReportEventsFeedEveryReport() {
        var aggregator = ScanAggregator()
        let event = LEMetaEvent.advertisingReport(
            LEAdvertisingReportEvent(reports: [
                LEAdvertisingReport(
                    eventType: .advInd, addressType: .public, address: Self.tag, data: Self.tagAdv, rssi: -40),
                LEAdvertisingReport(
                    eventType: .advInd, addressType: .random, address: Self.uart, data: leBytes("02 01 06"),
                    rssi: 127),
            ]))
        let events = aggregator.receive(event)
        #expect(events.count == 2)
        #expect(aggregator.device(Self.uart, type: .random)?.rssi == nil)  // 127: not available
    }

    @Test func theTableIsBoundedByForgettingTheLeastRecentlyHeard() {
        var aggregator = ScanAggregator(maximumDevices: 2, maximumReportsPerDevice: 3)
        let a = BluetoothAddress("C0:00:00:00:00:01")!
        let b = BluetoothAddress("C0:00:00:00:00:02")!
        let c = BluetoothAddress("C0:00:00:00:00:03")!
        _ = aggregator.receive(Self.legacy(.advInd, leBytes("02 01 06"), address: a, addressType: .random))
        _ = aggregator.receive(Self.legacy(.advInd, leBytes("02 01 06"), address: b, addressType: .random))
        _ = aggregator.receive(Self.legacy(.advInd, leBytes("02 01 06"), address: a, addressType: .random))
        let third = aggregator.receive(Self.legacy(.advInd, leBytes("02 01 06"), address: c, addressType: .random))
        #expect(third.count == 1)
        #expect(aggregator.devices.count == 2)
        #expect(aggregator.evictedDevices == 1)
        #expect(aggregator.device(b, type: .random) == nil)
        #expect(aggregator.device(a, type: .random) != nil)
        for _ in 0..<5 {
            _ = aggregator.receive(Self.legacy(.advInd, leBytes("02 01 06"), address: a, addressType: .random))
        }
        #expect(aggregator.device(a, type: .random)?.reports.count == 3)
        #expect(aggregator.device(a, type: .random)?.droppedReports == 4)
    }

    @Test func extendedChainsAreReassembledBeforeMerging() {
        var aggregator = ScanAggregator()
        let name = [21, 0x09] + Array("A long extended name".utf8)
        var more = LEExtendedAdvertisingEventType.connectable
        more.dataStatus = .incompleteMoreData
        func fragment(_ type: LEExtendedAdvertisingEventType, _ data: [UInt8]) -> LEMetaEvent {
            .extendedAdvertisingReport(
                LEExtendedAdvertisingReportEvent(reports: [
                    LEExtendedAdvertisingReport(
                        eventType: type, addressType: .random, address: Self.uart, secondaryPHY: .le2M,
                        advertisingSID: 1, txPower: -4, rssi: -60, data: data)
                ]))
        }
        #expect(aggregator.receive(fragment(more, Array(name[..<10]))).isEmpty)
        let whole = aggregator.receive(fragment(.connectable, Array(name[10...])))
        guard case .discovered(let device)? = whole.first else {
            Issue.record("expected the reassembled device, got \(whole)")
            return
        }
        #expect(device.name == "A long extended name")
        #expect(device.txPower == -4)
        #expect(device.reports.first?.kind == .extended)
        #expect(device.isConnectable)
    }

    @Test func legacyPDUsInExtendedReportsKeepTheirNames() {
        let scanResponse = LEExtendedAdvertisingReport(
            eventType: .legacyScanRspToAdvInd, addressType: .public, address: Self.tag, rssi: -50,
            data: Self.tagScanResponse)
        let report = ScanReport(scanResponse)
        #expect(report.kind == .scanRsp)
        #expect(report.isScanResponse)
        #expect(report.txPower == nil)
        #expect(
            ScanReport(
                LEExtendedAdvertisingReport(
                    eventType: .legacyAdvScanInd, addressType: .public, address: Self.tag, rssi: -50, data: [])
            ).kind
                == .advScanInd)
    }

    @Test func directedAndAnonymousReports() {
        var aggregator = ScanAggregator(mode: .allReports)
        let directed = LEMetaEvent.directedAdvertisingReport(
            LEDirectedAdvertisingReportEvent(reports: [
                LEDirectedAdvertisingReport(
                    eventType: .advDirectInd, addressType: .random, address: Self.uart, directAddressType: .public,
                    directAddress: Self.tag, rssi: -45)
            ]))
        let events = aggregator.receive(directed)
        #expect(events.count == 2)
        #expect(aggregator.device(Self.uart, type: .random)?.isConnectable == true)
        let anonymous = aggregator.receive(Self.legacy(.advNonconnInd, leBytes("02 01 06"), addressType: .anonymous))
        #expect(anonymous.count == 1)  // the raw report only: no address to merge under
        #expect(aggregator.anonymousReports == 1)
    }
}

/// `ConnectionParameterPolicy`: each refusal names one rule (Core Spec 5.4, Vol 4, Part E, §7.8.31).
@Suite("Host: connection parameter policy")
struct HostConnectionParameterPolicyTests {
    @Test(arguments: [
        (UInt16(6), UInt16(6), UInt16(0), UInt16(10), true),  // smallest legal
        (24, 40, 0, 400, true),  // our default
        (3200, 3200, 0, 3200, true),  // largest interval and timeout
        (40, 56, 4, 500, true),  // 70 ms × 5 × 2 = 700 ms < 5 s
        (5, 6, 0, 100, false),  // interval min under 7.5 ms
        (6, 3201, 0, 100, false),  // interval max over 4 s
        (40, 24, 0, 400, false),  // min over max
        (24, 40, 500, 3200, false),  // latency over 499
        (24, 40, 0, 9, false),  // timeout under 100 ms
        (24, 40, 0, 3201, false),  // timeout over 32 s
        (3200, 3200, 0, 10, false),  // timeout not over twice the interval
        (80, 80, 0, 20, false),  // 200 ms timeout == 2 × 100 ms: not over
    ])
    func acceptsOnlyParametersWithinTheSpecRanges(
        min: UInt16, max: UInt16, latency: UInt16, timeout: UInt16, acceptable: Bool
    ) {
        let why = ConnectionParameterPolicy.invalidity(
            intervalMin: min, intervalMax: max, latency: latency, timeout: timeout)
        #expect((why == nil) == acceptable, "\(why ?? "accepted")")
    }
}

/// Issue 21: the connection interval with many links — at least 2.5 ms per link by default.
@Suite struct ConnectionIntervalPerLinkTests {
    let defaults = LEConnectionParameters(connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400)

    @Test func theDefaultsHoldUntilTheLinksNeedMore() {
        let perLink = Duration.microseconds(2500)
        #expect(ConnectionParameterPolicy.scaled(defaults, links: 1, perLink: perLink) == defaults)
        #expect(ConnectionParameterPolicy.scaled(defaults, links: 12, perLink: perLink) == defaults, "12 × 2.5 ms = 30 ms: fits")
        let many = ConnectionParameterPolicy.scaled(defaults, links: 32, perLink: perLink)
        #expect(many.connectionIntervalMin == 64 && many.connectionIntervalMax == 64, "32 × 2.5 ms = 80 ms")
        #expect(many.supervisionTimeout == 400)
        #expect(ConnectionParameterPolicy.invalidity(
            intervalMin: many.connectionIntervalMin, intervalMax: many.connectionIntervalMax, latency: many.maxLatency,
            timeout: many.supervisionTimeout) == nil)
    }

    @Test func theTimeoutFollowsALongerInterval() {
        let tight = LEConnectionParameters(connectionIntervalMin: 6, connectionIntervalMax: 6, maxLatency: 4, supervisionTimeout: 10)
        let scaled = ConnectionParameterPolicy.scaled(tight, links: 40, perLink: .microseconds(2500))
        #expect(scaled.connectionIntervalMin == 80 && scaled.connectionIntervalMax == 80)
        #expect(ConnectionParameterPolicy.invalidity(
            intervalMin: 80, intervalMax: 80, latency: 4, timeout: scaled.supervisionTimeout) == nil, "\(scaled.supervisionTimeout)")
        let capped = ConnectionParameterPolicy.scaled(defaults, links: 5000, perLink: .milliseconds(5))
        #expect(capped.connectionIntervalMin == 3200 && capped.supervisionTimeout == 801, "4 s interval: over 8 s")
    }
}
