import Bluetooth

/// Repeated attempts (Vol 3 Part H §2.3.6): after a failed pairing, the next attempt from that
/// peer waits, longer after each failure in a row; and because an attacker can change its address
/// at every attempt, failures from any peer also make every new attempt wait once they pile up.
/// A value with the time given (``BluetoothClock/now``): no clock of its own, tested with
/// instants. Bounded: at most ``peerLimit`` peers are remembered (the oldest forgotten first; the
/// global count keeps their failures).
///
/// Waits: a peer's `n`th failure in a row makes it wait 2^(n−1) s (1, 2, 4 … 64 s at most); with
/// ``global``, after ``globalAllowance`` failures from anyone, each further one makes every
/// attempt wait the same way, counted from the allowance, until ten minutes pass without a
/// failure (a success does not clear it: an attacker could pair Just Works under another address
/// between its guesses). A success clears only that peer's count. The price: while an attacker
/// keeps failing, a legitimate central waits up to 64 s too.
public struct PairingThrottle: Sendable {
    /// How many failures in a row from anyone pass before every attempt waits.
    public static let globalAllowance = 3
    /// After this long with no failure from anyone, the global count starts again.
    public static let quietReset = Duration.seconds(600)
    /// How many peers' failures are remembered.
    public static let peerLimit = 256

    private var peers: [PeerKey: (count: Int, last: Duration)] = [:]
    private var globalState: (count: Int, last: Duration) = (0, .zero)
    /// Attempts refused while a wait ran, for the closing figures and warnings.
    public private(set) var refused = 0

    /// A peer by its address and type.
    public struct PeerKey: Hashable, Sendable {
        public var address: BluetoothAddress
        public var random: Bool
        public init(address: BluetoothAddress, random: Bool) {
            self.address = address
            self.random = random
        }
    }

    /// Whether failures from anyone make every attempt wait (a responder any device may ask);
    /// false: per peer only (an initiator, whose pairings its own user starts).
    public let global: Bool

    public init(global: Bool = true) { self.global = global }

    /// Failures in a row from `peer`.
    public func failures(of peer: PeerKey) -> Int { peers[peer]?.count ?? 0 }
    /// Failures from anyone since the global count last started again.
    public var globalFailures: Int { globalState.count }
    /// How many peers' failures are remembered now.
    public var rememberedPeers: Int { peers.count }

    /// The wait after `count` failures in a row: 1 s, doubling, at most 64 s; zero for none.
    public static func backOff(after count: Int) -> Duration {
        count <= 0 ? .zero : .seconds(1 << min(count - 1, 6))
    }

    /// The time left before `peer` may try again at `now`; nil when it may now.
    public func waitBefore(_ peer: PeerKey, now: Duration) -> Duration? {
        var left = Duration.zero
        if let entry = peers[peer] { left = max(left, Self.backOff(after: entry.count) - (now - entry.last)) }
        let beyond = global ? globalState.count - Self.globalAllowance : 0
        if beyond > 0 { left = max(left, Self.backOff(after: beyond) - (now - globalState.last)) }
        return left > .zero ? left : nil
    }

    /// Asks to start a pairing with `peer` at `now`: nil when it may start, else the wait left
    /// (the attempt is refused and counted).
    public mutating func attempt(_ peer: PeerKey, now: Duration) -> Duration? {
        guard let wait = waitBefore(peer, now: now) else { return nil }
        refused += 1
        return wait
    }

    /// A pairing with `peer` ended at `now`.
    public mutating func ended(_ peer: PeerKey, succeeded: Bool, now: Duration) {
        // A success clears that peer only: an attacker's Just Works pairing under another
        // address must not clear the failures of its guesses.
        if succeeded {
            peers[peer] = nil
            return
        }
        if now - globalState.last >= Self.quietReset { globalState.count = 0 }
        if peers[peer] == nil, peers.count >= Self.peerLimit,
            let oldest = peers.min(by: { $0.value.last < $1.value.last })?.key
        {
            peers[oldest] = nil
        }
        peers[peer] = ((peers[peer]?.count ?? 0) + 1, now)
        globalState = (globalState.count + 1, now)
    }
}
