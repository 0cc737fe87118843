import ATT
import Bluetooth
import L2CAP
import Foundation
import Testing

@testable import HCI
@testable import Capture
import TestSupport

/// Issue 25: the streaming reader (a bounded window over a file, a pipe, a followed file) gives
/// exactly the records, record numbers, timestamps, damage and counts of the whole-file reader,
/// whatever the window size, and waits — without reading past — where a stream has nothing yet.
@Suite("Capture: streaming through a bounded window", .cpuBound)
struct CaptureStreamingTests {
    /// What a reader yields, to compare two readers.
    struct Outcome: Equatable {
        var records: [CaptureRecord] = []
        var recordCount = 0
        var skippedCount = 0
        var damage: CaptureDamage?
        var offset = 0

        init(_ reader: inout CaptureReader) {
            while let record = reader.next() {
                // A copy: the slice's indices are its window's.
                var copy = record
                copy.bytes = ArraySlice(Array(record.bytes))
                records.append(copy)
            }
            recordCount = reader.recordCount
            skippedCount = reader.skippedCount
            damage = reader.damage
            offset = reader.offset
        }
    }

    static func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "capture-stream-\(UInt64.random(in: 0...UInt64.max)).bin"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The whole-file outcome and the streamed one through `window`-octet windows; nil when the
    /// file does not open (then both must refuse it alike).
    static func both(_ bytes: [UInt8], window: Int) throws -> (whole: Outcome?, streamed: Outcome?, errors: (String?, String?)) {
        let path = try temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var whole: Outcome?
        var streamed: Outcome?
        var errors: (String?, String?) = (nil, nil)
        do {
            var reader = try CaptureReader(bytes: bytes)
            whole = Outcome(&reader)
        } catch { errors.0 = "\(error)" }
        do {
            var reader = try CaptureReader(input: CaptureInput(path: path), windowSize: window)
            streamed = Outcome(&reader)
            #expect(reader.windowGeneration >= (bytes.count > window ? 1 : 0))
        } catch { errors.1 = "\(error)" }
        return (whole, streamed, errors)
    }

    static var fixtures: [String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var paths = ["Fixtures/bumble-sensortag-session.btsnoop", "Fixtures/synthetic-att-adv.btsnoop", "Fixtures/recorded/sim-scan.btsnoop"]
            .map { root.appendingPathComponent($0).path }
        for name in ["smartpen-reads-extadv.btsnoop", "ubertooth-ll-le-sc-pairing.pcapng", "horizon-treadmill-ftms.btsnoop"] {
            let path = CaptureShared.directory + "/" + name
            if FileManager.default.fileExists(atPath: path) { paths.append(path) }
        }
        return paths
    }

    @Test(arguments: [1, 24, 97, 4096, CaptureReader.windowSize])
    func everyFixtureStreamsAsItReadsWhole(window: Int) throws {
        for path in Self.fixtures {
            let bytes = try CaptureFile.readAll(path: path)
            let (whole, streamed, errors) = try Self.both(bytes, window: window)
            #expect(errors.0 == errors.1, "\(path)")
            // (The ubertooth capture is a link-layer sniffer's: refused alike at open.)
            guard errors.0 == nil else { continue }
            #expect(whole != nil && whole == streamed, "\(path), window \(window)")
            #expect(whole?.records.isEmpty == false)
        }
    }

    @Test func truncationAnywhereIsTheSameDamage() throws {
        let bytes = try CaptureFile.readAll(path: Self.fixtures[0])
        // Every cut in the first records and then every 37th octet, through small windows.
        let cuts = Array(0..<200) + Array(stride(from: 200, to: bytes.count, by: 37))
        for cut in cuts {
            let (whole, streamed, errors) = try Self.both(Array(bytes.prefix(cut)), window: 50)
            #expect(errors.0 == errors.1, "cut at \(cut)")
            #expect(whole == streamed, "cut at \(cut)")
        }
    }

