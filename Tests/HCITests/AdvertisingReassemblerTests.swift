import Bluetooth
import Testing

@testable import HCI

private let advA = BluetoothAddress("C0:00:00:00:00:0A")!
private let advB = BluetoothAddress("C0:00:00:00:00:0B")!

/// An extended report fragment: connectable (bit 0), given data status, SID, data.
private func fragment(
    _ address: BluetoothAddress, sid: UInt8 = 1, status: LEExtendedAdvertisingEventType.DataStatus,
    _ data: [UInt8], rssi: Int8 = -50, scanResponse: Bool = false
) -> LEExtendedAdvertisingReport {
    var type = LEExtendedAdvertisingEventType(rawValue: scanResponse ? 0x000B : 0x0001)
    type.dataStatus = status
    return LEExtendedAdvertisingReport(
        eventType: type, addressType: .random, address: address, secondaryPHY: .le2M, advertisingSID: sid, rssi: rssi, data: data)
}

private func merged(_ first: LEExtendedAdvertisingReport, data: [UInt8], status: LEExtendedAdvertisingEventType.DataStatus, rssi: Int8) -> LEExtendedAdvertisingReport {
    var report = first
    report.data = data
    report.eventType.dataStatus = status
    report.rssi = rssi
    return report
}

@Suite("Advertising: extended report reassembly")
struct AdvertisingReassemblerTests {
    @Test func completeReportPassesThrough() {
        var reassembler = ExtendedAdvertisingReassembler()
        let report = fragment(advA, status: .complete, [2, 1, 6])
        #expect(reassembler.receive(report) == [.report(report)])
        #expect(reassembler.pendingCount == 0)
    }

    @Test func twoFragmentChain() {
        var reassembler = ExtendedAdvertisingReassembler()
        let first = fragment(advA, status: .incompleteMoreData, [1, 2, 3], rssi: -40)
        #expect(reassembler.receive(first) == [])
        #expect(reassembler.pendingCount == 1)
        let out = reassembler.receive(fragment(advA, status: .complete, [4, 5], rssi: -45))
        #expect(out == [.report(merged(first, data: [1, 2, 3, 4, 5], status: .complete, rssi: -45))])
        #expect(reassembler.pendingCount == 0)
    }

    @Test func threeFragmentChain() {
        var reassembler = ExtendedAdvertisingReassembler()
        let first = fragment(advA, status: .incompleteMoreData, Array(repeating: 1, count: 200))
        #expect(reassembler.receive(first) == [])
        #expect(reassembler.receive(fragment(advA, status: .incompleteMoreData, Array(repeating: 2, count: 200))) == [])
        let out = reassembler.receive(fragment(advA, status: .complete, [3], rssi: -60))
        let data = Array(repeating: UInt8(1), count: 200) + Array(repeating: 2, count: 200) + [3]
        #expect(out == [.report(merged(first, data: data, status: .complete, rssi: -60))])
    }

    @Test func truncatedStatusIsKept() {
        var reassembler = ExtendedAdvertisingReassembler()
        let first = fragment(advA, status: .incompleteMoreData, [1, 2])
        _ = reassembler.receive(first)
        let out = reassembler.receive(fragment(advA, status: .truncated, [3]))
        #expect(out == [.report(merged(first, data: [1, 2, 3], status: .truncated, rssi: -50))])
        guard case .report(let report) = out.first else { return }
        #expect(report.dataStatus == .truncated)
        #expect(report.eventType.isConnectable)
    }

