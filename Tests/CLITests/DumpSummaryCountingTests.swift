import Capture
import ATT
import Foundation
import Bluetooth
import HCI
import L2CAP
import Testing
@testable import GATTClientCLI
import TestSupport

/// `dump --summary` counts with `CaptureDecoder.countAll` (commands, ACL data, advertising
/// report events and notifications checked in place in the file buffer): its summary must equal
/// the one built record by record with `CaptureDecoder.count` and the one built from the full
/// `CaptureDecoder.decode` path, on real captures and on corrupted copies of them.
@Suite(.cpuBound) struct DumpSummaryCountingTests {
    /// The summary of `bytes` (a capture file), counted (`lean`: by `countAll`, and checked
    /// equal to `count` record by record) or fully decoded, as text and JSON.
    static func summary(of bytes: [UInt8], lean: Bool) throws -> [String] {
        if lean {
            let all = try summary(of: bytes, path: .countAll)
            #expect(all == (try summary(of: bytes, path: .count)))
            return all
        }
        return try summary(of: bytes, path: .decode)
    }

    enum Path { case decode, count, countAll }

    static func summary(of bytes: [UInt8], path: Path) throws -> [String] {
        var reader = try CaptureReader(bytes: bytes)
        var decoder = CaptureDecoder()
        var visitor = SummaryVisitor()
        switch path {
        case .decode: while let record = reader.next() { decoder.decode(record, visitor: &visitor) }
        case .count: while let record = reader.next() { decoder.count(record, visitor: &visitor) }
        case .countAll: decoder.countAll(&reader, visitor: &visitor)
        }
        var text = BufferedOutput.capturing()
        visitor.summary.write(json: false, file: "f", damage: reader.damage?.description, output: &text)
        var json = BufferedOutput.capturing()
        visitor.summary.write(json: true, file: "f", damage: reader.damage?.description, output: &json)
        text.flush()
        json.flush()
        return text.capturedLines + json.capturedLines
    }

    static func captures() throws -> [(String, [UInt8])] {
        var paths = ["bumble-sensortag-session.btsnoop", "synthetic-att-adv.btsnoop"].map { Paths.fixture($0) }
        let shared = Paths.sharedCaptures.path
        if FileManager.default.fileExists(atPath: shared) {
            paths += try FileManager.default.contentsOfDirectory(atPath: shared).filter { $0.hasSuffix(".btsnoop") }.sorted()
                .map { shared + "/" + $0 }
        } else {
            print("shared captures absent (\(shared)): only the package fixtures are compared")
        }
        return try paths.map { ($0, try CaptureFile.readAll(path: $0)) }
    }

    @Test func leanCountsEqualFullDecodeOnCaptures() throws {
        for (path, bytes) in try Self.captures() {
            let lean = try Self.summary(of: bytes, lean: true)
            #expect(lean == (try Self.summary(of: bytes, lean: false)), "\(path)")
            #expect(lean.count > 3)
        }
    }

    /// Random octets of the records changed (headers of records included): malformed packets,
    /// reports, AD, L2CAP lengths and ATT PDUs, all counted alike by both paths.
    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func leanCountsEqualFullDecodeOnCorruptedCaptures(seed: UInt64) throws {
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        func random() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        var compared = 0
        for (path, original) in try Self.captures() {
            var bytes = original
            // About one octet in 150 after the file header: most records stay intact, many are hit.
            for index in 16..<bytes.count where random() % 150 == 0 {
                bytes[index] = random() % 2 == 0 ? UInt8(truncatingIfNeeded: random()) : bytes[index] ^ 0x01
            }
            let lean = try Self.summary(of: bytes, lean: true)
            #expect(lean == (try Self.summary(of: bytes, lean: false)), "\(path) seed \(seed)")
            compared += 1
        }
        #expect(compared >= 2)
    }

