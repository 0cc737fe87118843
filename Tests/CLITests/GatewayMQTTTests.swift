import BLE
import Foundation
import MQTT
import Synchronization
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 23: `gateway --mqtt` into Debian's mosquitto on a loopback port of its own: the topics,
/// retained states and status, the decoded fields, the command topics, Home Assistant discovery,
/// and the last will when the gateway is killed. Skipped (said) without mosquitto.
@Suite(
    "gattclient gateway --mqtt", .enabled(if: MosquittoBroker.isAvailable, "needs mosquitto and libmosquitto1 (apt install mosquitto)"),
    .serialized, .timeLimit(.minutes(3)))
struct GatewayMQTTTests {
    /// The configuration of the JSON Lines tests, under a prefix of its own.
    /// The commands it answers are those the SensorTag's entry lists (issue 36: an allow-list).
    static let configuration = GatewayTests.configuration.replacingOccurrences(of: "\"home/ble\"", with: "\"test/gw\"")
        .replacingOccurrences(
            of: #""read": [{"characteristic": "2A19", "every": 1}]}"#,
            with: #""read": [{"characteristic": "2A19", "every": 1}], "commands": {"write": ["F000AA03-0451-4000-B000-000000000000"], "read": ["2A19"]}}"#)

    /// Everything published under a filter, in order, with the first arrival of each topic
    /// announced.
    final class Collector: Sendable {
        struct Message: Sendable {
            var topic: String
            var payload: [UInt8]
            var retained = false
            var text: String { String(decoding: payload, as: UTF8.self) }
            var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] }
        }

        final class Messages: Sendable {
            private let list = Mutex<[Message]>([])
            func append(_ message: Message) { list.withLock { $0.append(message) } }
            func withLock<R>(_ body: ([Message]) -> R) -> R { list.withLock { body($0) } }
        }

        let client: MQTTClient
        let messages = Messages()
        let arrivals: AsyncStream<Message>
        private let task: Task<Void, Never>

