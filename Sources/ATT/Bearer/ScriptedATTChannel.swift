import Synchronization

/// A channel whose peer is a script (an ``ATTTrace``): each SDU our side sends is checked
/// against the recorded `>` entries, and the `<` entries recorded after the matched one are
/// delivered, in order, up to the next `>` entry.
///
/// `<` entries before the first `>` are delivered at once (a peer that speaks first).
///
/// - ``MatchMode/strict``: each SDU must equal the next `>` entry. A mismatch throws
///   ``ATTChannelError`` `.scriptMismatch`, naming the trace line (or capture record) and both
///   PDUs in hex.
/// - ``MatchMode/anyOrder``: each SDU is matched with the first unused `>` entry holding the
///   same bytes, so a recording can serve a client whose request order differs; an SDU no
///   unused entry holds throws `.scriptNoMatch`.
///
/// A failure is also recorded in ``failure`` and ends `incoming` with the same error, so
/// whatever waits on the bearer fails with that message.
public final class ScriptedATTChannel: ATTChannel {
    public enum MatchMode: Hashable, Sendable {
        case strict
        case anyOrder
    }

    private struct State {
        /// Strict mode: index of the next entry to use.
        var cursor = 0
        /// Entries used (a `>` matched, a `<` delivered).
        var done: [Bool]
        var doneCount = 0
        var failure: ATTChannelError?
        var closed = false
        var sent: [[UInt8]] = []
        /// Waiters for an entry index to be done (or the script to end or fail).
        var waiters: [(index: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let entries: [ATTTrace.Entry]
    private let positionLabel: String
    private let mode: MatchMode
    private let state: Mutex<State>
    private let continuation: AsyncThrowingStream<[UInt8], Error>.Continuation
    private let sduLimit: Int?
    public let incoming: AsyncThrowingStream<[UInt8], Error>

    /// `positionLabel` names the entries' `line` numbers in failures: `"trace line"` for a text
    /// trace, `"record"` for entries taken from a capture.
    public init(
        trace: ATTTrace, matching mode: MatchMode = .strict, positionLabel: String = "trace line",
        maximumSDUSize: Int? = nil
    ) {
        self.entries = trace.entries
        self.mode = mode
        self.positionLabel = positionLabel
        self.sduLimit = maximumSDUSize
        self.state = Mutex(State(done: [Bool](repeating: false, count: trace.entries.count)))
        (incoming, continuation) = AsyncThrowingStream<[UInt8], Error>.makeStream(bufferingPolicy: .unbounded)
        state.withLock { state in
            deliverPeerEntries(from: 0, &state)
        }
    }

    /// Parses `text` as a trace (see ``ATTTrace``).
    public convenience init(
        traceText text: String, matching mode: MatchMode = .strict, maximumSDUSize: Int? = nil
    ) throws(ATTTrace.ParseError) {
        self.init(trace: try ATTTrace(parsing: text), matching: mode, maximumSDUSize: maximumSDUSize)
    }

    public var maximumSDUSize: Int? {
        sduLimit
    }

    /// True when every entry of the script has been used.
    public var isComplete: Bool {
        state.withLock { $0.doneCount == entries.count }
    }

    /// The entries not yet used, in trace order.
    public var remainingEntries: [ATTTrace.Entry] {
        state.withLock { state in entries.indices.filter { !state.done[$0] }.map { entries[$0] } }
    }

    /// The first failure, if any.
    public var failure: ATTChannelError? {
        state.withLock { $0.failure }
    }

    /// Every SDU our side sent that matched the script, in order.
    public var sentSDUs: [[UInt8]] {
        state.withLock { $0.sent }
    }

    /// Returns once the entry on `line` (and, in strict mode, every entry before it) has been
    /// used, or the script failed or closed.
    public func waitUntilReached(line: Int) async {
        guard let index = entries.firstIndex(where: { $0.line >= line }) else { return }
        await waitUntil(index: index)
    }

    /// Returns once the whole script has been used, or it failed or closed.
    public func waitUntilComplete() async {
        await waitUntil(index: nil)
    }

    private func waitUntil(index: Int?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if Self.isSatisfied(index ?? -1, state) { return true }
                state.waiters.append((index ?? -1, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Index -1 stands for the whole script.
    private static func isSatisfied(_ index: Int, _ state: State) -> Bool {
        if state.failure != nil || state.closed { return true }
        if index < 0 { return state.doneCount == state.done.count }
        return state.done[index]
    }

    public func send(_ sdu: [UInt8]) async throws {
        let result: Result<Void, ATTChannelError> = state.withLock { state in
            if let failure = state.failure { return .failure(failure) }
            guard !state.closed else { return .failure(ATTChannelError(.closed)) }
            let matched: Int
            switch mode {
            case .strict:
                // The cursor rests on a `>` entry or at the end.
                guard state.cursor < entries.count else {
                    return .failure(fail(&state, ATTChannelError(.scriptExhausted(actual: sdu))))
                }
                let expected = entries[state.cursor]
                guard expected.bytes == sdu else {
                    let position = "\(positionLabel) \(expected.line)"
                    return .failure(
                        fail(
                            &state,
                            ATTChannelError(.scriptMismatch(position: position, expected: expected.bytes, actual: sdu)))
                    )
                }
                matched = state.cursor
            case .anyOrder:
                guard
                    let index = entries.indices.first(where: { index in
                        !state.done[index] && entries[index].direction == .hostToPeer && entries[index].bytes == sdu
                    })
                else {
                    return .failure(fail(&state, ATTChannelError(.scriptNoMatch(actual: sdu))))
                }
                matched = index
            }
            markDone(matched, &state)
            state.sent.append(sdu)
            deliverPeerEntries(from: matched + 1, &state)
            return .success(())
        }
        resumeWaiters()
        try result.get()
    }

    public func close() async {
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if first { continuation.finish() }
        resumeWaiters()
    }

    private func markDone(_ index: Int, _ state: inout State) {
        guard !state.done[index] else { return }
        state.done[index] = true
        state.doneCount += 1
    }

    private func fail(_ state: inout State, _ error: ATTChannelError) -> ATTChannelError {
        state.failure = error
        state.closed = true
        continuation.finish(throwing: error)
        return error
    }

    /// Delivers the `<` entries from `start` up to the next `>` entry.
    private func deliverPeerEntries(from start: Int, _ state: inout State) {
        var index = start
        while index < entries.count, entries[index].direction == .peerToHost {
            if !state.done[index] {
                continuation.yield(entries[index].bytes)
                markDone(index, &state)
            }
            index += 1
        }
        if mode == .strict { state.cursor = index }
    }

    /// Resumes the waiters whose condition holds.
    private func resumeWaiters() {
        let ready = state.withLock { state in
            let snapshot = state
            let ready = state.waiters.filter { Self.isSatisfied($0.index, snapshot) }
            state.waiters.removeAll { Self.isSatisfied($0.index, snapshot) }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }
}
