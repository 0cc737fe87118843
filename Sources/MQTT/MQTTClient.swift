#if canImport(Glibc)
import Glibc
#endif
import Bluetooth
import CMosquitto
import Synchronization

/// A failure of the MQTT client: the library, the configuration, the broker.
public struct MQTTError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// An MQTT client for a gateway that must lose nothing: Debian's libmosquitto (opened on first
/// use) on its own network thread, publishing from a bounded ``MQTTOutbox``. A message leaves
/// the outbox only while the broker is connected and fewer than `inflight` await their
/// acknowledgement (QoS 1: PUBACK); what libmosquitto has taken it keeps across a reconnect and
/// sends again (clean session off), so a QoS 1 message is delivered at least once. The broker
/// connection comes back by itself with exponential back-off (1 s to `maximumReconnectDelay`).
public final class MQTTClient: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var clientID: String
        public var username: String?
        public var password: String?
        /// TLS to the broker, checked against `caFile` (else the system's certificates,
        /// /etc/ssl/certs).
        public var tls = false
        public var caFile: String?
        public var keepAlive = 30
        /// The last will: published by the broker when this client goes without a DISCONNECT.
        public var will: MQTTMessage?
        public var queueCapacity = 100_000
        public var inflight = 64
        public var maximumReconnectDelay = 30
        /// Persistent session (the broker keeps subscriptions and queued QoS 1 messages).
        public var cleanSession = false

        public init(host: String, port: Int, clientID: String) {
            self.host = host
            self.port = port
            self.clientID = clientID
        }
    }

    /// What happens to the connection, and what arrives on subscribed topics.
    public enum Event: Sendable {
        case connected
        case connectionFailed(String)
        case disconnected(String)
        /// `retained`: the broker's stored copy (sent at subscription), not a new publication.
        case message(topic: String, payload: [UInt8], retained: Bool)
        /// The outbox was full: `message` was dropped (a value or state: counted and said).
        case dropped(MQTTMessage)
        /// libmosquitto refused `message` for good (malformed topic, too large): dropped, counted.
        case refused(MQTTMessage, String)
    }

    /// Counters, for the gateway's summary and the benchmark.
    public struct Statistics: Hashable, Sendable {
        public var queued = 0
        public var inFlight = 0
        public var acknowledged = 0
        public var droppedAdvertisements = 0
        public var droppedValues = 0
        public var refused = 0
        public var connections = 0
    }

    private struct State {
        var outbox: MQTTOutbox
        var connected = false
        var started = false
        var stopping = false
        /// Messages libmosquitto has taken, by message id, until acknowledged.
        var inFlight: [Int32: MQTTMessage] = [:]
        /// Acknowledgements that came before their id was recorded.
        var earlyAcknowledgements: Set<Int32> = []
        /// Taken from the outbox and being handed over now.
        var handing = 0
        /// One thread hands messages over at a time (order kept); another asking meanwhile
        /// makes it go round once more.
        var pumping = false
        var pumpAgain = false
        /// Messages libmosquitto refused for good (malformed, too large): dropped, counted.
        var refused = 0
        var acknowledged = 0
        var connections = 0
        var subscriptions: [(filter: String, qos: Int)] = []
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    public let configuration: Configuration
    /// libmosquitto's client: its calls are thread-safe with the threaded interface
    /// (`mosquitto_loop_start`), which this client uses; set once, destroyed in deinit.
    nonisolated(unsafe) private let handle: OpaquePointer
    private let state: Mutex<State>
    private let continuation: AsyncStream<Event>.Continuation
    /// The client's events, in order.
    public let events: AsyncStream<Event>

    public init(_ configuration: Configuration) throws(MQTTError) {
        guard chmqtt_load() == 0 else {
            throw MQTTError("cannot use libmosquitto (apt install libmosquitto1): \(String(cString: chmqtt_load_error()))")
        }
        self.configuration = configuration
        state = Mutex(State(outbox: MQTTOutbox(capacity: configuration.queueCapacity)))
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        guard let client = chmqtt_new(configuration.clientID, configuration.cleanSession, nil) else {
            throw MQTTError("mosquitto_new failed for client id '\(configuration.clientID)'")
        }
        handle = client
        // The callbacks find this client through `obj`; `stop()` ends them before it goes.
        func check(_ rc: Int32, _ what: String) throws(MQTTError) {
            guard rc == 0 else { throw MQTTError("\(what): \(String(cString: chmqtt_strerror(rc)))") }
        }
        do throws(MQTTError) {
            if let will = configuration.will {
                try check(
                    chmqtt_will_set(client, will.topic, Int32(will.payload.count), will.payload, Int32(will.qos), will.retain),
                    "the last will")
            }
            if let username = configuration.username {
                try check(chmqtt_username_pw_set(client, username, configuration.password), "the user name")
            }
            if configuration.tls || configuration.caFile != nil {
                let caPath: String? = configuration.caFile == nil ? "/etc/ssl/certs" : nil
                // libmosquitto says only "Invalid function arguments provided." for a CA file it
                // cannot read: the file is named, with the system's reason.
                if let caFile = configuration.caFile, access(caFile, R_OK) != 0 {
                    throw MQTTError("the TLS CA file \(caFile): \(String(cString: strerror(errno)))")
                }
                try check(chmqtt_tls_set(client, configuration.caFile, caPath), "TLS with \(configuration.caFile ?? "/etc/ssl/certs")")
            }
            try check(
                chmqtt_reconnect_delay_set(client, 1, UInt32(max(1, configuration.maximumReconnectDelay)), true), "the reconnect delay")
            try check(chmqtt_max_inflight_messages_set(client, UInt32(max(1, configuration.inflight))), "the in-flight window")
        } catch {
            // Every stored property is set: deinit runs and destroys the client (destroying it
            // here as well freed it twice, which a missing CA file showed).
            throw error
        }
    }

    /// Connects (in the background; failures are events and retried) and starts the network
    /// thread.
    public func start() throws(MQTTError) {
        guard state.withLock({ state -> Bool in
            defer { state.started = true }
            return !state.started && !state.stopping
        }) else { throw MQTTError("the client was started or stopped already") }
        let context = Unmanaged.passRetained(self).toOpaque()
        chmqtt_user_data_set(handle, context)
        chmqtt_callbacks_set(
            handle,
            { _, obj, rc in MQTTClient.from(obj)?.connected(rc) },
            { _, obj, rc in MQTTClient.from(obj)?.disconnected(rc) },
            { _, obj, mid in MQTTClient.from(obj)?.acknowledged(mid) },
            { _, obj, message in
                guard let message, let client = MQTTClient.from(obj) else { return }
                let topic = String(cString: message.pointee.topic)
                let count = Int(message.pointee.payloadlen)
                let payload: [UInt8] =
                    count > 0 && message.pointee.payload != nil
                    ? Array(UnsafeRawBufferPointer(start: message.pointee.payload, count: count)) : []
                client.continuation.yield(.message(topic: topic, payload: payload, retained: message.pointee.retain))
            })
        let rc = chmqtt_connect_async(handle, configuration.host, Int32(configuration.port), Int32(configuration.keepAlive))
        if rc != 0 {
            // The broker is not there yet: the network thread keeps trying.
            continuation.yield(.connectionFailed(String(cString: chmqtt_strerror(rc))))
        }
        let started = chmqtt_loop_start(handle)
        guard started == 0 else {
            chmqtt_user_data_set(handle, nil)
            state.withLock { $0.started = false }
            Unmanaged<MQTTClient>.fromOpaque(context).release()
            throw MQTTError("mosquitto_loop_start: \(String(cString: chmqtt_strerror(started)))")
        }
    }

    private static func from(_ obj: UnsafeMutableRawPointer?) -> MQTTClient? {
        obj.map { Unmanaged<MQTTClient>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Queues `message`; it is sent as soon as the broker takes it.
    public func publish(_ message: MQTTMessage) {
        let dropped = state.withLock { $0.stopping ? nil : $0.outbox.enqueue(message) }
        if let dropped { continuation.yield(.dropped(dropped)) }
        pump()
    }

    /// Subscribes `filter` now and after every reconnect.
    public func subscribe(_ filter: String, qos: Int = 1) {
        let connected = state.withLock { state in
            state.subscriptions.append((filter, qos))
            return state.connected
        }
        if connected { _ = chmqtt_subscribe(handle, nil, filter, Int32(qos)) }
    }

    public var statistics: Statistics {
        state.withLock { state in
            Statistics(
                queued: state.outbox.count + state.handing, inFlight: state.inFlight.count, acknowledged: state.acknowledged,
                droppedAdvertisements: state.outbox.droppedAdvertisements, droppedValues: state.outbox.droppedValues,
                refused: state.refused, connections: state.connections)
        }
    }

    /// Waits until every queued message is acknowledged, or `timeout` passes; true when all were.
    public func drain(timeout: Duration) async -> Bool {
        let done = Task {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.outbox.isEmpty && state.inFlight.isEmpty && state.handing == 0 { return true }
                    state.drained.append(waiter)
                    return false
                }
                if now { waiter.resume() }
            }
        }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: clock)
            self.releaseDrainWaiters()
        }
        await done.value
        timer.cancel()
        return state.withLock { $0.outbox.isEmpty && $0.inFlight.isEmpty && $0.handing == 0 }
    }

    /// Disconnects cleanly (no last will), stops the network thread, and ends the events.
    public func stop() {
        let (first, started) = state.withLock { state -> (Bool, Bool) in
            defer { state.stopping = true }
            return (!state.stopping, state.started)
        }
        guard first else { return }
        releaseDrainWaiters()
        continuation.finish()
        guard started else { return }
        _ = chmqtt_disconnect(handle)
        _ = chmqtt_loop_stop(handle, false)
        chmqtt_user_data_set(handle, nil)
        // The callbacks can no longer run: the retain taken by start() is given back.
        Unmanaged.passUnretained(self).release()
    }

    deinit { chmqtt_destroy(handle) }

    // MARK: - The network thread's callbacks

    private func connected(_ rc: Int32) {
        guard rc == 0 else {
            continuation.yield(.connectionFailed(String(cString: chmqtt_connack_string(rc))))
            return
        }
        let (subscriptions, resending) = state.withLock { state in
            state.connected = true
            state.connections += 1
            // Ids of a past connection's acknowledgements mean nothing now.
            state.earlyAcknowledgements.removeAll()
            return (state.subscriptions, !state.inFlight.isEmpty)
        }
        for (filter, qos) in subscriptions { _ = chmqtt_subscribe(handle, nil, filter, Int32(qos)) }
        continuation.yield(.connected)
        // libmosquitto sends what awaited an acknowledgement again after this callback: new
        // messages wait until those are acknowledged (`acknowledged` pumps), so nothing
        // overtakes them (a retained state stays the last one).
        if !resending { pump() }
    }

    private func disconnected(_ rc: Int32) {
        let stopping = state.withLock { state in
            state.connected = false
            return state.stopping
        }
        guard !stopping else { return }
        continuation.yield(.disconnected(rc == 0 ? "disconnected" : String(cString: chmqtt_strerror(rc))))
    }

    private func acknowledged(_ mid: Int32) {
        state.withLock { state in
            if state.inFlight.removeValue(forKey: mid) != nil {
                state.acknowledged += 1
            } else {
                state.earlyAcknowledgements.insert(mid)
            }
        }
        pump()
        releaseDrainWaitersIfDrained()
    }

    // MARK: - Handing messages to libmosquitto

    /// While connected and the window has room: the next message from the outbox, handed over
    /// outside the lock (libmosquitto takes its own), by one thread at a time so the order holds.
    private func pump() {
        let mine = state.withLock { state -> Bool in
            if state.pumping {
                state.pumpAgain = true
                return false
            }
            state.pumping = true
            return true
        }
        guard mine else { return }
        while true {
            let next = state.withLock { state -> Next in
                guard state.connected, !state.stopping, state.inFlight.count + state.handing < configuration.inflight,
                    let message = state.outbox.dequeue()
                else {
                    // Asked again while this round ran: one more look; else this pump is done.
                    if state.pumpAgain {
                        state.pumpAgain = false
                        return .again
                    }
                    state.pumping = false
                    return .done
                }
                state.handing += 1
                return .message(message)
            }
            let message: MQTTMessage
            switch next {
            case .again: continue
            case .done:
                releaseDrainWaitersIfDrained()
                return
            case .message(let taken): message = taken
            }
            var mid: Int32 = 0
            let rc = chmqtt_publish(
                handle, &mid, message.topic, Int32(message.payload.count), message.payload, Int32(message.qos), message.retain)
            let outcome = state.withLock { state -> Outcome in
                state.handing -= 1
                switch rc {
                case 0 where message.qos == 0:
                    // Nothing to acknowledge: done once handed over.
                    state.acknowledged += 1
                    return .sent
                case 0 where message.qos > 0, MOSQ_ERR_NO_CONN.rawValue where message.qos > 0:
                    // Taken: libmosquitto keeps a QoS 1/2 message it could not send yet and
                    // sends it after the reconnect.
                    if state.earlyAcknowledgements.remove(mid) != nil {
                        state.acknowledged += 1
                    } else {
                        state.inFlight[mid] = message
                    }
                    return rc == 0 ? .sent : .stop
                case MOSQ_ERR_NO_CONN.rawValue:
                    // A QoS 0 message not taken: first again at the next connection.
                    state.outbox.putBack(message)
                    return .stop
                default:
                    state.refused += 1
                    return .refused
                }
            }
            switch outcome {
            case .sent: continue
            case .refused:
                continuation.yield(.refused(message, String(cString: chmqtt_strerror(rc))))
            case .stop:
                state.withLock {
                    $0.pumping = false
                    $0.pumpAgain = false
                }
                releaseDrainWaitersIfDrained()
                return
            }
        }
    }

    private enum Next {
        case message(MQTTMessage), again, done
    }

    private enum Outcome {
        case sent, refused, stop
    }

    private func releaseDrainWaitersIfDrained() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.outbox.isEmpty && state.inFlight.isEmpty && state.handing == 0 else { return [] }
            defer { state.drained.removeAll() }
            return state.drained
        }
        for waiter in waiters { waiter.resume() }
    }

    private func releaseDrainWaiters() {
        let waiters = state.withLock { state in
            defer { state.drained.removeAll() }
            return state.drained
        }
        for waiter in waiters { waiter.resume() }
    }
}
