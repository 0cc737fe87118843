import BLE
import Foundation
import Testing
import Host
import HCI
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

@testable import GATTClientCLI

/// Issue 19 (gattclient, second pass), on the simulated SensorTag: waits say what they wait for,
/// and lookups that find nothing say what the argument was taken for.
@Suite("gattclient second pass: feedback and messages on sim", .serialized, .timeLimit(.minutes(2)))
struct SecondPassMessageTests {
    static let tag = "54:6C:0E:9A:3B:01"

    /// Item 1: `subscribe` says what it subscribed to and waits for, and how many came in how
    /// long; `--write` switches the sensor on first, in the same connection; `--json` has both as
    /// `event` lines.
    @Test func subscribeSaysWhatItWaitsFor() async throws {
        let run = await runInProcess([
            "--transport", "sim", "subscribe", Self.tag, "0x0025", "--write", "0x0029=01", "--count", "2", "--duration", "20",
        ])
        #expect(run.code == 0, "\(run.stderr)")
        #expect(run.stderr.contains(
            "gattclient: subscribed to 0x0025 (SensorTag IR Temperature Data (F000AA01-0451-4000-B000-000000000000)), "
                + "CCCD 0x0026; waiting for notifications… (Ctrl-C to stop)"), "\(run.stderr)")
        #expect(run.stderr.contains("gattclient: 2 notifications in "), "\(run.stderr)")
        #expect(run.stdout.split(separator: "\n").count == 2, "two readings, because --write switched the sensor on: \(run.stdout)")

        let json = await runInProcess([
            "--json", "--transport", "sim", "subscribe", Self.tag, "F000AA01-0451-4000-B000-000000000000",
            "--write", "F000AA02-0451-4000-B000-000000000000=01", "--count", "1", "--duration", "20",
        ])
        #expect(json.code == 0, "\(json.stderr)")
        let lines = json.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == #"{"kind":"event","event":"subscribed","handle":37,"uuid":"F000AA01-0451-4000-B000-000000000000","cccd":38}"#, "\(lines)")
        #expect(lines.last?.hasPrefix(#"{"kind":"event","event":"ended","notifications":1,"seconds":"#) == true, "\(lines)")
        #expect(lines.count == 3)
    }

    @Test func subscribeWriteNeedsAValue() throws {
        #expect(throws: UsageError("--write needs HANDLE=HEX or UUID=HEX (like 0x0024=01 or F000AA02-0451-4000-B000-000000000000=01), not '0x0029'")) {
            try parse(["subscribe", Self.tag, "0x0025", "--write", "0x0029"])
        }
        #expect(
            try parse(["subscribe", Self.tag, "0x0025", "--write", "0x0029=01", "--write", "2A19=0102"]).command
                == .subscribe(
                    PeerAddress(Self.tag)!, .handle(0x25), indicate: false, count: nil, duration: nil,
                    writes: [SubscribeWrite(target: .handle(0x29), value: [1]), SubscribeWrite(target: .uuid(.bit16(0x2A19)), value: [1, 2])]))
    }

    /// Item 7: four digits without `0x` are a UUID; when none matches, the message says so and
    /// how to write the handle; a service UUID is said to be a service; read, write and
    /// subscribe say "no characteristic" alike.
    @Test(arguments: [
        (["read", tag, "0021"], "gattclient: no characteristic 0021 on 54:6C:0E:9A:3B:01 (0021 was read as a UUID; for a handle write 0x0021)"),
        (["read", tag, "1234"], "gattclient: no characteristic 1234 on 54:6C:0E:9A:3B:01 (1234 was read as a UUID; for a handle write 0x1234)"),
        (["read", tag, "180F"], "gattclient: 180F is a service (Battery), not a characteristic; `gattclient services 54:6C:0E:9A:3B:01` lists its characteristics"),
        (["write", tag, "180F", "01"], "gattclient: 180F is a service (Battery), not a characteristic"),
        (["subscribe", tag, "0021"], "gattclient: no characteristic 0021 on 54:6C:0E:9A:3B:01 (0021 was read as a UUID"),
        (["write", tag, "2A37", "01"], "gattclient: no characteristic Heart Rate Measurement (2A37) on 54:6C:0E:9A:3B:01"),
    ])
    func lookupsThatFindNothing(arguments: [String], message: String) async {
        let run = await runInProcess(["--transport", "sim"] + arguments)
        #expect(run.code == 1, "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    /// Item 8: a handle that holds no notifiable value says what it holds; handles print
    /// lower-case.
    @Test(arguments: [
        (["subscribe", tag, "0x0029"], "gattclient: 0x0029 (SensorTag IR Temperature Config (F000AA02-0451-4000-B000-000000000000)) cannot notify: its properties are read, write"),
        (["subscribe", tag, "0x000a"], "gattclient: 0x000a (Service Changed (2A05)) cannot notify: its properties are indicate; subscribe with --indicate"),
        (["subscribe", tag, "0x0026"], "gattclient: no characteristic value at handle 0x0026 (no characteristic declaration at 0x0025)"),
        (["subscribe", tag, "2A00"], "gattclient: 0x0003 (Device Name (2A00)) cannot notify: its properties are read"),
    ])
    func subscribeToWhatCannotNotify(arguments: [String], message: String) async {
        let run = await runInProcess(["--transport", "sim"] + arguments)
        #expect(run.code == 1, "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }
}

/// Issue 19 item 5: `scan` off a terminal marks lines NEW/CHG with a time and prints a device
/// again only for a change worth it; it ends with the count; on a terminal the countdown ticks
/// and the table ends clean; `--all-reports` decodes the AD structures.
@Suite("gattclient scan: NEW/CHG lines, ticking countdown, decoded reports", .serialized, .timeLimit(.minutes(2)))
struct ScanSecondPassTests {
    @Test func pipedScanMarksNewAndChangedDevicesOnce() async throws {
        let run = await runInProcess(["--transport", "sim", "scan", "--duration", "2"])
        #expect(run.code == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        // Each device: NEW (advertising data), CHG (its name from the scan response), and nothing
        // for the many repeated advertisements of two seconds.
        #expect(lines.filter { $0.hasPrefix("NEW ") }.count == 2, "\(lines)")
        #expect(lines.filter { $0.hasPrefix("CHG ") }.count == 2, "\(lines)")
        #expect(lines.count == 5, "\(lines)")
        #expect(lines.last == "2 devices")
        #expect(lines.first.map { $0.range(of: #"^NEW \d+\.\d{3}  "#, options: .regularExpression) != nil } == true, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("CHG ") && $0.contains("\"CC2650 SensorTag\"") && $0.hasSuffix("(name changed)") }, "\(lines)")
        #expect(try parse(["scan", "--rssi-changes"]).command == .scan({ var o = ScanCommandOptions(); o.rssiChanges = true; return o }()))
    }

    /// Issue 37 item 13: a change nobody sees on the line (an empty scan response arriving, the
    /// data's order of flags) is no CHG; a change names its field.
    @Test func onlyShownChangesAreChanges() {
        var device = DiscoveredDevice(address: BluetoothAddress("C0:00:00:00:00:01")!, addressType: .random)
        device.advertisingData = [0x02, 0x01, 0x06]
        device.isConnectable = true
        let before = ScanCommand.Shown(device, identity: nil, rssi: false)
        var withEmptyResponse = device
        withEmptyResponse.scanResponseData = []
        withEmptyResponse.rssi = -40
        #expect(ScanCommand.Shown(withEmptyResponse, identity: nil, rssi: false) == before)
        var named = device
        named.summary = AdvertisingData([0x02, 0x01, 0x06, 0x04, 0x09, 0x41, 0x42, 0x43]).summary
        #expect(ScanCommand.Shown(named, identity: nil, rssi: false).changes(from: before) == ["name"])
        #expect(ScanCommand.Shown(withEmptyResponse, identity: nil, rssi: true).changes(from: ScanCommand.Shown(device, identity: nil, rssi: true)) == ["rssi"])
    }

    /// Issue 37 item 18: `scan --manufacturer ID` keeps the devices whose Manufacturer Specific
    /// Data carries that Company Identifier; the ID is read one way only.
    @Test func manufacturerFilter() throws {
        var apple = DiscoveredDevice(address: BluetoothAddress("C0:00:00:00:00:02")!, addressType: .random)
        apple.summary = AdvertisingData([0x05, 0xFF, 0x4C, 0x00, 0x02, 0x15]).summary
        let plain = DiscoveredDevice(address: BluetoothAddress("C0:00:00:00:00:03")!, addressType: .random)
        var filter = ScanFilter()
        filter.manufacturer = 0x004C
        #expect(filter.matches(apple) && !filter.matches(plain))
        for (text, id) in [("0x004C", UInt16(0x004C)), ("76", 76), ("0", 0), ("0xffff", 0xFFFF)] {
            guard case .scan(let options) = try parse(["scan", "--manufacturer", text]).command else { Issue.record("not a scan"); continue }
            #expect(options.manufacturer == id, "\(text)")
        }
        for text in ["076", "0x", "65536", "apple", "-1"] {
            #expect(throws: UsageError.self, "\(text)") { _ = try parse(["scan", "--manufacturer", text]) }
        }
    }

    @Test func allReportsDecodeTheirStructures() async {
        let run = await runInProcess(["--transport", "sim", "scan", "--duration", "1", "--all-reports"])
        #expect(run.code == 0)
        #expect(run.stdout.contains("    Complete Local Name: CC2650 SensorTag"), "\(run.stdout)")
        #expect(run.stdout.contains("    Flags: LE General Discoverable, BR/EDR Not Supported"))
    }

    @Test func theCountdownTicksOnATerminal() async {
        let terminal = await TerminalAndFailureTests.runOnTerminal(["--transport", "sim", "scan", "--duration", "3.5"])
        #expect(terminal.code == 0)
        // The status line is redrawn each second, devices or not (under load a tick may be late).
        let ticks = ["4 s left", "3 s left", "2 s left", "1 s left"].filter { terminal.screen.contains($0) }
        #expect(ticks.count >= 2, "\(ticks): \(terminal.screen.suffix(300))")
        #expect(terminal.screen.contains("2 devices, done"), "the table ends clean: \(terminal.screen.suffix(200))")
    }
}

/// Issue 19 item 6: Ctrl-C ends every command after its cleanup with exit 130, except where it is
/// the normal end (scan, subscribe, uart: exit 0). The built `gattclient`, as a child process.
@Suite("gattclient and Ctrl-C", .serialized, .timeLimit(.minutes(2)))
struct InterruptTests {
    /// The `gattclient` built next to this test bundle.
    static var binary: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("gattclient").path
    }

    /// Runs gattclient with `arguments`, sends SIGINT after `after` seconds; the exit code and the
    /// seconds from the signal to the exit (the wait holds a thread of its own).
    static func interrupt(_ arguments: [String], after: Double) async throws -> (code: Int32?, seconds: Double) {
        let child = try ChildProcess([binary, "--no-cache"] + arguments, standardOutput: .null, standardError: .null)
        defer { child.kill() }
        try await Task.sleep(for: .milliseconds(Int64(after * 1000)))
        let sent = ContinuousClock.now
        kill(child.pid, SIGINT)
        let code = await child.wait(timeout: 20)
        let elapsed = ContinuousClock.now - sent
        return (code, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    @Test func ctrlCEndsEveryCommand() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.binary), "no gattclient at \(Self.binary)")
        for (arguments, code) in [
            (["demo"], Int32(130)),
            (["--transport", "sim", "read", "C0:00:00:00:00:09/random", "2A00"], 130),
            (["--transport", "sim", "sensortag", "54:6C:0E:9A:3B:01", "--duration", "30"], 130),
            (["--transport", "sim", "scan", "--duration", "30"], 0),
            (["--transport", "sim", "subscribe", "54:6C:0E:9A:3B:01", "0x0025"], 0),
        ] {
            let result = try await Self.interrupt(arguments, after: 2)
            #expect(result.code == code, "\(arguments): \(String(describing: result.code))")
            #expect(result.seconds < 10, "\(arguments) took \(result.seconds) s after Ctrl-C")
        }
    }
}

