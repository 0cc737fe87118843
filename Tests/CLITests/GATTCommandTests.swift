import BLE
import ATT
import Bluetooth
import Foundation
import GATT
import HCI
import Kernel
import Testing
@testable import GATTClientCLI

/// A peripheral of our own GATT server, reached over an in-memory ATT channel.
final class InMemoryCentral: Central, @unchecked Sendable {
    // `host` and `connections` are set once in init / appended under the lock.
    let host: GATTServerHost
    private let lock = NSLock()
    private var connections: [ATTConnection] = []

    init(database: AttributeDatabase) {
        host = GATTServerHost(server: GATTServer(database: database))
    }

    func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel {
        let (client, server) = InMemoryATTChannel.pair()
        let served = await host.serve(server, configuration: ATTBearer.Configuration(rxMTU: 23))
        lock.withLock { connections.append(served.connection) }
        return client
    }

    func close() async {}

    /// A SensorTag-like database: GAP, GATT, Battery (read + notify), IR temperature.
    static func sensorTagLike() throws -> AttributeDatabase {
        try AttributeDatabase(services: [
            StandardServices.genericAccess(deviceName: "CC2650 SensorTag"),
            StandardServices.genericAttribute(),
            ServiceDefinition(uuid: 0x180F, characteristics: [
                CharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [0x5C], descriptors: [.clientConfiguration()]),
            ]),
            ServiceDefinition(uuid: SensorTag.uuid(0xAA00), characteristics: [
                CharacteristicDefinition(uuid: SensorTag.uuid(0xAA01), properties: [.read, .notify], value: [0x68, 0x0B, 0x40, 0x0C],
                                         descriptors: [.clientConfiguration()]),
                CharacteristicDefinition(uuid: SensorTag.uuid(0xAA02), properties: [.read, .write], value: [0x00]),
            ]),
        ])
    }
}

@Suite struct GATTCommandTests {
    static let peer = PeerAddress("54:6C:0E:12:34:56")!

    func run(_ body: (inout BufferedOutput) async throws -> Void) async throws -> [String] {
        var output = BufferedOutput.capturing()
        try await body(&output)
        output.flush()
        return output.capturedLines
    }

    @Test func servicesPrintsTheDatabaseAsJSON() async throws {
        let central = InMemoryCentral(database: try InMemoryCentral.sensorTagLike())
        var options = GlobalOptions()
        options.json = true
        let lines = try await run { try await ServicesCommand(peer: Self.peer, central: central).run(options: options, replayMatchAny: false, output: &$0) }
        let document = try #require(try jsonObjects(lines).first)
        #expect(document["address"] as? String == "54:6C:0E:12:34:56")
        #expect(document["mtu"] as? Int == 23)
        let services = try #require(document["services"] as? [[String: Any]])
        #expect(services.map { $0["uuid"] as? String } == ["1800", "1801", "180F", "F000AA00-0451-4000-B000-000000000000"])
        #expect(services[2]["name"] as? String == "Battery")
        let battery = try #require((services[2]["characteristics"] as? [[String: Any]])?.first)
        #expect(battery["properties"] as? [String] == ["read", "notify"])
        #expect((battery["descriptors"] as? [[String: Any]])?.first?["uuid"] as? String == "2902")
        let requests = try #require(document["attRequests"] as? Int)
        #expect(requests > 3 && requests < 20, "Exchange MTU included; \(requests)")
    }

