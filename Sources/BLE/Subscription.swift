import Bluetooth
import GATT
import Synchronization

/// One value a subscribed characteristic pushed.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.10 (notifications), §4.11 (indications)
public struct CharacteristicNotification: Hashable, Sendable {
    /// The value, as the peer sent it (at most ATT_MTU − 3 octets).
    public var value: [UInt8]
    /// An indication (confirmed to the peer) rather than a notification.
    public var isIndication: Bool
    /// When it arrived, on the adapter's clock since the adapter opened.
    public var time: Duration

    /// A value and when it came.
    public init(value: [UInt8], isIndication: Bool, time: Duration) {
        self.value = value
        self.isIndication = isIndication
        self.time = time
    }
}

/// The values of one subscribed characteristic, in arrival order.
///
/// Iterate it (`for try await value in subscription`) or take values one at a time with
/// ``next(timeout:)``. Values wait in the subscription's own buffer until taken, so a timeout
/// loses nothing. Iteration ends (nil) after ``cancel()`` and throws ``BLEError`` when the link
/// ends or the consumer falls ``bufferLimit`` values behind.
public struct Subscription: AsyncSequence, Sendable {
    /// Each value the peer pushed.
    public typealias Element = CharacteristicNotification
    /// Why the subscription ended (link lost, overflow); cancelling ends iteration normally.
    public typealias Failure = BLEError

    /// Values that may wait for a slow consumer before the subscription fails (never dropped
    /// silently).
    public static let bufferLimit = 10_000

    let buffer: SubscriptionBuffer
    let cancelHandler: @Sendable () async -> Void

    /// The next value; nil only when `timeout` passed first (the subscription stays open and
    /// loses nothing). Throws once the subscription has ended (link ended, cancelled, overflow).
    public func next(timeout: Duration) async throws(BLEError) -> CharacteristicNotification? {
        switch await buffer.next(timeout: timeout) {
        case .value(let value): return value
        case .timedOut: return nil
        case .ended(let error): throw error
        }
    }

    /// Ends this subscription: waiting callers get an error, iteration ends; the CCCD goes off
    /// when the last subscription to the characteristic is cancelled (Vol 3, Part G, §4.12.3).
    public func cancel() async {
        buffer.finish(BLEError("the subscription was cancelled", kind: "cancelled"), cancelled: true)
        guard buffer.claimCancellation() else { return }
        await cancelHandler()
    }

    /// An iterator over the values not yet taken (all iterators share one buffer).
    public func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer) }

    /// Takes values in order; see ``Subscription``.
    public struct Iterator: AsyncIteratorProtocol {
        let buffer: SubscriptionBuffer

        /// The next value, waiting as long as it takes; nil once the subscription was cancelled.
        public mutating func next() async throws(BLEError) -> CharacteristicNotification? {
            switch await buffer.next(timeout: nil) {
            case .value(let value): return value
            case .timedOut: return nil
            case .ended(let error):
                if buffer.wasCancelled { return nil }
                throw error
            }
        }
    }
}

/// A subscription's values and its waiters: values are handed to the oldest waiter or kept,
/// in order; a waiter whose timeout passes leaves without taking anything. Not built on an
/// `AsyncStream` raced against a sleep, which would end the stream at the first timeout.
final class SubscriptionBuffer: Sendable {
    enum Outcome: Sendable {
        case value(CharacteristicNotification)
        case timedOut
        case ended(BLEError)
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Outcome, Never>
    }

    private struct State {
        var values = FIFOBuffer<CharacteristicNotification>()
        var waiters: [Waiter] = []
        var ended: BLEError?
        var cancelled = false
        /// The cancel handler ran (or is running): it runs once, whatever ended the buffer.
        var cancellationClaimed = false
        var nextID: UInt64 = 0
        /// Waiters whose timeout or cancellation came before they registered.
        var departed: [UInt64: Outcome] = [:]
    }

    private let state = Mutex(State())
    private let limit: Int

    init(limit: Int = Subscription.bufferLimit) {
        self.limit = limit
    }

    var wasCancelled: Bool { state.withLock { $0.cancelled } }

    /// A value from the peer: to the oldest waiter, else kept; beyond the limit the subscription
    /// fails (after the values it holds). Returns false once the subscription has ended.
    @discardableResult
    func push(_ value: CharacteristicNotification) -> Bool {
        let (waiter, open) = state.withLock { state -> (Waiter?, Bool) in
            guard state.ended == nil else { return (nil, false) }
            if !state.waiters.isEmpty { return (state.waiters.removeFirst(), true) }
            guard state.values.count < limit else {
                state.ended = BLEError(
                    "the subscription's consumer fell \(limit) values behind; it was ended rather than drop values",
                    kind: "overflow")
                return (nil, false)
            }
            state.values.append(value)
            return (nil, true)
        }
        waiter?.continuation.resume(returning: .value(value))
        return open
    }

    /// True for the first caller only: that one runs the cancel handler.
    func claimCancellation() -> Bool {
        state.withLock { state in
            defer { state.cancellationClaimed = true }
            return !state.cancellationClaimed
        }
    }

    /// Ends the subscription with `error` once the buffered values are taken; false when it had
    /// ended already.
    @discardableResult
    func finish(_ error: BLEError, cancelled: Bool = false) -> Bool {
        let waiters = state.withLock { state -> [Waiter]? in
            guard state.ended == nil else { return nil }
            state.ended = error
            state.cancelled = cancelled
            if cancelled { state.values = FIFOBuffer() }
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.continuation.resume(returning: .ended(error)) }
        return true
    }

    /// The next value, waiting at most `timeout` (nil: no limit, but cancellation of the
    /// calling task ends the wait with a `cancelled` error).
    func next(timeout: Duration?) async -> Outcome {
        // A value that waits already is taken without a timer.
        if let immediate = takeImmediately() { return immediate }
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        let timer: Task<Void, Never>? = timeout.map { timeout in
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                self?.leave(id, with: .timedOut)
            }
        }
        defer {
            timer?.cancel()
            state.withLock { _ = $0.departed.removeValue(forKey: id) }
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let immediate = state.withLock { state -> Outcome? in
                    // The timeout or the cancellation may have come before this registration.
                    if let departed = state.departed.removeValue(forKey: id) { return departed }
                    if let value = state.values.popFirst() { return .value(value) }
                    if let ended = state.ended { return .ended(ended) }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            self.leave(id, with: .ended(BLEError("the wait was cancelled", kind: "cancelled")))
        }
    }

    /// A buffered value or the end, without waiting; nil when there is neither.
    private func takeImmediately() -> Outcome? {
        state.withLock { state -> Outcome? in
            if let value = state.values.popFirst() { return .value(value) }
            if let ended = state.ended { return .ended(ended) }
            return nil
        }
    }

    /// A waiter leaves without a value (its timeout, its task cancelled), if it still waits.
    private func leave(_ id: UInt64, with outcome: Outcome) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                // Not registered yet: it finds this when it registers (no lost wake-up). A waiter
                // that already got its value never registers again, so nothing is kept for it
                // beyond its own call.
                state.departed[id] = outcome
                return nil
            }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(returning: outcome)
    }
}