/// Issue 19 item 12: one JSON schema — every `--json` line of every command carries `kind`; a
/// read prints one `value` line per handle however asked; `services` has `addressType`; a usage
/// error under `--json` is an `error` line too.
@Suite("gattclient --json: one schema", .serialized, .timeLimit(.minutes(3)))
struct JSONSchemaTests {
    static let tag = "54:6C:0E:9A:3B:01"
    static let board = "E8:7F:3A:21:9C:05/random"
    static let kinds: Set<String> = [
        "device", "report", "services", "value", "write", "notification", "reading", "event", "error", "summary", "bond",
        "answer", "info",
    ]

    static func lines(_ arguments: [String]) async throws -> [[String: Any]] {
        let run = await runInProcess(["--json", "--no-cache", "--transport", "sim"] + arguments)
        return try run.stdout.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(arguments): \(line)")
        }
    }

    @Test(arguments: [
        (["scan", "--duration", "1"], ["device"]),
        (["scan", "--duration", "1", "--all-reports"], ["report"]),
        (["services", tag], ["services"]),
        (["info", tag], ["info"]),
        (["read", tag, "0x0003"], ["value"]),
        (["read", tag, "2A29"], ["value"]),
        (["read", tag, "--multiple", "0x0003,0x001a"], ["value"]),
        (["write", tag, "0x0029", "00"], ["write"]),
        (["subscribe", tag, "0x0025", "--write", "0x0029=01", "--count", "1"], ["event", "notification"]),
        (["sensortag", tag, "--sensors", "ir", "--count", "1"], ["reading"]),
        (["uart", board, "--send", "hi"], ["notification"]),
        (["read", tag, "0x0199"], ["error"]),
        (["bonds"], []),
        (["read", tag], ["error"]),
    ])
    func everyLineHasItsKind(arguments: [String], expected: [String]) async throws {
        let objects = try await Self.lines(arguments)
        let kinds = objects.map { $0["kind"] as? String ?? "(none)" }
        #expect(kinds.allSatisfy { Self.kinds.contains($0) }, "\(arguments): \(kinds)")
        #expect(Set(kinds) == Set(expected), "\(arguments): \(kinds)")
    }

    @Test func readPrintsOneValueLinePerHandle() async throws {
        let multiple = try await Self.lines(["read", Self.tag, "--multiple", "0x0003,0x001a"])
        #expect(multiple.map { $0["handle"] as? Int } == [3, 26])
        let byUUID = try await Self.lines(["read", Self.tag, "2A29"])
        #expect(byUUID.first?["uuid"] as? String == "2A29")
        #expect(byUUID.first?["name"] as? String == "Manufacturer Name String")
        #expect(byUUID.first?["decoded"] as? String == "Texas Instruments")
        let services = try await Self.lines(["services", Self.tag])
        #expect(services.first?["addressType"] as? String == "public")
        let usage = try await Self.lines(["read", Self.tag])
        let error = try #require(usage.first?["error"] as? [String: Any])
        #expect(error["kind"] as? String == "usage")
    }
}

