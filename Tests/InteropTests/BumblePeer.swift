import BLE
import Bluetooth
import Foundation
import GATTClientCLI
import HCI
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `scripts/bumble_peer.py` run as a subprocess: a Bumble virtual controller reachable as H4
/// over TCP, with Bumble peripherals on its virtual link. Every wait is bounded; `stop()` kills
/// the process and is safe to call more than once (tests call it in a `defer`).
final class BumblePeer: @unchecked Sendable {
    // @unchecked: `process` is set once in init; `pending` (stdout bytes after the
    // announcement) is only touched under `commandLock`; `stop` is idempotent (ChildProcess.kill
    // reaps under its own lock).

    /// `tcp:127.0.0.1:PORT` from the READY line.
    let uri: TransportURI
    /// The peripherals the peer announced: kind ("sensortag", "bluefruit") → address.
    let devices: [String: BluetoothAddress]
    /// Their address types (the SensorTag public, the Bluefruit random).
    let addressTypes: [String: AddressType]

    private let process: ChildProcess
    private let stdoutDescriptor: Int32
    /// Bytes read from stdout after the announcement lines, not yet a whole line.
    private var pending: [UInt8]
    /// Lines other than RESULT seen after the announcement (`PAIRING ...`), in order.
    private var events: [String] = []
    private let commandLock = NSLock()

    /// The package root: two levels above this file's directory.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let script = packageRoot.appendingPathComponent("scripts/bumble_peer.py").path

    /// Whether `python3 -c 'import bumble'` works here (checked once, on a thread of its own: a
    /// suite's condition waiting for Python must not hold a Swift concurrency thread).
    static func isAvailable() async -> Bool { await availability.value }

    private static let availability = Task { () -> Bool in
        let available = (try? await offThePool { () -> Bool in
            let probe = try ChildProcess(["python3", "-c", "import bumble"], standardOutput: .null, standardError: .null)
            return probe.waitBlocking(timeout: 60) == 0
        }) ?? false
        if !available {
            print("InteropTests skipped: `python3 -c 'import bumble'` failed (pip install bumble)")
        } else if !FileManager.default.fileExists(atPath: script) {
            print("InteropTests skipped: \(script) is missing")
            return false
        }
        return available
    }

    struct StartFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// At most two peers start at once. A start is about a second of Python's CPU (importing
    /// Bumble); the suite's dozens of peers starting together held both cores for the first six
    /// seconds of the sanitized run, with the test process's own timed waits starved beside them.
    /// The ready timeout counts from the moment a peer's start has its turn.
    private static let startGate = DispatchSemaphore(value: 2)

    /// Starts the peer with `devices` (e.g. ["sensortag"]) and waits (bounded) for its READY line,
    /// holding the calling thread (``start(devices:mtu:extendedCommands:lifetime:arguments:niceness:readyTimeout:)``
    /// gives it one of its own). `niceness`: run the peer at a lower scheduling priority (`nice -n`).
    init(
        devices kinds: [String] = [], mtu: Int = 517, extendedCommands: Bool = false, lifetime: Int = 60,
        readyTimeout: Double = 20 * testTimeoutScale, arguments extra: [String] = [], niceness: Int = 0
    ) throws {
        Self.startGate.wait()
        defer { Self.startGate.signal() }
        // The peer exits when its stdin closes. `nice` execs python3: the same process.
        process = try ChildProcess(
            (niceness > 0 ? ["nice", "-n", String(niceness)] : []) + ["python3", Self.script, "--lifetime", String(lifetime), "--mtu", String(mtu)]
                + kinds.flatMap { ["--device", $0] } + (extendedCommands ? ["--extended-commands"] : []) + extra,
            stdinPipe: true)

        var lines: [String] = []
        var rest: [UInt8] = []
        stdoutDescriptor = process.standardOutput
        do {
            lines = try Self.readLines(stdoutDescriptor, count: 1 + kinds.count, timeout: readyTimeout, buffer: &rest)
        } catch {
            Self.terminate(process)
            throw error
        }
        guard let ready = lines.first, ready.hasPrefix("READY ") else {
            Self.terminate(process)
            throw StartFailure(description: "bumble_peer.py did not print READY (got \(lines))")
        }
        do {
            uri = try TransportURI(parsing: String(ready.dropFirst("READY ".count)))
        } catch {
            Self.terminate(process)
            throw error
        }
        var devices: [String: BluetoothAddress] = [:]
        var types: [String: AddressType] = [:]
        for line in lines.dropFirst() {
            // DEVICE kind AA:BB:CC:DD:EE:FF/random
            let fields = line.split(separator: " ")
            if fields.count == 3, fields[0] == "DEVICE", let address = BluetoothAddress(String(fields[2].prefix(17))) {
                devices[String(fields[1])] = address
                types[String(fields[1])] = fields[2].hasSuffix("/public") ? .public : .random
            }
        }
        self.devices = devices
        self.addressTypes = types
        pending = rest
    }

