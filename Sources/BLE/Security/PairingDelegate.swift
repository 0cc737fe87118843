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
    let allowRepair: Bool
    let warning: @Sendable (String) -> Void
    private let delegateBox = Mutex<(any PairingDelegate)?>(nil)

    init(store: BondStore, allowRepair: Bool, warning: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.allowRepair = allowRepair
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
