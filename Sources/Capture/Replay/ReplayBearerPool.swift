import ATT
import Bluetooth
import Synchronization

/// The ATT bearers of one recorded connection — the unenhanced bearer and its Enhanced ATT
/// bearers — replayed together. Which bearer a procedure runs on depends on timing (each takes
/// whichever is free), so a request sent on any of our bearers is answered from the first unused
/// identical request recorded on any of them: what the peer answered to it there, in order, up
/// to our next recorded request. What the peer sent first on a recorded bearer (before any
/// request of ours) goes to our bearer of the same rank. A request no unused recording holds
/// fails the bearer it was sent on, naming it.
/// - SeeAlso: ``ReplayATTChannel`` (one bearer, strict or in any order)
public final class ReplayBearerPool: Sendable {
    private struct Recorded {
        var bearer: ReplayBearer
        var entries: [ATTTrace.Entry]
        var done: [Bool]
    }

    private struct State {
        var recorded: [Recorded]
        var continuations: [Int: AsyncThrowingStream<[UInt8], Error>.Continuation] = [:]
        var closed: Set<Int> = []
    }

    /// The capture's name.
    public let captureName: String
    /// The recorded bearers, the unenhanced one first.
    public let bearers: [ReplayBearer]
    private let state: Mutex<State>

    /// The bearers of `connectionHandle` in `capture` (the unenhanced one first, then the
    /// enhanced ones in order of their first PDU).
    public init(capture: ReplayCapture, connectionHandle: UInt16) throws(ReplayError) {
        let mine = capture.bearers.filter { $0.connectionHandle == connectionHandle }
            .sorted { ($0.enhancedMTU == nil ? 0 : 1, $0.firstRecord) < ($1.enhancedMTU == nil ? 0 : 1, $1.firstRecord) }
        guard !mine.isEmpty else {
            throw ReplayError(
                capture: capture.name,
                .noSuchBearer(connectionHandle: connectionHandle, channelID: nil, peerAddress: nil, available: capture.bearers))
        }
        var recorded: [Recorded] = []
        for bearer in mine {
            let trace = try capture.trace(of: bearer)
            recorded.append(Recorded(bearer: bearer, entries: trace.entries, done: [Bool](repeating: false, count: trace.entries.count)))
        }
        captureName = capture.name
        bearers = mine
        state = Mutex(State(recorded: recorded))
    }

    /// How many Enhanced ATT bearers the recording holds.
    public var enhancedBearerCount: Int { bearers.count - 1 }

    /// Our bearer of rank `index` (0: the unenhanced one), with the recorded bearer's MTU.
    public func channel(_ index: Int) -> ReplayPoolChannel {
        let (stream, continuation) = AsyncThrowingStream<[UInt8], Error>.makeStream(bufferingPolicy: .unbounded)
        state.withLock { state in
            state.continuations[index] = continuation
            // What the peer said first on the recorded bearer of this rank.
            guard index < state.recorded.count else { return }
            var position = 0
            while position < state.recorded[index].entries.count,
                state.recorded[index].entries[position].direction == .peerToHost
            {
                state.recorded[index].done[position] = true
                continuation.yield(state.recorded[index].entries[position].bytes)
                position += 1
            }
        }
        let mtu = index < bearers.count ? bearers[index].enhancedMTU : nil
        return ReplayPoolChannel(pool: self, index: index, incoming: stream, maximumSDUSize: mtu)
    }

    /// Answers `sdu` sent on our bearer `index` from the recordings.
    func send(_ sdu: [UInt8], from index: Int) throws(ReplayError) {
        let answer = state.withLock { state -> Result<[[UInt8]], ReplayError> in
            guard !state.closed.contains(index) else {
                return .failure(ReplayError(capture: captureName, .exhausted(lastRecord: nil, actual: sdu)))
            }
            // The recorded bearer of the same rank first (the same procedure, most often), then the others.
            let order = (index < state.recorded.count ? [index] : []) + state.recorded.indices.filter { $0 != index }
            for bearerIndex in order {
                let recorded = state.recorded[bearerIndex]
                guard
                    let position = recorded.entries.indices.first(where: {
                        !recorded.done[$0] && recorded.entries[$0].direction == .hostToPeer && recorded.entries[$0].bytes == sdu
                    })
                else { continue }
                state.recorded[bearerIndex].done[position] = true
                var replies: [[UInt8]] = []
                var next = position + 1
                while next < recorded.entries.count, recorded.entries[next].direction == .peerToHost {
                    if !state.recorded[bearerIndex].done[next] {
                        state.recorded[bearerIndex].done[next] = true
                        replies.append(recorded.entries[next].bytes)
                    }
                    next += 1
                }
                return .success(replies)
            }
            return .failure(ReplayError(capture: captureName, .noMatch(actual: sdu, closest: nil)))
        }
        switch answer {
        case .success(let replies):
            let continuation = state.withLock { $0.continuations[index] }
            for reply in replies { continuation?.yield(reply) }
        case .failure(let error):
            let continuation = state.withLock { $0.continuations[index] }
            continuation?.finish(throwing: error)
            throw error
        }
    }

    func close(_ index: Int) {
        let continuation = state.withLock { state -> AsyncThrowingStream<[UInt8], Error>.Continuation? in
            state.closed.insert(index)
            return state.continuations.removeValue(forKey: index)
        }
        continuation?.finish()
    }

    /// The recorded requests no bearer of ours made (yet), in capture order.
    public var unusedRequests: [ATTTrace.Entry] {
        state.withLock { state in
            state.recorded.flatMap { recorded in
                recorded.entries.indices.filter { !recorded.done[$0] && recorded.entries[$0].direction == .hostToPeer }
                    .map { recorded.entries[$0] }
            }.sorted { $0.line < $1.line }
        }
    }
}

/// One of our bearers over a ``ReplayBearerPool``.
public final class ReplayPoolChannel: ATTChannel {
    private let pool: ReplayBearerPool
    /// 0: the unenhanced bearer; then the Enhanced ATT bearers.
    public let index: Int
    public let incoming: AsyncThrowingStream<[UInt8], Error>
    /// The recorded Enhanced ATT bearer's ATT_MTU (nil for the unenhanced bearer: ATT_MTU limits).
    public let maximumSDUSize: Int?

    init(pool: ReplayBearerPool, index: Int, incoming: AsyncThrowingStream<[UInt8], Error>, maximumSDUSize: Int?) {
        self.pool = pool
        self.index = index
        self.incoming = incoming
        self.maximumSDUSize = maximumSDUSize
    }

    public func send(_ sdu: [UInt8]) async throws {
        try pool.send(sdu, from: index)
    }

    public func close() async {
        pool.close(index)
    }
}
