import Bluetooth

/// Schedules the bearer's timers (the 30 s transaction timeout of Vol 3 Part F §3.3.3).
///
/// Time is injected so a timeout is testable without waiting: production code uses
/// ``ATTSystemClock``; tests use ``ATTManualClock`` and call `advance(by:)`.
public protocol ATTClock: Sendable {
    /// Runs `fire` once, `delay` from now, unless the returned timer is cancelled first.
    ///
    /// `fire` may still run after `cancel()` if it had already started; the bearer ignores
    /// a timer it no longer waits for, so callers need no stronger guarantee.
    func schedule(after delay: Duration, _ fire: @escaping @Sendable () async -> Void) -> ATTScheduledTimer
}

/// A timer returned by ``ATTClock/schedule(after:_:)``; `cancel()` stops it from firing.
public struct ATTScheduledTimer: Sendable {
    private let onCancel: @Sendable () -> Void

    public init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = onCancel
    }

    /// Stops the timer; harmless when it has already fired or been cancelled.
    public func cancel() {
        onCancel()
    }
}

/// The real clock: one Dispatch timer per running timer (one per outstanding transaction,
/// never one per PDU), removed at once when the transaction completes (see ``OneShotTimer``);
/// `fire` runs in a new task only when a timer expires.
public struct ATTSystemClock: ATTClock {
    public init() {}

    public func schedule(after delay: Duration, _ fire: @escaping @Sendable () async -> Void) -> ATTScheduledTimer {
        let timer = OneShotTimer(after: delay) {
            Task { await fire() }
        }
        return ATTScheduledTimer { timer.cancel() }
    }
}