    @Test(arguments: [false, true])
    func pcapAndPcapngStreamAlike(bigEndian: Bool) throws {
        var pcap = CaptureFileBuilder(bigEndian: bigEndian)
        pcap.pcapHeader(linkType: 201)
        var ng = CaptureFileBuilder(bigEndian: bigEndian)
        ng.sectionHeader()
        ng.interface(linkType: 201, options: [(9, [9])])
        ng.interface(linkType: 1)
        for index in 0..<300 {
            let packet = capturePHDR(index % 2 == 0, .acl, captureACL + Array(repeating: UInt8(index & 0xFF), count: index % 40))
            pcap.pcapRecord(seconds: UInt32(index), fraction: 7, data: packet)
            ng.enhancedPacket(interface: index % 5 == 0 ? 1 : 0, ticks: UInt64(index) * 1_000_000_000, data: packet)
            if index % 50 == 0 { ng.block(0x0000_0BAD) { $0.raw(Array(repeating: 0xEE, count: 300)) } }
        }
        for window in [1, 30, 333] {
            for file in [pcap.bytes, ng.bytes] {
                let (whole, streamed, errors) = try Self.both(file, window: window)
                #expect(errors.0 == nil && errors.1 == nil)
                #expect(whole == streamed, "window \(window)")
                #expect((whole?.recordCount ?? 0) == 300)
            }
        }
    }

    @Test func aPcapngWithoutHCIInterfacesIsRefusedAtOpenAsWhole() throws {
        var ng = CaptureFileBuilder(bigEndian: false)
        ng.sectionHeader()
        ng.interface(linkType: 1)
        ng.enhancedPacket(interface: 0, ticks: 0, data: [1, 2, 3, 4])
        let (_, _, errors) = try Self.both(ng.bytes, window: CaptureReader.windowSize)
        #expect(errors.0 != nil && errors.0 == errors.1)
    }

