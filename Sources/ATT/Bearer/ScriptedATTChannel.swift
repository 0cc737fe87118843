import Synchronization

/// A channel whose peer is a script (an ``ATTTrace``): each SDU our side sends must equal the
/// next `>` entry; then the `<` entries that follow it are delivered, in order.
///
/// `<` entries before the first `>` are delivered at once (a peer that speaks first).
/// A mismatch throws ``ATTChannelError`` `.scriptMismatch` naming the trace line and both PDUs
/// in hex, records it in ``failure`` and ends `incoming` with the same error, so whatever
/// waits on the bearer fails with that message.
public final class ScriptedATTChannel: ATTChannel {
    private struct State {
        var cursor = 0
        var failure: ATTChannelError?
        var closed = false
        var sent: [[UInt8]] = []
        /// Waiters for the cursor to pass an entry index (or the script to end or fail).
        var waiters: [(index: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let entries: [ATTTrace.Entry]
    private let state = Mutex(State())
    private let continuation: AsyncThrowingStream<[UInt8], Error>.Continuation
    private let sduLimit: Int?
    public let incoming: AsyncThrowingStream<[UInt8], Error>

    public init(trace: ATTTrace, maximumSDUSize: Int? = nil) {
        self.entries = trace.entries
        self.sduLimit = maximumSDUSize
        (incoming, continuation) = AsyncThrowingStream<[UInt8], Error>.makeStream(bufferingPolicy: .unbounded)
        state.withLock { state in
            deliverPeerEntries(&state)
        }
    }

    /// Parses `text` as a trace (see ``ATTTrace``).
    public convenience init(traceText text: String, maximumSDUSize: Int? = nil) throws(ATTTrace.ParseError) {
        self.init(trace: try ATTTrace(parsing: text), maximumSDUSize: maximumSDUSize)
    }

    public var maximumSDUSize: Int? {
        sduLimit
    }

    /// True when every entry of the script has been used.
    public var isComplete: Bool {
        state.withLock { $0.cursor == entries.count }
    }

    /// The entries not yet reached.
    public var remainingEntries: [ATTTrace.Entry] {
        state.withLock { Array(entries[$0.cursor...]) }
    }

    /// The first mismatch, if any.
    public var failure: ATTChannelError? {
        state.withLock { $0.failure }
    }

    /// Every SDU our side sent that matched the script, in order.
    public var sentSDUs: [[UInt8]] {
        state.withLock { $0.sent }
    }

    /// Returns once every entry up to and including the one on trace line `line` has been
    /// used (sent by our side or delivered), or the script failed or closed.
    public func waitUntilReached(line: Int) async {
        let index = (entries.firstIndex { $0.line >= line } ?? entries.count - 1) + 1
        await waitUntil(index: index)
    }

    /// Returns once the whole script has been used, or it failed or closed.
    public func waitUntilComplete() async {
        await waitUntil(index: entries.count)
    }

    private func waitUntil(index: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.cursor >= index || state.failure != nil || state.closed { return true }
                state.waiters.append((index, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public func send(_ sdu: [UInt8]) async throws {
        let result: Result<Void, ATTChannelError> = state.withLock { state in
            if let failure = state.failure { return .failure(failure) }
            guard !state.closed else { return .failure(ATTChannelError(.closed)) }
            guard state.cursor < entries.count else {
                return .failure(fail(&state, ATTChannelError(.scriptExhausted(actual: sdu))))
            }
            let expected = entries[state.cursor]
            // deliverPeerEntries leaves the cursor on a `>` entry or at the end.
            guard expected.bytes == sdu else {
                return .failure(
                    fail(&state, ATTChannelError(.scriptMismatch(line: expected.line, expected: expected.bytes, actual: sdu))))
            }
            state.sent.append(sdu)
            state.cursor += 1
            deliverPeerEntries(&state)
            return .success(())
        }
        resumeWaiters()
        try result.get()
    }

    /// Resumes the waiters whose entry has been reached (all of them once failed or closed).
    private func resumeWaiters() {
        let ready = state.withLock { state in
            let done = state.failure != nil || state.closed
            let ready = state.waiters.filter { done || state.cursor >= $0.index }
            state.waiters.removeAll { done || state.cursor >= $0.index }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    public func close() async {
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if first { continuation.finish() }
        resumeWaiters()
    }

    private func fail(_ state: inout State, _ error: ATTChannelError) -> ATTChannelError {
        state.failure = error
        state.closed = true
        continuation.finish(throwing: error)
        return error
    }

    /// Delivers the `<` entries at the cursor; stops at the next `>` entry.
    private func deliverPeerEntries(_ state: inout State) {
        while state.cursor < entries.count, entries[state.cursor].direction == .peerToHost {
            continuation.yield(entries[state.cursor].bytes)
            state.cursor += 1
        }
    }
}
