import BLE
import Bluetooth
import Foundation
import GATT
import GATTClientCLI
import Testing
import TestSupport

/// Issue 24, Enhanced ATT as a client against Bumble's EATT server (`eatt_enabled`'s server:
/// bumble_peer.py --eatt): up to five bearers on L2CAP enhanced credit-based channels after the
/// link is encrypted, discovery in parallel parts (the same tree in fewer sequential round
/// trips), many concurrent operations spread over the bearers with no ATT timeout, the peer's
/// own counts of the requests each bearer carried. Skipped where python3 cannot import bumble.
@Suite(
    "Interop: Enhanced ATT against Bumble", .serialized,
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct BumbleEATTInteropTests {
    static let sensorTag = PeerAddress(address: BluetoothAddress("54:6C:0E:12:34:56")!, type: .public)

    static func run(_ arguments: [String]) async -> CapturedRun {
        await captureRun { out, err in runGATTClient(arguments, standardOutput: out, standardError: err) }
    }

    /// An adapter on `peer` with bonds in a fresh directory; the caller removes it
    /// (`options.bondsDirectory`).
    static func adapter(_ peer: BumblePeer, bearers: Int?) async throws -> Adapter {
        var options = AdapterOptions()
        options.timeout = .seconds(20)
        options.bondsDirectory = NSTemporaryDirectory() + "eatt-bonds-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        options.enhancedBearers = bearers
        return try await Adapter.open(peer.uri.description, options: options)
    }

    /// `RESULT ok bearers att=N 0x0040=N …` as a dictionary.
    static func bearerCounts(_ peer: BumblePeer) async throws -> [String: Int] {
        let line = try await peer.command("bearers sensortag")
        var counts: [String: Int] = [:]
        for word in line.split(separator: " ") where word.contains("=") {
            let parts = word.split(separator: "=")
            if parts.count == 2, let count = Int(parts[1]) { counts[String(parts[0])] = count }
        }
        return counts
    }

    @Test func fiveBearersDiscoverTheSameTreeInFewerRoundTrips() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], lifetime: 120, arguments: ["--eatt"])
        defer { peer.stop() }
        try await withTimeout(90, "discovery over 1 and 5 bearers") {
            let one = try await Self.adapter(peer, bearers: nil)
            defer { removeTree(one.options.bondsDirectory!) }
            let single = try await one.connect(to: Self.sensorTag)
            let tree = try await single.client.discoverDatabase()
            let oneBearer = try #require(await single.client.lastDiscovery)
            await single.disconnect()
            await one.close()

            let five = try await Self.adapter(peer, bearers: 5)
            defer { removeTree(five.options.bondsDirectory!) }
            let enhanced = try await five.connect(to: Self.sensorTag)
            #expect(await enhanced.enhancedBearerCount == 5)
            #expect(await enhanced.securityLevel >= .encrypted, "EATT after encryption")
            let parallel = try await enhanced.client.discoverDatabase()
            let fiveBearers = try #require(await enhanced.client.lastDiscovery)
            #expect(parallel == tree, "the same tree")
            #expect(fiveBearers.roundTrips < oneBearer.roundTrips, "1 bearer \(oneBearer), 5 bearers \(fiveBearers)")
            let counts = try await Self.bearerCounts(peer)
            #expect(counts.filter { $0.key != "att" && $0.value > 0 }.count >= 4, "requests spread: \(counts)")
            await enhanced.disconnect()
            await five.close()
        }
    }

    @Test func aThousandConcurrentOperationsSpreadWithoutATimeout() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], lifetime: 120, arguments: ["--eatt"])
        defer { peer.stop() }
        try await withTimeout(90, "1000 operations over 5 bearers") {
            let adapter = try await Self.adapter(peer, bearers: 5)
            defer { removeTree(adapter.options.bondsDirectory!) }
            let device = try await adapter.connect(to: Self.sensorTag)
            let database = try await device.client.discoverDatabase()
            let name = try #require(database.characteristics(uuid: .bit16(0x2A00)).first?.valueHandle)
            let period = try #require(
                database.characteristics(uuid: BluetoothUUID("F000AA03-0451-4000-B000-000000000000")!).first?.valueHandle)
            let before = try await Self.bearerCounts(peer)
            let client = device.client
            let failures = await withTaskGroup(of: Int.self) { group in
                for worker in 0..<10 {
                    group.addTask {
                        var failed = 0
                        for operation in 0..<100 {
                            do {
                                if operation % 4 == 3 {
                                    try await client.write(handle: period, value: [UInt8(30 + (worker + operation) % 200)])
                                } else {
                                    let value = try await client.read(handle: name)
                                    if value != Array("CC2650 SensorTag".utf8) { failed += 1 }
                                }
                            } catch {
                                failed += 1
                            }
                        }
                        return failed
                    }
                }
                var total = 0
                for await failed in group { total += failed }
                return total
            }
            #expect(failures == 0)
            let after = try await Self.bearerCounts(peer)
            let spread = after.map { ($0.key, $0.value - (before[$0.key] ?? 0)) }.filter { $0.1 > 0 }
            #expect(spread.map(\.1).reduce(0, +) == 1000, "\(spread) before \(before) after \(after)")
            #expect(spread.count >= 5, "the operations used the bearers: \(spread)")
            await device.disconnect()
            await adapter.close()
        }
    }

    /// `services --eatt 5 --record` against Bumble, then the same command on the replay of the
    /// recording: the same services (the recording holds every bearer; `dump` follows them).
    @Test func aRecordedEATTSessionReplaysFromTheShell() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], lifetime: 120, arguments: ["--eatt"])
        defer { peer.stop() }
        let directory = NSTemporaryDirectory() + "eatt-cli-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { removeTree(directory) }
        let capture = directory + ".btsnoop"
        defer { unlink(capture) }
        let live = await Self.run([
            "--no-cache", "--bonds", directory, "--json", "--transport", peer.uri.description, "--record", capture, "--eatt", "5",
            "services", "54:6C:0E:12:34:56/public",
        ])
        #expect(live.code == 0, "\(live.stderr)")
        let replayed = await Self.run([
            "--no-cache", "--json", "--transport", "replay:" + capture, "--eatt", "5", "services", "54:6C:0E:12:34:56/public",
        ])
        #expect(replayed.code == 0, "\(replayed.stderr)")
        func services(_ output: String) throws -> String {
            let line = try #require(output.split(separator: "\n").first { $0.contains("\"kind\":\"services\"") })
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return String(decoding: try JSONSerialization.data(withJSONObject: object["services"] ?? [], options: .sortedKeys), as: UTF8.self)
        }
        #expect(try services(replayed.stdout) == services(live.stdout))
        #expect(replayed.stdout.contains("\"bearers\":6"))
    }
}

