import Bluetooth
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
    /// Whether the numeric comparisons this delegate accepted for `peer` were looked at by a
    /// person. An automatic yes (`gattclient --confirm`, a test) protects against nobody: the
    /// pairing's keys are then kept as unauthenticated, on both roles. Default: true.
    func comparisonWasSeen(for peer: PeerAddress) -> Bool
    /// A pairing with `peer` completed, on either role, whoever started it (the app, a read the
    /// peer refused for security, a Security Request, a central): how it authenticated, the bond
    /// it left (its level, its identity) and whether that bond was stored. Nothing pairs
    /// silently: an app that shows nothing else should show this. Default: nothing.
    func pairingCompleted(with peer: PeerAddress, method: PairingMethod, bond: Bond, stored: Bool) async
}

extension PairingDelegate {
    public func comparisonWasSeen(for peer: PeerAddress) -> Bool { true }
    public func pairingCompleted(with peer: PeerAddress, method: PairingMethod, bond: Bond, stored: Bool) async {}
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
    /// Failed pairings, per peer and from anyone (§2.3.6), on `clock`.
    /// Our own pairings as initiator: per peer only (the user starts them).
    private let throttle = Mutex(PairingThrottle(global: false))
    let clock: any BluetoothClock

    /// The time left before pairing with `peer` may be tried again, nil when it may now.
    func waitBeforePairing(with peer: PeerAddress) -> Duration? {
        let now = clock.now
        return throttle.withLock { $0.waitBefore(Self.key(peer), now: now) }
    }

    func pairingEnded(with peer: PeerAddress, succeeded: Bool) {
        let now = clock.now
        throttle.withLock { $0.ended(Self.key(peer), succeeded: succeeded, now: now) }
    }

    static func key(_ peer: PeerAddress) -> PairingThrottle.PeerKey {
        PairingThrottle.PeerKey(address: peer.address, random: peer.type == .random)
    }

    /// The kernel path (`hciN`): its agent on the management channel; nil on other transports.
    let kernel: KernelSecurity?

    /// The smallest encryption key size a pairing may give (`--min-key-size`, default 16).
    let minimumKeySize: Int

    init(
        store: BondStore, allowRepair: Bool, minimumKeySize: Int = 16, kernel: KernelSecurity? = nil,
        clock: any BluetoothClock = SystemClock(), warning: @escaping @Sendable (String) -> Void
    ) {
        self.minimumKeySize = min(16, max(7, minimumKeySize))
        self.store = store
        self.clock = clock
        self.kernel = kernel
        self.repair = Locked(allowRepair)
        self.warning = warning
    }

    var delegate: (any PairingDelegate)? {
        get { delegateBox.withLock { $0 } }
        set { delegateBox.withLock { $0 = newValue } }
    }

    /// The bond a completed pairing with `peer` leaves: a numeric comparison the delegate
    /// accepted unseen gives unauthenticated keys (nobody compared the numbers).
    func bond(from result: PairingResult, local: PeerAddress, peer: PeerAddress, pairedAs: String) -> Bond {
        var bond = Bond(result: result, local: local, peer: peer, pairedAs: pairedAs)
        if result.method == .numericComparison, bond.authenticated, let delegate, !delegate.comparisonWasSeen(for: peer) {
            bond.authenticated = false
        }
        return bond
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