    @Test func interleavedAdvertisersAndSIDs() {
        var reassembler = ExtendedAdvertisingReassembler()
        let a1 = fragment(advA, status: .incompleteMoreData, [0xA1])
        let b1 = fragment(advB, status: .incompleteMoreData, [0xB1])
        let a2sid = fragment(advA, sid: 2, status: .incompleteMoreData, [0xC1])
        #expect(reassembler.receive(a1) == [])
        #expect(reassembler.receive(b1) == [])
        #expect(reassembler.receive(a2sid) == [])
        #expect(reassembler.pendingCount == 3)
        #expect(reassembler.receive(fragment(advB, status: .complete, [0xB2])) == [.report(merged(b1, data: [0xB1, 0xB2], status: .complete, rssi: -50))])
        #expect(reassembler.receive(fragment(advA, sid: 2, status: .complete, [0xC2])) == [.report(merged(a2sid, data: [0xC1, 0xC2], status: .complete, rssi: -50))])
        #expect(reassembler.receive(fragment(advA, status: .complete, [0xA2])) == [.report(merged(a1, data: [0xA1, 0xA2], status: .complete, rssi: -50))])
        #expect(reassembler.pendingCount == 0)
    }

    @Test func newChainForSameAdvertiserDropsStalePartial() {
        var reassembler = ExtendedAdvertisingReassembler()
        _ = reassembler.receive(fragment(advA, status: .incompleteMoreData, [1]))
        // The scan response chain starts while the advertising data chain is unfinished.
        let response = fragment(advA, status: .complete, [9], scanResponse: true)
        let key = ExtendedAdvertisingReassembler.ChainKey(response)
        #expect(reassembler.receive(response) == [.dropped(key, .superseded), .report(response)])
        #expect(reassembler.pendingCount == 0)
    }

    @Test func boundExceededDropsTheChainAndSkipsItsRest() {
        var reassembler = ExtendedAdvertisingReassembler(maxDataLength: 300)
        let key = ExtendedAdvertisingReassembler.ChainKey(fragment(advA, status: .complete, []))
        #expect(reassembler.receive(fragment(advA, status: .incompleteMoreData, Array(repeating: 0, count: 200))) == [])
        #expect(reassembler.receive(fragment(advA, status: .incompleteMoreData, Array(repeating: 0, count: 200))) == [.dropped(key, .lengthExceeded)])
        #expect(reassembler.pendingCount == 0)
        // The rest of that chain is discarded, not mistaken for a new report.
        #expect(reassembler.receive(fragment(advA, status: .incompleteMoreData, [1])) == [])
        #expect(reassembler.receive(fragment(advA, status: .complete, [2])) == [])
        // The next chain from the same advertiser works again.
        let fresh = fragment(advA, status: .complete, [7])
        #expect(reassembler.receive(fresh) == [.report(fresh)])
    }

    @Test func defaultBoundIs1650() {
        var reassembler = ExtendedAdvertisingReassembler()
        var outputs: [ExtendedAdvertisingReassembler.Output] = []
        for _ in 0..<7 { outputs += reassembler.receive(fragment(advA, status: .incompleteMoreData, Array(repeating: 0, count: 229))) }
        #expect(outputs == [])  // 1603 octets
        outputs = reassembler.receive(fragment(advA, status: .complete, Array(repeating: 0, count: 47)))
        guard case .report(let report) = outputs.first else {
            Issue.record("expected a report, got \(outputs)")
            return
        }
        #expect(report.data.count == 1650)
        for _ in 0..<7 { _ = reassembler.receive(fragment(advA, status: .incompleteMoreData, Array(repeating: 0, count: 229))) }
        #expect(reassembler.receive(fragment(advA, status: .complete, Array(repeating: 0, count: 48))) == [.dropped(.init(fragment(advA, status: .complete, [])), .lengthExceeded)])
    }

    @Test func concurrentChainLimitDropsOldest() {
        var reassembler = ExtendedAdvertisingReassembler(maxChains: 2)
        let a = fragment(advA, status: .incompleteMoreData, [1])
        let b = fragment(advB, status: .incompleteMoreData, [2])
        let c = fragment(advA, sid: 3, status: .incompleteMoreData, [3])
        _ = reassembler.receive(a)
        _ = reassembler.receive(b)
        #expect(reassembler.receive(c) == [.dropped(.init(a), .tooManyChains)])
        #expect(reassembler.pendingCount == 2)
        #expect(reassembler.reset() == [.dropped(.init(b), .reset), .dropped(.init(c), .reset)])
        #expect(reassembler.pendingCount == 0)
    }
}
