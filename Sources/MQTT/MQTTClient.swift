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
/// connection comes back by itself with exponential back-off (1 s to `maximumReconnectDelay`)
/// after every failure, a TLS or protocol failure too (the network thread is the shim's
/// `chmqtt_runner`, not libmosquitto's, which ends for good on those).
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
        /// Connecting again after a failure: the attempt's number (the first connection is 1).
        case attempt(Int)
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
        /// on_disconnect said the end of the connection: the network thread's report of it is not.
        var lossTold = false
    }

    public let configuration: Configuration
    /// libmosquitto's client: its calls are thread-safe in threaded mode (`mosquitto_threaded_set`,
    /// set by the shim's network thread, `chmqtt_runner_start`); set once, destroyed in deinit.
    nonisolated(unsafe) private let handle: OpaquePointer
    /// The network thread (``start()`` to ``stop()``); read under `state`'s lock.
    nonisolated(unsafe) private var runner: OpaquePointer?
    /// The last error libmosquitto logged (an OpenSSL error's text), for the next failure's message.
    private let lastLoggedError = Mutex<String?>(nil)
    private let state: Mutex<State>
    /// Takes subscribed messages on the network thread instead of ``events`` (``setMessageHandler(_:)``).
    /// In a box: a closure read through the mutex's `inout` is re-wrapped in two reabstraction
    /// thunks at every access, written back, so each message would make the next call deeper.
    private let messageHandler = Mutex<MessageHandler?>(nil)

    private final class MessageHandler: Sendable {
        let body: @Sendable (String, [UInt8], Bool) -> Void
        init(_ body: @escaping @Sendable (String, [UInt8], Bool) -> Void) { self.body = body }
    }
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
                if let handler = client.messageHandler.withLock({ $0 }) {
                    handler.body(topic, payload, message.pointee.retain)
                } else {
                    client.continuation.yield(.message(topic: topic, payload: payload, retained: message.pointee.retain))
                }
            })
        chmqtt_log_callback_set(handle) { _, obj, level, text in
            guard level == MOSQ_LOG_ERR, let text, let client = MQTTClient.from(obj) else { return }
            let line = String(cString: text)
            client.lastLoggedError.withLock { $0 = line }
        }
        let rc = chmqtt_connect_async(handle, configuration.host, Int32(configuration.port), Int32(configuration.keepAlive))
        if rc != 0 {
            // The broker is not there yet: the network thread keeps trying.
            continuation.yield(.connectionFailed(failureText(rc)))
        }
        let started = chmqtt_runner_start(
            handle, UInt32(max(1, configuration.maximumReconnectDelay)),
            { obj, rc, ended in MQTTClient.from(obj)?.failed(rc, ended: ended) },
            { obj, attempt in MQTTClient.from(obj)?.continuation.yield(.attempt(Int(attempt))) }, context)
        guard let started else {
            chmqtt_user_data_set(handle, nil)
            state.withLock { $0.started = false }
            Unmanaged<MQTTClient>.fromOpaque(context).release()
            throw MQTTError("cannot start the network thread")
        }
        state.withLock { _ in runner = started }
    }

    /// The network thread's report: the connection ended with `rc` (`ended`; said here unless
    /// on_disconnect said it: a handshake that failed before the connection was up is not), or a
    /// new one could not start.
    private func failed(_ rc: Int32, ended: Bool) {
        let told = state.withLock { state -> Bool in
            defer { state.lossTold = false }
            return ended && state.lossTold
        }
        // "Not connected" follows a failure already said (libmosquitto says it again for the
        // socket it has just closed): never news.
        guard !told, !(ended && rc == MOSQ_ERR_NO_CONN.rawValue) else { return }
        continuation.yield(.connectionFailed(failureText(rc)))
    }

    /// libmosquitto's text for `rc`, with the error it logged last (an OpenSSL error), once.
    private func failureText(_ rc: Int32) -> String {
        let text = String(cString: chmqtt_strerror(rc))
        guard let logged = lastLoggedError.withLock({ line -> String? in
            defer { line = nil }
            return line
        }) else { return text }
        return text + " (" + logged + ")"
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

    /// Messages on subscribed topics go to `handler` (topic, payload, retained) on the network
    /// thread as they arrive, instead of ``events`` (whose buffer a flood would grow): it must
    /// decide at once and never block. Set it before ``start()``.
    public func setMessageHandler(_ handler: @escaping @Sendable (String, [UInt8], Bool) -> Void) {
        let box = MessageHandler(handler)
        messageHandler.withLock { $0 = box }
    }

    /// Hands `message` to libmosquitto now at QoS 0, outside the outbox: nothing waits for the
    /// broker, so nothing accumulates (an answer to a refused command). False when not connected
    /// or refused (dropped).
    @discardableResult
    public func publishNow(_ message: MQTTMessage) -> Bool {
        guard state.withLock({ $0.connected && !$0.stopping }) else { return false }
        let rc = chmqtt_publish(handle, nil, message.topic, Int32(message.payload.count), message.payload, 0, message.retain)
        return rc == 0
    }

    /// Subscribes `filter` now and after every reconnect.
    public func subscribe(_ filter: String, qos: Int = 1) {
        let connected = state.withLock { state in
            state.subscriptions.append((filter, qos))
            return state.connected
        }
        if connected { _ = chmqtt_subscribe(handle, nil, filter, Int32(qos)) }
    }

    /// Messages waiting in the outbox for the broker's window (not yet handed to libmosquitto).
    public var backlog: Int { state.withLock { $0.outbox.count + $0.handing } }

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
        guard started, let runner = state.withLock({ _ in runner }) else { return }
        // Disconnects (no last will) and ends the network thread.
        chmqtt_runner_stop(runner)
        state.withLock { _ in self.runner = nil }
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
        if let runner = state.withLock({ _ in runner }) { chmqtt_runner_connected(runner) }
        lastLoggedError.withLock { $0 = nil }
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
        state.withLock { $0.lossTold = true }
        guard rc != MOSQ_ERR_NO_CONN.rawValue else { return }
        continuation.yield(.disconnected(rc == 0 ? "disconnected" : failureText(rc)))
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