    @Test func aStreamBlockLargerThanTheBoundIsDamageNotMemory() throws {
        var ng = CaptureFileBuilder(bigEndian: false)
        ng.sectionHeader()
        ng.interface(linkType: 201)
        ng.enhancedPacket(interface: 0, ticks: 0, data: capturePHDR(false, .command, captureReset))
        // A packet block header claiming 1 GiB: the streaming reader refuses to hold it.
        ng.raw([0x06, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0])
        let path = try Self.temporaryFile(ng.bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var reader = try CaptureReader(input: CaptureInput(path: path))
        #expect(reader.next() != nil)
        #expect(reader.next() == nil)
        #expect(reader.damage?.reason == .lengthTooLarge(field: "block total length", value: 1 << 30, maximum: CaptureReader.largestHeldBlock))
    }

    /// A pipe that has part of a capture: the reader returns what is whole and waits (not
    /// damage); the rest arrives and the writer closes: the reader goes on to the clean end.
    @Test func aPipeWaitsWhereItsWriterHasNotWrittenYet() throws {
        let bytes = try CaptureFile.readAll(path: Self.fixtures[0])
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let cut = bytes.count / 2 + 5
        func write(_ part: ArraySlice<UInt8>) {
            part.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = Foundation.write(ends[1], raw.baseAddress! + offset, raw.count - offset)
                    precondition(n > 0)
                    offset += n
                }
            }
        }
        write(bytes[..<cut])
        var reader = try CaptureReader(input: CaptureInput(fileDescriptor: ends[0], name: "test pipe"), windowSize: 64)
        var streamed: [CaptureRecord] = []
        while let record = reader.next() { streamed.append(record) }
        #expect(reader.isWaiting && reader.damage == nil)
        let firstPart = streamed.count
        write(bytes[cut...])
        close(ends[1])
        // Readable now (data, then hang-up): the wait returns at once.
        while reader.isWaiting, reader.waitForInput() {
            while let record = reader.next() { streamed.append(record) }
        }
        var whole = try CaptureReader(bytes: bytes)
        let expected = try whole.readAll()
        #expect(firstPart > 0 && firstPart < expected.count)
        #expect(streamed.map(\.number) == expected.map(\.number))
        #expect(streamed.map { Array($0.bytes) } == expected.map { Array($0.bytes) })
        #expect(reader.damage == nil && !reader.isWaiting)
    }

    /// A followed file: its current end is a place to wait; what is appended is read on the
    /// inotify event; a file deleted under the reader (its link count 0) ends it.
    @Test func aFollowedFileIsReadAsItGrowsAndEndsWhenDeleted() throws {
        let bytes = try CaptureFile.readAll(path: Self.fixtures[0])
        let path = try Self.temporaryFile(Array(bytes.prefix(100)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var reader = try CaptureReader(input: CaptureInput(path: path, follow: true), windowSize: 256)
        #expect(reader.isFollowing)
        var streamed: [CaptureRecord] = []
        while let record = reader.next() { streamed.append(record) }
        #expect(reader.isWaiting && reader.damage == nil)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(bytes[100...]))
        try handle.close()
        // The modification is already queued on the watch: the wait returns at once.
        let woke = reader.waitForInput()
        #expect(woke)
        while let record = reader.next() { streamed.append(record) }
        var whole = try CaptureReader(bytes: bytes)
        #expect(streamed.count == (try whole.readAll()).count)
        #expect(reader.isWaiting)
        try FileManager.default.removeItem(atPath: path)
        // Events of the append may still be queued before the deletion's: at most a few waits,
        // each returning at once.
        var waits = 0
        while reader.isWaiting, waits < 5, reader.waitForInput() {
            waits += 1
            #expect(reader.next() == nil)
        }
        #expect(!reader.isWaiting && reader.damage == nil && waits >= 1)
    }

    /// Octets written just before the file is deleted are still read (the reader holds the
    /// file open): the deletion ends the follow after them, not before.
    @Test func whatWasWrittenBeforeADeletionIsRead() throws {
        let bytes = try CaptureFile.readAll(path: Self.fixtures[0])
        let path = try Self.temporaryFile(Array(bytes.prefix(100)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var reader = try CaptureReader(input: CaptureInput(path: path, follow: true), windowSize: 256)
        var count = 0
        while reader.next() != nil { count += 1 }
        #expect(reader.isWaiting)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(bytes[100...]))
        try handle.close()
        try FileManager.default.removeItem(atPath: path)
        var waits = 0
        while reader.isWaiting, waits < 5, reader.waitForInput() {
            waits += 1
            while reader.next() != nil { count += 1 }
        }
        var whole = try CaptureReader(bytes: bytes)
        #expect(count == (try whole.readAll()).count)
        #expect(!reader.isWaiting && reader.damage == nil)
    }

    @Test func followingSomethingOtherThanAFileIsRefused() {
        #expect(throws: HCIError.self) { try CaptureInput(path: "/dev/null", follow: true) }
    }

    /// A pcapng block larger than a stream holds: one of a type it does not use is skipped
    /// through the windows (what follows is read), one it uses is damage; and a stream whose
    /// first 16 MiB show no HCI interface says at its end what opening it whole says.
    @Test func largePcapngBlocksAreSkippedOrRefused() throws {
        let large = CaptureReader.largestHeldBlock + 1000
        var ng = CaptureFileBuilder(bigEndian: false)
        ng.sectionHeader()
        ng.interface(linkType: 201)
        ng.enhancedPacket(interface: 0, ticks: 0, data: capturePHDR(false, .command, captureReset))
        ng.block(0x0000_0BAD) { $0.raw(Array(repeating: 0xEE, count: large)) }
        ng.enhancedPacket(interface: 0, ticks: 1_000_000, data: capturePHDR(true, .event, captureResetComplete))
        let (whole, streamed, errors) = try Self.both(ng.bytes, window: 4096)
        #expect(errors.0 == nil && errors.1 == nil)
        #expect(whole == streamed && whole?.recordCount == 2 && whole?.damage == nil)
        // The same block truncated: the same damage as the whole file's.
        let (cutWhole, cutStreamed, _) = try Self.both(Array(ng.bytes.prefix(ng.bytes.count - 200)), window: 4096)
        #expect(cutWhole?.damage == cutStreamed?.damage && cutWhole?.damage != nil)
        #expect(cutWhole?.records == cutStreamed?.records)

        var foreign = CaptureFileBuilder(bigEndian: false)
        foreign.sectionHeader()
        foreign.interface(linkType: 1)
        foreign.block(0x0000_0BAD) { $0.raw(Array(repeating: 0xEE, count: large)) }
        foreign.enhancedPacket(interface: 0, ticks: 0, data: [1, 2, 3, 4])
        let path = try Self.temporaryFile(foreign.bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: HCIError.self) { try CaptureReader(bytes: foreign.bytes) }
        var reader = try CaptureReader(input: CaptureInput(path: path))
        #expect(reader.next() == nil)
        #expect(reader.damage.map { "\($0)".contains("link type 1 (ETHERNET) is not supported") } == true)
    }

    @Test func aFollowedFileThatShrinksIsDamage() throws {
        let bytes = try CaptureFile.readAll(path: Self.fixtures[0])
        let path = try Self.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var reader = try CaptureReader(input: CaptureInput(path: path, follow: true))
        while reader.next() != nil {}
        #expect(reader.isWaiting)
        #expect(truncate(path, 40) == 0)
        let woke = reader.waitForInput()
        #expect(!woke)
        #expect(reader.damage.map { "\($0)".contains("shrank to 40 octets") } == true)
    }

    /// The counting path over a stream (a window per few records) counts what the whole file
    /// counts.
    @Test func countingAcrossWindowsMatchesTheWholeFile() throws {
        for path in Self.fixtures where !path.hasSuffix(".pcapng") {
            let bytes = try CaptureFile.readAll(path: path)
            var whole = try CaptureReader(bytes: bytes)
            var wholeVisitor = RecordingCounter()
            var decoder = CaptureDecoder()
            decoder.countAll(&whole, visitor: &wholeVisitor)
            var streamed = try CaptureReader(input: CaptureInput(path: path), windowSize: 113)
            var streamedVisitor = RecordingCounter()
            decoder = CaptureDecoder()
            decoder.countAll(&streamed, visitor: &streamedVisitor)
            #expect(wholeVisitor.calls == streamedVisitor.calls, "\(path)")
            #expect(wholeVisitor.calls.count > 10)
            #expect(whole.damage == streamed.damage)
        }
    }
}

/// Every counting and visitor call, as text.
struct RecordingCounter: CaptureCountingVisitor {
    var calls: [String] = []

    mutating func count(command opcode: HCIOpcode, record: CaptureRecord.Header) { calls.append("cmd \(opcode) #\(record.number)") }
    mutating func count(aclPacket record: CaptureRecord.Header) { calls.append("acl #\(record.number) \(record.range.count)") }
    mutating func count(event code: HCIEventCode, record: CaptureRecord.Header) { calls.append("evt \(code) #\(record.number)") }
    mutating func count(advertisingReportEvent subevent: LESubeventCode, record: CaptureRecord.Header) {
        calls.append("adv \(subevent) #\(record.number)")
    }
    mutating func count(advertisingReport subevent: LESubeventCode, data: UnsafeBufferPointer<UInt8>, record: CaptureRecord.Header) {
        calls.append("report \(Array(data)) #\(record.number)")
    }
    mutating func count(att opcode: ATTOpcode, wellFormed: Bool, errorCode: ATTErrorCode?, record: CaptureRecord.Header) {
        calls.append("att \(opcode) \(wellFormed) \(String(describing: errorCode)) #\(record.number)")
    }
    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        calls.append("record #\(record.number) \(String(describing: packet)) \(String(describing: error))")
    }
    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) { calls.append("report item #\(record.number)") }
    mutating func visit(att: ATTItem, record: CaptureRecord) { calls.append("att item #\(record.number) \(att.bytes)") }
    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {
        calls.append("l2cap #\(record.number)")
    }
    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) { calls.append("drop #\(record.number)") }
    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {
        calls.append("sdu drop #\(record.number)")
    }
}