/// Issue 19 item 14: the overview starts with `gattclient demo`, lists the simulated devices and
/// explains every global option; every example of every command's help runs on `sim` (and is run
/// here) or says what it needs.
@Suite("gattclient --help: examples that run", .serialized, .timeLimit(.minutes(5)))
struct HelpExampleTests {
    /// Every example line: `gattclient …` (with an `echo … |` before it, or a `# needs …` after).
    static var examples: [(command: String, line: String)] {
        var found: [(String, String)] = []
        for (name, text) in commandHelpText.sorted(by: { $0.key < $1.key }) {
            guard let start = text.range(of: "examples:\n") else { continue }
            for line in text[start.upperBound...].split(separator: "\n") {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("gattclient ") || trimmed.hasPrefix("echo ") { found.append((name, trimmed)) }
            }
        }
        return found
    }

    @Test func theOverviewStartsWithTheDemoAndExplainsEveryGlobalOption() {
        #expect(usageText.hasPrefix("try `gattclient demo`"))
        for device in ["54:6C:0E:9A:3B:01", "E8:7F:3A:21:9C:05/random", "C4:7E:11:09:2A:1C/random"] {
            #expect(usageText.contains(device), "\(device)")
        }
        for option in globalOptionNames where !["-t", "-h", "-vv", "--verbose"].contains(option) {
            #expect(usageText.contains(option), "\(option) is not explained")
        }
    }

