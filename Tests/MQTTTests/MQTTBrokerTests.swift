import MQTT
import Synchronization
import Testing
import TestSupport

/// The client against Debian's mosquitto on a loopback port of its own: QoS 1 messages all
/// arrive, through a broker restart too (persistence on, a persistent subscriber), and the last
/// will says `offline` when a client vanishes without DISCONNECT. Skipped (said) without the
/// broker or libmosquitto.
@Suite(
    "MQTT against mosquitto", .enabled(if: MosquittoBroker.isAvailable, "needs mosquitto and libmosquitto1 (apt install mosquitto)"),
    .serialized, .timeLimit(.minutes(3)))
struct MQTTBrokerTests {
    /// A persistent subscriber counting what it receives: sequence numbers (the payload's text).
    final class Numbers: Sendable {
        let numbers = Mutex<[Int]>([])
        func withLock<R>(_ body: ([Int]) -> R) -> R { numbers.withLock { body($0) } }
        func append(_ number: Int) { numbers.withLock { $0.append(number) } }
    }

    final class Counter: Sendable {
        let client: MQTTClient
        let received = Numbers()
        /// How many `ready` probes arrived (its subscription is in place once one has).
        let readies = Numbers()
        let arrivals: AsyncStream<Int>
        /// One element at each connection to the broker.
        let connections: AsyncStream<Void>
        private let task: Task<Void, Never>

        init(port: Int, id: String, filter: String) throws {
            var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: port, clientID: id)
            configuration.cleanSession = false
            client = try MQTTClient(configuration)
            client.subscribe(filter)
            let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
            arrivals = stream
            let (connected, connection) = AsyncStream.makeStream(of: Void.self)
            connections = connected
            let (client, received, readies) = (client, received, readies)
            task = Task {
                for await event in client.events {
                    if case .connected = event { connection.yield() }
                    if case .message(_, let payload, _) = event, payload == Array("ready".utf8) { readies.append(1) }
                    guard case .message(_, let payload, _) = event, let number = Int(String(decoding: payload, as: UTF8.self)) else { continue }
                    received.append(number)
                    continuation.yield(number)
                }
                continuation.finish()
                connection.finish()
            }
            try client.start()
        }

        /// Waits until every number below `count` has arrived (at most `seconds`).
        func waitForAll(_ count: Int, seconds: Double) async -> Bool {
            if Set(received.withLock { $0 }).count >= count { return true }
            let timeout = Task {
                try? await Task.sleep(for: .seconds(seconds * testTimeoutScale))
                client.stop()
            }
            defer { timeout.cancel() }
            for await _ in arrivals where Set(received.withLock { $0 }).count >= count { return true }
            return false
        }

