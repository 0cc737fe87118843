import BLE
import Foundation
import MQTT
import Synchronization
import TestSupport
import Testing

@testable import GATTClientCLI

/// Issue 36, holes 5 and 8: `gateway --commands` obeys only what the configuration allows
/// (a mosquitto client publishing as an attacker would), and a TLS failure does not end MQTT
/// for good. Against Debian's mosquitto on a loopback port of its own; skipped (said) without it.
@Suite(
    "gateway: command policy and TLS reconnect",
    .enabled(if: MosquittoBroker.isAvailable, "needs mosquitto and libmosquitto1 (apt install mosquitto)"),
    .serialized, .timeLimit(.minutes(3)))
struct GatewaySecurityTests {
    typealias Collector = GatewayMQTTTests.Collector

    static let tag = "test/policy/dev/54:6C:0E:9A:3B:01"
    static let thermometer = "test/policy/dev/C4:7E:11:09:2A:1C"
    static let irPeriod = "/F000AA00-0451-4000-B000-000000000000/F000AA03-0451-4000-B000-000000000000"
    static let irConfiguration = "/F000AA00-0451-4000-B000-000000000000/F000AA02-0451-4000-B000-000000000000"

    /// The SensorTag may have its IR period written and its battery read; the thermometer its
    /// Temperature Type read (which needs an authenticated link: pairing).
    static let configuration = """
        {
          "prefix": "test/policy",
          "devices": [
            {"address": "54:6C:0E:9A:3B:01/public",
             "commands": {"write": ["F000AA03-0451-4000-B000-000000000000"], "read": ["2A19"]}},
            {"address": "C4:7E:11:09:2A:1C/random", "commands": {"read": ["2A1D"]}}
          ]
        }
        """

    static func write(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "gateway-policy-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func commander(_ port: Int) throws -> MQTTClient {
        var configuration = MQTTClient.Configuration(
            host: "127.0.0.1", port: port, clientID: "attacker-\(UInt32.random(in: 0...UInt32.max))")
        configuration.cleanSession = true
        configuration.maximumReconnectDelay = 1
        let client = try MQTTClient(configuration)
        try client.start()
        return client
    }