    @Test func everyExampleRunsOnSimOrSaysWhatItNeeds() async throws {
        let examples = Self.examples
        #expect(examples.count >= 25, "\(examples.count) examples")
        var ran = 0
        for (command, line) in examples {
            let needs = line.contains("  # ")
            if !line.contains("--transport sim") || line.hasPrefix("echo ") || needs {
                // Not runnable here: it must say what it needs (or be sim with standard input).
                #expect(needs || (line.hasPrefix("echo ") && line.contains("--transport sim")), "\(command): \(line)")
                // It still parses.
                let words = line.split(separator: "|").last!.split(separator: "#").first!.split(separator: " ").map(String.init)
                #expect(throws: Never.self, "\(command): \(line)") { try parse(Array(words.dropFirst())) }
                continue
            }
            let words = line.split(separator: " ").map(String.init)
            let run = await runInProcess(Array(words.dropFirst()))
            #expect(run.code == 0, "\(line): exit \(run.code), \(run.stderr)")
            ran += 1
        }
        #expect(ran >= 18, "\(ran) examples ran")
    }
}

/// Issue 20 (in part): `info ADDR` compared with the emulated devices' databases.
@Suite("gattclient info", .serialized, .timeLimit(.minutes(2)))
struct InfoCommandTests {
    @Test func theSensorTagSaysWhatItIs() async throws {
        let run = await runInProcess(["--no-cache", "--transport", "sim", "info", "54:6C:0E:9A:3B:01"])
        #expect(run.code == 0, "\(run.stderr)")
        for line in [
            "54:6C:0E:9A:3B:01 (public address), ATT_MTU 23",
            "  name                  CC2650 SensorTag",
            "  appearance            0x0000 Unknown",
            "  preferred parameters  interval 100 ms–200 ms, latency 0, supervision timeout 10000 ms",
            "  manufacturer          Texas Instruments",
            "  system ID             manufacturer 0xfffe9a3b01, OUI 54:6C:0E",
            "  battery               100 %",
            // 30 ms at first; the SensorTag asks for 100–200 ms a few seconds into the link.
            "  connection            interval ",
        ] {
            #expect(run.stdout.contains(line), "\(line)\n\(run.stdout)")
        }
        #expect(run.stdout.contains("  PnP ID                vendor ") && run.stdout.contains("(Bluetooth SIG 0x000d), product 0x0000, version 0x0110"))
        let json = await runInProcess(["--json", "--no-cache", "--transport", "sim", "info", "E8:7F:3A:21:9C:05/random"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["kind"] as? String == "info")
        #expect(object["addressType"] as? String == "random")
        #expect((object["name"] as? [String: Any])?["decoded"] as? String == "Adafruit Bluefruit LE", "read whole past ATT_MTU − 4")
        #expect((object["model"] as? [String: Any])?["decoded"] as? String == "BLEFRIEND32")
        #expect(object["systemID"] == nil, "a value the device lacks is left out")
        let parameters = try #require(object["connectionParameters"] as? [String: Any])
        #expect(parameters["intervalMs"] as? Double == 30 && parameters["supervisionTimeoutMs"] as? Int == 4000, "the Bluefruit asks for nothing")
    }

    /// `-v`: the connection's parameters, the MTU, a parameter update the peripheral asked for
    /// (the SensorTag's F000CCC2 request, through L2CAP), and the end by name.
    @Test func verboseShowsTheConnectionsEvents() async throws {
        let run = await runInProcess([
            "--no-cache", "--transport", "sim", "-v", "subscribe", "54:6C:0E:9A:3B:01", "F000CCC1-0451-4000-B000-000000000000",
            "--write", "0x0077=5000a0000000e803", "--count", "1",
        ])
        #expect(run.code == 0, "\(run.stderr)")
        for line in [
            "gattclient: 54:6C:0E:9A:3B:01: connected, ATT_MTU 23",
            "gattclient: 54:6C:0E:9A:3B:01: interval 30 ms, latency 0, supervision timeout 4000 ms",
            "gattclient: 54:6C:0E:9A:3B:01: connection parameters updated: interval 100 ms, latency 0, supervision timeout 10000 ms",
            "gattclient: 54:6C:0E:9A:3B:01: disconnected by us (Remote User Terminated Connection (0x13) sent)",
        ] {
            #expect(run.stderr.contains(line), "\(line)\n\(run.stderr)")
        }
        let quiet = await runInProcess(["--no-cache", "--transport", "sim", "read", "54:6C:0E:9A:3B:01", "2A19"])
        #expect(!quiet.stderr.contains("connected, ATT_MTU"), "only with -v")
    }
}

/// Issue 37 item 3: Ctrl-C while connecting ends `subscribe`, `uart` and `sensortag` at once
/// (they stop by themselves only once their own wait began), exit 130; the wait's start is the
/// event the test waits for (`-v` says it), not a time.
@Suite("gattclient: Ctrl-C while connecting", .serialized, .timeLimit(.minutes(2)))
struct InterruptWhileConnectingTests {
    @Test(arguments: [
        ["subscribe", "C0:00:00:00:00:09/random", "0x0025"],
        ["uart", "C0:00:00:00:00:09/random"],
        ["sensortag", "C0:00:00:00:00:09/random"],
        ["read", "C0:00:00:00:00:09/random", "2A00"],
    ])
    func ctrlCWhileConnecting(_ command: [String]) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: InterruptTests.binary), "no gattclient at \(InterruptTests.binary)")
        let arguments = [InterruptTests.binary, "--no-cache", "-v", "--timeout", "60", "--transport", "sim"] + command
        let child = try ChildProcess(["sh", "-c", "exec \"$0\" \"$@\" 2>&1"] + arguments, stdinPipe: true)
        defer { child.kill() }
        // The event: the connect has begun.
        var seen: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        let deadline = ContinuousClock.now + .seconds(30 * testTimeoutScale)
        while !String(decoding: seen, as: UTF8.self).contains("connecting to"), ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: child.standardOutput, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 1000) >= 0 else { break }
            guard descriptor.revents != 0 else { continue }
            let count = read(child.standardOutput, &chunk, chunk.count)
            guard count > 0 else { break }
            seen += chunk[0..<count]
        }
        try #require(String(decoding: seen, as: UTF8.self).contains("connecting to"), "\(String(decoding: seen, as: UTF8.self))")
        kill(child.pid, SIGINT)
        // Bounded well under the 60 s connect timeout: the wait ended at the signal.
        let code = await child.wait(timeout: 20)
        #expect(code == 130, "\(command): \(String(describing: code))")
    }
}