    /// Sends one command line to the peer (see scripts/bumble_peer.py `run_command`) and returns
    /// its RESULT line, waiting at most `timeout` seconds, from a thread of its own.
    func command(_ line: String, timeout: Double = 20 * testTimeoutScale) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    continuation.resume(returning: try self.commandBlocking(line, timeout: timeout))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private func commandBlocking(_ line: String, timeout: Double) throws -> String {
        commandLock.lock()
        defer { commandLock.unlock() }
        try process.write(line + "\n")
        while true {
            let next = try Self.readLines(stdoutDescriptor, count: 1, timeout: timeout, buffer: &pending)
            if let result = next.first, result.hasPrefix("RESULT ") { return String(result.dropFirst(7)) }
            events += next
        }
    }

    /// The first line (other than RESULT) starting with `prefix` not taken before, waiting at
    /// most `timeout` seconds; it and the lines before it are taken.
    func event(startingWith prefix: String, timeout: Double = 20 * testTimeoutScale) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    continuation.resume(returning: try self.eventBlocking(prefix, timeout: timeout))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// The lines seen so far that start with `prefix` (what stdout holds now, read on a thread
    /// of its own).
    func seenEvents(startingWith prefix: String) async -> [String] {
        (try? await offThePool { self.seenEventsBlocking(startingWith: prefix) }) ?? []
    }

    private func seenEventsBlocking(startingWith prefix: String) -> [String] {
        commandLock.lock()
        defer { commandLock.unlock() }
        // One line at a time: a timeout loses nothing (a partial line stays in `pending`).
        while let more = try? Self.readLines(stdoutDescriptor, count: 1, timeout: 0.2, buffer: &pending) { events += more }
        return events.filter { $0.hasPrefix(prefix) }
    }

    private func eventBlocking(_ prefix: String, timeout: Double) throws -> String {
        commandLock.lock()
        defer { commandLock.unlock() }
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while true {
            if let index = events.firstIndex(where: { $0.hasPrefix(prefix) }) {
                let line = events[index]
                events.removeFirst(index + 1)
                return line
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw StartFailure(description: "no `\(prefix)` line within \(timeout) s (saw \(events))") }
            let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            events += try Self.readLines(stdoutDescriptor, count: 1, timeout: seconds, buffer: &pending)
        }
    }

    /// Starts the peer from a thread of its own: waiting for READY must not hold a Swift
    /// concurrency thread (on Linux the pool is small and shared with Dispatch).
    static func start(
        devices kinds: [String] = [], mtu: Int = 517, extendedCommands: Bool = false, lifetime: Int = 60,
        arguments: [String] = [], niceness: Int = 0, readyTimeout: Double = 20 * testTimeoutScale
    ) async throws -> BumblePeer {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    continuation.resume(
                        returning: try BumblePeer(
                            devices: kinds, mtu: mtu, extendedCommands: extendedCommands, lifetime: lifetime,
                            readyTimeout: readyTimeout, arguments: arguments, niceness: niceness))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    deinit { stop() }

    /// Kills the peer (SIGKILL after closing its stdin) and reaps it.
    func stop() { Self.terminate(process) }

    private static func terminate(_ process: ChildProcess) {
        process.kill()
    }

    /// Reads `count` newline-terminated lines from `descriptor`, waiting at most `timeout` seconds.
    private static func readLines(_ descriptor: Int32, count: Int, timeout: Double, buffer: inout [UInt8]) throws
        -> [String]
    {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        var lines: [String] = []
        func takeLines() {
            while lines.count < count, let newline = buffer.firstIndex(of: 0x0A) {
                lines.append(String(decoding: buffer[..<newline], as: UTF8.self))
                buffer.removeSubrange(...newline)
            }
        }
        takeLines()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while lines.count < count {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else {
                throw StartFailure(
                    description: "bumble_peer.py printed \(lines.count) of \(count) line(s) within \(timeout) s")
            }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(
                &entry, 1,
                Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            guard n > 0 else {
                throw StartFailure(description: "bumble_peer.py exited before printing \(count) line(s) (got \(lines))")
            }
            buffer += chunk[0..<n]
            takeLines()
        }
        return lines
    }
}
