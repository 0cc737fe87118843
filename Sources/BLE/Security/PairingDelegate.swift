import Security
import Synchronization

/// The app's side of pairing: what to show, what to ask.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3.5 (association models)
public protocol PairingDelegate: Sendable {
    /// Show `passkey` (six digits, leading zeros kept): the peer's user types it.
    func displayPasskey(_ passkey: UInt32, for peer: PeerAddress) async
    /// The passkey the peer shows (0–999999); throw to refuse.
    func enterPasskey(for peer: PeerAddress) async throws -> UInt32
    /// Numeric comparison: whether both devices show `number`.
    func confirm(_ number: UInt32, for peer: PeerAddress) async -> Bool
}

/// An adapter's pairing setup shared with its peripherals: the delegate, the bond store, whether
/// a lost bond may be replaced by pairing again.
final class SecurityContext: Sendable {
    let store: BondStore
    private let repair: Locked<Bool>
    let warning: @Sendable (String) -> Void

    /// Whether a peer that lost its bond is paired again (`--repair`).
    var allowRepair: Bool {
        get { repair.withLock { $0 } }
        set { repair.withLock { $0 = newValue } }
    }
    private let delegateBox = Mutex<(any PairingDelegate)?>(nil)
    /// Failed pairings per peer: how many in a row, and when the last one ended (§2.3.6).
    private let failures = Mutex<[PeerAddress: (count: Int, last: ContinuousClock.Instant)]>([:])

    /// How long after `count` failures in a row a new attempt waits: 1 s, doubling, at most 64 s.
    static func backOff(after count: Int) -> Duration { .seconds(1 << min(max(count - 1, 0), 6)) }

    /// The time left before pairing with `peer` may be tried again, nil when it may now.
    func waitBeforePairing(with peer: PeerAddress) -> Duration? {
        failures.withLock { table -> Duration? in
            guard let entry = table[peer] else { return nil }
            let left = Self.backOff(after: entry.count) - (ContinuousClock.now - entry.last)
            return left > .zero ? left : nil
        }
    }

    func pairingEnded(with peer: PeerAddress, succeeded: Bool) {
        failures.withLock { table in
            if succeeded {
                table[peer] = nil
            } else {
                table[peer] = ((table[peer]?.count ?? 0) + 1, ContinuousClock.now)
            }
        }
    }

    /// The kernel path (`hciN`): its agent on the management channel; nil on other transports.
    let kernel: KernelSecurity?

    init(store: BondStore, allowRepair: Bool, kernel: KernelSecurity? = nil, warning: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.kernel = kernel
        self.repair = Locked(allowRepair)
        self.warning = warning
    }

    var delegate: (any PairingDelegate)? {
        get { delegateBox.withLock { $0 } }
        set { delegateBox.withLock { $0 = newValue } }
    }

    /// The agent a pairing with `peer` uses.
    func agent(for peer: PeerAddress) -> any PairingAgent { DelegateAgent(delegate: delegate, peer: peer) }
}

/// A ``PairingDelegate`` as the Security Manager's agent for one peer. Without a delegate,
/// nothing is shown, no passkey is given and no comparison is confirmed: pairings that need the
/// user fail clearly.
struct DelegateAgent: PairingAgent {
    let delegate: (any PairingDelegate)?
    let peer: PeerAddress

    func displayPasskey(_ passkey: UInt32) async { await delegate?.displayPasskey(passkey, for: peer) }
    func enterPasskey() async -> UInt32? { try? await delegate?.enterPasskey(for: peer) }
    func confirm(_ number: UInt32) async -> Bool { await delegate?.confirm(number, for: peer) ?? false }
}
