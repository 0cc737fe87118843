import Emulator
import Foundation
import Testing
import TestSupport
@testable import GATTClientCLI

#if canImport(Glibc)
import Glibc
#endif

/// What a person at a terminal sees, and the failures they can provoke, each with one line and
/// the documented exit code.
/// Bytes read from the terminal by the draining thread.
final class TerminalBuffer: @unchecked Sendable {
    // Appended by the one draining thread, read after it signalled: the lock orders the two.
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    func append(_ more: ArraySlice<UInt8>) { lock.withLock { bytes += more } }
    var text: String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }
}

@Suite struct TerminalAndFailureTests {
    /// Runs the CLI with standard output on a pseudo-terminal; returns what the terminal got.
    static func runOnTerminal(_ arguments: [String], standardErrorToo: Bool = false) async -> (code: Int32, screen: String) {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var master: Int32 = -1, slave: Int32 = -1
                guard openpty(&master, &slave, nil, nil, nil) == 0 else {
                    continuation.resume(returning: (-1, ""))
                    return
                }
                let null = open("/dev/null", O_WRONLY)
                // Drain the terminal while the command runs so that it never blocks on a full pty.
                let collected = TerminalBuffer()
                let terminal = master
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while true {
                        let count = read(terminal, &buffer, buffer.count)
                        if count <= 0 { break }
                        collected.append(buffer[0..<count])
                    }
                    done.signal()
                }
                let code = runGATTClient(arguments, standardOutput: slave, standardError: standardErrorToo ? slave : null)
                close(slave)
                close(null)
                // The reader ends when the slave side is closed (EIO on the master); bounded.
                _ = done.wait(timeout: .now() + 5)
                close(master)
                continuation.resume(returning: (code, collected.text))
            }
        }
    }

    @Test func scanUpdatesInPlaceOnATerminalOnly() async throws {
        let terminal = await Self.runOnTerminal(["--transport", "sim", "scan", "--duration", "1.5"])
        #expect(terminal.code == 0)
        #expect(terminal.screen.contains("\u{1B}[2K"), "lines are cleared and redrawn")
        #expect(terminal.screen.contains("\u{1B}["), "cursor moves up over the list")
        #expect(terminal.screen.contains("s left"), "countdown")
        #expect(terminal.screen.contains("CC2650 SensorTag"))
        let piped = await runInProcess(["--transport", "sim", "scan", "--duration", "1"])
        #expect(piped.code == 0)
        #expect(!piped.stdout.contains("\u{1B}"), "no escape sequences when stdout is not a terminal")
        #expect(piped.stdout.contains("CC2650 SensorTag"))
    }

    @Test func anATTErrorNamesItsCodeAndHandle() async {
        let result = await runInProcess(["--json", "--transport", "sim", "read", "54:6C:0E:9A:3B:01", "0x0199"])
        #expect(result.code == 1)
        #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        #expect(result.stderr.contains("Invalid Handle (0x01)") && result.stderr.contains("0x0199"))
        #expect(result.stdout.contains(#""attError":1"#) && result.stdout.contains(#""handle":409"#))
    }

    @Test func aPeerDisconnectNamesTheReason() async {
        // The emulated SensorTag's Connection Control "disconnect request" (CCC3) ends the link.
        let result = await runInProcess(
            ["--transport", "sim", "write", "54:6C:0E:9A:3B:01", "F000CCC3-0451-4000-B000-000000000000", "01"])
        if result.code != 0 {
            #expect(result.code == 1)
            #expect(result.stderr.contains("closed") || result.stderr.contains("disconnect"), "\(result.stderr)")
        }
        // Either way the next command finds the device again (it advertises after a disconnect).
        let again = await runInProcess(["--transport", "sim", "read", "54:6C:0E:9A:3B:01", "2A19"])
        #expect(again.code == 0, "\(again.stderr)")
    }

    @Test func aConnectionThatCannotBeMadeTimesOut() async {
        let started = ContinuousClock.now
        let result = await runInProcess(["--json", "--timeout", "1", "--transport", "sim", "services", "C0:00:00:00:00:09/random"])
        #expect(result.code == 1)
        // Bounded, not timed: a 1 s timeout must not become a hang (the bound scales with the run:
        // a sanitized run is slower; the loaded full suite once took 22 s to schedule this one).
        #expect(ContinuousClock.now - started < .seconds(60 * testTimeoutScale))
        #expect(result.stdout.contains(#""kind":"connect""#), "\(result.stdout)")
    }

    @Test(arguments: [
        (["read", "54:6C:0E:9A:3B:01", "zz"], "'zz' is neither a handle"),
        (["write", "54:6C:0E:9A:3B:01", "0x0010", "0g"], "'0g' is not hex"),
        (["services", "54:6C:0E:9A:3B"], "is not a Bluetooth address"),
        (["scan", "--min-rssi", "loud"], "--min-rssi needs dBm"),
        (["--transport", "bogus:1", "scan"], "invalid transport 'bogus:1'"),
    ])
    func badCommandLinesExit64WithTheirUsage(arguments: [String], message: String) async {
        let result = await runInProcess(arguments)
        #expect(result.code == 64, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    /// Issue 19 item 10: a transport that fails says its URI once and what to check; a missing
    /// replay file is an unavailable transport (69); monitor, which has no transport, does not
    /// advise one.
    @Test func transportFailuresSayWhatToCheck() async {
        let refused = await runInProcess(["--transport", "tcp:127.0.0.1:9", "scan", "--duration", "1"])
        #expect(refused.code == 69, "\(refused.stderr)")
        #expect(refused.stderr.contains("gattclient: tcp:127.0.0.1:9: "), "\(refused.stderr)")
        #expect(!refused.stderr.contains("tcp:127.0.0.1:9: tcp:127.0.0.1:9"), "\(refused.stderr)")
        #expect(refused.stderr.contains("is a controller listening on 127.0.0.1:9?"), "\(refused.stderr)")
        let missing = await runInProcess(["--transport", "replay:/nonexistent/session.btsnoop", "read", "54:6C:0E:9A:3B:01", "0x0003"])
        #expect(missing.code == 69, "\(missing.stderr)")
        #expect(missing.stderr.contains("replay:/nonexistent/session.btsnoop: no such capture file"), "\(missing.stderr)")
        let monitor = await runInProcess(["monitor", "--duration", "0.2"])
        if monitor.code == 69 {
            #expect(!monitor.stderr.contains("--transport"), "\(monitor.stderr)")
        }
    }

    /// Item 11: a library warning (a refused connection parameter request) is a warning line,
    /// never the failure's prefix; other library messages (the simulation's log) are plain lines.
    @Test func libraryWarningsAreWarnings() async {
        let run = await captureRun { _, errors in
            SessionDiagnostics.libraryMessage("warning: peripheral: connection parameter request refused: busy", to: errors)
            SessionDiagnostics.libraryMessage("sim: Secure Thermometer shows passkey 123456", to: errors)
            return 0
        }
        #expect(run.stderr == "gattclient: warning: peripheral: connection parameter request refused: busy\n"
            + "gattclient: sim: Secure Thermometer shows passkey 123456\n")
    }

    @Test func noBluetoothInTheKernelPointsToSim() async {
        let result = await runInProcess(["services", "54:6C:0E:9A:3B:01"])
        // On a kernel with Bluetooth and an adapter this would connect; here (and in CI) it cannot.
        if result.code == 69 {
            #expect(result.stderr.contains("--transport sim"))
        }
        let monitor = await runInProcess(["monitor", "--duration", "0.2"])
        #expect([0, 69, 77].contains(monitor.code))
    }
}