/// Issue 37 item 10: `--eatt` against a peer without Enhanced ATT (Bumble's SensorTag without
/// `--eatt` refuses with SPSM Not Supported, and no Destination_CID list).
@Suite("Interop: --eatt against a peer that refuses it", .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct BumbleEATTRefusedTests {
    @Test("the refusal is said with the peer's result and the command goes on; --eatt-required fails instead")
    func refusalFallsBack() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], lifetime: 90)
        defer { peer.stop() }
        let address = try #require(peer.devices["sensortag"]).description
        let bonds = BumblePairingInteropTests.bondsDirectory()
        defer { removeTree(bonds) }
        let base = ["--transport", peer.uri.description, "--bonds", bonds]
        let read = await BumblePairingCLITests.run(base + ["--eatt", "2", "read", address, "2a19"])
        #expect(read.code == 0, "\(read.stderr)")
        #expect(read.stderr.contains("refused Enhanced ATT bearers (SPSM Not Supported, 0x2)"), "\(read.stderr)")
        #expect(read.stderr.contains("unenhanced"), "\(read.stderr)")
        let required = await BumblePairingCLITests.run(base + ["--eatt", "2", "--eatt-required", "read", address, "2a19"])
        #expect(required.code == 1, "\(required.stdout) \(required.stderr)")
        #expect(required.stderr.contains("SPSM Not Supported"), "\(required.stderr)")
    }
}
