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

extension Duration {
    /// The duration for people: seconds rounded to a tenth (`25 s`, `2.5 s`, `0.2 s`; under
    /// 50 ms, milliseconds: `30 ms`), never the clock's nanoseconds (`24.999558992 seconds`).
    package var roundedText: String {
        let (seconds, attoseconds) = components
        let tenths = (Double(seconds) * 10 + Double(attoseconds) / 1e17).rounded()
        guard tenths.isFinite, abs(tenths) < 1e15 else { return "\(self)" }
        if tenths == 0, attoseconds != 0 { return "\(Int64((Double(attoseconds) / 1e15).rounded())) ms" }
        let whole = Int64(tenths)
        return whole % 10 == 0 ? "\(whole / 10) s" : "\(whole / 10).\(abs(whole % 10)) s"
    }
}
