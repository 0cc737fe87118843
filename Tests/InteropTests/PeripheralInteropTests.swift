import BLE
import Bluetooth
import Foundation
import GATT
import HCI
import L2CAP
import Testing
import TestSupport
@testable import GATTClientCLI

#if canImport(Glibc)
import Glibc
#endif

/// A Python helper process whose stdout is read line by line with a deadline (never holding a
/// Swift concurrency thread: every blocking read runs on a thread of its own).
final class PeripheralInteropProcess: @unchecked Sendable {
    // @unchecked: `buffer` is only touched by `nextLine`, which the tests call sequentially.
    let process: ChildProcess
    private let stdoutDescriptor: Int32
    private var buffer: [UInt8] = []
    let name: String

    struct Failure: Error, CustomStringConvertible { var description: String }

    init(_ script: String, _ arguments: [String]) throws {
        name = script
        process = try ChildProcess(
            ["python3", BumblePeer.packageRoot.appendingPathComponent("scripts/\(script)").path] + arguments,
            stdinPipe: true)
        stdoutDescriptor = process.standardOutput
    }

    deinit { stop() }

    func stop() { process.kill() }

    /// The next line on stdout, within `timeout` seconds.
    func nextLine(timeout: Double) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    continuation.resume(returning: try self.readLine(timeout: timeout))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private func readLine(timeout: Double) throws -> String {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                defer { buffer.removeSubrange(...newline) }
                return String(decoding: buffer[..<newline], as: UTF8.self)
            }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw Failure(description: "\(name) printed no line within \(timeout) s") }
            var entry = pollfd(fd: stdoutDescriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32(min(1000, left.components.seconds * 1000 + 1)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(stdoutDescriptor, $0.baseAddress!, $0.count) }
            guard n > 0 else { throw Failure(description: "\(name) exited (output so far: \(String(decoding: buffer, as: UTF8.self)))") }
            buffer += chunk[0..<n]
        }
    }
}

