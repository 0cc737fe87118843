import Capture
import ATT
import Bluetooth
import HCI
import L2CAP
import Testing

#if canImport(Glibc)
    import Glibc
#endif

enum ReplayFixtures {
    static let directory: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // L2CAPTests/ReplayTestSupport.swift, Tests
        return parts.joined(separator: "/") + "/Fixtures"
    }()

    static let bumble = directory + "/bumble-sensortag-session.btsnoop"
    static let synthetic = directory + "/synthetic-att-adv.btsnoop"

    /// A btsnoop H4 capture of `trace` on one connection: `>` entries sent, `<` received, each
    /// in one ACL packet on `channelID`, after a few records that are not ATT. Record numbers
    /// are returned in the entries' order.
    static func capture(
        of trace: ATTTrace, connectionHandle: UInt16 = 0x0040, channelID: UInt16 = 4
    ) throws -> (bytes: [UInt8], records: [Int]) {
        var writer = try BTSnoopWriter(datalink: .h4)
        let framer = ATTCaptureFramer(connectionHandle: connectionHandle, channelID: channelID)
        // HCI_Reset and its Command Complete: records 1 and 2.
        try writer.append(.command, [0x03, 0x0C, 0x00], direction: .sent, timestamp: 1_000)
        try writer.append(.event, [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00], direction: .received, timestamp: 1_001)
        var records: [Int] = []
        for (index, entry) in trace.entries.enumerated() {
            let direction: CaptureDirection = entry.direction == .hostToPeer ? .sent : .received
            for packet in try framer.aclPackets(entry.bytes, direction: direction) {
                try writer.append(.acl, packet, direction: direction, timestamp: 2_000 + Int64(index))
            }
            records.append(writer.recordCount)
        }
        return (writer.takeBytes(), records)
    }

    /// A unique path under the temporary directory.
    static func temporaryPath(_ name: String) -> String {
        "/tmp/replay-tests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(name)"
    }
}

/// Collects what a capture decodes to, for read-back checks.
struct ATTCollector: CaptureVisitor {
    var att: [(record: Int, item: ATTItem)] = []
    var packets: [HCIPacket] = []
    var errors: [HCIError] = []

    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        if let packet { packets.append(packet) }
        if let error { errors.append(error) }
    }
    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {}
    mutating func visit(att: ATTItem, record: CaptureRecord) { self.att.append((record.number, att)) }
    mutating func visit(
        l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord
    ) {}
    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {}
    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {}

    static func decode(_ reader: CaptureReader) -> ATTCollector {
        var collector = ATTCollector()
        var decoder = CaptureDecoder()
        for record in reader { decoder.decode(record, visitor: &collector) }
        return collector
    }
}

/// The next `count` SDUs of one iterator (one iterator per stream: dropping an iterator ends
/// its stream), fewer if the stream ends.
func receive(
    _ count: Int, from iterator: inout AsyncThrowingStream<[UInt8], Error>.AsyncIterator
) async throws -> [[UInt8]] {
    var out: [[UInt8]] = []
    while out.count < count, let sdu = try await iterator.next() {
        out.append(sdu)
    }
    return out
}
