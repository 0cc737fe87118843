import BLE
import Bluetooth
import Capture
import Foundation
import HCI
import Host
import MQTT
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 37 (fourth pass): every exit 0 is true. Each test failed on the code before it.
@Suite(.timeLimit(.minutes(2))) struct FourthPassTests {
    static let tag = "54:6C:0E:9A:3B:01"

    // MARK: 1. Leading zeros

    /// `write ST 041 01` wrote 0x0029 (decimal 41) with exit 0, `read ST 021` read 0x0015: a
    /// number with a leading zero is refused with both readings.
    @Test(arguments: [
        (["read", tag, "021"], "021: a handle is 0x… or decimal without a leading zero: did you mean 0x0021 or 21?"),
        (["write", tag, "041", "01"], "041: a handle is 0x… or decimal without a leading zero: did you mean 0x0041 or 41?"),
        (["subscribe", tag, "0037"], nil),
        (["subscribe", tag, "0x0025", "--write", "036=01"],
         "036: a handle is 0x… or decimal without a leading zero: did you mean 0x0036 or 36?"),
        (["read", tag, "--multiple", "0x0003,041"],
         "--multiple 041: a handle is 0x… or decimal without a leading zero: did you mean 0x0041 or 41?"),
        (["dump", "a.btsnoop", "--handle", "09"], "--handle 09: a handle is 0x… or decimal without a leading zero: did you mean 0x0009 or 9?"),
        (["read", tag, "012345"], "012345: a handle is 0x… or decimal without a leading zero: did you mean 12345?"),
    ] as [([String], String?)])
    func aLeadingZeroIsRefusedWithBothReadings(arguments: [String], message: String?) throws {
        if let message {
            #expect(throws: UsageError(message)) { try parse(arguments) }
        } else {
            // Four digits are a 16-bit UUID, as before.
            guard case .subscribe(_, let target, _, _, _, _) = try parse(arguments).command else { Issue.record(); return }
            #expect(target == .uuid(BluetoothUUID("0037")!))
        }
    }

    @Test func handlesWithoutALeadingZeroAndUUIDsAreReadAsBefore() throws {
        #expect(try AttributeSelector(parsing: "41") == .handle(41))
        #expect(try AttributeSelector(parsing: "0x0041") == .handle(0x41))
        #expect(try AttributeSelector(parsing: "12345") == .handle(12345))
        #expect(try AttributeSelector(parsing: "0041") == .uuid(BluetoothUUID("0041")!))
        #expect(try AttributeSelector(parsing: "00002902") == .uuid(BluetoothUUID("2902")!))
        #expect(try parseHandle("0", what: "--conn", allowZero: true) == 0)
    }

    @Test func theRefusalIsExit64AndNothingIsWritten() async {
        let write = await runInProcess(["--transport", "sim", "write", Self.tag, "041", "01"])
        #expect(write.code == 64, "\(write.stderr)")
        #expect(write.stderr.contains("did you mean 0x0041 or 41?"), "\(write.stderr)")
        #expect(write.stdout.isEmpty)
        let read = await runInProcess(["--transport", "sim", "read", Self.tag, "021"])
        #expect(read.code == 64, "\(read.stderr)")
        #expect(read.stdout.isEmpty)
    }

    // MARK: 2. Time options

    /// Every time option, as a command line with `VALUE` where the time goes.
    static let timeOptions: [[String]] = [
        ["--timeout", "VALUE", "--transport", "sim", "read", tag, "0x0003"],
        ["--transport", "sim", "subscribe", tag, "0x0025", "--duration", "VALUE"],
        ["--transport", "sim", "scan", "--duration", "VALUE"],
        ["--transport", "sim", "watch", tag, "--service", "battery", "--duration", "VALUE"],
        ["--transport", "sim", "sensortag", tag, "--duration", "VALUE"],
        ["--transport", "sim", "uart", "E8:7F:3A:21:9C:05/random", "--send", "x", "--duration", "VALUE"],
        ["--transport", "sim", "uart", "E8:7F:3A:21:9C:05/random", "--linger", "VALUE"],
        ["--transport", "sim", "peripheral", "sensortag", "--duration", "VALUE"],
        ["--transport", "sim", "gateway", "--config", "/nonexistent/gateway.json", "--duration", "VALUE"],
        ["monitor", "--duration", "VALUE"],
        ["dump", "/nonexistent/a.btsnoop", "--from", "VALUE"],
        ["dump", "/nonexistent/a.btsnoop", "--to", "VALUE"],
        ["--transport", "sim", "--interval", "VALUE", "read", tag, "0x0003"],
    ]

    /// `--timeout 1e10`, `--duration 1e16` and `--linger 1e17` crashed (SIGILL converting to
    /// Int64 milliseconds): each is a usage error naming the maximum, as are -1, nan and inf.
    @Test(arguments: ["1e300", "1e10", "1e17", "-1", "nan", "inf", "-inf"])
    func everyTimeOptionRefusesWhatItCannotWait(value: String) async {
        for template in Self.timeOptions {
            let arguments = template.map { $0 == "VALUE" ? value : $0 }
            let run = await runInProcess(arguments)
            #expect(run.code == 64, "\(arguments): \(run.stderr)")
            let limit = arguments.contains("--interval") ? "4000" : "31536000"
            #expect(run.stderr.contains(limit), "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty, "\(arguments)")
        }
    }

    /// The shell's `wait S` and `params … TIMEOUT_MS` and a line's `--timeout` read their times
    /// the same way.
    @Test func theShellsTimesAreBoundedToo() async {
        let script = ["wait 1e300", "wait nan", "wait -1", "wait inf", "read 0x0003 --timeout 1e300", "params 30 0 1e300"]
        let run = await runWithInput(script.joined(separator: "\n") + "\n", ["--transport", "sim", "shell", Self.tag])
        #expect(run.stderr.components(separatedBy: "up to 3600").count == 5, "\(run.stderr)")
        #expect(run.stderr.contains("up to 31536000"), "\(run.stderr)")
        #expect(run.stderr.contains("100 to 32000 ms"), "\(run.stderr)")
        #expect(run.code == 64, "\(run.stderr)")
    }

    @Test func theMaximumItselfIsTaken() async throws {
        #expect(try parseSeconds("31536000", "--duration") == 31_536_000)
        #expect(throws: UsageError("--duration needs a positive number of seconds up to 31536000 (365 days), not '31536000.5'")) {
            try parseSeconds("31536000.5", "--duration")
        }
        #expect(throws: UsageError("wait needs a positive number of seconds up to 3600, not '3601'")) {
            try parseSeconds("3601", "wait", maximum: 3600)
        }
        let read = await runInProcess(["--timeout", "31536000", "--transport", "sim", "read", Self.tag, "0x0003"])
        #expect(read.code == 0, "\(read.stderr)")
        // The counter notifies every 50 ms: one value ends it.
        let subscribe = await runInProcess(
            ["--transport", "sim:counter", "subscribe", "C0:DE:00:00:00:01/random", "0x000c", "--duration", "31536000", "--count", "1"])
        #expect(subscribe.code == 0, "\(subscribe.stderr)")
    }

    // MARK: 8. dump --summary with a filter

    static let captures = [Paths.fixture("synthetic-att-adv.btsnoop"), Paths.fixture("bumble-sensortag-session.btsnoop")]

    /// `--att-only` said `0 records shown` while counting ATT PDUs: the records shown are those
    /// whose line, ATT PDU or advertising report the filter shows — as many as the filtered JSON
    /// dump's distinct frames — and the text and JSON summaries agree.
    @Test(arguments: captures)
    func theShownLineAgreesWithTheCounts(capture: String) async throws {
        for filter in [["--att-only"], ["--adv-only"], ["--handle", "0x0003"], ["--handle", "0x0025"]] {
            let run = await runInProcess(["--json", "dump", "--summary"] + filter + [capture])
            #expect(run.code == 0, "\(run.stderr)")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            let records = summary["records"] as? Int ?? -1
            let att = summary["att"] as? Int ?? -1
            let adv = summary["advReports"] as? Int ?? -1
            // The frames the same filter shows in the JSON dump.
            let dump = await runInProcess(["--json", "dump"] + filter + [capture])
            let frames = Set(
                dump.stdout.split(separator: "\n").compactMap {
                    (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["frame"] as? Int
                })
            #expect(records == frames.count, "\(filter): \(records) records shown, the dump shows \(frames.count) frames")
            #expect((att + adv == 0) == (records == 0), "\(filter): \(records) records, \(att) ATT PDUs, \(adv) reports")
            let text = await runInProcess(["dump", "--summary"] + filter + [capture])
            #expect(text.stdout.hasPrefix("\(capture): \(records) records shown by \(filter.joined(separator: " "))"), "\(text.stdout.prefix(200))")
            #expect(text.stdout.contains("ATT PDUs: \(att) "), "\(text.stdout)")
        }
    }

    // MARK: 11. -w -, -w /dev/stdout, -w FILE.pcapng

    /// Runs the CLI in process with standard output in a file; its bytes, and standard error.
    static func runToBytes(_ arguments: [String]) async -> (code: Int32, stdout: [UInt8], stderr: String) {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let out = FileManager.default.temporaryDirectory.appendingPathComponent("fourth-\(UUID().uuidString).out").path
                let err = out + ".err"
                let outDescriptor = open(out, O_RDWR | O_CREAT | O_TRUNC, 0o600)
                let errDescriptor = open(err, O_RDWR | O_CREAT | O_TRUNC, 0o600)
                let code = runGATTClient(arguments, standardOutput: outDescriptor, standardError: errDescriptor)
                close(outDescriptor)
                close(errDescriptor)
                let stdout = (try? Array(Data(contentsOf: URL(fileURLWithPath: out)))) ?? []
                let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
                unlink(out)
                unlink(err)
                continuation.resume(returning: (code, stdout, stderr))
            }
        }
    }

    /// The records of a capture held in memory, with their octets copied.
    static func records(_ bytes: [UInt8]) throws -> [CaptureRecord] {
        var reader = try CaptureReader(bytes: bytes)
        return try reader.readAll().map { var record = $0; record.bytes = ArraySlice(Array($0.bytes)); return record }
    }

    static func recordsOf(_ path: String) throws -> [CaptureRecord] { try records(try CaptureFile.readAll(path: path)) }

    /// What a record is, whatever the file format carried it (a number is a position).
    static func essence(_ record: CaptureRecord) -> String {
        "\(record.kind) \(record.direction) \(record.timestamp) \(record.controllerIndex) \(Hex.encode(Array(record.bytes)))"
    }

    @Test func dashWWritesTheCaptureToStandardOutputAndTheCountToStandardError() async throws {
        let capture = Paths.fixture("bumble-sensortag-session.btsnoop")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fourth-\(UUID().uuidString).btsnoop").path
        defer { unlink(file) }
        let toFile = await Self.runToBytes(["dump", capture, "--att-only", "-w", file])
        #expect(toFile.code == 0, "\(toFile.stderr)")
        #expect(toFile.stdout.isEmpty, "the status line is not output")
        #expect(toFile.stderr.contains("records written to \(file)"), "\(toFile.stderr)")
        let expected = try Self.recordsOf(file).map(Self.essence)
        #expect(expected.count > 20)
        let piped = await Self.runToBytes(["dump", capture, "--att-only", "-w", "-"])
        #expect(piped.code == 0, "\(piped.stderr)")
        #expect(Array(piped.stdout.prefix(8)) == Array("btsnoop\0".utf8))
        #expect(try Self.records(piped.stdout).map(Self.essence) == expected)
        #expect(piped.stderr.contains("\(expected.count) of ") && piped.stderr.contains("written to standard output"), "\(piped.stderr)")
    }

    /// `-w /dev/stdout` with standard output a file: the status line overwrote the btsnoop
    /// magic. The built `gattclient`, as a child process (in process, /dev/stdout is the test's).
    @Test func dashWDevStdoutKeepsTheCaptureWhole() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: InterruptTests.binary), "no gattclient at \(InterruptTests.binary)")
        let capture = Paths.fixture("bumble-sensortag-session.btsnoop")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("fourth-\(UUID().uuidString).btsnoop").path
        defer { unlink(out) }
        let shell = try ChildProcess(
            ["sh", "-c", "exec \"$0\" dump \"$1\" --att-only -w /dev/stdout > \"$2\" 2>/dev/null", InterruptTests.binary, capture, out],
            standardOutput: .null)
        #expect(await shell.wait(timeout: 60) == 0)
        let bytes = try CaptureFile.readAll(path: out)
        #expect(Array(bytes.prefix(8)) == Array("btsnoop\0".utf8))
        let written = try Self.records(bytes)
        #expect(written.count > 20 && written.allSatisfy { $0.packetType == .acl })
    }

    /// `-w FILE.pcapng`: Section Header, Interface Description (link type 201), Enhanced Packet
    /// Blocks; the same records as btsnoop, read back by our reader and by tshark.
    @Test(arguments: captures)
    func dashWPcapngWritesPcapng(capture: String) async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("fourth-\(UUID().uuidString)").path
        defer { unlink(base + ".btsnoop"); unlink(base + ".pcapng") }
        for filter in [[], ["--att-only"]] {
            let btsnoop = await Self.runToBytes(["dump", capture, "-w", base + ".btsnoop"] + filter)
            let pcapng = await Self.runToBytes(["dump", capture, "-w", base + ".pcapng"] + filter)
            #expect(btsnoop.code == 0 && pcapng.code == 0, "\(btsnoop.stderr) \(pcapng.stderr)")
            var reader = try CaptureFile.open(path: base + ".pcapng")
            #expect(reader.format == .pcapng)
            _ = reader.next()
            #expect(reader.hciLinkType == .bluetoothHCIH4WithPHDR)
            let expected = try Self.recordsOf(base + ".btsnoop").map(Self.essence)
            #expect(!expected.isEmpty)
            #expect(try Self.recordsOf(base + ".pcapng").map(Self.essence) == expected, "\(filter)")
            // The decode of the pcapng is the decode of the btsnoop.
            let fromBTSnoop = await runInProcess(["--json", "dump", base + ".btsnoop"])
            let fromPcapng = await runInProcess(["--json", "dump", base + ".pcapng"])
            #expect(fromPcapng.code == 0 && fromPcapng.stdout == fromBTSnoop.stdout)
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tshark") else {
            print("skipped: tshark is not installed (the Wireshark read-back of -w FILE.pcapng)")
            return
        }
        let (code, text) = try await ChildProcess.run(["/usr/bin/tshark", "-r", base + ".pcapng", "-T", "fields", "-e", "frame.number"])
        #expect(code == 0)
        #expect(text.filter { $0 == 0x0A }.count == (try Self.recordsOf(base + ".btsnoop")).count)
    }

    @Test func aMonitorCapturePcapngKeepsItsNotes() throws {
        var writer = try PcapNGWriter(linkType: .bluetoothLinuxMonitor)
        let note = CaptureRecord(
            number: 1, timestamp: 1_700_000_000_123_456, direction: .unknown, kind: .note(MonitorOpcode(rawValue: 13)),
            bytes: ArraySlice(Array("hello".utf8)), controllerIndex: 0xFFFF)
        let command = CaptureRecord(
            number: 2, timestamp: 1_700_000_001_000_000, direction: .sent, kind: .packet(.command), bytes: [0x03, 0x0C, 0x00],
            controllerIndex: 1)
        try writer.append(note)
        try writer.append(command)
        let read = try Self.records(writer.bytes)
        #expect(read.map(Self.essence) == [note, command].map(Self.essence))
        var h4 = try PcapNGWriter()
        #expect(throws: HCIError.self) { try h4.append(note) }
    }

    @Test func dashWRefusesPcapWhichItWouldNotWrite() {
        #expect(throws: UsageError("-w writes btsnoop, or pcapng for a name ending .pcapng, not pcap: name it out.pcapng or out.btsnoop")) {
            try parse(["dump", "a.btsnoop", "-w", "out.pcap"])
        }
        #expect(throws: Never.self) { try parse(["dump", "a.btsnoop", "-w", "-"]) }
    }

    // MARK: 12. demo on sim only

    @Test(arguments: ["tcp:127.0.0.1:9", "sim:heartrate", "hci0", "replay:/nonexistent/x.btsnoop"])
    func demoRefusesAnotherTransport(transport: String) async {
        let run = await runInProcess(["--transport", transport, "demo"])
        #expect(run.code == 64, "\(run.stderr)")
        #expect(run.stderr.contains("demo runs on the built-in simulation only"), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        #expect(throws: Never.self) { try parse(["--transport", "sim", "demo"]) }
    }

    // MARK: 15. A UUID naming several attributes

    /// `read ST 2902` gave 12 values, `subscribe` said "names 12 characteristics", `write` said
    /// there was none: read prints them all with their handles, write and subscribe refuse with
    /// the same handles (exit 64).
    @Test func aUUIDNamingSeveralAttributesHasOneRule() async throws {
        let read = await runInProcess(["--json", "--transport", "sim", "read", Self.tag, "2902"])
        #expect(read.code == 0, "\(read.stderr)")
        let handles = read.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["handle"] as? Int
        }
        #expect(handles.count > 1)
        let text = await runInProcess(["--transport", "sim", "read", Self.tag, "2902"])
        #expect(text.stdout.split(separator: "\n").count == handles.count)
        #expect(handles.allSatisfy { text.stdout.contains("0x\(hex(UInt16($0), 4)): ") })
        for command in [["write", Self.tag, "2902", "0100"], ["subscribe", Self.tag, "2902"]] {
            let run = await runInProcess(["--transport", "sim"] + command)
            #expect(run.code == 64, "\(command): \(run.stderr)")
            #expect(run.stderr.contains("names \(handles.count) descriptors"), "\(command): \(run.stderr)")
            #expect(handles.allSatisfy { run.stderr.contains("0x\(hex(UInt16($0), 4))") }, "\(command): \(run.stderr)")
            #expect(run.stdout.isEmpty)
        }
    }

    @Test func theShellHasTheSameRule() async {
        let run = await runWithInput("subscribe 2902\nwrite 2902 0100\nread 2902\n", ["--transport", "sim", "shell", Self.tag])
        #expect(run.stderr.components(separatedBy: "names 12 descriptors").count == 3, "\(run.stderr)")
        #expect(run.stdout.split(separator: "\n").count >= 12, "\(run.stdout)")
    }

    // MARK: 16. help, TERM=dumb, a bond directory that is a file

    @Test func helpOnNoCommandIsAUsageError() async {
        let run = await runInProcess(["help", "nosuch"])
        #expect(run.code == 64, "\(run.stderr)")
        #expect(run.stderr.contains("no help on 'nosuch'"), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
        let near = await runInProcess(["help", "dupm"])
        #expect(near.code == 64 && near.stderr.contains("did you mean dump?"), "\(near.stderr)")
        let help = await runInProcess(["help", "dump"])
        #expect(help.code == 0)
        for option in ["-w OUT", "-w -", "--follow", "FILE|-", "--from", "--to", "-t", "-T", ".pcapng"] {
            #expect(help.stdout.contains(option), "help dump lacks \(option)")
        }
    }

    @Test func aDumbTerminalGetsNoCursorMovement() async throws {
        #expect(!TextStyle.movesCursor(term: "dumb"))
        #expect(TextStyle.movesCursor(term: "xterm-256color") && TextStyle.movesCursor(term: nil))
        // The built gattclient on a pseudo-terminal (script(1)), TERM=dumb, then TERM=xterm.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            print("skipped: script(1) is not installed (a pseudo-terminal for the child)")
            return
        }
        try #require(FileManager.default.isExecutableFile(atPath: InterruptTests.binary), "no gattclient at \(InterruptTests.binary)")
        func screen(_ term: String) async throws -> String {
            let command = "\(InterruptTests.binary) --no-cache --transport sim scan --duration 1.5"
            let child = try ChildProcess(["env", "TERM=\(term)", "/usr/bin/script", "-qec", command, "/dev/null"])
            let bytes = try await child.readToEnd(within: 60)
            #expect(await child.wait(timeout: 30) == 0)
            return String(decoding: bytes, as: UTF8.self)
        }
        let dumb = try await screen("dumb")
        #expect(dumb.contains("CC2650 SensorTag"), "\(dumb)")
        #expect(!dumb.contains("\u{1B}["), "no escape sequence on a dumb terminal: \(dumb.debugDescription)")
        let xterm = try await screen("xterm")
        #expect(xterm.contains("\u{1B}[2K"), "in-place updates on a terminal that can: \(xterm.debugDescription)")
    }

    @Test func aBondDirectoryThatIsAFileIsAnError() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fourth-bonds-\(UUID().uuidString)").path
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: file))
        defer { unlink(file) }
        let bonds = await runInProcess(["--transport", "sim", "--bonds", file, "bonds"])
        #expect(bonds.code == 1, "\(bonds.stderr)")
        #expect(bonds.stderr.contains(file) && bonds.stderr.contains("cannot be listed"), "\(bonds.stderr)")
        #expect(!bonds.stdout.contains("no bonds"))
        let unpair = await runInProcess(["--transport", "sim", "--bonds", file, "unpair", Self.tag])
        #expect(unpair.code == 1, "\(unpair.stderr)")
        #expect(unpair.stderr.contains(file), "\(unpair.stderr)")
        // An absent directory is no bonds, as before.
        let absent = await runInProcess(["--transport", "sim", "--bonds", file + "-absent", "bonds"])
        #expect(absent.code == 0 && absent.stdout.contains("no bonds"), "\(absent.stderr)")
    }

    // MARK: 14. Messages in the user's units

    @Test func messagesAreInTheUsersUnits() async throws {
        #expect(Duration.nanoseconds(24_999_558_992).roundedText == "25 s")
        #expect(Duration.milliseconds(2_500).roundedText == "2.5 s")
        #expect(Duration.milliseconds(30).roundedText == "30 ms")
        #expect(Duration.seconds(30).roundedText == "30 s")
        #expect(throws: UsageError("'0': odd number of hex digits (1); a value is whole octets, like 00 or 0000")) {
            try parseHexValue("0")
        }
        #expect(throws: UsageError("'012': odd number of hex digits (3); a value is whole octets, like 0012 or 0120")) {
            try parseHexValue("012")
        }
        #expect(
            ConnectionParameterPolicy.invalidity(intervalMin: 4, intervalMax: 4, latency: 0, timeout: 100)
                == "interval 5 ms outside 7.5–4000 ms")
        #expect(
            ConnectionParameterPolicy.invalidity(intervalMin: 24, intervalMax: 4000, latency: 0, timeout: 100)
                == "interval 30–5000 ms outside 7.5–4000 ms")
        #expect(
            ConnectionParameterPolicy.invalidity(intervalMin: 24, intervalMax: 40, latency: 0, timeout: 5)
                == "supervision timeout 50 ms outside 100–32000 ms")
        // libmosquitto's "Invalid function arguments provided." for a CA file that is not there.
        var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: 8883, clientID: "fourth")
        configuration.tls = true
        configuration.caFile = "/nonexistent/ca.pem"
        do {
            _ = try MQTTClient(configuration)
            Issue.record("a missing CA file was accepted")
        } catch {
            #expect(error.message.contains("/nonexistent/ca.pem") && error.message.contains("No such file"), "\(error)")
            #expect(!error.message.contains("Invalid function arguments"), "\(error)")
        }
        // `within 24.999558992 seconds`: rounded, and the scan for a bare address's type said.
        let absent = await runInProcess(["--no-cache", "--transport", "sim", "--timeout", "3", "read", "C0:00:00:00:00:09", "2A00"])
        #expect(absent.code == 1, "\(absent.stderr)")
        #expect(absent.stderr.contains(" s; the attempt was cancelled"), "\(absent.stderr)")
        #expect(absent.stderr.contains("scan for its address type"), "\(absent.stderr)")
        #expect(!absent.stderr.contains("seconds"), "\(absent.stderr)")
        // `listing the kernel's adapters: listing Bluetooth adapters`: one prefix (where the
        // kernel cannot list them; with Bluetooth it lists them, exit 0).
        let adapters = await runInProcess(["adapters"])
        if adapters.code != 0 {
            #expect(adapters.stderr.components(separatedBy: "listing").count == 2, "\(adapters.stderr)")
        }
        // `tcp:…: tcp:…: connect` from peripheral: the URI once, with what to check.
        let serve = await runInProcess(["--transport", "tcp:127.0.0.1:9", "peripheral", "sensortag", "--duration", "1"])
        #expect(serve.code == 69, "\(serve.stderr)")
        #expect(!serve.stderr.contains("tcp:127.0.0.1:9: tcp:127.0.0.1:9"), "\(serve.stderr)")
        #expect(serve.stderr.contains("is a controller listening on 127.0.0.1:9?"), "\(serve.stderr)")
        let interval = await runInProcess(["--transport", "sim", "--interval", "5", "read", Self.tag, "0x0003"])
        #expect(interval.code == 64)
        #expect(interval.stderr.contains("from 7.5 to 4000"), "\(interval.stderr)")
        #expect(!interval.stderr.contains("3200"), "\(interval.stderr)")
    }
}
