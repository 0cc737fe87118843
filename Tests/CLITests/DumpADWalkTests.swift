import Capture
import Foundation
import Bluetooth
import HCI
import L2CAP
import Testing
@testable import GATTClientCLI
import TestSupport

/// `ADWalk.isWellFormed` (the summary's non-allocating AD check) agrees with
/// `AdvertisingData.isWellFormed` on every report of the shared captures, on the fixtures and on
/// random data.
@Suite(.cpuBound) struct DumpADWalkTests {
    /// Collects the AD payload of every advertising report.
    struct Collector: CaptureVisitor {
        var payloads: [[UInt8]] = []
        mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {}
        mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
            switch advertisingReport.report {
            case .legacy(let report): payloads.append(report.data)
            case .extended(let report): payloads.append(report.data)
            case .directed: break
            }
        }
        mutating func visit(att: ATTItem, record: CaptureRecord) {}
        mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {}
        mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {}
        mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {}
    }

    static func payloads(of path: String) throws -> [[UInt8]] {
        var reader = try CaptureFile.open(path: path)
        var decoder = CaptureDecoder()
        var collector = Collector()
        while let record = reader.next() { decoder.decode(record, visitor: &collector) }
        return collector.payloads
    }

    @Test func agreesOnEveryReportOfTheSharedCaptures() throws {
        let directory = Paths.sharedCaptures.path
        guard FileManager.default.fileExists(atPath: directory) else {
            print("skipped: \(directory) is absent (shared captures not available)")
            return
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasSuffix(".btsnoop") }.sorted()  // the pcapng is an LL sniffer capture, not HCI
        #expect(!files.isEmpty)
        var reports = 0
        for file in files {
            for payload in try Self.payloads(of: directory + "/" + file) {
                reports += 1
                #expect(ADWalk.isWellFormed(payload) == AdvertisingData(payload).isWellFormed, "\(file): \(payload)")
            }
        }
        #expect(reports > 500)
    }

    /// Every known AD type at every data length 0…33 (well-formed and malformed shapes).
    @Test(arguments: [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x12, 0x14, 0x15, 0x16, 0x17,
                      0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1F, 0x20, 0x21, 0x24, 0xFF, 0x3D] as [UInt8])
    func agreesOnEveryLengthOfAType(type: UInt8) {
        for length in 0...33 {
            for last: UInt8 in [0x00, 0x01, 0x02, 0x7F] {
                var data: [UInt8] = [UInt8(length + 1), type] + [UInt8](repeating: 0x5A, count: length)
                if length > 0 { data[data.count - 1] = last }
                #expect(ADWalk.isWellFormed(data) == AdvertisingData(data).isWellFormed, "\(data)")
            }
        }
    }

    /// Random data: mostly plausible structures (lengths drawn small), some overruns, early
    /// terminations and arbitrary types.
    @Test func agreesOnRandomData() {
        var generator = SystemRandomNumberGenerator()
        let types: [UInt8] = [0x01, 0x02, 0x03, 0x06, 0x07, 0x09, 0x0A, 0x16, 0x17, 0x19, 0x1B, 0x20, 0x21, 0xFF, 0x42]
        var malformed = 0
        for _ in 0..<20_000 {
            var data: [UInt8] = []
            let target = Int.random(in: 0...40, using: &generator)
            while data.count < target {
                let length = UInt8.random(in: 0...12, using: &generator)
                data.append(length)
                data.append(types.randomElement(using: &generator)!)
                for _ in 0..<max(Int(length) - 1, 0) { data.append(UInt8.random(in: 0...3, using: &generator)) }
            }
            data = Array(data.prefix(target))
            let expected = AdvertisingData(data).isWellFormed
            if !expected { malformed += 1 }
            #expect(ADWalk.isWellFormed(data) == expected, "\(data)")
        }
        #expect(malformed > 1000)
        #expect(malformed < 19_000)
    }

    @Test func emptyAndPaddedDataAreWellFormed() {
        #expect(ADWalk.isWellFormed([]))
        #expect(ADWalk.isWellFormed([0x02, 0x01, 0x06, 0x00, 0xFF, 0xFF]))
        #expect(!ADWalk.isWellFormed([0x05, 0x09, 0x41]))
        #expect(!ADWalk.isWellFormed([0x02, 0x19, 0x00]))
    }
}