        func stop() {
            client.stop()
            task.cancel()
        }
    }

    static func publisher(port: Int, id: String = "publisher-\(UInt32.random(in: 0...UInt32.max))") throws -> MQTTClient {
        var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: port, clientID: id)
        configuration.maximumReconnectDelay = 2
        let client = try MQTTClient(configuration)
        try client.start()
        return client
    }

    static func waitConnected(_ counter: Counter) async {
        for await _ in counter.connections { return }
    }

    /// Until the counter has a `ready` probe (at most 20 s): its SUBSCRIBE has reached the broker
    /// (its CONNACK alone does not say so). A probe sent before is lost, so one goes every 100 ms.
    /// Returns how many probes it sent.
    static func waitSubscribed(_ counter: Counter, _ publisher: MQTTClient) async throws -> Int {
        try await withTimeout(20, "the subscriber's subscription") {
            var sent = 0
            while counter.readies.withLock({ $0.isEmpty }) {
                publisher.publish(MQTTMessage(topic: "test/seq", payload: Array("ready".utf8), qos: 0))
                sent += 1
                try await Task.sleep(for: .milliseconds(100))
            }
            return sent
        }
    }

    @Test func everyQoS1MessageArrivesInOrder() async throws {
        let broker = try await MosquittoBroker()
        defer { broker.stop() }
        let counter = try Counter(port: broker.port, id: "counter-\(UInt32.random(in: 0...UInt32.max))", filter: "test/seq")
        defer { counter.stop() }
        let publisher = try Self.publisher(port: broker.port)
        defer { publisher.stop() }
        // The subscriber is subscribed before the first message: its own connection first, then a
        // probe through the broker.
        try await withTimeout(20, "the subscriber's connection") { await Self.waitConnected(counter) }
        let probes = try await Self.waitSubscribed(counter, publisher)
        for number in 0..<2000 { publisher.publish(MQTTMessage(topic: "test/seq", payload: Array(String(number).utf8))) }
        #expect(await publisher.drain(timeout: .seconds(30 * testTimeoutScale)))
        #expect(await counter.waitForAll(2000, seconds: 30))
        let received = counter.received.withLock { $0 }
        #expect(received.prefix(2000) == ArraySlice(0..<2000), "in order, once each while nothing broke")
        let statistics = publisher.statistics
        #expect(statistics.acknowledged == 2000 + probes && statistics.droppedValues == 0 && statistics.queued == 0)
    }

    /// Issue 36, hole 8: a TLS failure (the broker's certificate names another host) does not end
    /// the client for good, as libmosquitto's own network thread did: the failure is an event
    /// saying why, and the client connects again by itself (`.attempt`, the second).
    @Test func aTLSFailureIsSaidAndConnectedAgain() async throws {
        let broker = try await MosquittoBroker(tlsName: "wrong.example")
        defer { broker.stop() }
        var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: broker.port, clientID: "tls-\(UInt32.random(in: 0...UInt32.max))")
        configuration.tls = true
        configuration.caFile = broker.caFile
        configuration.maximumReconnectDelay = 1
        let client = try MQTTClient(configuration)
        try client.start()
        defer { client.stop() }
        let (failure, attempt) = try await withTimeout(30, "a TLS failure, then another attempt") { () async -> (String?, Int) in
            var failure: String?
            for await event in client.events {
                switch event {
                case .connectionFailed(let why), .disconnected(let why):
                    if failure == nil { failure = why }
                case .attempt(let number) where failure != nil:
                    return (failure, number)
                default:
                    continue
                }
            }
            return (failure, 0)
        }
        #expect(failure?.contains("certificate verify failed") == true, "\(failure ?? "no failure")")
        #expect(attempt == 2)
    }

    @Test func aBrokerRestartLosesNoQoS1Message() async throws {
        let broker = try await MosquittoBroker()
        defer { broker.stop() }
        let subscriberID = "counter-\(UInt32.random(in: 0...UInt32.max))"
        let first = try Counter(port: broker.port, id: subscriberID, filter: "test/restart")
        var counter: Counter? = first
        try await withTimeout(20, "the subscriber's connection") { await Self.waitConnected(first) }
        let publisher = try Self.publisher(port: broker.port)
        defer { publisher.stop() }
        for number in 0..<1000 { publisher.publish(MQTTMessage(topic: "test/restart", payload: Array(String(number).utf8))) }
        // The broker goes (saving its persistence) while messages are still on their way; more
        // are published while it is away; it comes back on the same port.
        broker.stop()
        for number in 1000..<2000 { publisher.publish(MQTTMessage(topic: "test/restart", payload: Array(String(number).utf8))) }
        #expect(publisher.statistics.queued > 0, "messages wait while the broker is away")
        try await Task.sleep(for: .seconds(2))
        try await broker.start()
        #expect(await publisher.drain(timeout: .seconds(60 * testTimeoutScale)), "every message acknowledged after the restart")
        // The subscriber's session (clean session off) kept what it had not received.
        if await counter!.waitForAll(2000, seconds: 60) == false {
            // Its connection may have been the one to come back last: a fresh client with the
            // same id resumes the same session.
            counter!.stop()
            counter = try Counter(port: broker.port, id: subscriberID, filter: "test/restart")
        }
        #expect(await counter!.waitForAll(2000, seconds: 60))
        let received = counter!.received.withLock { $0 }
        #expect(Set(received) == Set(0..<2000), "no QoS 1 message lost (\(received.count - Set(received).count) redelivered)")
        counter!.stop()
    }

    @Test func theOutboxBoundDropsAdvertisementsFirstWhileTheBrokerIsAway() throws {
        // No broker at all: everything waits, bounded.
        var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: 9, clientID: "bounded")
        configuration.queueCapacity = 10
        let client = try MQTTClient(configuration)
        for index in 0..<8 { client.publish(MQTTMessage(topic: "adv/\(index)", payload: [], kind: .advertisement)) }
        for index in 0..<5 { client.publish(MQTTMessage(topic: "value/\(index)", payload: [])) }
        let statistics = client.statistics
        #expect(statistics.queued == 10 && statistics.droppedAdvertisements == 3 && statistics.droppedValues == 0)
        client.stop()
    }
}
