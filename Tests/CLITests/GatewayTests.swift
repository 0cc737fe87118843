import BLE
import Bluetooth
import Foundation
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 21: `gattclient gateway`, the engine from the shell (its output on stdout).
@Suite("gattclient gateway", .serialized, .timeLimit(.minutes(2)))
struct GatewayTests {
    static let configuration = """
        {
          "prefix": "home/ble",
          "advertisements": {"forward": true, "services": ["C0DE0001-0000-4000-8000-00805F9B34FB"]},
          "devices": [
            {"address": "54:6C:0E:9A:3B:01/public",
             "write": [{"characteristic": "F000AA02-0451-4000-B000-000000000000", "value": "01"}],
             "subscribe": ["F000AA01-0451-4000-B000-000000000000"],
             "read": [{"characteristic": "2A19", "every": 1}]},
            {"match": {"service": "C0DE0001-0000-4000-8000-00805F9B34FB"},
             "subscribe": ["C0DE0002-0000-4000-8000-00805F9B34FB"]}
          ]
        }
        """

    @Test func theConfigurationIsCheckedWhereItIsWrong() throws {
        let parsed = try GatewayConfiguration(json: Array(Self.configuration.utf8))
        #expect(parsed.prefix == "home/ble" && parsed.devices.count == 2 && parsed.advertisements.forward)
        #expect(parsed.devices[0].reads == [.init(characteristic: .bit16(0x2A19), every: 1)])
        #expect(parsed.devices[0].writes.first?.value == [0x01])
        for (text, message) in [
            (#"{"devices": [{"address": "00:11:22:33:44:55", "match": {"name": "x"}}]}"#, "exactly one of address and match"),
            (#"{"devices": [{"address": "nope"}]}"#, "devices[0].address"),
            (#"{"devices": [{"address": "00:11:22:33:44:55", "subscribe": ["XYZ"]}]}"#, "devices[0].subscribe[0]"),
            (#"{"devices": [{"address": "00:11:22:33:44:55", "read": [{"characteristic": "2A19", "every": 0}]}]}"#, "every must be seconds"),
            (#"{"devices": [{"address": "00:11:22:33:44:55", "colour": 1}]}"#, "unknown member devices[0].colour"),
            (#"{"advertisements": {"forward": false}}"#, "nothing to do"),
            (#"{"prefix": "a/#"}"#, "prefix"),
            (#"[1]"#, "not a JSON object"),
        ] {
            #expect {
                _ = try GatewayConfiguration(json: Array(text.utf8))
            } throws: { error in
                (error as? UsageError)?.message.contains(message) == true
            }
        }
    }

    @Test func devicesByAddressAndByMatchAsTopicLines() async throws {
        let path = NSTemporaryDirectory() + "gateway-\(getpid()).json"
        try Self.configuration.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Long enough for a slow build (the sanitizer) to see the SensorTag connected, read and notifying.
        let run = await runInProcess(["--transport", "sim:sensortag,counter*4", "gateway", "--config", path, "--duration", String(8 * testTimeoutScale)])
        #expect(run.code == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        let messages = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(messages.count == lines.count && !messages.isEmpty, "every line is one JSON message")
        func payloads(_ topic: String) -> [[String: Any]] {
            messages.filter { $0["topic"] as? String == topic }.compactMap { $0["payload"] as? [String: Any] }
        }
        // The SensorTag: connected, switched on, its IR values and its battery every second.
        let tag = "home/ble/dev/54:6C:0E:9A:3B:01"
        #expect(payloads(tag + "/state").compactMap { $0["state"] as? String }.contains("connected"))
        #expect(payloads(tag + "/state").last?["state"] as? String == "removed")
        #expect(payloads(tag + "/180F/2A19").contains { $0["decoded"] as? String == "100 %" && $0["read"] as? Bool == true })
        #expect(!payloads(tag + "/F000AA00-0451-4000-B000-000000000000/F000AA01-0451-4000-B000-000000000000").isEmpty)
        // Four counters found by their advertising, each value once and in order.
        for index in 1...4 {
            let base = "home/ble/dev/C0:DE:00:00:00:0\(index)"
            let values = payloads(base + "/C0DE0001-0000-4000-8000-00805F9B34FB/C0DE0002-0000-4000-8000-00805F9B34FB")
                .compactMap { ($0["value"] as? String).flatMap(counterValue) }
            #expect(values.count >= 10, "counter \(index): \(values.count) values")
            #expect(zip(values, values.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "counter \(index): consecutive")
        }
        // Their advertisements forwarded (the service filter), the SensorTag's not.
        #expect(messages.contains { ($0["topic"] as? String)?.hasPrefix("home/ble/adv/C0:DE:00:00:00:") == true })
        #expect(!messages.contains { $0["topic"] as? String == "home/ble/adv/54:6C:0E:9A:3B:01" })
    }

    /// Issue 37 item 5: `match` criteria hold on the merged advertisement (the counters list
    /// their service in ADV_IND and their name in SCAN_RSP, as the README's example has it); a
    /// name criterion with a passive scan is said and matched with an active scan, and the
    /// passive setting still keeps scan responses out of what is forwarded.
    @Test func aMatchOnServiceAndNameFindsTheCounters() async throws {
        let path = NSTemporaryDirectory() + "gateway-match-\(getpid()).json"
        try """
            {"prefix": "m", "advertisements": {"forward": true, "active": false},
             "devices": [{"match": {"service": "C0DE0001-0000-4000-8000-00805F9B34FB", "name": "Counter"},
                          "subscribe": ["C0DE0002-0000-4000-8000-00805F9B34FB"]}]}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = await runInProcess(["--transport", "sim:counter*2", "gateway", "--config", path, "--duration", String(5 * testTimeoutScale)])
        #expect(run.code == 0, "\(run.stderr)")
        #expect(run.stderr.contains("a match on name needs scan responses"), "\(run.stderr)")
        let messages = run.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        for index in 1...2 {
            let state = "m/dev/C0:DE:00:00:00:0\(index)/state"
            #expect(
                messages.contains { $0["topic"] as? String == state && ($0["payload"] as? [String: Any])?["state"] as? String == "connected" },
                "counter \(index) managed")
        }
        let forwarded = messages.filter { ($0["topic"] as? String)?.hasPrefix("m/adv/") == true }
        #expect(!forwarded.isEmpty)
        #expect(!forwarded.contains { (($0["payload"] as? [String: Any])?["name"] as? String)?.contains("Counter") == true },
            "no scan response (which carries the name) forwarded")
    }

    @Test func refusedWithoutAConfiguration() async {
        let run = await runInProcess(["--transport", "sim", "gateway"])
        #expect(run.code == 64 && run.stderr.contains("--config"))
        let missing = await runInProcess(["--transport", "sim", "gateway", "--config", "/nonexistent/gw.json"])
        #expect(missing.code == 64 && missing.stderr.contains("/nonexistent/gw.json"), "\(missing.stderr)")
    }
}

/// A counter's value (4 octets, little-endian) from its message's hex.
func counterValue(_ hex: String) -> UInt32? {
    guard let bytes = Hex.decode(hex), bytes.count == 4 else { return nil }
    return bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
}
