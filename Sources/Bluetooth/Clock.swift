/// The one clock every layer takes: what time it is, and one-shot timers (the controller
/// driver's command timeout, the host's connection timeouts, the ATT bearer's 30 s transaction
/// timeout of Vol 3 Part F §3.3.3, the emulator's advertising events and sensor periods).
///
/// Time is injected so a timeout is testable without waiting: production code uses
/// ``SystemClock``; tests use ``ManualClock`` and call `advance(by:)`.
public protocol BluetoothClock: Sendable {
    /// Time elapsed since the clock's origin (its creation); never goes back.
    var now: Duration { get }

    /// Runs `fire` once, `delay` from now, unless the returned timer is cancelled first.
    ///
    /// `fire` may still run after `cancel()` if it had already started; the bearer ignores
    /// a timer it no longer waits for, so callers need no stronger guarantee.
    func schedule(after delay: Duration, _ fire: @escaping @Sendable () async -> Void) -> ScheduledTimer
}

/// A timer returned by ``BluetoothClock/schedule(after:_:)``; `cancel()` stops it from firing.
public struct ScheduledTimer: Sendable {
    private let onCancel: @Sendable () -> Void

    public init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = onCancel
    }

    /// Stops the timer; harmless when it has already fired or been cancelled.
    public func cancel() {
        onCancel()
    }
}

/// The real clock: `now` from the monotonic `ContinuousClock`; one Dispatch timer per running
/// timer (one per outstanding transaction, never one per PDU), removed at once when cancelled
/// (see ``OneShotTimer``); `fire` runs in a new task only when a timer expires.
public struct SystemClock: BluetoothClock {
    private let origin = ContinuousClock.now

    public init() {}

    public var now: Duration { origin.duration(to: .now) }

    public func schedule(after delay: Duration, _ fire: @escaping @Sendable () async -> Void) -> ScheduledTimer {
        let timer = OneShotTimer(after: delay) {
            Task { await fire() }
        }
        return ScheduledTimer { timer.cancel() }
    }
}
