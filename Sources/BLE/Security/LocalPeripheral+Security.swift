import ATT
import GATT
import HCI
import Host
import Security
import Synchronization

/// What one central's link needs for security: the level its next encryption gives (bond or
/// pairing), the level in force, its Security Manager, and how the GATT server serving it is
/// told the level (known once the server took the central).
package final class CentralSecurity: Sendable {
    let pendingLevel = Mutex<SecurityLevel?>(nil)
    let level = Mutex<SecurityLevel?>(nil)
    /// Boxed: a closure kept in the generic `Mutex` itself gains a reabstraction thunk per access.
    final class Applier: Sendable {
        let apply: @Sendable (SecurityLevel) async -> Void
        init(_ apply: @escaping @Sendable (SecurityLevel) async -> Void) { self.apply = apply }
    }
    let apply = Mutex<Applier?>(nil)
    /// The server's client for this central, once served.
    let client = Mutex<GATTServer.ClientID?>(nil)
    /// The highest level a Security Request of ours asked for on this link.
    let requested = Mutex<SecurityLevel?>(nil)
    let manager: PeripheralSecurityManager
    let handle: UInt16

    init(manager: PeripheralSecurityManager, handle: UInt16) {
        self.manager = manager
        self.handle = handle
    }

    /// The server serving this central: `apply` tells it the link's level, now if the link is
    /// encrypted already and on every change after.
    package func served(
        as client: GATTServer.ClientID, _ apply: @escaping @Sendable (SecurityLevel) async -> Void
    ) async {
        self.client.withLock { $0 = client }
        let applier = Applier(apply)
        self.apply.withLock { $0 = applier }
        if let level = level.withLock({ $0 }) { await apply(level) }
    }

    /// The link is now at `newLevel` (encryption enabled with a known key, or pairing done).
    func enter(_ newLevel: SecurityLevel) async {
        level.withLock { $0 = newLevel }
        if let applier = apply.withLock({ $0 }) { await applier.apply(newLevel) }
    }
}