/// `gattclient peripheral sensortag` on a Bumble controller over TCP, used by Bumble's own GATT
/// client (scripts/bumble_central.py) through a second Bumble controller on the same link.
@Suite(
    "Interop: our peripheral used by Bumble's client",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct PeripheralInteropTests {
    static func json(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    @Test func bumblesClientDiscoversReadsWritesAndSubscribesToOurSensorTag() async throws {
        let peer = try PeripheralInteropProcess("bumble_peer.py", ["--central-port", "0", "--lifetime", "120"])
        defer { peer.stop() }
        let ready = try await peer.nextLine(timeout: 30)
        let central = try await peer.nextLine(timeout: 30)
        #expect(ready.hasPrefix("READY tcp:"), "\(ready)")
        #expect(central.hasPrefix("CENTRAL tcp:"), "\(central)")
        let hostURI = String(ready.dropFirst("READY ".count))
        let centralPort = String(central.split(separator: ":").last ?? "")

        var global = GlobalOptions()
        global.json = true
        let host = try await openPeripheralHost(hostURI, options: global.adapterOptions)
        let (input, lines) = AsyncStream.makeStream(of: String.self)
        let (readyDevices, readySignal) = AsyncStream.makeStream(of: UInt16.self)
        var command = PeripheralCommand(options: PeripheralOptions(device: .sensortag))
        command.host = host
        command.input = input
        command.onReady = { device, _ in
            readySignal.yield(await device.valueHandle(of: .bit16(0xFFE1)) ?? 0)
            readySignal.finish()
        }
        let finalCommand = command
        let serving = Task {
            var output = BufferedOutput.capturing()
            try await finalCommand.run(global: global, output: &output)
            return output.capturedLines
        }
        var keysHandle: UInt16 = 0
        for await handle in readyDevices { keysHandle = handle }
        #expect(keysHandle != 0)

        // Round one: the full SensorTag session, the keys notified from our stdin.
        let client = try PeripheralInteropProcess(
            "bumble_central.py",
            ["--transport", "tcp-client:127.0.0.1:\(centralPort)", "--peer", "F0:F1:F2:F3:F4:F5/public", "--sensortag",
             "--timeout", "30", "--keys-timeout", "30"])
        defer { client.stop() }
        let subscribed = try await client.nextLine(timeout: 120)
        #expect(subscribed == "SUBSCRIBED keys", "\(subscribed)")
        lines.yield("notify 0x\(String(keysHandle, radix: 16)) 01")
        let summaryLine = try await client.nextLine(timeout: 60)
        let summary = try #require(Self.json(summaryLine), "\(summaryLine)")
        #expect(summary["error"] == nil, "\(summaryLine)")
        #expect(summary["mtu"] as? Int == 23)
        let services = summary["services"] as? [String] ?? []
        for uuid in ["F000AA00", "F000AA20", "F000AA40", "F000AA70", "F000AA80", "F000AA64", "F000AC00", "F000CCC0", "F000FFC0"] {
            #expect(services.contains { $0.hasPrefix(uuid) }, "\(uuid) in \(services)")
        }
        #expect(services.contains { $0.contains("180A") } && services.contains { $0.contains("FFE0") })
        #expect((summary["characteristics"] as? Int ?? 0) >= 30)
        #expect(summary["name"] as? String == "CC2650 SensorTag")
        #expect(summary["period_error"] as? Int == 0x80, "TI's application error for a period below the minimum")
        #expect(summary["ir_config"] as? String == "01")
        #expect((summary["ir_sample"] as? String)?.count == 8, "a 4-octet IR sample notified")
        #expect(summary["keys"] as? String == "01", "our stdin's notify reached Bumble's client")
        let reads = summary["reads"] as? [String: String] ?? [:]
        #expect(reads.first { $0.key.contains("2A29") }?.value == Array("Texas Instruments".utf8).map { String(format: "%02x", $0) }.joined())

        // Round two: after the disconnect we advertise again and Bumble connects once more.
        let second = try PeripheralInteropProcess(
            "bumble_central.py",
            ["--transport", "tcp-client:127.0.0.1:\(centralPort)", "--peer", "F0:F1:F2:F3:F4:F5/public", "--timeout", "30"])
        defer { second.stop() }
        let secondLine = try await second.nextLine(timeout: 120)
        let secondSummary = try #require(Self.json(secondLine), "\(secondLine)")
        #expect(secondSummary["error"] == nil, "\(secondLine)")
        #expect(secondSummary["name"] as? String == "CC2650 SensorTag")

        if let userSpace = host as? UserSpacePeripheralHost {
            for _ in 0..<300 where await !userSpace.host.activeConnections.isEmpty {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        lines.finish()
        let output = try await serving.value
        let objects = output.compactMap(Self.json)
        let events = objects.compactMap { $0["event"] as? String }
        #expect(events == ["advertising", "connected", "disconnected", "connected", "disconnected", "stopped"], "\(output)")
        #expect(objects.contains { $0["command"] as? String != nil && $0["result"] as? String == "ok" }, "\(output)")
    }

    /// `../shared` beside the package, when present.
    static let vectors = BumblePeer.packageRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/vectors/gatt-client-vectors.json")

    @Test func bumblesClientReadsADatabaseLoadedFromTheVectors() async throws {
        guard let data = FileManager.default.contents(atPath: Self.vectors.path),
            let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let databases = root["databases"] as? [String: Any], let entry = databases["service_db_3"]
        else {
            print("PeripheralInteropTests: \(Self.vectors.path) absent; skipping the --database interop")
            return
        }
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("peripheral-interop-db-\(UInt32.random(in: 0...UInt32.max)).json").path
        try JSONSerialization.data(withJSONObject: entry).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }

        let peer = try PeripheralInteropProcess("bumble_peer.py", ["--central-port", "0", "--lifetime", "120"])
        defer { peer.stop() }
        let ready = try await peer.nextLine(timeout: 30)
        let central = try await peer.nextLine(timeout: 30)
        let centralPort = String(central.split(separator: ":").last ?? "")
        var global = GlobalOptions()
        global.json = true
        let host = try await openPeripheralHost(String(ready.dropFirst("READY ".count)), options: global.adapterOptions)
        let (input, lines) = AsyncStream.makeStream(of: String.self)
        var command = PeripheralCommand(options: PeripheralOptions(device: .database(path: path)))
        command.host = host
        command.input = input
        let finalCommand = command
        let serving = Task {
            var output = BufferedOutput.capturing()
            try await finalCommand.run(global: global, output: &output)
            return output.capturedLines
        }
        let client = try PeripheralInteropProcess(
            "bumble_central.py",
            ["--transport", "tcp-client:127.0.0.1:\(centralPort)", "--peer", "F0:F1:F2:F3:F4:F5/public", "--timeout", "30"])
        defer { client.stop() }
        let line = try await client.nextLine(timeout: 120)
        let summary = try #require(Self.json(line), "\(line)")
        #expect(summary["error"] == nil, "\(line)")
        #expect(summary["mtu"] as? Int == 517, "a loaded database serves at Rx MTU 517 by default")
        let services = (summary["services"] as? [String] ?? []).map { String($0.dropFirst("UUID-16:".count).prefix(4)) }
        #expect(services == ["1800", "1801", "180D"], "\(line)")
        #expect(summary["name"] as? String == "BlueZ")
        #expect(summary["characteristics"] as? Int == 3)
        #expect(summary["descriptors"] as? Int == 1)
        lines.finish()
        _ = try await serving.value
    }
}
