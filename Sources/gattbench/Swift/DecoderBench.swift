import Capture
import ATT
import CGattBenchMalloc
import HCI
import L2CAP

/// In-process `CaptureDecoder` over a capture with a visitor that only counts: the decode cost
/// per record without process start-up, file output or formatting, and its allocations.
/// (Where `dump --summary`'s time goes, beside the whole-process figure.)
struct DecoderBenchmark {
    struct CountingVisitor: CaptureCountingVisitor {
        var records = 0
        var reports = 0
        var att = 0
        var attErrors = 0
        var hciErrors = 0
        var opcodes = [Int](repeating: 0, count: 256)

        mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
            records += 1
            if error != nil { hciErrors += 1 }
        }
        mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) { reports += 1 }
        mutating func visit(att: ATTItem, record: CaptureRecord) {
            self.att += 1
            opcodes[Int(att.opcode.rawValue)] += 1
            if att.error != nil { attErrors += 1 }
        }
        mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {}
        mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {}
        mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {}

        // `CaptureDecoder.count`: the records it checks in place.
        mutating func count(command opcode: HCIOpcode, record: CaptureRecord.Header) { records += 1 }
        mutating func count(aclPacket record: CaptureRecord.Header) { records += 1 }
        mutating func count(event code: HCIEventCode, record: CaptureRecord.Header) { records += 1 }
        mutating func count(advertisingReportEvent subevent: LESubeventCode, record: CaptureRecord.Header) { records += 1 }
        mutating func count(advertisingReport subevent: LESubeventCode, data: UnsafeBufferPointer<UInt8>, record: CaptureRecord.Header) {
            reports += 1
        }
        mutating func count(att opcode: ATTOpcode, wellFormed: Bool, errorCode: ATTErrorCode?, record: CaptureRecord.Header) {
            att += 1
            opcodes[Int(opcode.rawValue)] += 1
            if !wellFormed { attErrors += 1 }
        }
    }

    var path: String
    var runs = 3

    func run() throws {
        try run(counting: false)
        try run(counting: true)
    }

    /// `decode` (every record's values built) or `count` (what `dump --summary` uses).
    func run(counting: Bool) throws {
        let mode = counting ? "CaptureDecoder.count (in place, as dump --summary)" : "CaptureDecoder.decode (counting visitor)"
        print("\n== in-process \(mode), no output: \(path) ==")
        var times: [UInt64] = []
        var readTimes: [UInt64] = []
        var allocations: UInt64 = 0
        var visitor = CountingVisitor()
        for _ in 0..<runs {
            let read = Clock.threadCPU
            var reader = try CaptureFile.open(path: path)
            var decoder = CaptureDecoder()
            visitor = CountingVisitor()
            let start = Clock.threadCPU
            readTimes.append(start - read)
            let before = gattbench_allocation_count()
            if counting {
                decoder.countAll(&reader, visitor: &visitor)
            } else {
                while let record = reader.next() { decoder.decode(record, visitor: &visitor) }
            }
            allocations = gattbench_allocation_count() - before
            times.append(Clock.threadCPU - start)
            if let damage = reader.damage { throw BenchError("\(path) is damaged: \(damage)") }
        }
        let records = Double(visitor.records)
        print(
            "records \(grouped(visitor.records)), advertising reports \(grouped(visitor.reports)), ATT PDUs \(grouped(visitor.att)), "
                + "ATT decode errors \(visitor.attErrors), HCI decode errors \(visitor.hciErrors)")
        print(
            "file read: \(perItem(Double(median(readTimes)) / records))/record; decode: "
                + "\(perItem(Double(median(times)) / records))/record CPU (median of \(runs)); "
                + "\(fixed(Double(allocations) / records, 2)) allocations/record")
        guard visitor.attErrors == 0, visitor.hciErrors == 0 else {
            throw BenchError("the generated capture did not decode cleanly")
        }
    }
}
