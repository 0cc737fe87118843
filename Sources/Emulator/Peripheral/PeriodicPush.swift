import Bluetooth
import Synchronization

/// An emulated sensor's notifying loop: while a central listens (``start(_:)`` when it enables
/// notifications, ``halt()`` when it disables them or leaves), `tick` runs every `period` with
/// the peripheral; a tick that could not send ends the loop. One timer at a time, never a task
/// per value; a tick of an earlier run (started, halted, started again) does nothing.
final class PeriodicPush: Sendable {
    private struct State: Sendable {
        /// Bumped at every start and halt.
        var generation = 0
        var running: GATTPeripheral?
        var timer: ScheduledTimer?
        /// ``stop()`` was called: no start from now on.
        var stopped = false
    }

    let period: Duration
    let clock: any BluetoothClock
    /// Sends one value; returns whether it went out.
    private let tick: @Sendable (GATTPeripheral) async -> Bool
    private let state = Mutex(State())

    init(period: Duration, clock: any BluetoothClock, tick: @escaping @Sendable (GATTPeripheral) async -> Bool) {
        self.period = period
        self.clock = clock
        self.tick = tick
    }

    /// Starts the loop on `peripheral` (nothing when it runs already or was stopped).
    func start(_ peripheral: GATTPeripheral) {
        let generation: Int? = state.withLock { state in
            guard state.running == nil, !state.stopped else { return nil }
            state.running = peripheral
            state.generation += 1
            return state.generation
        }
        if let generation { schedule(generation) }
    }

    /// Ends the current run (only run `generation`, when given: a newer run goes on).
    func halt(generation: Int? = nil) {
        state.withLock { state in
            if let generation, state.generation != generation { return }
            state.running = nil
            state.generation += 1
            state.timer?.cancel()
            state.timer = nil
        }
    }

    /// Ends the current run and every later one.
    func stop() {
        state.withLock { $0.stopped = true }
        halt()
    }

    private func schedule(_ generation: Int) {
        let next = clock.schedule(after: period) { [weak self] in await self?.fire(generation) }
        let current = state.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            state.timer = next
            return true
        }
        if !current { next.cancel() }
    }

    private func fire(_ generation: Int) async {
        let peripheral = state.withLock { $0.generation == generation ? $0.running : nil }
        guard let peripheral else { return }
        if await tick(peripheral) { schedule(generation) } else { halt(generation: generation) }
    }
}

/// A value under a lock that closures can share (a `Mutex` itself cannot be captured).
final class SharedState<Value: Sendable>: Sendable {
    let lock: Mutex<Value>
    init(_ value: Value) { lock = Mutex(value) }
}