/// Our side of LE security as a peripheral on the user-space host, for any GATT server
/// (``LocalPeripheral``, `gattclient peripheral`): the Security Manager on each central's SMP
/// channel from link-up, the host's LE Long Term Key Request answered from the pairing in
/// progress or the bond store (a negative reply otherwise), bonds stored `pairedAs: peripheral`.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3 and §2.4.4; Vol 6, Part B, §5.1.3
package final class PeripheralPairing: Sendable {
    let context: SecurityContext
    /// Our controller's address (the bonds' `local`).
    let localAddress: PeerAddress
    /// How we pair when a central asks; nil refuses with Pairing Not Supported.
    let options: Locked<PairingOptions?>
    /// Each central's security, by connection handle.
    let securities = Locked<[UInt16: CentralSecurity]>([:])
    private let keyProviderSet = Locked<Bool>(false)
    /// Whether a request refused for the link's security makes us send a Security Request.
    let sendsSecurityRequests = Locked<Bool>(false)
    /// Applied to each new bond before it is used and stored (the CLI keeps a numeric
    /// comparison nobody looked at as unauthenticated).
    let adjustBond: @Sendable (Bond) -> Bond

    init(
        context: SecurityContext, localAddress: PeerAddress, options: PairingOptions?,
        adjustBond: @escaping @Sendable (Bond) -> Bond = { $0 }
    ) {
        self.context = context
        self.localAddress = localAddress
        self.options = Locked(options)
        self.adjustBond = adjustBond
    }

    /// For a server outside an ``Adapter``: bonds in `bondsDirectory` (nil: the default
    /// directory), the user's part answered by `delegate`.
    package convenience init(
        bondsDirectory: String?, delegate: (any PairingDelegate)?, localAddress: PeerAddress, options: PairingOptions?,
        warning: @escaping @Sendable (String) -> Void, adjustBond: @escaping @Sendable (Bond) -> Bond = { $0 }
    ) {
        let context = SecurityContext(
            store: BondStore(directory: bondsDirectory, warning: warning), allowRepair: false, warning: warning)
        context.delegate = delegate
        self.init(context: context, localAddress: localAddress, options: options, adjustBond: adjustBond)
    }

    /// Sets whether a request refused for the link's security makes us send a Security Request.
    package func setSecurityRequests(_ enabled: Bool) {
        sendsSecurityRequests.withLock { $0 = enabled }
    }

    /// Starts security on a central's link; nil where the host does not run SMP (kernel).
    package func attach(_ central: AcceptedCentral, peer: PeerAddress) async -> CentralSecurity? {
        guard let connection = central.connection, let host = central.host,
            let pdus = try? await host.securityManagerPDUs(connection)
        else { return nil }
        let providerNeeded = keyProviderSet.withLock { set in
            defer { set = true }
            return !set
        }
        if providerNeeded {
            await host.setLongTermKeyProvider { [weak self] connection, rand, ediv in
                await self?.longTermKey(handle: connection.handle, peer: connection.peerAddress, rand: rand, ediv: ediv)
            }
        }
        let (changes, changesContinuation) = AsyncStream.makeStream(of: (status: UInt8, enabled: Bool).self)
        let options = options
        let ours = host.info.address
        let box = Mutex<CentralSecurity?>(nil)
        let manager = PeripheralSecurityManager(
            incoming: pdus, send: { pdu in try host.sendSecurityManagerPDU(pdu, on: connection) },
            encryptionChanges: changes,
            addresses: PairingInitiator.Addresses(
                initiator: connection.peerAddress, initiatorType: connection.peerAddressType.addressType ?? .public,
                responder: ours, responderType: .public),
            identity: IdentityAddressInformation(addressType: .public, address: ours),
            options: { options.withLock { $0 } }, agent: context.agent(for: peer),
            completed: { [weak self] result in
                guard let security = box.withLock({ $0 }) else { return }
                await self?.pairingEnded(result, security: security, peer: peer)
            })
        let security = CentralSecurity(manager: manager, handle: connection.handle)
        box.withLock { $0 = security }
        securities.withLock { $0[connection.handle] = security }
        await manager.start()
        let securities = securities
        Task {
            for await outcome in connection.encryptionChanges {
                changesContinuation.yield((outcome.status.rawValue, outcome.enabled))
                guard outcome.status == .success, outcome.enabled, let level = security.pendingLevel.withLock({ $0 })
                else { continue }
                await security.enter(level)
            }
            changesContinuation.finish()
            securities.withLock { _ = $0.removeValue(forKey: connection.handle) }
        }
        return security
    }

    /// A request of `client` was refused for its link's security: when configured
    /// (``sendsSecurityRequests``), ask the central to secure the link with a Security Request
    /// (Vol 3 Part H §2.4.6, §3.6.7), with MITM for Insufficient Authentication and Secure
    /// Connections for a key too short; once per link and level, not at every refusal.
    package func refused(_ code: ATTErrorCode, client: GATTServer.ClientID) async {
        guard sendsSecurityRequests.withLock({ $0 }), let options = options.withLock({ $0 }),
            let security = securities.withLock({ table in table.values.first { $0.client.withLock { $0 } == client } })
        else { return }
        let needed: SecurityLevel
        switch code {
        case .insufficientAuthentication: needed = .authenticated
        case .encryptionKeySizeTooShort: needed = .secureConnections
        default: needed = .encrypted
        }
        let current = security.level.withLock { $0 } ?? .none
        let ask = security.requested.withLock { requested -> Bool in
            guard needed > current, needed > (requested ?? .none) else { return false }
            requested = needed
            return true
        }
        guard ask else { return }
        var requirements: AuthenticationRequirements = []
        if options.bonding { requirements.insert(.bonding) }
        if needed >= .authenticated { requirements.insert(.mitm) }
        if !options.legacyOnly { requirements.insert(.secureConnections) }
        await security.manager.requestSecurity(requirements)
    }

    /// The key a central encrypts with: the pairing in progress (EDIV and Rand zero), else the
    /// bond (Secure Connections: its LTK; legacy: the LTK we distributed, by EDIV and Rand).
    func longTermKey(handle: UInt16, peer address: BluetoothAddress, rand: UInt64, ediv: UInt16) async -> [UInt8]? {
        guard let security = securities.withLock({ $0[handle] }) else { return nil }
        if let key = await security.manager.pairingKey(rand: rand, ediv: ediv) {
            if let protection = await security.manager.pairingKeyProtection(rand: rand, ediv: ediv) {
                security.pendingLevel.withLock {
                    $0 = SecurityLevel.of(
                        authenticated: protection.authenticated, secureConnections: protection.secureConnections,
                        keySize: protection.keySize)
                }
            }
            return key
        }
        guard
            let bond = context.store.bond(local: localAddress.address, peer: PeerAddress(address: address, type: .public))
                ?? context.store.bond(local: localAddress.address, peer: PeerAddress(address: address, type: .random))
        else { return nil }
        if rand == 0, ediv == 0, bond.secureConnections, let ltk = bond.peerLTK {
            security.pendingLevel.withLock { $0 = bond.securityLevel }
            return ltk.key
        }
        if let ltk = bond.localLTK, ltk.ediv == ediv, ltk.rand == rand {
            security.pendingLevel.withLock { $0 = bond.securityLevel }
            return ltk.key
        }
        return nil
    }

    /// A pairing with a central ended: the bond stored, the server told the link's level.
    func pairingEnded(_ result: Result<PairingResult, PairingFailure>, security: CentralSecurity, peer: PeerAddress) async {
        switch result {
        case .success(let pairing):
            let bond = adjustBond(Bond(result: pairing, local: localAddress, peer: peer, pairedAs: "peripheral"))
            security.pendingLevel.withLock { $0 = bond.securityLevel }
            await security.enter(bond.securityLevel)
            if pairing.bonded {
                do {
                    try context.store.save(bond)
                } catch {
                    context.warning("warning: paired with \(peer), but the bond could not be stored: \(error)")
                }
            }
        case .failure(let failure):
            context.warning("warning: pairing with \(peer) failed: \(failure)")
        }
    }
}

extension LocalPeripheral {
    /// Pairs when a central asks, with `options` (nil: refuse with Pairing Not Supported); the
    /// adapter's delegate answers the user's part and bonds go to its store (`pairedAs:
    /// peripheral`). By default we pair as NoInputNoOutput (Just Works).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3
    public func setPairing(_ options: PairingOptions?) {
        pairing?.options.withLock { $0 = options }
    }

    /// Whether a central's request refused for its link's security (Insufficient Encryption,
    /// Authentication or Encryption Key Size, or a Write Command dropped for them) makes us send
    /// a Security Request, so the central encrypts with its bond or pairs (off by default; a
    /// central that handles the Error Response needs none).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.4.6
    public func setSecurityRequests(_ enabled: Bool) {
        pairing?.setSecurityRequests(enabled)
    }
}
