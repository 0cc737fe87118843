import BLE
import Bluetooth
import CTestSupport
import Emulator
import Foundation
import GATT
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 20: `services --values` compared with the emulated SensorTag's database; value decoding
/// by type (no text guessed for a value that is not text).
@Suite("gattclient services --values and value decoding", .serialized, .timeLimit(.minutes(2)))
struct ServicesValuesTests {
    @Test func everyReadableValueAndDescriptorMatchesTheDatabase() async throws {
        let run = await runInProcess(["--json", "--no-cache", "--transport", "sim", "services", "--values", "54:6C:0E:9A:3B:01"])
        #expect(run.code == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let database = try SensorTagDatabase.database(address: EmulatedSensorTag.defaultAddress)
        var compared = 0, descriptors = 0
        for service in try #require(object["services"] as? [[String: Any]]) {
            for characteristic in try #require(service["characteristics"] as? [[String: Any]]) {
                let handle = UInt16(try #require(characteristic["valueHandle"] as? Int))
                let properties = try #require(characteristic["properties"] as? [String])
                let uuid = try #require(characteristic["uuid"] as? String)
                if properties.contains("read") {
                    let value = try #require(characteristic["value"] as? String, "0x\(String(handle, radix: 16)) read")
                    // The connection-parameters characteristic holds the link's parameters, set at connection.
                    if uuid != "F000CCC1-0451-4000-B000-000000000000" {
                        #expect(value == Hex.encode(database.attribute(at: handle)?.value ?? []), "0x\(String(handle, radix: 16))")
                    }
                    compared += 1
                } else {
                    #expect(characteristic["value"] == nil, "no read property, not read")
                }
                for descriptor in try #require(characteristic["descriptors"] as? [[String: Any]]) {
                    let handle = UInt16(try #require(descriptor["handle"] as? Int))
                    #expect(descriptor["value"] as? String == Hex.encode(database.attribute(at: handle)?.value ?? [0xFF]))
                    if descriptor["uuid"] as? String == "2901" {
                        #expect(descriptor["decoded"] as? String == String(decoding: database.attribute(at: handle)?.value ?? [], as: UTF8.self))
                    }
                    descriptors += 1
                }
            }
        }
        #expect(compared >= 30 && descriptors >= 30, "\(compared) values, \(descriptors) descriptors")

        let text = await runInProcess(["--no-cache", "--transport", "sim", "services", "--values", "54:6C:0E:9A:3B:01"])
        for line in [
            "    = 64  100 %",
            "    = 5000a0000000e803  interval 100 ms–200 ms, latency 0, supervision timeout 10000 ms",
            "    = 010d0000001001  vendor Texas Instruments Inc. (Bluetooth SIG 0x000d), product 0x0000, version 0x0110",
            "    descriptor Characteristic User Description (2901)  0x0027  = 49522054656d702e2044617461  \"IR Temp. Data\"",
            "    descriptor Client Characteristic Configuration (2902)  0x0022  = 0000  notifications and indications off",
        ] {
            #expect(text.stdout.contains(line), "\(line)\n\(text.stdout)")
        }
    }

    /// A value read by handle is shown by its type (learnt with one Find Information): the
    /// battery's 0x64 is `100 %`, never the text "d".
    @Test func aValueReadByHandleIsShownByItsType() async throws {
        let run = await runInProcess(["--no-cache", "--transport", "sim", "read", "54:6C:0E:9A:3B:01", "0x0021"])
        #expect(run.stdout == "0x0021: 64  100 %\n", "\(run.stdout)")
        let json = await runInProcess(["--json", "--no-cache", "--transport", "sim", "read", "54:6C:0E:9A:3B:01", "0x0007"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["uuid"] as? String == "2A04")
        #expect(object["name"] as? String == "Peripheral Preferred Connection Parameters")
        #expect(object["decoded"] as? String == "interval 100 ms–200 ms, latency 0, supervision timeout 10000 ms")
    }

    @Test func standardValuesDecodeStrictly() {
        #expect(ValueText.decoded([0x64], uuid: .bit16(0x2A19)) == "100 %")
        #expect(ValueText.decoded([0x65], uuid: .bit16(0x2A19)) == nil, "101 % is not a battery level, and not text")
        #expect(ValueText.decoded([0x41, 0x42], uuid: nil) == nil, "a value of unknown type: no guess")
        #expect(ValueText.decoded([0x41, 0x42], uuid: .bit16(0x2A37)) == nil, "a SIG type we do not decode: no guess")
        #expect(ValueText.decoded([0x41, 0x42], uuid: BluetoothUUID("F000AA65-0451-4000-B000-000000000000")) == "AB")
        #expect(StandardValues.decode([0x01, 0x00, 0xFF, 0xFF], uuid: .bit16(0x2A05)) == "handles 0x0001-0xffff changed")
        #expect(StandardValues.decode([0x01, 0x00, 0xFF], uuid: .bit16(0x2A05)) == nil)
        #expect(StandardValues.decode([0x12, 0x03, 0x00, 0x19, 0x2A], uuid: .bit16(0x2803)) == "Battery Level (2A19), value 0x0003, [read, notify]")
        #expect(StandardValues.decode([0x04, 0x00, 0xAD, 0x27, 0x01, 0x00, 0x00], uuid: .bit16(0x2904))?.hasPrefix("uint8, exponent 0, unit ") == true)
        #expect(StandardValues.decode([0x02, 0x00], uuid: .bit16(0x2902)) == "indications on")
    }
}

