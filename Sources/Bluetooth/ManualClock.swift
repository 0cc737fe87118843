import Synchronization

/// A clock that only moves when told to: `advance(by:)` fires, in deadline order, every timer
/// that falls due and waits for each to finish. Makes the 30 s transaction timeout a
/// millisecond test.
public final class ManualClock: BluetoothClock {
    private struct Pending {
        var id: UInt64
        var deadline: Duration
        var fire: @Sendable () async -> Void
    }

    private struct State {
        var now: Duration = .zero
        var nextID: UInt64 = 0
        var pending: [Pending] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Time elapsed since the clock was created.
    public var now: Duration {
        state.withLock { $0.now }
    }

    /// Number of timers scheduled and neither fired nor cancelled.
    public var pendingTimerCount: Int {
        state.withLock { $0.pending.count }
    }

    public func schedule(after delay: Duration, _ fire: @escaping @Sendable () async -> Void) -> ScheduledTimer {
        let id = state.withLock { state in
            state.nextID += 1
            state.pending.append(Pending(id: state.nextID, deadline: state.now + delay, fire: fire))
            return state.nextID
        }
        return ScheduledTimer { [weak self] in
            self?.state.withLock { state in
                state.pending.removeAll { $0.id == id }
            }
        }
    }

    /// Moves time forward by `duration`, firing every timer due on the way (earliest first,
    /// ties in scheduling order) and awaiting each. A timer scheduled by a firing timer is
    /// fired too if it falls due within the same advance.
    public func advance(by duration: Duration) async {
        let target = state.withLock { $0.now + duration }
        while true {
            let due: Pending? = state.withLock { state in
                let candidates = state.pending.enumerated().filter { $0.element.deadline <= target }
                guard
                    let first = candidates.min(by: { a, b in
                        (a.element.deadline, a.element.id) < (b.element.deadline, b.element.id)
                    })
                else {
                    return nil
                }
                state.pending.remove(at: first.offset)
                state.now = max(state.now, first.element.deadline)
                return first.element
            }
            guard let due else { break }
            await due.fire()
        }
        state.withLock { $0.now = max($0.now, target) }
    }
}