/// Colours on a terminal only, and never with NO_COLOR (https://no-color.org). Serialized: the
/// tests set and clear NO_COLOR for the process (`swift test` itself runs the tests with
/// NO_COLOR=1).
@Suite(.serialized) struct TerminalColourTests {
    /// Runs `body` with NO_COLOR set to `value` (nil: unset), then restores it.
    static func withNoColor<T>(_ value: String?, _ body: () async -> T) async -> T {
        let saved = withProcessEnvironment { getenv("NO_COLOR").map { String(cString: $0) } }
        withProcessEnvironment { _ = value.map { setenv("NO_COLOR", $0, 1) } ?? unsetenv("NO_COLOR") }
        defer { withProcessEnvironment { _ = saved.map { setenv("NO_COLOR", $0, 1) } ?? unsetenv("NO_COLOR") } }
        return await body()
    }

    static let bold = "\u{1B}[1m"
    static let colours = ["\u{1B}[31m", "\u{1B}[32m", "\u{1B}[33m", "\u{1B}[36m"]

    @Test func scanAndServicesAreColouredOnATerminal() async {
        await Self.withNoColor(nil) { await Self.coloured() }
    }

    static func coloured() async {
        let scan = await TerminalAndFailureTests.runOnTerminal(["--transport", "sim", "scan", "--duration", "1"])
        #expect(scan.code == 0)
        #expect(scan.screen.contains(Self.bold + "54:6C:0E:9A:3B:01"), "the address in bold")
        #expect(scan.screen.contains("\u{1B}[36m\"CC2650 SensorTag\""), "the name in cyan")
        #expect(Self.colours.contains { scan.screen.contains($0) && $0 != "\u{1B}[36m" }, "the RSSI coloured by strength")
        let services = await TerminalAndFailureTests.runOnTerminal(
            ["--transport", "sim", "services", "54:6C:0E:9A:3B:01"])
        #expect(services.code == 0)
        #expect(services.screen.contains("primary service " + Self.bold + "Battery (180F)"))
        #expect(services.screen.contains("\u{1B}[36mBattery Level (2A19)"))
        let failure = await TerminalAndFailureTests.runOnTerminal(
            ["--transport", "sim", "read", "54:6C:0E:9A:3B:01", "0x0199"], standardErrorToo: true)
        #expect(failure.code == 1)
        #expect(failure.screen.contains("\u{1B}[1;31mgattclient:\u{1B}[0m "), "the error prefix in bold red")
        // Redirected: the same commands print no escape sequence at all.
        let piped = await runInProcess(["--transport", "sim", "services", "54:6C:0E:9A:3B:01"])
        #expect(piped.code == 0 && !piped.stdout.contains("\u{1B}"))
        #expect(!(await runInProcess(["--transport", "sim", "read", "54:6C:0E:9A:3B:01", "0x0199"])).stderr.contains("\u{1B}"))
    }

    @Test func noColorKeepsTheTerminalPlainButStillUpdatesInPlace() async {
        await Self.withNoColor("1") { await Self.plain() }
    }

    static func plain() async {
        let scan = await TerminalAndFailureTests.runOnTerminal(["--transport", "sim", "scan", "--duration", "1"])
        #expect(scan.code == 0)
        #expect(!scan.screen.contains(Self.bold) && !Self.colours.contains { scan.screen.contains($0) })
        #expect(scan.screen.contains("\u{1B}[2K"), "in-place updates stay")
        let services = await TerminalAndFailureTests.runOnTerminal(
            ["--transport", "sim", "services", "54:6C:0E:9A:3B:01"], standardErrorToo: true)
        #expect(services.code == 0 && !services.screen.contains("\u{1B}["))
    }
}
