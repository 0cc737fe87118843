import Bluetooth
import Foundation
import GATTClientCLI
import Testing
import TestSupport

/// `gattclient` itself against Bumble's controller and peripherals over H4/TCP: what a user
/// types, checked against what the peer holds.
@Suite(
    "gattclient against Bumble over tcp:",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct CLIInteropTests {
    /// Runs the CLI in process, output captured (``captureRun(_:)``).
    static func gattclient(_ arguments: [String]) async -> CapturedRun {
        await captureRun { out, err in runGATTClient(arguments, standardOutput: out, standardError: err) }
    }

    static func objects(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    @Test func scanFindsBothPeripheralsByName() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag", "bluefruit"])
        defer { peer.stop() }
        let result = await Self.gattclient(["--json", "--transport", "\(peer.uri)", "scan", "--duration", "2"])
        #expect(result.code == 0, "\(result.stderr)")
        let names = Set(Self.objects(result.stdout).compactMap { $0["name"] as? String })
        #expect(names.isSuperset(of: ["CC2650 SensorTag", "Adafruit Bluefruit LE"]))
        let bluefruit = Self.objects(result.stdout).first { $0["name"] as? String == "Adafruit Bluefruit LE" }
        #expect(bluefruit?["addressType"] as? String == "random")
        #expect((bluefruit?["serviceUUIDs"] as? [String])?.contains("6E400001-B5A3-F393-E0A9-E50E24DCCA9E") == true)
    }

    /// Issue 20: `adapters` describes Bumble's controller as our host read it at start; `services
    /// --values` reads every value Bumble's SensorTag serves; `-v` shows the link's parameters.
    @Test func adaptersServicesValuesAndTheLinkAgainstBumble() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"])
        defer { peer.stop() }
        let described = await Self.gattclient(["--json", "--transport", "\(peer.uri)", "adapters"])
        #expect(described.code == 0, "\(described.stderr)")
        let controller = try #require(Self.objects(described.stdout).first)
        #expect(controller["kind"] as? String == "adapter")
        #expect((controller["hciVersion"] as? String)?.isEmpty == false)
        #expect((controller["leFeatures"] as? [String])?.contains("LE Encryption") == true, "\(controller)")
        #expect(((controller["aclBuffers"] as? [String: Any])?["packetCount"] as? Int ?? 0) > 0)
        let address = try #require(peer.devices["sensortag"])
        let values = await Self.gattclient(["-v", "--transport", "\(peer.uri)", "services", "--values", "\(address)"])
        #expect(values.code == 0, "\(values.stderr)")
        #expect(values.stdout.contains("    = 4343323635302053656e736f72546167  \"CC2650 SensorTag\""), "\(values.stdout)")
        #expect(values.stderr.contains(": connected, ATT_MTU 517"), "\(values.stderr)")
        #expect(values.stderr.contains("supervision timeout"), "the link's parameters under -v")
    }

    @Test(arguments: [(517, 28), (23, 54)])
    func servicesDiscoversTheSensorTagExactlyWithinTheRequestFloor(mtu: Int, floor: Int) async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], mtu: mtu)
        defer { peer.stop() }
        let address = try #require(peer.devices["sensortag"])
        let result = await Self.gattclient(["--json", "--transport", "\(peer.uri)", "services", "\(address)"])
        #expect(result.code == 0, "\(result.stderr)")
        let document = try #require(Self.objects(result.stdout).first)
        let services = try #require(document["services"] as? [[String: Any]])
        let characteristics = services.flatMap { ($0["characteristics"] as? [[String: Any]]) ?? [] }
        let descriptors = characteristics.flatMap { ($0["descriptors"] as? [[String: Any]]) ?? [] }
        #expect(services.count == 11)
        #expect(characteristics.count == 32)
        #expect(descriptors.count == 26)
        #expect(document["mtu"] as? Int == mtu)
        let requests = try #require(document["attRequests"] as? Int)
        print("services against Bumble at MTU \(mtu): \(requests) ATT requests (floor \(floor), Bumble's own client 64/47)")
        #expect(requests <= floor, "\(requests) requests at MTU \(mtu)")
    }

    /// Issue 14: at ATT_MTU 23 Bumble answers Read Multiple Variable with more than the MTU;
    /// every value still comes back (one read each), with a warning naming the violation.
    @Test func readMultipleAtMTU23GetsEveryValueDespiteBumblesOversizedAnswer() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], mtu: 23)
        defer { peer.stop() }
        let address = try #require(peer.devices["sensortag"])
        let handles = "0x0003,0x0010,0x0012,0x0014,0x0016"
        let read = await Self.gattclient(["--json", "--transport", "\(peer.uri)", "read", "\(address)", "--multiple", handles])
        #expect(read.code == 0, "\(read.stderr)")
        let values = Self.objects(read.stdout).filter { $0["kind"] as? String == "value" }
        #expect(values.compactMap { $0["handle"] as? Int } == [0x0003, 0x0010, 0x0012, 0x0014, 0x0016])
        let texts = values.compactMap { ($0["value"] as? String).flatMap(Hex.decode).map { String(decoding: $0, as: UTF8.self) } }
        #expect(texts == ["CC2650 SensorTag", "CC2650 SensorTag", "N.A.", "1.40 (Jun 21 2017)", "PCB 1.2/1.3"])
        // Bumble's oversized answer (0.0.236: 37 octets), tolerated and said.
        #expect(read.stderr.contains("warning:") && read.stderr.contains("exceeds ATT_MTU 23"), "\(read.stderr)")
        #expect(Self.objects(read.stdout).contains { $0["event"] as? String == "protocolViolation" })
        let strict = await Self.gattclient(
            ["--strict", "--transport", "\(peer.uri)", "read", "\(address)", "--multiple", handles])
        #expect(strict.code == 1, "\(strict.stderr)")
    }

    @Test func readWriteAndRefusal() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"])
        defer { peer.stop() }
        let address = try #require(peer.devices["sensortag"])
        let read = await Self.gattclient(["--json", "--transport", "\(peer.uri)", "read", "\(address)", "2A29"])
        #expect(read.code == 0, "\(read.stderr)")
        let values = Optional(Self.objects(read.stdout).filter { $0["kind"] as? String == "value" })
        #expect(values?.first?["value"] as? String == Hex.encode(Array("Texas Instruments".utf8)))
        let write = await Self.gattclient(
            ["--json", "--transport", "\(peer.uri)", "write", "\(address)", "F000AA02-0451-4000-B000-000000000000", "01"])
        #expect(write.code == 0, "\(write.stderr)")
        #expect(Self.objects(write.stdout).first?["length"] as? Int == 1)
    }

    @Test func uartRoundTrip() async throws {
        let peer = try await BumblePeer.start(devices: ["bluefruit"])
        defer { peer.stop() }
        let address = try #require(peer.devices["bluefruit"])
        let text = "F then L then R then S, a line longer than one ATT_MTU"
        // The echo must come back within --duration: longer where the run is slower (the sanitizer).
        let result = await Self.gattclient(
            ["--transport", "\(peer.uri)", "uart", "\(address)/random", "--send", text, "--duration", "\(1.5 * testTimeoutScale)"])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(result.stdout == text + "\n", "text ends with a newline")
        let button = await Self.gattclient(["--json", "--transport", "\(peer.uri)", "uart", "\(address)/random", "--controller", "button:1"])
        #expect(Self.objects(button.stdout).first?["text"] as? String == "!B11:")
    }

    @Test func aConnectionToNobodyFailsWithinTheTimeout() async throws {
        let peer = try await BumblePeer.start(devices: [])
        defer { peer.stop() }
        let started = ContinuousClock.now
        let result = await Self.gattclient(["--json", "--timeout", "2", "--transport", "\(peer.uri)", "services", "C0:00:00:00:00:01/random"])
        #expect(result.code == 1)
        #expect(ContinuousClock.now - started < .seconds(15))
        let error = Self.objects(result.stdout).last?["error"] as? [String: Any]
        #expect(error?["kind"] as? String == "connect")
    }
}
