import Bluetooth
import Synchronization

/// Why an in-memory or scripted channel refused an SDU or ended.
public struct ATTChannelError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        /// The channel (or its peer) was closed.
        case closed
        /// The link failed (injected with ``InMemoryATTChannel/fail(_:)``).
        case linkLost(String)
        /// An SDU larger than the channel carries.
        case sduTooLarge(size: Int, limit: Int)
        /// A ``ScriptedATTChannel`` received an SDU the script did not expect at `position`
        /// (`"trace line 12"`, `"record 57"`).
        case scriptMismatch(position: String, expected: [UInt8], actual: [UInt8])
        /// A ``ScriptedATTChannel`` received an SDU after the script's last `>` line.
        case scriptExhausted(actual: [UInt8])
        /// A ``ScriptedATTChannel`` matching in any order holds no unused `>` entry equal to
        /// this SDU.
        case scriptNoMatch(actual: [UInt8])
    }

    public var kind: Kind

    public init(_ kind: Kind) {
        self.kind = kind
    }

    public var description: String {
        switch kind {
        case .closed:
            return "ATT channel closed"
        case .linkLost(let reason):
            return "ATT channel lost: \(reason)"
        case .sduTooLarge(let size, let limit):
            return "SDU of \(size) octets exceeds the channel limit of \(limit)"
        case .scriptMismatch(let position, let expected, let actual):
            return "\(position): expected > \(Hex.encode(expected)), host sent > \(Hex.encode(actual))"
        case .scriptExhausted(let actual):
            return "trace ended, host sent > \(Hex.encode(actual))"
        case .scriptNoMatch(let actual):
            return "no unused recorded PDU equals > \(Hex.encode(actual))"
        }
    }
}

/// One end of an in-memory link: what one side sends, the other receives, in order.
///
/// Built in connected pairs by ``pair(maximumSDUSize:)``. Closing either end finishes both
/// `incoming` streams and makes later sends on either end throw ``ATTChannelError``.
/// Used by tests and by the emulator.
public final class InMemoryATTChannel: ATTChannel {
    /// State shared by both ends of one link.
    private final class Link: Sendable {
        struct State {
            var closed = false
        }

        let state = Mutex(State())
        let continuations: [AsyncThrowingStream<[UInt8], Error>.Continuation]

        init(_ continuations: [AsyncThrowingStream<[UInt8], Error>.Continuation]) {
            self.continuations = continuations
        }

        /// Delivers to end `index`; false when the link is closed.
        func deliver(_ sdu: [UInt8], to index: Int) -> Bool {
            state.withLock { state in
                guard !state.closed else { return false }
                // Yielding under the lock keeps the order of concurrent senders on one end.
                continuations[index].yield(sdu)
                return true
            }
        }

        func shutdown(error: (any Error)?) {
            let first = state.withLock { state in
                defer { state.closed = true }
                return !state.closed
            }
            guard first else { return }
            for continuation in continuations {
                continuation.finish(throwing: error)
            }
        }
    }

    private let link: Link
    private let peerIndex: Int
    private let sduLimit: Int?
    public let incoming: AsyncThrowingStream<[UInt8], Error>

    private init(link: Link, peerIndex: Int, incoming: AsyncThrowingStream<[UInt8], Error>, sduLimit: Int?) {
        self.link = link
        self.peerIndex = peerIndex
        self.incoming = incoming
        self.sduLimit = sduLimit
    }

    /// Two connected ends. `maximumSDUSize` is what each end reports (nil: only ATT_MTU limits).
    public static func pair(maximumSDUSize: Int? = nil) -> (InMemoryATTChannel, InMemoryATTChannel) {
        let (streamA, continuationA) = AsyncThrowingStream<[UInt8], Error>.makeStream(bufferingPolicy: .unbounded)
        let (streamB, continuationB) = AsyncThrowingStream<[UInt8], Error>.makeStream(bufferingPolicy: .unbounded)
        let link = Link([continuationA, continuationB])
        let a = InMemoryATTChannel(link: link, peerIndex: 1, incoming: streamA, sduLimit: maximumSDUSize)
        let b = InMemoryATTChannel(link: link, peerIndex: 0, incoming: streamB, sduLimit: maximumSDUSize)
        return (a, b)
    }

    public var maximumSDUSize: Int? {
        sduLimit
    }

    public var isClosed: Bool {
        link.state.withLock { $0.closed }
    }

    public func send(_ sdu: [UInt8]) async throws {
        if let sduLimit, sdu.count > sduLimit {
            throw ATTChannelError(.sduTooLarge(size: sdu.count, limit: sduLimit))
        }
        guard link.deliver(sdu, to: peerIndex) else {
            throw ATTChannelError(.closed)
        }
    }

    public func close() async {
        link.shutdown(error: nil)
    }

    /// Simulates a link failure: both `incoming` streams throw `ATTChannelError.linkLost`.
    public func fail(_ reason: String) {
        link.shutdown(error: ATTChannelError(.linkLost(reason)))
    }
}