        init(port: Int, filters: [String]) throws {
            var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: port, clientID: "collector-\(UInt32.random(in: 0...UInt32.max))")
            configuration.cleanSession = true
            configuration.maximumReconnectDelay = 1
            client = try MQTTClient(configuration)
            for filter in filters { client.subscribe(filter) }
            let (stream, continuation) = AsyncStream.makeStream(of: Message.self)
            arrivals = stream
            let (client, messages) = (client, messages)
            task = Task {
                for await event in client.events {
                    guard case .message(let topic, let payload, let retained) = event else { continue }
                    let message = Message(topic: topic, payload: payload, retained: retained)
                    messages.append(message)
                    continuation.yield(message)
                }
                continuation.finish()
            }
            try client.start()
        }

        /// The first message (from now on or already seen) for which `condition` holds.
        func first(_ seconds: Double, _ what: String, where condition: @escaping @Sendable (Message) -> Bool) async throws -> Message {
            if let seen = messages.withLock({ $0.first(where: condition) }) { return seen }
            let arrivals = arrivals
            return try await withTimeout(seconds, what) {
                for await message in arrivals where condition(message) { return message }
                throw CollectorStopped(what: what)
            }
        }

        func all(_ topic: String) -> [Message] { messages.withLock { $0.filter { $0.topic == topic } } }

        /// Waits (at most `seconds`) until at least `count` messages on `topic` have arrived.
        func wait(_ seconds: Double, for count: Int, on topic: String) async throws {
            if all(topic).count >= count { return }
            let arrivals = arrivals
            try await withTimeout(seconds, "\(count) messages on \(topic)") {
                for await message in arrivals where message.topic == topic {
                    if self.all(topic).count >= count { return }
                }
                throw CollectorStopped(what: "\(count) messages on \(topic)")
            }
        }

        func stop() {
            client.stop()
            task.cancel()
        }
    }

    struct CollectorStopped: Error {
        var what: String
    }

    static func writeConfiguration() throws -> String {
        let path = NSTemporaryDirectory() + "gateway-mqtt-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func topicsStatesFieldsCommandsAndDiscovery() async throws {
        let broker = try await MosquittoBroker()
        defer { broker.stop() }
        let path = try Self.writeConfiguration()
        defer { try? FileManager.default.removeItem(atPath: path) }
        // An old command the broker keeps (retained): switching the IR sensor off. It must not run.
        var stale = MQTTClient.Configuration(host: "127.0.0.1", port: broker.port, clientID: "stale")
        stale.maximumReconnectDelay = 1
        let staleClient = try MQTTClient(stale)
        try staleClient.start()
        let irSwitch = "test/gw/dev/54:6C:0E:9A:3B:01/F000AA00-0451-4000-B000-000000000000/F000AA02-0451-4000-B000-000000000000"
        staleClient.publish(MQTTMessage(topic: irSwitch + "/set", payload: Array("00".utf8), retain: true))
        #expect(await staleClient.drain(timeout: .seconds(20)))
        staleClient.stop()
        let collector = try Collector(port: broker.port, filters: ["test/gw/#", "homeassistant/#"])
        defer { collector.stop() }
        let gateway = Task {
            await runInProcess([
                "--transport", "sim:sensortag,counter*2", "gateway", "--config", path, "--mqtt", "mqtt://127.0.0.1:\(broker.port)",
                "--duration", String(8 * testTimeoutScale), "--home-assistant", "--commands", "--client-id", "gw-under-test",
            ])
        }
        let tag = "test/gw/dev/54:6C:0E:9A:3B:01"
        _ = try await collector.first(30, "the gateway's status") { $0.topic == "test/gw/status" && $0.text == "online" }
        _ = try await collector.first(30, "the SensorTag connected") { $0.topic == tag + "/state" && $0.json?["state"] as? String == "connected" }
        // Commands: a write of the IR period (1 s, as it is) and a read of the battery, each answered.
        var commander = MQTTClient.Configuration(host: "127.0.0.1", port: broker.port, clientID: "commander")
        commander.maximumReconnectDelay = 1
        let client = try MQTTClient(commander)
        try client.start()
        defer { client.stop() }
        let ir = "/F000AA00-0451-4000-B000-000000000000/F000AA03-0451-4000-B000-000000000000"
        client.publish(MQTTMessage(topic: tag + ir + "/set", payload: Array("64".utf8)))
        client.publish(MQTTMessage(topic: tag + "/180F/2A19/read", payload: []))
        client.publish(MQTTMessage(topic: "test/gw/dev/11:22:33:44:55:66/180F/2A19/read", payload: []))
        let written = try await collector.first(30, "the write's result") { $0.topic == tag + ir + "/result" }
        #expect(written.json?["ok"] as? Bool == true && written.json?["request"] as? String == "set" && written.json?["value"] as? String == "64")
        let read = try await collector.first(30, "the read's result") { $0.topic == tag + "/180F/2A19/result" }
        #expect(read.json?["ok"] as? Bool == true && read.json?["value"] as? String == "64")
        let unknown = try await collector.first(30, "the unknown device's result") { $0.topic == "test/gw/dev/11:22:33:44:55:66/180F/2A19/result" }
        #expect(unknown.json?["ok"] as? Bool == false && (unknown.json?["error"] as? String)?.contains("not a device of this gateway") == true)
        let run = await gateway.value
        #expect(run.code == 0, "\(run.stderr)")
        #expect(run.stdout.isEmpty, "with --mqtt the messages go to the broker, not standard output")

        // The status: online, then offline at the clean end (both retained). The gateway has
        // published it before exiting; the broker passes it on to the collector in its own time.
        _ = try await collector.first(30, "the gateway's offline status") { $0.topic == "test/gw/status" && $0.text == "offline" }
        #expect(collector.all("test/gw/status").map(\.text) == ["online", "offline"])
        // States, values with decoded fields, advertisements.
        let states = collector.all(tag + "/state").compactMap { message -> String? in message.json?["state"] as? String }
        #expect(states.contains("connected"))
        let battery = collector.all(tag + "/180F/2A19").compactMap(\.json)
        #expect(battery.contains { ($0["fields"] as? [String: Any])?["level"] as? Int == 100 && $0["read"] as? Bool == true })
        let irValues = collector.all(tag + "/F000AA00-0451-4000-B000-000000000000/F000AA01-0451-4000-B000-000000000000").compactMap(\.json)
        #expect(irValues.contains { ($0["fields"] as? [String: Any])?["objectC"] as? Double != nil }, "\(irValues.count) IR values")
        for index in 1...2 {
            let values = collector.all("test/gw/dev/C0:DE:00:00:00:0\(index)/C0DE0001-0000-4000-8000-00805F9B34FB/C0DE0002-0000-4000-8000-00805F9B34FB")
                .compactMap { ($0.json?["value"] as? String).flatMap(counterValue) }
            #expect(values.count >= 10 && zip(values, values.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "counter \(index): \(values.count)")
        }
        let advertisement = try #require(collector.messages.withLock { $0.first { $0.topic.hasPrefix("test/gw/adv/C0:DE:00:00:00:") } }?.json)
        #expect(advertisement["kind"] as? String == "report" && advertisement["addressType"] as? String == "random")
        #expect((advertisement["serviceUUIDs"] as? [String])?.contains("C0DE0001-0000-4000-8000-00805F9B34FB") == true)
        // Home Assistant discovery: the SensorTag's battery and IR sensors, pointing at their topics.
        let battery_config = try #require(collector.all("homeassistant/sensor/gattclient_546c0e9a3b01_battery/config").first?.json)
        #expect(battery_config["state_topic"] as? String == tag + "/180F/2A19")
        #expect(battery_config["value_template"] as? String == "{{ value_json.fields.level }}")
        #expect(battery_config["availability_topic"] as? String == "test/gw/status")
        #expect(!collector.all("homeassistant/sensor/gattclient_546c0e9a3b01_ir_object/config").isEmpty)
        // The retained command was not run (no answer; the IR values kept coming).
        #expect(collector.all(irSwitch + "/result").isEmpty)
        #expect(run.stderr.contains("ignored a retained command on \(irSwitch)/set"))

        // A subscriber arriving after the end learns the retained status and states at once.
        let late = try Collector(port: broker.port, filters: ["test/gw/status", "test/gw/dev/+/state"])
        defer { late.stop() }
        let status = try await late.first(20, "the retained status") { $0.topic == "test/gw/status" }
        #expect(status.retained && status.text == "offline")
        let state = try await late.first(20, "a retained state") { $0.topic == tag + "/state" }
        #expect(state.retained && state.json?["state"] as? String == "removed")
    }

    @Test func theLastWillSaysOfflineWhenTheGatewayIsKilled() async throws {
        let broker = try await MosquittoBroker()
        defer { broker.stop() }
        let path = try Self.writeConfiguration()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let collector = try Collector(port: broker.port, filters: ["test/gw/status"])
        defer { collector.stop() }
        let child = try ChildProcess(
            [
                InterruptTests.binary, "--no-cache", "--transport", "sim:counter", "gateway", "--config", path, "--mqtt",
                "mqtt://127.0.0.1:\(broker.port)",
            ], standardOutput: .null, standardError: .null)
        defer { child.kill() }
        _ = try await collector.first(30, "the gateway online") { $0.text == "online" }
        child.kill()
        // The broker publishes the will at once: the connection closed without DISCONNECT.
        _ = try await collector.first(30, "the last will") { $0.text == "offline" }
        #expect(collector.all("test/gw/status").map(\.text) == ["online", "offline"])
    }

    @Test func theOptionsAreCheckedBeforeAnythingStarts() throws {
        #expect(throws: UsageError.self) { try parse(["gateway", "--config", "x.json", "--mqtt", "http://broker"]) }
        #expect(throws: UsageError.self) { try parse(["gateway", "--config", "x.json", "--mqtt", "mqtt://broker:0"]) }
        #expect(throws: UsageError.self) { try parse(["gateway", "--config", "x.json", "--qos", "1"]) }
        #expect(throws: UsageError.self) { try parse(["gateway", "--config", "x.json", "--mqtt", "mqtt://b", "--qos", "3"]) }
        #expect(throws: UsageError.self) { try parse(["gateway", "--config", "x.json", "--mqtt", "mqtt://b", "--password-file", "p"]) }
        #expect(throws: UsageError.self) { try parse(["gateway", "--config", "x.json", "--mqtt", "mqtt://b", "--tls-ca", "ca.pem"]) }
        guard case .gateway(_, _, let mqtt?) = try parse([
            "gateway", "--config", "x.json", "--mqtt", "mqtts://broker.example:8884", "--tls-ca", "ca.pem", "--username", "gw",
            "--password-file", "pw", "--queue", "500", "--qos", "0", "--home-assistant", "--commands",
        ]).command else {
            Issue.record("not a gateway command with --mqtt")
            return
        }
        #expect(mqtt.host == "broker.example" && mqtt.port == 8884 && mqtt.tls && mqtt.caFile == "ca.pem")
        #expect(mqtt.username == "gw" && mqtt.passwordFile == "pw" && mqtt.queue == 500 && mqtt.qos == 0 && mqtt.homeAssistant)
        #expect(mqtt.commands)
        #expect(try GatewayMQTTOptions(url: "mqtt://127.0.0.1").port == 1883)
        #expect(try GatewayMQTTOptions(url: "mqtt://[::1]:1999").host == "::1")
    }
}