/// Issue 20: `gattclient adapters` (the kernel rows are checked in the kernel VM, check 12).
@Suite("gattclient adapters", .serialized, .timeLimit(.minutes(2)))
struct AdaptersCommandTests {
    @Test func theSimulatedControllerSaysWhatItIs() async throws {
        let run = await runInProcess(["--transport", "sim", "adapters"])
        #expect(run.code == 0, "\(run.stderr)")
        for line in [
            "  HCI version       5.0 (0x09), revision 0x0001",
            "  LE ACL buffers    4 × 27 octets",
            "  LE features       LE Data Packet Length Extension, LE 2M PHY, LE Coded PHY, LE Extended Advertising",
        ] {
            #expect(run.stdout.contains(line), "\(line)\n\(run.stdout)")
        }
        let json = await runInProcess(["--json", "--transport", "sim", "adapters"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["kind"] as? String == "adapter" && object["transport"] as? String == "sim")
        #expect(
            object["leFeatures"] as? [String]
                == ["LE Data Packet Length Extension", "LE 2M PHY", "LE Coded PHY", "LE Extended Advertising"])
        #expect((object["aclBuffers"] as? [String: Any])?["packetCount"] as? Int == 4)
    }

    @Test func refusedWhereItCannotAnswer() async {
        let replay = await runInProcess(["--transport", "replay:/nonexistent.btsnoop", "adapters"])
        #expect(replay.code == 64 && replay.stderr.contains("a replayed capture has no controller"), "\(replay.stderr)")
        let extra = await runInProcess(["adapters", "hci0"])
        #expect(extra.code == 64)
        if !FileManager.default.fileExists(atPath: "/sys/class/bluetooth") {
            // This machine's kernel has no Bluetooth: said, exit 69.
            let kernel = await runInProcess(["adapters"])
            #expect(kernel.code == 69 && kernel.stderr.contains("no Bluetooth support"), "\(kernel.stderr)")
        }
    }
}

/// Runs `gattclient ARGUMENTS` in process with `script` as its standard input (not a terminal:
/// no prompt, one command per line).
func runWithInput(_ script: String, _ arguments: [String]) async -> CapturedRun {
    var template = Array("/tmp/shell-script-XXXXXX".utf8CString)
    let descriptor = mkstemp(&template)
    let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let bytes = Array(script.utf8)
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
    defer { unlink(path) }
    return await captureRun { out, err in
        let input = open(path, O_RDONLY)
        defer { close(input) }
        return runGATTClient(arguments, standardInput: input, standardOutput: out, standardError: err)
    }
}

/// Issue 20, item 1: the shell driven by standard input on `sim`.
@Suite("gattclient shell", .serialized, .timeLimit(.minutes(3)))
struct ShellTests {
    static let irData = "F000AA01-0451-4000-B000-000000000000"
    static let irConfiguration = "F000AA02-0451-4000-B000-000000000000"

