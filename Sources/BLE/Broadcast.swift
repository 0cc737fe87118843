import Synchronization

/// Values for every current subscriber, from its subscription on; with a `latest` value, each
/// new subscriber gets it first (a state), and one that subscribes after the end gets it and the
/// end. Each subscriber's stream is its own: a slow one holds only its own values.
final class Broadcast<Element: Sendable>: Sendable {
    private struct State {
        var listeners: [UInt64: AsyncStream<Element>.Continuation] = [:]
        var nextID: UInt64 = 0
        var finished = false
        var latest: Element?
    }
    private let state: Mutex<State>

    init(latest: Element? = nil) { state = Mutex(State(latest: latest)) }

    /// The last value yielded (or the initial one).
    var latest: Element? { state.withLock { $0.latest } }

    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        let id = state.withLock { state -> UInt64? in
            if let latest = state.latest { continuation.yield(latest) }
            guard !state.finished else { return nil }
            state.nextID += 1
            state.listeners[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    /// Yields `element` to every subscriber when `accept` agrees given the latest value (checked
    /// and stored under one lock); `final` also ends every stream. Returns whether it was yielded.
    @discardableResult
    func yield(_ element: Element, final: Bool = false, when accept: (Element?) -> Bool = { _ in true }) -> Bool {
        let listeners = state.withLock { state -> [AsyncStream<Element>.Continuation]? in
            guard !state.finished, accept(state.latest) else { return nil }
            state.latest = element
            let listeners = Array(state.listeners.values)
            if final {
                state.finished = true
                state.listeners = [:]
            }
            return listeners
        }
        guard let listeners else { return false }
        for listener in listeners {
            listener.yield(element)
            if final { listener.finish() }
        }
        return true
    }

    /// Ends every stream; later subscribers get `latest` (if any) and the end.
    func finish() {
        let listeners = state.withLock { state in
            state.finished = true
            defer { state.listeners = [:] }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.finish() }
    }
}

/// A connection's state and every caller's stream of its changes: the current state first; the
/// streams end after `disconnected`, which is final.
final class StateBroadcast: Sendable {
    private let broadcast: Broadcast<PeripheralState>

    init(_ initial: PeripheralState) { broadcast = Broadcast(latest: initial) }

    var current: PeripheralState { broadcast.latest ?? .connected }

    func subscribe() -> AsyncStream<PeripheralState> { broadcast.subscribe() }

    func update(_ new: PeripheralState) {
        var final = false
        if case .disconnected = new { final = true }
        broadcast.yield(new, final: final) { current in current != new }
    }
}

/// A value behind a lock, shareable by reference (a `Mutex` cannot be copied into closures).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }
}