/// Issue 23: the systemd unit in `contrib/`, checked by `systemd-analyze verify` (with the unit's
/// `gattclient` path pointing at the one built here) where systemd is installed.
@Suite(
    "contrib/gattclient-gateway.service",
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), "needs systemd-analyze (systemd)"))
struct GatewayUnitTests {
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("contrib/gattclient-gateway.service").path

    @Test func theUnitVerifiesAndRunsWithoutRoot() async throws {
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        // No root: a dynamic user with the Bluetooth sockets' capabilities and nothing more.
        #expect(text.contains("DynamicUser=yes") && !text.contains("User=root"))
        #expect(text.contains("AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN"))
        #expect(text.contains("CapabilityBoundingSet=CAP_NET_RAW CAP_NET_ADMIN"))
        #expect(text.contains("LoadCredential=gateway.json:/etc/gattclient/gateway.json"))
        #expect(text.contains("gateway --config %d/gateway.json --mqtt mqtt://"))
        let path = NSTemporaryDirectory() + "gattclient-gateway-\(getpid()).service"
        try text.replacingOccurrences(of: "/usr/local/bin/gattclient", with: InterruptTests.binary)
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try await ChildProcess.run(["/usr/bin/systemd-analyze", "verify", path], timeout: 60)
        #expect(run.code == 0, "systemd-analyze verify: \(String(decoding: run.output, as: UTF8.self))")
    }
}
