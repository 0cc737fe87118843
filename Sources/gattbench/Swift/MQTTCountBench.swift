import Bluetooth
import MQTT
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `gattbench mqtt-count PORT PREFIX` (benchmarks/mqtt_gateway.py runs it): the persistent
/// subscriber of issue 23's measured run. A fixed client id with clean session off and QoS 1
/// (the broker keeps its messages across a broker restart and a reconnect), subscribed to the
/// gateway's values and status. Each `report` line on standard input prints one JSON line: per
/// device, the values received (every message), the distinct ones (a redelivery counts once),
/// and the last `status`. Ends at the end of standard input.
struct MQTTCountBenchmark {
    var port: Int
    var prefix: String

    final class Tally: Sendable {
        struct Device: Sendable {
            var received = 0
            var distinct = Set<UInt32>()
        }
        let state = Mutex<(devices: [String: Device], status: String, connections: Int)>(([:], "", 0))
    }

    func run() async throws {
        var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: port, clientID: "gattbench-mqtt-count")
        configuration.cleanSession = false
        configuration.maximumReconnectDelay = 1
        let client = try MQTTClient(configuration)
        client.subscribe(prefix + "/dev/+/+/+")
        client.subscribe(prefix + "/status")
        let tally = Tally()
        let listener = Task {
            for await event in client.events {
                switch event {
                case .connected: tally.state.withLock { $0.connections += 1 }
                case .message(let topic, let payload, _):
                    if topic == prefix + "/status" {
                        tally.state.withLock { $0.status = String(decoding: payload, as: UTF8.self) }
                        continue
                    }
                    // PREFIX/dev/ADDRESS/SERVICE/CHARACTERISTIC: the counter's 4 octets, little-endian.
                    let parts = topic.split(separator: "/")
                    guard parts.count >= 4, let value = Self.counterValue(payload) else { continue }
                    let address = String(parts[parts.count - 3])
                    tally.state.withLock { state in
                        state.devices[address, default: Tally.Device()].received += 1
                        state.devices[address, default: Tally.Device()].distinct.insert(value)
                    }
                default: break
                }
            }
        }
        try client.start()
        print("{\"ready\":true}")
        fflush(nil)
        while let line = readLine() {
            guard line.filter({ !$0.isWhitespace }) == "report" else { continue }
            let (devices, status, connections) = tally.state.withLock { ($0.devices, $0.status, $0.connections) }
            let fields = devices.keys.sorted().map { address in
                let device = devices[address]!
                return "\"\(address)\":{\"received\":\(device.received),\"distinct\":\(device.distinct.count),"
                    + "\"max\":\(device.distinct.max() ?? 0)}"
            }
            print("{\"status\":\"\(status)\",\"connections\":\(connections),\"devices\":{\(fields.joined(separator: ","))}}")
            fflush(nil)
        }
        client.stop()
        await listener.value
    }

    /// The `value` hex of a gateway message, as the counter's 32-bit little-endian number.
    static func counterValue(_ payload: [UInt8]) -> UInt32? {
        let key = Array("\"value\":\"".utf8)
        guard payload.count > key.count,
            let start = (0...(payload.count - key.count)).first(where: { payload[$0..<($0 + key.count)].elementsEqual(key) })
        else { return nil }
        let hex = payload[(start + key.count)...].prefix { $0 != UInt8(ascii: "\"") }
        guard let bytes = Hex.decode(String(decoding: hex, as: UTF8.self)), bytes.count == 4 else { return nil }
        return bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }
}
