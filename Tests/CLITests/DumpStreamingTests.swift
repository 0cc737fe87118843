import Foundation
import Glibc
import Bluetooth
import Capture
import HCI
import Testing
import TestSupport
@testable import GATTClientCLI

/// Issue 25 at the command line: `dump -` (standard input), `--follow`, `-w` with the filters,
/// `--from`/`--to`, btmon's `-t`/`-T`, and the combinations that are refused.
@Suite("dump: stdin, --follow, -w, --from/--to, -t/-T", .serialized)
struct DumpStreamingTests {
    static let session = Paths.fixture("bumble-sensortag-session.btsnoop")

    static func temporaryPath(_ suffix: String) -> String {
        NSTemporaryDirectory() + "dump-\(UInt64.random(in: 0...UInt64.max))\(suffix)"
    }

    static func inProcess(_ path: String, json: Bool = false, _ configure: (inout DumpOptions) -> Void = { _ in }) throws -> [UInt8] {
        var options = DumpOptions(path: path)
        configure(&options)
        var output = BufferedOutput.capturing()
        var status = ""
        _ = try DumpCommand(options: options, json: json).run(output: &output) { status += $0 + "\n" }
        return output.captured + Array(status.utf8)
    }

    static func lineCount(_ bytes: [UInt8]) -> Int { bytes.filter { $0 == 0x0A }.count }

    /// Records wholly in `bytes` (a capture cut anywhere).
    static func wholeRecords(_ bytes: [UInt8]) -> Int {
        guard var reader = try? CaptureReader(bytes: bytes) else { return 0 }
        var count = 0
        while reader.next() != nil { count += 1 }
        return count
    }

    // MARK: - Standard input

    /// Half a capture on the pipe: the dump prints its records before the writer has written
    /// the rest (it flushes before it waits); then the whole output is the file's dump.
    @Test func standardInputIsDecodedAsItArrives() async throws {
        let bytes = try CaptureFile.readAll(path: Self.session)
        let expected = try Self.inProcess(Self.session)
        let child = try ChildProcess([InterruptTests.binary, "dump", "-"], stdinPipe: true)
        defer { child.kill() }
        let cut = bytes.count / 2
        try child.write(bytes: Array(bytes[..<cut]))
        // The records wholly in the first half come out while the pipe stays open.
        let firstHalf = Self.wholeRecords(Array(bytes[..<cut]))
        #expect(firstHalf > 10)
        let early = try await child.read(until: { Self.lineCount($0) >= firstHalf }, within: 30)
        try child.write(bytes: Array(bytes[cut...]))
        child.closeStandardInput()
        let rest = try await child.readToEnd(within: 30)
        #expect(Array(early + rest) == expected)
        #expect(await child.wait(timeout: 30) == 0)
    }

    /// Ctrl-C while standard input waits: the normal end (exit 0), what came is printed.
    @Test func interruptingStandardInputEndsItCleanly() async throws {
        let bytes = try CaptureFile.readAll(path: Self.session)
        let child = try ChildProcess([InterruptTests.binary, "dump", "-"], stdinPipe: true)
        defer { child.kill() }
        try child.write(bytes: Array(bytes.prefix(300)))
        let early = try await child.read(until: { Self.lineCount($0) >= Self.wholeRecords(Array(bytes.prefix(300))) }, within: 30)
        _ = Glibc.kill(child.pid, SIGINT)
        #expect(await child.wait(timeout: 30) == 0)
        let rest = try await child.readToEnd(within: 30)
        #expect(String(decoding: early + rest, as: UTF8.self).hasPrefix("#1 "))
    }

    @Test func standardInputSummaryNamesIt() async throws {
        let bytes = try CaptureFile.readAll(path: Self.session)
        let child = try ChildProcess([InterruptTests.binary, "dump", "-", "--summary"], stdinPipe: true)
        defer { child.kill() }
        try child.write(bytes: bytes)
        child.closeStandardInput()
        let text = String(decoding: try await child.readToEnd(within: 30), as: UTF8.self)
        #expect(text.hasPrefix("standard input: 110 records"))
        #expect(await child.wait(timeout: 30) == 0)
    }

    // MARK: - --follow