    @Test func readWriteAndSubscribe() async throws {
        let central = InMemoryCentral(database: try InMemoryCentral.sensorTagLike())
        var options = GlobalOptions()
        options.json = true
        let read = try await run {
            try await ReadCommand(peer: Self.peer, central: central, target: .uuid(0x2A19)).run(options: options, replayMatchAny: false, output: &$0)
        }
        let values = try jsonObjects(read).filter { $0["kind"] as? String == "value" }
        #expect(values.first?["value"] as? String == "5c")
        let write = try await run {
            try await WriteCommand(peer: Self.peer, central: central, target: .uuid(SensorTag.uuid(0xAA02)), value: [0x01])
                .run(options: options, replayMatchAny: false, output: &$0)
        }
        #expect(try jsonObjects(write).first?["length"] as? Int == 1)
        // A notification pushed by the server while subscribed, then --count ends the command.
        let pusher = Task {
            for _ in 0..<200 {
                try await Task.sleep(for: .milliseconds(20))
                try? await central.host.updateValue([0x6C, 0x0B, 0x41, 0x0C], handle: try #require(await central.host.database.valueHandle(of: SensorTag.uuid(0xAA01))))
            }
        }
        defer { pusher.cancel() }
        let notifications = try await run {
            try await SubscribeCommand(peer: Self.peer, central: central, target: .uuid(SensorTag.uuid(0xAA01)), count: 2)
                .run(options: options, replayMatchAny: false, output: &$0)
        }
        let records = try jsonObjects(notifications).filter { $0["kind"] as? String != "event" }
        #expect(records.count == 2)
        #expect(records.first?["value"] as? String == "6c0b410c")
        #expect(records.first?["indication"] as? Bool == false)
    }

    @Test func peerErrorsMapToTypedFailures() async throws {
        let central = InMemoryCentral(database: try InMemoryCentral.sensorTagLike())
        await #expect(throws: CommandFailure.self) {
            _ = try await run { try await ReadCommand(peer: Self.peer, central: central, target: .handle(0x00F0)).run(options: GlobalOptions(), replayMatchAny: false, output: &$0) }
        }
        do {
            _ = try await run { try await ReadCommand(peer: Self.peer, central: central, target: .handle(0x00F0)).run(options: GlobalOptions(), replayMatchAny: false, output: &$0) }
        } catch let failure as CommandFailure {
            #expect(failure.attError?.rawValue == 0x01, "Invalid Handle")
            #expect(failure.handle == 0x00F0)
            #expect(failure.message.contains("Invalid Handle"))
        }
    }

    /// A session recorded with --record replays strictly, byte for byte, through replay:FILE.
    @Test func recordedSessionReplays() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("services-\(getpid()).btsnoop").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let central = InMemoryCentral(database: try InMemoryCentral.sensorTagLike())
        var recording = GlobalOptions()
        recording.json = true
        recording.record = path
        let live = try await run { try await ServicesCommand(peer: Self.peer, central: central).run(options: recording, replayMatchAny: false, output: &$0) }
        var replaying = GlobalOptions()
        replaying.json = true
        replaying.transport = "replay:" + path
        let replayed = try await run { try await ServicesCommand(peer: Self.peer).run(options: replaying, replayMatchAny: false, output: &$0) }
        #expect(replayed == live)
        #expect(!live.isEmpty)
    }

    @Test func parsesTheGATTCommands() throws {
        #expect(try parse(["services", "AA:BB:CC:DD:EE:FF/random"]).command
            == .services(PeerAddress(address: BluetoothAddress("AA:BB:CC:DD:EE:FF")!, type: .random)))
        #expect(try parse(["read", "AA:BB:CC:DD:EE:FF", "--random", "0x0021"]).command
            == .read(PeerAddress(address: BluetoothAddress("AA:BB:CC:DD:EE:FF")!, type: .random), .handle(0x21), long: false, multiple: []))
        #expect(try parse(["write", "AA:BB:CC:DD:EE:FF", "2A19", "--text", "hi", "--no-response"]).command
            == .write(PeerAddress("AA:BB:CC:DD:EE:FF")!, .uuid(0x2A19), value: [0x68, 0x69], mode: .noResponse))
        #expect(try parse(["subscribe", "AA:BB:CC:DD:EE:FF", "33", "--indicate", "--count", "5"]).command
            == .subscribe(PeerAddress("AA:BB:CC:DD:EE:FF")!, .handle(33), indicate: true, count: 5, duration: nil))
        #expect(throws: UsageError("'XX' is not a Bluetooth address (AA:BB:CC:DD:EE:FF, or AA:BB:CC:DD:EE:FF/random)")) {
            try parse(["services", "XX"])
        }
        #expect(throws: UsageError("--no-response, --long and --reliable exclude each other")) {
            try parse(["write", "AA:BB:CC:DD:EE:FF", "0x10", "01", "--long", "--reliable"])
        }
        #expect(throws: UsageError("'0g' is not hex (like 0100 or 01:00)")) { try parse(["write", "AA:BB:CC:DD:EE:FF", "0x10", "0g"]) }
    }
}

@Suite struct TransportExitCodeTests {
    @Test func permissionDeniedIsSeventySeven() {
        let denied = KernelBluetoothError.system(operation: .openHCISocket(channel: .user, device: 0), errno: .permissionDenied)
        #expect(denied.transportExitCode == .permission)
        let missing = KernelBluetoothError.system(operation: .openHCISocket(channel: .user, device: 0), errno: .addressFamilyNotSupported)
        #expect(missing.transportExitCode == .unavailable)
        #expect(HCIError.transportClosed("gone").transportExitCode == .unavailable)
    }
}