    /// Hand-made records at the edges of the in-place checks.
    @Test func leanCountsEqualFullDecodeOnEdgeRecords() throws {
        var writer = try BTSnoopWriter()
        var time: Int64 = 1_700_000_000_000_000
        func add(_ type: HCIPacketType, _ bytes: [UInt8]) throws {
            time += 1000
            let direction: CaptureDirection = type == .command ? .sent : .received
            try writer.append(type, bytes, direction: direction, timestamp: time)
        }
        // Notifications: well-formed, handle 0, too short, opcode only.
        let pdus: [[UInt8]] = [[0x1B, 0x21, 0x00, 0x01], [0x1B, 0x00, 0x00, 0x01], [0x1B, 0x21], [0x1B], [0x1B, 0x00, 0x01]]
        for pdu in pdus {
            let frame = [UInt8(pdu.count), 0x00, 0x04, 0x00] + pdu
            try add(.acl, [0x40, 0x20, UInt8(frame.count), 0x00] + frame)
        }
        // Every opcode checked in place, at lengths 1–8 and around 21, handle zero and not,
        // whole and in two fragments; and decoded ones (Read By Type Request, Prepare Write).
        let opcodes: [UInt8] = [
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13,
            0x1B, 0x1D, 0x1E, 0x52, 0x08, 0x16,
        ]
        for opcode in opcodes {
            for length in Array(1...8) + [20, 21, 22] {
                for filler: UInt8 in [0x00, 0x06] {
                    let pdu = [opcode] + [UInt8](repeating: filler, count: length - 1)
                    let frame = [UInt8(pdu.count), 0x00, 0x04, 0x00] + pdu
                    try add(.acl, [0x40, 0x20, UInt8(frame.count), 0x00] + frame)
                    let head = Array(frame.prefix(3)), tail = Array(frame.dropFirst(3))
                    try add(.acl, [0x40, 0x20, UInt8(head.count), 0x00] + head)
                    try add(.acl, [0x40, 0x10, UInt8(tail.count), 0x00] + tail)
                }
            }
        }
        // ACL: bad handle, length mismatch, continuation without start, fragmented notification.
        try add(.acl, [0xFF, 0x2F, 0x04, 0x00, 0x00, 0x00, 0x04, 0x00])
        try add(.acl, [0x40, 0x20, 0x05, 0x00, 0x00, 0x00, 0x04, 0x00])
        try add(.acl, [0x40, 0x10, 0x02, 0x00, 0x1B, 0x01])
        try add(.acl, [0x40, 0x20, 0x06, 0x00, 0x05, 0x00, 0x04, 0x00, 0x1B, 0x21])
        try add(.acl, [0x40, 0x10, 0x03, 0x00, 0x00, 0x07, 0x08])
        // Commands: good, length mismatch, too short.
        try add(.command, [0x0C, 0x20, 0x02, 0x01, 0x00])
        try add(.command, [0x0C, 0x20, 0x03, 0x01, 0x00])
        try add(.command, [0x0C, 0x20])
        // Legacy reports: good, Data_Length 32, Num_Reports 0, trailing octet, AD overrun.
        let report: [UInt8] = [0x00, 0x00, 1, 2, 3, 4, 5, 6, 3, 0x02, 0x01, 0x06, 0xC0]
        try add(.event, [0x3E, UInt8(2 + report.count), 0x02, 0x01] + report)
        try add(.event, [0x3E, UInt8(2 + 2 * report.count), 0x02, 0x02] + report + report)
        try add(.event, [0x3E, 0x02, 0x02, 0x00])
        try add(.event, [0x3E, UInt8(3 + report.count), 0x02, 0x01] + report + [0x00])
        var long = report
        long[8] = 32
        try add(.event, [0x3E, UInt8(2 + long.count), 0x02, 0x01] + long)
        var overrun = report
        overrun[9] = 0x05
        try add(.event, [0x3E, UInt8(2 + overrun.count), 0x02, 0x01] + overrun)
        // Extended report: good, then one octet short.
        let extended: [UInt8] = [0x13, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 0x01, 0x00, 0xFF, 0x7F, 0xC0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0x02, 0x01, 0x06]
        try add(.event, [0x3E, UInt8(2 + extended.count), 0x0D, 0x01] + extended)
        try add(.event, [0x3E, UInt8(1 + extended.count), 0x0D, 0x01] + extended.dropLast())
        // Command Complete: with and without return parameters, too short, length mismatch.
        try add(.event, [0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00])
        try add(.event, [0x0E, 0x03, 0x01, 0x00, 0x00])
        try add(.event, [0x0E, 0x02, 0x01, 0x0C])
        try add(.event, [0x0E, 0x05, 0x01, 0x0C, 0x20, 0x00])
        try add(.event, [0x0E, 0x00])
        // Command Status: good, one octet short, one over.
        try add(.event, [0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20])
        try add(.event, [0x0F, 0x03, 0x00, 0x01, 0x0D])
        try add(.event, [0x0F, 0x05, 0x00, 0x01, 0x0D, 0x20, 0x00])
        // Number Of Completed Packets: one and two handles, none, handle 0x0EFF and 0x0F00,
        // Num_Handles disagreeing with the length.
        try add(.event, [0x13, 0x05, 0x01, 0x40, 0x00, 0x02, 0x00])
        try add(.event, [0x13, 0x09, 0x02, 0x40, 0x00, 0x02, 0x00, 0x41, 0x00, 0x01, 0x00])
        try add(.event, [0x13, 0x01, 0x00])
        try add(.event, [0x13, 0x05, 0x01, 0xFF, 0x0E, 0x02, 0x00])
        try add(.event, [0x13, 0x05, 0x01, 0x00, 0x0F, 0x02, 0x00])
        try add(.event, [0x13, 0x09, 0x02, 0x40, 0x00, 0x02, 0x00, 0x00, 0xF0, 0x01, 0x00])
        try add(.event, [0x13, 0x05, 0x02, 0x40, 0x00, 0x02, 0x00])
        try add(.event, [0x13, 0x00])
        // Other events go the full way.
        try add(.event, [0x05, 0x04, 0x00, 0x40, 0x00, 0x13])
        try add(.event, [0x3E, 0x01, 0x02])
        try add(.event, [0x3E])
        let bytes = writer.takeBytes()
        let lean = try Self.summary(of: bytes, lean: true)
        #expect(lean == (try Self.summary(of: bytes, lean: false)))
        #expect(lean.contains { $0.contains("malformed") })
    }