    /// A writer appends to the file while `dump --follow` runs: each part shows, and the whole
    /// is the file's dump. The follower is stopped by its pid.
    @Test func followShowsWhatAnotherProcessAppends() async throws {
        let bytes = try CaptureFile.readAll(path: Self.session)
        let expected = try Self.inProcess(Self.session)
        let path = Self.temporaryPath(".btsnoop")
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Begins empty: the follower waits for the header too.
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let child = try ChildProcess([InterruptTests.binary, "dump", "--follow", path])
        defer { child.kill() }
        let parts = [0, 16, 300, bytes.count / 2, bytes.count * 3 / 4, bytes.count]
        var output: [UInt8] = []
        for (start, end) in zip(parts, parts.dropFirst()) {
            let handle = try #require(FileHandle(forWritingAtPath: path))
            handle.seekToEndOfFile()
            handle.write(Data(bytes[start..<end]))
            try handle.close()
            let records = Self.wholeRecords(Array(bytes[..<end]))
            let lines = expected.split(separator: 0x0A)
            // The expected output up to the last record now whole.
            var count = 0
            var needed = 0
            for line in lines where !line.isEmpty {
                if line.first == UInt8(ascii: "#") { count += 1 }
                if count > records { break }
                needed += 1
            }
            let lineCount = needed
            output = try await child.read(after: output, until: { Self.lineCount($0) >= lineCount }, within: 30)
        }
        #expect(output == expected)
        #expect(child.poll() == nil, "the follower still runs at the end of the file")
        // Ctrl-C is its normal end: exit 0, nothing more to write.
        _ = Glibc.kill(child.pid, SIGINT)
        #expect(await child.wait(timeout: 30) == 0)
        #expect(try await child.readToEnd(within: 30).isEmpty)
    }

    // MARK: - -w

    /// A capture with an ATT notification in three ACL fragments, another connection's PDU and
    /// an advertising report between them.
    static func fragmentedCapture() throws -> [UInt8] {
        var writer = try BTSnoopWriter(datalink: .h4)
        var l2cap: [UInt8] = [23, 0, 0x04, 0x00, 0x1B, 0x25, 0x00]
        l2cap += (0..<20).map { UInt8($0) }
        func acl(_ handle: UInt16, _ boundary: UInt16, _ data: ArraySlice<UInt8>) -> [UInt8] {
            let field = handle | boundary << 12
            return [UInt8(field & 0xFF), UInt8(field >> 8), UInt8(data.count), 0] + data
        }
        let advertising: [UInt8] = [0x3E, 15, 0x02, 0x01, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 3, 0x02, 0x01, 0x06, 0xC5]
        let other: [UInt8] = [7, 0, 0x04, 0x00, 0x1B, 0x30, 0x00, 0xAA, 0xBB, 0xCC, 0xDD]
        try writer.append(.command, [0x03, 0x0C, 0x00], direction: .sent, timestamp: 1_000_000)
        try writer.append(.acl, acl(0x0040, 0b10, l2cap[0..<10]), direction: .received, timestamp: 2_000_000)
        try writer.append(.acl, acl(0x0041, 0b10, other[...]), direction: .received, timestamp: 3_000_000)
        try writer.append(.event, advertising, direction: .received, timestamp: 4_000_000)
        try writer.append(.acl, acl(0x0040, 0b01, l2cap[10..<20]), direction: .received, timestamp: 5_000_000)
        try writer.append(.acl, acl(0x0040, 0b01, l2cap[20...]), direction: .received, timestamp: 6_000_000)
        return writer.bytes
    }

    static func written(_ input: String, _ configure: (inout DumpOptions) -> Void) throws -> (records: [CaptureRecord], message: String) {
        let out = temporaryPath(".btsnoop")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let message = try inProcess(input) {
            configure(&$0)
            $0.writePath = out
        }
        var reader = try CaptureFile.open(path: out)
        let records = try reader.readAll()
        return (records.map { var r = $0; r.bytes = ArraySlice(Array($0.bytes)); return r }, String(decoding: message, as: UTF8.self))
    }

