import Bluetooth
import Security

/// Resolves a resolvable private address to the bonded identity behind it: the top two bits of
/// the address are 0b01, its upper 24 bits are `prand` and its lower 24 bits `hash`, and an IRK
/// resolves it when ah(IRK, prand) equals hash. Only bonds that hold the peer's IRK can resolve.
/// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §1.3.2.2 and §1.3.2.3; Vol 3, Part H, §2.2.2
package struct AddressResolver: Sendable {
    /// The bonded identities with their IRK (most significant octet first, as `e` takes it).
    private let keys: [(irk: [UInt8], identity: PeerAddress)]

    /// The resolver of the identities in `bonds` that distributed an IRK.
    package init(bonds: [Bond]) {
        keys = bonds.compactMap { bond in
            // Bonds keep keys in SMP PDU octet order (least significant first).
            guard let irk = bond.peerIRK, Bond.isValidIRK(irk) else { return nil }
            return (Array(irk.reversed()), bond.peerIdentity)
        }
    }

    /// Whether `peer` is a resolvable private address (random, top two bits 0b01).
    package static func isResolvable(_ peer: PeerAddress) -> Bool {
        peer.type == .random && peer.address.rawValue >> 46 == 0b01
    }

    /// Whether `irk` (most significant octet first) resolves `address`.
    package static func resolves(_ address: BluetoothAddress, irk: [UInt8]) -> Bool {
        // Most significant octet first: prand, then hash.
        let octets = (0..<6).reversed().map { UInt8(truncatingIfNeeded: address.rawValue >> (8 * UInt64($0))) }
        guard let hash = try? SecurityFunctions.ah(irk, Array(octets[0..<3])) else { return false }
        return hash == Array(octets[3..<6])
    }

    /// The identity whose IRK resolves `peer`; nil when `peer` is not a resolvable private
    /// address or no bonded IRK resolves it.
    ///
    /// More than one identity resolving it (a forged IRK that collides with a device's 24-bit
    /// hash) is ambiguous: none is chosen.
    package func identity(of peer: PeerAddress) -> PeerAddress? {
        guard Self.isResolvable(peer) else { return nil }
        let matches = Set(keys.filter { Self.resolves(peer.address, irk: $0.irk) }.map(\.identity))
        return matches.count == 1 ? matches.first : nil
    }
}
