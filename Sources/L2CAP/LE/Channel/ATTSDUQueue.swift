import ATT
import Bluetooth
import Synchronization

/// The received SDUs of one ATT channel waiting for its reader: a bounded FIFO behind a lock,
/// one consumer.
///
/// The reader either takes one SDU at a time (`next()`, behind the channel's `incoming`
/// stream) or every SDU already buffered at once (`receiveAll(into:)`, what `ATTConnection`
/// uses: it wakes once per batch instead of once per PDU). Either way it suspends only when
/// nothing is buffered. The end (finish or failure) is seen after every buffered SDU.
/// Cancelling the waiting task ends the queue, as cancelling an `AsyncStream` consumer does.
final class ATTSDUQueue: Sendable {
    enum PushResult { case enqueued, full, terminated }

    private struct State {
        var buffer = FIFOBuffer<[UInt8]>()
        var waiters: [CheckedContinuation<Void, Never>] = []
        var isFinished = false
        var failure: (any Error)?

        var buffered: Int { buffer.count }

        mutating func takeWaiters() -> [CheckedContinuation<Void, Never>] {
            guard !waiters.isEmpty else { return [] }
            let taken = waiters
            waiters = []
            return taken
        }
    }

    private let state = Mutex(State())
    /// Most SDUs buffered at once; one more is `.full`.
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Appends an SDU and wakes the reader.
    func push(_ sdu: [UInt8]) -> PushResult {
        let (result, waiters) = state.withLock { state -> (PushResult, [CheckedContinuation<Void, Never>]) in
            if state.isFinished { return (.terminated, []) }
            if state.buffered >= limit { return (.full, []) }
            state.buffer.append(sdu)
            return (.enqueued, state.takeWaiters())
        }
        for waiter in waiters { waiter.resume() }
        return result
    }

    /// Ends the queue after the SDUs already buffered; with `error`, the reader then throws it.
    func finish(throwing error: (any Error)? = nil) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.isFinished else { return [] }
            state.isFinished = true
            state.failure = error
            return state.takeWaiters()
        }
        for waiter in waiters { waiter.resume() }
    }

    private enum Poll {
        case ready
        case ended((any Error)?)
        case wait
    }

    /// Takes the next SDU; nil at the end (or when the waiting task is cancelled).
    func next() async throws -> [UInt8]? {
        while true {
            let poll = state.withLock { state -> (sdu: [UInt8]?, end: Poll) in
                if let sdu = state.buffer.popFirst() { return (sdu, .ready) }
                return (nil, ended(&state))
            }
            if let sdu = poll.sdu { return sdu }
            switch poll.end {
            case .ended(let error?): throw error
            case .ended(nil): return nil
            case .ready, .wait: await waitForChange()
            }
        }
    }

    /// Moves every buffered SDU, in order, to the end of `sdus` (which should be empty: its
    /// storage is kept for the next batch). Returns false at the end (or when the waiting task
    /// is cancelled); throws the failure the queue finished with.
    func receiveAll(into sdus: inout [[UInt8]]) async throws -> Bool {
        while true {
            let end = state.withLock { state -> Poll in
                if !state.buffer.isEmpty {
                    state.buffer.moveAll(into: &sdus)
                    return .ready
                }
                return ended(&state)
            }
            switch end {
            case .ready: return true
            case .ended(let error?): throw error
            case .ended(nil): return false
            case .wait: await waitForChange()
            }
        }
    }

    /// With nothing buffered: the end, or `.wait`.
    private func ended(_ state: inout State) -> Poll {
        if state.isFinished {
            let error = state.failure
            state.failure = nil
            return .ended(error)
        }
        return .wait
    }

    /// Suspends until an SDU arrives, the queue ends or the task is cancelled (which ends it).
    private func waitForChange() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.buffered > 0 || state.isFinished { return true }
                    if Task.isCancelled {
                        state.isFinished = true
                        return true
                    }
                    state.waiters.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.isFinished = true
                return state.takeWaiters()
            }
            for waiter in waiters { waiter.resume() }
        }
    }
}