    @Test func onlyListedCharacteristicsOfConfiguredDevicesAndNeverPairing() async throws {
        let broker = try await MosquittoBroker()
        defer { broker.stop() }
        let path = try Self.write(Self.configuration)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let collector = try Collector(port: broker.port, filters: ["test/policy/#"])
        defer { collector.stop() }
        let gateway = Task {
            await runInProcess([
                "--transport", "sim:sensortag,thermometer", "gateway", "--config", path, "--mqtt",
                "mqtt://127.0.0.1:\(broker.port)",
                "--duration", String(8 * testTimeoutScale), "--commands",
            ])
        }
        for device in [Self.tag, Self.thermometer] {
            _ = try await collector.first(30, "\(device) connected") {
                $0.topic == device + "/state" && $0.json?["state"] as? String == "connected"
            }
        }
        let client = try Self.commander(broker.port)
        defer { client.stop() }
        let commands: [(topic: String, payload: String)] = [
            (Self.tag + Self.irPeriod + "/set", "64"),  // listed: done
            (Self.tag + "/180F/2A19/read", ""),  // listed: done
            (Self.tag + Self.irConfiguration + "/set", "00"),  // not listed
            (Self.tag + "/180F/2A19/set", "00"),  // listed for read, not for write
            ("test/policy/dev/11:22:33:44:55:66/180F/2A19/read", ""),  // not a device of the configuration
            (Self.thermometer + "/1809/2A1D/read", ""),  // listed, needs pairing: refused, not paired
            (Self.tag + "/FFFF/2A19/read", ""),  // listed characteristic, under a service the device lacks
        ]
        for command in commands {
            client.publish(MQTTMessage(topic: command.topic, payload: Array(command.payload.utf8), qos: 0))
        }
        func result(_ topic: String) async throws -> [String: Any] {
            let request = topic.hasSuffix("/set") ? "set" : "read"
            let base = String(topic.dropLast(request.count + 1))
            return try #require(
                try await collector.first(30, "the result of \(topic)") {
                    $0.topic == base + "/result" && $0.json?["request"] as? String == request
                }.json)
        }
        let written = try await result(commands[0].topic)
        #expect(
            written["ok"] as? Bool == true && written["request"] as? String == "set"
                && written["value"] as? String == "64")
        let read = try await result(commands[1].topic)
        #expect(read["ok"] as? Bool == true && read["value"] as? String == "64")
        let unlisted = try await result(commands[2].topic)
        #expect(
            unlisted["ok"] as? Bool == false
                && (unlisted["error"] as? String)?.contains("not in the configuration's commands.write") == true)
        let notForReading = try await result(commands[3].topic)
        #expect(
            notForReading["ok"] as? Bool == false
                && (notForReading["error"] as? String)?.contains("commands.write") == true)
        let stranger = try await result(commands[4].topic)
        #expect(
            stranger["ok"] as? Bool == false
                && (stranger["error"] as? String)?.contains("not a device of this gateway") == true)
        let secured = try await result(commands[5].topic)
        let securedError = secured["error"] as? String ?? ""
        #expect(secured["ok"] as? Bool == false && securedError.contains("never pairs"), "\(securedError)")
        #expect(securedError.lowercased().contains("insufficient authentication"), "\(securedError)")
        let wrongService = try await result(commands[6].topic)
        #expect(
            wrongService["ok"] as? Bool == false
                && (wrongService["error"] as? String)?.contains("no characteristic 2A19 in service FFFF") == true, "\(wrongService)")
        #expect(!collector.messages.withLock { $0.contains { $0.topic == Self.tag + "/FFFF/2A19" } }, "no value under a made-up service")
        // Payloads refused on arrival (published once the good write has its answer: a refusal
        // is answered at once, on the same result topic).
        for payload in ["zz", String(repeating: "00", count: 600)] {
            client.publish(MQTTMessage(topic: Self.tag + Self.irPeriod + "/set", payload: Array(payload.utf8), qos: 0))
        }
        let notHex = try #require(
            try await collector.first(30, "the refusal of a payload that is not hex") {
                $0.topic == Self.tag + Self.irPeriod + "/result" && ($0.json?["error"] as? String)?.contains("octets of hex") == true
            }.json)
        #expect(notHex["ok"] as? Bool == false)
        let run = await gateway.value
        #expect(run.code == 0, "\(run.stderr)")
        // Counted and said: the first refusal at once, the total at the end.
        #expect(run.stderr.contains("command refused as not allowed"), "\(run.stderr)")
        #expect(run.stderr.contains("5 commands refused: 3 not allowed, 0 for a full queue (64), 2 invalid"), "\(run.stderr)")
        #expect(!run.stderr.lowercased().contains("pairing"), "no pairing was started: \(run.stderr)")
    }

    @Test func aFloodBeyondTheQueueIsAnsweredWithErrorsAndCounted() async throws {
        let broker = try await MosquittoBroker()
        defer { broker.stop() }
        let path = try Self.write(Self.configuration)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let collector = try Collector(port: broker.port, filters: ["test/policy/#"])
        defer { collector.stop() }
        let gateway = Task {
            await runInProcess([
                "--transport", "sim:sensortag", "gateway", "--config", path, "--mqtt",
                "mqtt://127.0.0.1:\(broker.port)",
                "--duration", String(10 * testTimeoutScale), "--commands", "--command-queue", "2",
            ])
        }
        _ = try await collector.first(30, "the SensorTag connected") {
            $0.topic == Self.tag + "/state" && $0.json?["state"] as? String == "connected"
        }
        let client = try Self.commander(broker.port)
        defer { client.stop() }
        let count = 2_000
        for _ in 0..<count { client.publish(MQTTMessage(topic: Self.tag + "/180F/2A19/read", payload: [], qos: 0)) }
        // Every command answered: done, or refused for the full queue.
        let results = Self.tag + "/180F/2A19/result"
        try await collector.wait(60, for: count, on: results)
        let answers = collector.all(results).compactMap(\.json)
        let done = answers.filter { $0["ok"] as? Bool == true }.count
        let full = answers.filter {
            ($0["error"] as? String)?.contains("the command queue is full (2 pending") == true
        }.count
        #expect(done + full == count && done >= 1 && full >= 1, "\(done) done, \(full) refused")
        let run = await gateway.value
        #expect(run.code == 0, "\(run.stderr)")
        // Said at the first refusal and at each tenfold, with the running count; the total at the end.
        #expect(run.stderr.contains("(1 refused for a full queue so far"), "\(run.stderr)")
        #expect(run.stderr.contains("commands refused: 0 not allowed, \(full) for a full queue (2)"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").filter { $0.contains("command refused for a full queue") }.count <= 4)
    }

    @Test func theQueueAndPolicyOptionsAreChecked() throws {
        #expect(throws: UsageError.self) {
            try parse(["gateway", "--config", "x.json", "--mqtt", "mqtt://b", "--command-queue", "5"])
        }
        #expect(throws: UsageError.self) {
            try parse(["gateway", "--config", "x.json", "--mqtt", "mqtt://b", "--commands", "--command-queue", "0"])
        }
        guard
            case .gateway(_, _, let mqtt?) = try parse([
                "gateway", "--config", "x.json", "--mqtt", "mqtt://b", "--commands", "--command-queue", "500",
            ]).command
        else {
            Issue.record("not a gateway command with --mqtt")
            return
        }
        #expect(mqtt.commands && mqtt.commandQueue == 500)
        let parsed = try GatewayConfiguration(json: Array(Self.configuration.utf8))
        #expect(parsed.devices[0].commands.write == [BluetoothUUID("F000AA03-0451-4000-B000-000000000000")!])
        #expect(
            parsed.devices[0].commands.read == [.bit16(0x2A19)] && parsed.devices[1].commands.read == [.bit16(0x2A1D)])
        for (text, message) in [
            (
                #"{"devices": [{"address": "00:11:22:33:44:55", "commands": ["2A19"]}]}"#,
                "devices[0].commands must be an object"
            ),
            (#"{"devices": [{"address": "00:11:22:33:44:55", "commands": {"notify": ["2A19"]}}]}"#, "commands.notify"),
            (
                #"{"devices": [{"address": "00:11:22:33:44:55", "commands": {"read": ["nope"]}}]}"#,
                "devices[0].commands.read[0]"
            ),
            (
                #"{"devices": [{"address": "00:11:22:33:44:55", "commands": {"write": "2A19"}}]}"#,
                "commands.write must be an array"
            ),
        ] {
            #expect {
                _ = try GatewayConfiguration(json: Array(text.utf8))
            } throws: { error in
                (error as? UsageError)?.message.contains(message) == true
            }
        }
        #expect([1, 10, 100, 1000].allSatisfy(GatewayCommandGate.isMilestone))
        #expect(![2, 9, 11, 99, 101].contains(where: GatewayCommandGate.isMilestone))
    }

    /// A broker whose certificate names another host: the gateway says the failure once, keeps
    /// connecting again with back-off (the broker sees a second TLS connection), and ends at
    /// `--duration` with exit 0.
    /// Until the broker's log has `count` more failed TLS handshakes than `before` (bounded).
    static func waitForHandshakes(_ broker: MosquittoBroker, _ count: Int, after before: Int) async throws {
        try await withTimeout(30 * testTimeoutScale, "\(count) TLS connection attempts") {
            while Self.tlsFailures(broker.log()) < before + count { try await Task.sleep(for: .milliseconds(50)) }
        }
    }

    @Test func aTLSFailureIsSaidOnceAndRetried() async throws {
        // A certificate for wrong.example, not 127.0.0.1 (a throwaway CA in the broker's directory).
        let broker = try await MosquittoBroker(tlsName: "wrong.example", log: true)
        defer { broker.stop() }
        let path = try Self.write(Self.configuration)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let before = Self.tlsFailures(broker.log())
        let duration = 5 * testTimeoutScale
        let gateway = Task {
            await runInProcess([
                "--transport", "sim:sensortag", "gateway", "--config", path, "--mqtt",
                "mqtts://127.0.0.1:\(broker.port)",
                "--tls-ca", broker.caFile, "--duration", String(duration),
            ])
        }
        // The broker sees the gateway's TLS handshakes fail: the first, and another one later.
        try await Self.waitForHandshakes(broker, 2, after: before)
        let run = await gateway.value
        #expect(run.code == 0, "\(run.stderr)")
        let said = run.stderr.split(separator: "\n").filter { $0.contains("mqtt: 127.0.0.1:\(broker.port):") }
        #expect(said.count == 1, "each distinct failure once: \(run.stderr)")
        #expect(said.first?.contains("certificate verify failed") == true, "\(run.stderr)")
        #expect(said.first?.contains("retrying") == true)
    }

    /// SIGTERM while the gateway waits to connect again: it ends (exit 0, the gateway's normal
    /// end) without waiting for a connection that will not come.
    @Test func sigtermEndsTheGatewayWhileItRetries() async throws {
        // A certificate for wrong.example, not 127.0.0.1 (a throwaway CA in the broker's directory).
        let broker = try await MosquittoBroker(tlsName: "wrong.example", log: true)
        defer { broker.stop() }
        let path = try Self.write(Self.configuration)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let before = Self.tlsFailures(broker.log())
        let child = try ChildProcess(
            [
                InterruptTests.binary, "--no-cache", "--transport", "sim:sensortag", "gateway", "--config", path, "--mqtt",
                "mqtts://127.0.0.1:\(broker.port)", "--tls-ca", broker.caFile,
            ], standardOutput: .null, standardError: .null)
        defer { child.kill() }
        try await Self.waitForHandshakes(broker, 2, after: before)
        _ = Glibc.kill(child.pid, SIGTERM)
        // Its end: the links, `offline` queued, at most 5 s for the broker to take it, the thread.
        let code = await child.wait(timeout: 30 * testTimeoutScale)
        #expect(code == 0, "exit \(code.map(String.init) ?? "none within the bound")")
    }

    /// The broker's log lines for a client that ended the TLS handshake with an alert (one a
    /// handshake: libmosquitto's `OpenSSL Error[0]: error:0A000438:SSL routines::tlsv1 alert
    /// internal error`; a client that sends the certificate alert: `… bad certificate`).
    static func tlsFailures(_ log: String) -> Int {
        log.split(separator: "\n").filter { $0.contains("OpenSSL Error") && $0.contains("alert") }.count
    }
}