    @Test func eachFilterWritesTheRecordsItShowsWithEveryFragment() throws {
        let input = Self.temporaryPath(".btsnoop")
        try Data(try Self.fragmentedCapture()).write(to: URL(fileURLWithPath: input))
        defer { try? FileManager.default.removeItem(atPath: input) }
        func times(_ configure: (inout DumpOptions) -> Void) throws -> [Int64] {
            try Self.written(input, configure).records.map { $0.timestamp / 1_000_000 }
        }
        #expect(try times { _ in } == [1, 2, 3, 4, 5, 6])
        #expect(try times { $0.attOnly = true } == [2, 3, 5, 6])
        #expect(try times { $0.attributeHandle = 0x0025 } == [2, 5, 6])
        #expect(try times { $0.attributeHandle = 0x0030 } == [3])
        #expect(try times { $0.advOnly = true } == [4])
        #expect(try times { $0.connection = 0x0040 } == [2, 5, 6])
        // Bounds count from the first record (1 s). The PDU completed at 6 s is within them: its
        // first fragment (2 s) comes with it; one completed after --to brings none.
        #expect(try times { $0.attOnly = true; $0.from = .relative(microseconds: 1_500_000) } == [2, 3, 5, 6])
        #expect(try times { $0.attOnly = true; $0.to = .relative(microseconds: 2_500_000) } == [3])
        #expect(try times { $0.to = .relative(microseconds: 3_000_000) } == [1, 2, 3, 4])
        let (records, message) = try Self.written(input) { $0.attributeHandle = 0x0025 }
        #expect(records.count == 3 && message.hasPrefix("3 of 6 records written to "))
        // What was written decodes on its own to the same notification.
        let out = Self.temporaryPath(".btsnoop")
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try Self.inProcess(input) { $0.attributeHandle = 0x0025; $0.writePath = out }
        let original = try jsonObjects(try dump(input) { $0.attributeHandle = 0x0025 }.lines)
        let rewritten = try jsonObjects(try dump(out).lines)
        #expect(original.count == 1 && rewritten.count == 1)
        #expect(original.first?["value"] as? String == rewritten.first?["value"] as? String)
    }

