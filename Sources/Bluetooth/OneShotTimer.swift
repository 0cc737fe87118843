import Dispatch

/// ``SystemClock``'s timers: a one-shot timer on a Dispatch timer source: `fire` runs once, `delay` from now, on a
/// shared serial queue, unless `cancel()` comes first.
///
/// Why not a task sleeping in `Task.sleep`: cancelling such a task ends it, but its timer (and
/// the memory it holds, ≈2 KB) stays scheduled until the original deadline. Every ATT request
/// arms a 30 s timeout and nearly every one is cancelled by its response, so a client making
/// a thousand requests a second would keep 30 000 dead timers. A cancelled Dispatch source
/// leaves the timer list at once.
///
/// `fire` may still run after `cancel()` if it had already started; callers ignore a timer
/// they no longer wait for. Dropping the timer does not cancel it (an armed source keeps
/// itself until it fires), so a fire-and-forget timer works as a sleeping task would.
final class OneShotTimer: @unchecked Sendable {
    // @unchecked: the source is only scheduled in init; `cancel()` is thread-safe in Dispatch.
    private let source: any DispatchSourceTimer

    /// The queue every timer fires on (its handlers only start tasks or flip state).
    static let queue = DispatchQueue(label: "bluetooth.timers")

    init(after delay: Duration, _ fire: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: Self.queue)
        let (seconds, attoseconds) = delay.components
        // Rounded up: a timer never fires before its delay.
        let nanoseconds = max(0, seconds) * 1_000_000_000 + (max(0, attoseconds) + 999_999_999) / 1_000_000_000
        source.schedule(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)), leeway: .milliseconds(1))
        source.setEventHandler { [source] in
            // One shot: cancelling releases this handler, and with it the handler's reference
            // to `source`, which kept the armed timer alive until now.
            source.cancel()
            fire()
        }
        source.resume()
    }

    /// Stops the timer; harmless when it has fired or was cancelled already.
    func cancel() {
        source.cancel()
    }
}