    @Test func aScriptDrivesOneConnection() async throws {
        let run = await runWithInput(
            """
            # a comment, then a blank line

            mtu
            read 0x0021
            read 2A00
            subscribe \(Self.irData)
            write \(Self.irConfiguration) 01
            wait 2.5
            unsubscribe \(Self.irData)
            write 0x0075 --text "Conn Params"
            services
            quit
            read 0x0003
            """, ["--no-cache", "--transport", "sim", "shell", "54:6C:0E:9A:3B:01"])
        #expect(run.code == 1, "the refused write (Write Not Permitted) is the last failure: \(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "ATT_MTU 23", "no prompt without a terminal: \(run.stdout)")
        #expect(lines.contains("0x0021: 64  100 %"))
        #expect(lines.contains("0x0003: 4343323635302053656e736f72546167  \"CC2650 SensorTag\""))
        #expect(lines.contains { $0.hasPrefix("subscribed to 0x0025 (SensorTag IR Temperature Data") })
        #expect(lines.contains("wrote 1 octet to 0x0029"))
        let values = lines.filter { $0.contains("  0x0025 notification: ") && $0.contains("object ") }
        #expect(values.count >= 1 && values.count <= 3, "the sensor notifies once a second: \(values)")
        #expect(lines.contains { $0.hasPrefix("unsubscribed from 0x0025") })
        #expect(run.stderr.contains("Write Not Permitted"), "\(run.stderr)")
        #expect(lines.contains { $0.hasPrefix("54:6C:0E:9A:3B:01: 14 services") }, "services as the command prints it")
        #expect(!lines.contains { $0.hasPrefix("0x0003") && lines.lastIndex(of: $0)! > lines.firstIndex { $0.contains("14 services") }! },
                "nothing runs after quit")
    }

    @Test func jsonConnectDisconnectAndErrors() async throws {
        let run = await runWithInput(
            """
            read 2A19
            disconnect
            read 2A19
            connect E8:7F:3A:21:9C:05/random
            mtu
            info
            scan
            reed 2A19
            subscribe 2A00
            """, ["--json", "--no-cache", "--transport", "sim", "-I", "54:6C:0E:9A:3B:01"])
        let objects = run.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(objects.count == run.stdout.split(separator: "\n").count, "every line is JSON: \(run.stdout)")
        let kinds = objects.map { $0["kind"] as? String ?? "?" }
        #expect(kinds == ["value", "error", "mtu", "info", "error", "error", "error"], "\(kinds)\n\(run.stderr)")
        #expect((objects[1]["error"] as? [String: Any])?["message"] as? String == "not connected: connect ADDR first")
        #expect(objects[2]["mtu"] as? Int == 23, "the Bluefruit keeps the default ATT_MTU")
        #expect(objects[3]["addressType"] as? String == "random")
        #expect(((objects[5]["error"] as? [String: Any])?["message"] as? String)?.contains("did you mean read?") == true)
        #expect(((objects[6]["error"] as? [String: Any])?["message"] as? String)?.contains("cannot notify") == true)
        #expect(run.code == 1, "the last failure: 2A00 cannot notify")
    }

    /// `pair` in the shell pairs the open connection (the thermometer: Just Works with no IO).
    @Test func pairsTheOpenConnection() async throws {
        let bonds = NSTemporaryDirectory() + "shell-bonds-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: bonds) }
        let run = await runWithInput(
            "pair --io-capability none --no-bond\nmtu\n",
            ["--no-cache", "--bonds", bonds, "--transport", "sim:thermometer", "shell", "C4:7E:11:09:2A:1C/random"])
        #expect(run.code == 0, "\(run.stderr)")
        #expect(run.stdout.contains("paired with C4:7E:11:09:2A:1C (random): Secure Connections, unauthenticated (Just Works)"), "\(run.stdout)")
        #expect(run.stdout.contains("ATT_MTU "), "the connection stays open after pair")
    }

    @Test func aScriptStopsWhereItsDeviceCannotBeReached() async {
        let run = await runWithInput("read 2A19\n", ["--no-cache", "--timeout", "2", "--transport", "sim", "shell", "11:22:33:44:55:66/public"])
        #expect(run.code == 1, "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test func shellWordsKeepQuotesAndDropComments() throws {
        #expect(try shellWords("write 0x0075 --text \"a b\" # note") == ["write", "0x0075", "--text", "a b"])
        #expect(try shellWords("  read   'x y'\\ z ") == ["read", "x y z"])
        #expect(throws: UsageError.self) { try shellWords("write \"open") }
        #expect(try shellWords("# only a comment") == [])
    }
}

/// The line editor, sans I/O: keys from terminal bytes, and what each does.
@Suite struct LineEditorTests {
    func keys(_ bytes: [UInt8]) -> [EditorKey] {
        var decoder = KeyDecoder()
        return bytes.compactMap { decoder.feed($0) }
    }

    @Test func terminalBytesBecomeKeys() {
        #expect(keys(Array("ab".utf8)) == [.insert("a"), .insert("b")])
        #expect(keys([0x1B, 0x5B, 0x41, 0x1B, 0x5B, 0x42, 0x1B, 0x5B, 0x43, 0x1B, 0x5B, 0x44]) == [.historyPrevious, .historyNext, .right, .left])
        #expect(keys([0x1B, 0x4F, 0x48, 0x1B, 0x4F, 0x46]) == [.home, .end])
        #expect(keys(Array("\u{1B}[3~\u{1B}[1;5D\u{1B}b".utf8)) == [.delete, .wordLeft, .wordLeft])
        #expect(keys(Array("é°".utf8)) == [.insert("é"), .insert("°")])
        #expect(keys([0x03, 0x04, 0x7F, 0x0D, 0x15, 0x0B, 0x17, 0x0C]) == [.interrupt, .endOfInput, .backspace, .enter, .killToStart, .killToEnd, .killWordBack, .clearScreen])
        #expect(keys(Array("\u{1B}[99Z".utf8)) == [.ignored])
    }