    /// The session's ATT records written with --att-only: our decoder and tshark read the file,
    /// and every ATT PDU of the original is in it, in order.
    @Test func aWrittenFileReadsBackInOurDecoderAndTshark() async throws {
        let out = Self.temporaryPath(".btsnoop")
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try Self.inProcess(Self.session) { $0.attOnly = true; $0.writePath = out }
        func pdus(_ path: String) throws -> [String] {
            try jsonObjects(try dump(path) { $0.attOnly = true }.lines).map { "\($0["opcode"] ?? "") \($0["value"] ?? "")" }
        }
        let original = try pdus(Self.session)
        #expect(original.count > 20)
        #expect(try pdus(out) == original)
        var reader = try CaptureFile.open(path: out)
        #expect(reader.format == .btsnoop(.h4))
        let records = try reader.readAll()
        #expect(records.allSatisfy { $0.packetType == .acl })
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tshark") else {
            print("skipped: tshark is not installed (the Wireshark read-back of -w)")
            return
        }
        let (code, text) = try await ChildProcess.run(["/usr/bin/tshark", "-r", out, "-Y", "btatt", "-T", "fields", "-e", "frame.number"])
        #expect(code == 0)
        #expect(Self.lineCount(text) == original.count)
    }

    /// A new first fragment interrupting a partial frame begins the next frame (its fragments
    /// all written with it); a Disconnection Complete ends the link's partial frames (nothing of
    /// them is held or written later).
    @Test func interruptedAndDisconnectedFramesKeepTheirFragmentsRight() throws {
        var writer = try BTSnoopWriter(datalink: .h4)
        func acl(_ handle: UInt16, _ boundary: UInt16, _ data: ArraySlice<UInt8>) -> [UInt8] {
            let field = handle | boundary << 12
            return [UInt8(field & 0xFF), UInt8(field >> 8), UInt8(data.count), 0] + data
        }
        var notification: [UInt8] = [23, 0, 0x04, 0x00, 0x1B, 0x25, 0x00]
        notification += (0..<20).map { UInt8($0) }
        // 1: a frame begun, never finished; 2–3: a new frame interrupts it and completes.
        try writer.append(.acl, acl(0x0040, 0b10, notification[0..<10]), direction: .received, timestamp: 1_000_000)
        try writer.append(.acl, acl(0x0040, 0b10, notification[0..<15]), direction: .received, timestamp: 2_000_000)
        try writer.append(.acl, acl(0x0040, 0b01, notification[15...]), direction: .received, timestamp: 3_000_000)
        // 4: a frame begun on 0x0041, 5: its link ends, 6: the handle used again for a whole PDU.
        try writer.append(.acl, acl(0x0041, 0b10, notification[0..<10]), direction: .received, timestamp: 4_000_000)
        try writer.append(.event, [0x05, 0x04, 0x00, 0x41, 0x00, 0x13], direction: .received, timestamp: 5_000_000)
        try writer.append(.acl, acl(0x0041, 0b10, notification[...]), direction: .received, timestamp: 6_000_000)
        let input = Self.temporaryPath(".btsnoop")
        try Data(writer.bytes).write(to: URL(fileURLWithPath: input))
        defer { try? FileManager.default.removeItem(atPath: input) }
        let (records, _) = try Self.written(input) { $0.attOnly = true }
        #expect(records.map { $0.timestamp / 1_000_000 } == [2, 3, 6])
    }

    @Test func aMonitorPcapngIsWrittenAsMonitor() {
        #expect(FilteredWriteVisitor.datalink(format: .pcapng, hciLinkType: .bluetoothLinuxMonitor) == .monitor)
        #expect(FilteredWriteVisitor.datalink(format: .pcapng, hciLinkType: .bluetoothHCIH4WithPHDR) == .h4)
        #expect(FilteredWriteVisitor.datalink(format: .btsnoop(.monitor), hciLinkType: nil) == .monitor)
        #expect(FilteredWriteVisitor.datalink(format: .pcap(.bluetoothLinuxMonitor, nanosecond: false, bigEndian: false), hciLinkType: .bluetoothLinuxMonitor) == .monitor)
    }

    @Test func writingOverTheInputIsRefused() throws {
        let copy = Self.temporaryPath(".btsnoop")
        try Data(try CaptureFile.readAll(path: Self.session)).write(to: URL(fileURLWithPath: copy))
        defer { try? FileManager.default.removeItem(atPath: copy) }
        #expect(throws: HCIError.self) { _ = try Self.inProcess(copy) { $0.writePath = copy } }
        #expect(try CaptureFile.readAll(path: copy) == (try CaptureFile.readAll(path: Self.session)))
    }

    // MARK: - --from / --to

    @Test func timeBoundsShowOnlyTheirRecordsWhetherRelativeOrAbsolute() throws {
        var reader = try CaptureFile.open(path: Self.session)
        let firstRecord = reader.next()
        let first = try #require(firstRecord).timestamp
        let relative = try Self.inProcess(Self.session) {
            $0.from = .relative(microseconds: 2_000_000)
            $0.to = .relative(microseconds: 2_010_000)
        }
        let absolute = try Self.inProcess(Self.session) {
            $0.from = .absolute(unixMicroseconds: first + 2_000_000)
            $0.to = .absolute(unixMicroseconds: first + 2_010_000)
        }
        #expect(relative == absolute)
        let lines = String(decoding: relative, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("#") }
        #expect(lines.count > 5)
        for line in lines {
            let time = try #require(Double(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
            #expect(time >= 2.0 && time <= 2.01)
        }
        // The times stay those of the whole file (counted from its first record).
        let whole = String(decoding: try Self.inProcess(Self.session), as: UTF8.self)
        for line in lines { #expect(whole.contains(line)) }
    }

    @Test func rfc3339TimesParse() throws {
        #expect(parseRFC3339("1970-01-01T00:00:00Z") == 0)
        #expect(parseRFC3339("1970-01-01 00:00:01.5Z") == 1_500_000)
        #expect(parseRFC3339("2026-12-03T07:20:00.000001+01:00") == CaptureTime.unixMicroseconds(
            year: 2026, month: 12, day: 3, hour: 6, minute: 20, second: 0, microsecond: 1))
        #expect(parseRFC3339("2024-02-29T23:59:59-00:30") == CaptureTime.unixMicroseconds(
            year: 2024, month: 3, day: 1, hour: 0, minute: 29, second: 59, microsecond: 0))
        for bad in ["2023-02-29T00:00:00Z", "2026-12-03T24:00:00Z", "2026-12-03T06:20:00", "2026-12-03", "2026-12-03T06:20:00.1234567Z",
                    "2026-12-03T06:20:00.Z", "2026-13-01T00:00:00Z", "2026-12-03T06:20:00+1:00"] {
            #expect(parseRFC3339(bad) == nil, "\(bad)")
        }
        // The round trip through CaptureTime.
        #expect(parseRFC3339(CaptureTime.rfc3339(1_764_742_800_123_456)) == 1_764_742_800_123_456)
        #expect(throws: UsageError.self) { try parseTimeBound("-1", what: "--from") }
        #expect(throws: UsageError.self) { try parseTimeBound("yesterday", what: "--to") }
    }

    // MARK: - -t / -T

    @Test func btmonTimeOptionsShowLocalTime() async throws {
        var reader = try CaptureFile.open(path: Self.session)
        let firstRecord = reader.next()
        let first = try #require(firstRecord).timestamp
        let utc = CaptureTime.utcString(first)  // YYYY-MM-DD HH:MM:SS.uuuuuu
        for (flag, expected) in [("-t", String(utc.dropFirst(11))), ("-T", utc)] {
            let (code, output) = try await ChildProcess.run(["/usr/bin/env", "TZ=UTC", InterruptTests.binary, "dump", Self.session, flag])
            #expect(code == 0)
            let firstLine = String(decoding: output.prefix(while: { $0 != 0x0A }), as: UTF8.self)
            #expect(firstLine.hasPrefix("#1      " + expected + " < HCI Command: Reset"), "\(flag): \(firstLine)")
        }
        // Another zone moves the clock, not the fraction.
        let (_, tokyo) = try await ChildProcess.run(["/usr/bin/env", "TZ=Asia/Tokyo", InterruptTests.binary, "dump", Self.session, "-t"])
        let line = String(decoding: tokyo.prefix(while: { $0 != 0x0A }), as: UTF8.self)
        if FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/Asia/Tokyo") {
            let hour = (Int(utc.dropFirst(11).prefix(2))! + 9) % 24
            #expect(line.hasPrefix("#1      " + String(hour).leftPadded(2) + String(utc.dropFirst(13))), "\(line)")
        }
    }

    @Test func dashTIsTimeAfterDumpAndTransportBeforeACommand() throws {
        guard case .dump(let options) = try parse(["dump", "f.btsnoop", "-t"]).command else { Issue.record("not dump"); return }
        #expect(options.time == .timeOfDay)
        guard case .dump(let dated) = try parse(["dump", "-T", "f.btsnoop"]).command else { Issue.record("not dump"); return }
        #expect(dated.time == .dateAndTime && dated.path == "f.btsnoop")
        #expect(try parse(["-t", "sim", "scan"]).options.transport == "sim")
        guard case .dump(let written) = try parse(["dump", "-", "--att-only", "-w", "out.btsnoop", "--from", "2026-12-03T06:00:00Z"]).command
        else { Issue.record("not dump"); return }
        #expect(written.readsStandardInput && written.writePath == "out.btsnoop")
        #expect(written.from == .absolute(unixMicroseconds: parseRFC3339("2026-12-03T06:00:00Z")!))
    }

    @Test func combinationsThatCannotBeHonouredAreRefused() {
        for arguments in [
            ["dump", "f", "--follow", "--summary"],
            ["dump", "-", "--follow"],
            ["dump", "f", "-w", "o", "--summary"],
            ["--json", "dump", "f", "-w", "o"],
            ["dump", "f", "-w", "o", "-t"],
            ["dump", "f", "-w", "o.pcap"],
            ["--json", "dump", "f", "-T"],
            ["dump", "f", "--summary", "-t"],
            ["dump", "f", "--from", "5", "--to", "2"],
            ["dump", "f", "--from", "tomorrow"],
        ] {
            #expect(throws: UsageError.self, "\(arguments)") { try parse(arguments) }
        }
    }
}