    /// `CaptureDecoder.inPlaceATTCheck` agrees with `ATTPDU(decoding:)` on every opcode it
    /// decides, at every length up to 24 octets, with zero, 0x06 and random filler.
    @Test func inPlaceATTCheckAgreesWithStrictDecode() {
        var state: UInt64 = 0x1234_5678
        var decided = Set<UInt8>()
        for opcode in 0...255 {
            for length in 1...24 {
                // Zeros, 0x06, random; ascending and descending octets (handle ranges both ways);
                // Length/Format octet 1, 2, 4 or 6 then random (whole lists of each entry size).
                for fill in 0..<9 {
                    var pdu = [UInt8(opcode)]
                    for index in 1..<length {
                        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                        let random = UInt8(truncatingIfNeeded: state >> 33)
                        switch fill {
                        case 0: pdu.append(0x00)
                        case 1: pdu.append(0x06)
                        case 2: pdu.append(random)
                        case 3: pdu.append(UInt8(index))
                        case 4: pdu.append(UInt8(255 - index))
                        default: pdu.append(index == 1 ? [1, 2, 4, 6][fill - 5] : random)
                        }
                    }
                    guard let check = pdu.withUnsafeBufferPointer({ CaptureDecoder.inPlaceATTCheck($0) }) else { continue }
                    decided.insert(UInt8(opcode))
                    let decoded = try? ATTPDU(decoding: pdu)
                    #expect(check.wellFormed == (decoded != nil), "opcode \(opcode) length \(length)")
                    var errorCode: ATTErrorCode?
                    if case .errorResponse(let response)? = decoded { errorCode = response.errorCode }
                    #expect(check.errorCode == errorCode, "opcode \(opcode) length \(length)")
                }
            }
        }
        #expect(
            decided == [
                0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13,
                0x1B, 0x1D, 0x1E, 0x52,
            ])
    }
}