    @Test func editingAndHistory() {
        var editing = LineEditing(history: ["read 0x0003"])
        for character in "rite 01" { _ = editing.apply(.insert(character)) }
        _ = editing.apply(.home)
        _ = editing.apply(.insert("w"))
        #expect(String(editing.text) == "write 01" && editing.cursor == 1)
        _ = editing.apply(.end)
        _ = editing.apply(.killWordBack)
        #expect(String(editing.text) == "write ")
        #expect(editing.apply(.historyPrevious) == .editing)
        #expect(String(editing.text) == "read 0x0003")
        #expect(editing.apply(.historyPrevious) == .bell, "the oldest line")
        _ = editing.apply(.historyNext)
        #expect(String(editing.text) == "write ", "back to the line being typed")
        #expect(editing.apply(.enter) == .line("write "))
        #expect(editing.history == ["read 0x0003", "write"])
        #expect(editing.apply(.endOfInput) == .endOfInput, "Ctrl-D on an empty line")
        _ = editing.apply(.insert("x"))
        #expect(editing.apply(.interrupt) == .interrupted)
        #expect(editing.text.isEmpty)
        #expect(editing.apply(.backspace) == .bell)
    }
}

/// The shell on a pseudo-terminal: prompt, editing, history, and a notification that arrives
/// while a line is being typed — the line is drawn again after it, unbroken.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ShellTerminalTests {
    @Test func aNotificationDoesNotBreakTheLineBeingTyped() async throws {
        var opened: Int32 = -1
        let master = ctest_open_pty(&opened)
        try #require(master >= 0, "no pseudo-terminal: \(master)")
        let slave = opened
        defer { close(master) }
        let screen = Locked("")
        let reading = Thread.detachNewThreadReading(master, into: screen)
        _ = reading
        _ = testCacheDirectory  // sets GATTCLIENT_HISTORY empty for the whole test process
        let finished = Locked<Int32?>(nil)
        Thread.detachNewThread {
            let code = runGATTClient(
                ["--no-cache", "-v", "--transport", "sim", "shell", "54:6C:0E:9A:3B:01"], standardInput: slave, standardOutput: slave,
                standardError: slave)
            finished.set(code)
        }
        func type(_ text: String) { _ = Array(text.utf8).withUnsafeBytes { write(master, $0.baseAddress, $0.count) } }
        func waitFor(_ text: String) async -> Bool {
            for _ in 0..<200 {
                if screen.get().contains(text) { return true }
                try? await Task.sleep(for: .milliseconds(50))
            }
            return false
        }
        #expect(await waitFor("[54:6C:0E:9A:3B:01]> "), "the prompt: \(screen.get())")
        type("subscribe F000AA01-0451-4000-B000-000000000000\r")
        #expect(await waitFor("subscribed to 0x0025"))
        type("write F000AA02-0451-4000-B000-000000000000 01\r")
        #expect(await waitFor("wrote 1 octet"))
        type("rea")
        #expect(await waitFor("notification: "), "\(screen.get())")
        // After the value (and, with -v, its ATT trace line), the prompt and the half-typed line
        // are drawn again.
        #expect(await waitFor("\r\u{1B}[K< ATT Handle Value Notification"), "\(screen.get().debugDescription)")
        #expect(await waitFor("\r[54:6C:0E:9A:3B:01]> rea\u{1B}[K"), "\(screen.get().debugDescription)")
        type("d 0x0021\r")
        #expect(await waitFor("0x0021: 64  100 %"))
        type("\u{1B}[A")  // Up: the last line again
        #expect(await waitFor("> read 0x0021\u{1B}[K"))
        type("\u{15}quit\r")
        for _ in 0..<100 where finished.get() == nil { try? await Task.sleep(for: .milliseconds(50)) }
        #expect(finished.get() == 0, "\(screen.get())")
        close(slave)
    }
}

/// A value shared with the threads of a test.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ new: Value) { lock.withLock { value = new } }
    func update(_ change: (inout Value) -> Void) { lock.withLock { change(&value) } }
}

extension Thread {
    /// Reads `descriptor` on its own thread into `screen` until it ends (bounded by poll timeouts
    /// of 100 ms, 60 s in all).
    static func detachNewThreadReading(_ descriptor: Int32, into screen: Locked<String>) -> Bool {
        detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            for _ in 0..<600 {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) >= 0 else { return }
                if poller.revents & Int16(POLLIN) == 0 {
                    if poller.revents & Int16(POLLHUP | POLLERR) != 0 { return }
                    continue
                }
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count <= 0 { return }
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                screen.update { $0 += text }
            }
        }
        return true
    }
}
