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

    /// The link is now at `newLevel` (encrypted with a bond's key, or a pairing completed).
    func enter(_ newLevel: SecurityLevel) async {
        level.withLock { $0 = newLevel }
        if let applier = apply.withLock({ $0 }) { await applier.apply(newLevel) }
    }

    /// Whether the central took the key of the pairing in progress (the link is encrypted with
    /// it, or about to be): the level it gives is granted only when the pairing completes.
    let pairingKeyTaken = Mutex<Bool>(false)
    /// While the link is encrypted with a pairing's key and that pairing has not ended: requests
    /// refused for security wait for its end (the central may read as soon as its own side of
    /// key distribution ends, before ours does).
    private let settling = Mutex<(active: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func beginSettling() { settling.withLock { $0.active = true } }

    /// The pairing ended (or the link did): waiting requests go on.
    func settle() {
        let waiters = settling.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state = (false, []) }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits for the pairing the link is encrypted with to end; false at once when none runs.
    /// Bounded: a pairing ends within the SMP timeout (30 s, §3.4), and at the link's end.
    func waitUntilSettled() async -> Bool {
        guard settling.withLock({ $0.active }) else { return false }
        await withCheckedContinuation { continuation in
            let waiting = settling.withLock { state -> Bool in
                guard state.active else { return false }
                state.waiters.append(continuation)
                return true
            }
            if !waiting { continuation.resume() }
        }
        return true
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
    /// Whether a pairing that both sides asked to bond is stored (`--bondable`; off by default:
    /// any central could otherwise fill the bond store).
    let bondable = Locked<Bool>(false)
    /// Repeated attempts from centrals (§2.3.6), per central and from anyone: any device in range
    /// may ask, and may change its address at every attempt. Our own pairings as central have
    /// their own (per peer) in the context. `warned`: a refusal was said since the last failure.
    let throttle = Locked<(state: PairingThrottle, warned: Bool)>((PairingThrottle(global: true), false))

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
        maximumBonds: Int = BondStore.defaultPeripheralLimit, warning: @escaping @Sendable (String) -> Void,
        adjustBond: @escaping @Sendable (Bond) -> Bond = { $0 }
    ) {
        let context = SecurityContext(
            store: BondStore(directory: bondsDirectory, peripheralLimit: maximumBonds, warning: warning), allowRepair: false,
            warning: warning)
        context.delegate = delegate
        self.init(context: context, localAddress: localAddress, options: options, adjustBond: adjustBond)
    }

    /// Sets whether pairings that both sides asked to bond are stored.
    package func setBondable(_ bondable: Bool) {
        self.bondable.withLock { $0 = bondable }
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
                await self?.longTermKey(
                    handle: connection.handle,
                    peer: PeerAddress(address: connection.peerAddress, type: connection.peerAddressType.addressType ?? .public),
                    rand: rand, ediv: ediv)
            }
        }
        let (changes, changesContinuation) = AsyncStream.makeStream(of: (status: UInt8, enabled: Bool).self)
        let options = options
        let ours = host.info.address
        let box = Mutex<CentralSecurity?>(nil)
        let context = context
        let manager = PeripheralSecurityManager(
            incoming: pdus, send: { pdu in try host.sendSecurityManagerPDU(pdu, on: connection) },
            encryptionChanges: changes,
            addresses: PairingInitiator.Addresses(
                initiator: connection.peerAddress, initiatorType: connection.peerAddressType.addressType ?? .public,
                responder: ours, responderType: .public),
            identity: IdentityAddressInformation(addressType: .public, address: ours),
            options: { [bondable] in
                // Not bondable: the Pairing Response says so, and the central keeps no keys either.
                guard var given = options.withLock({ $0 }) else { return nil }
                given.bonding = given.bonding && bondable.withLock { $0 }
                return given
            }, agent: context.agent(for: peer),
            attempt: { [throttle] in
                let now = context.clock.now
                let (wait, say, refused) = throttle.withLock { state -> (Duration?, Bool, Int) in
                    guard let wait = state.state.attempt(SecurityContext.key(peer), now: now) else { return (nil, false, 0) }
                    defer { state.warned = true }
                    return (wait, !state.warned, state.state.refused)
                }
                guard let wait else { return nil }
                // Said once per wait (a central may ask back to back), with the running count.
                if say {
                    context.warning(
                        "warning: pairing request from \(peer) refused (Repeated Attempts): pairings failed recently, "
                            + "the next may start in \(Self.seconds(wait)) s; \(refused) refused so far")
                }
                return wait
            },
            completed: { [weak self] result in
                guard let security = box.withLock({ $0 }) else { return }
                await self?.pairingEnded(result, security: security, peer: peer, central: central)
            })
        let security = CentralSecurity(manager: manager, handle: connection.handle)
        box.withLock { $0 = security }
        securities.withLock { $0[connection.handle] = security }
        await manager.start()
        let securities = securities
        Task {
            for await outcome in connection.encryptionChanges {
                let enabled = outcome.status == .success && outcome.enabled
                let level = security.pendingLevel.withLock { $0 }
                // A pairing's key: nothing is granted until the pairing completes. Marked before
                // the Security Manager hears of the encryption (and distributes keys), so the
                // pairing's end, which clears it, always comes after.
                if enabled, level == nil, security.pairingKeyTaken.withLock({ $0 }), await manager.pairingInProgress {
                    security.beginSettling()
                }
                changesContinuation.yield((outcome.status.rawValue, outcome.enabled))
                // A bond's key: the level that bond proves.
                if enabled, let level { await security.enter(level) }
            }
            changesContinuation.finish()
            security.settle()
            securities.withLock { _ = $0.removeValue(forKey: connection.handle) }
        }
        return security
    }

    /// Waits while the pairing that encrypted `client`'s link completes (its level is granted
    /// then); false at once when none does. For ``GATTServerHost/setSecuritySettling(_:)``.
    package func waitForPairing(of client: GATTServer.ClientID) async -> Bool {
        guard let security = securities.withLock({ table in table.values.first { $0.client.withLock { $0 } == client } })
        else { return false }
        return await security.waitUntilSettled()
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
    ///
    /// The bond is found by the central's address and type, else — a central that rotates its
    /// resolvable private address — by the identity a bonded IRK resolves it to (Vol 6 Part B
    /// §1.3.2.3). A pairing's key grants no level by itself: the completed pairing does.
    func longTermKey(handle: UInt16, peer: PeerAddress, rand: UInt64, ediv: UInt16) async -> [UInt8]? {
        guard let security = securities.withLock({ $0[handle] }) else { return nil }
        if let key = await security.manager.pairingKey(rand: rand, ediv: ediv) {
            security.pendingLevel.withLock { $0 = nil }
            security.pairingKeyTaken.withLock { $0 = true }
            return key
        }
        security.pairingKeyTaken.withLock { $0 = false }
        guard let bond = bond(of: peer) else { return nil }
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

    /// The bond of the central at `peer`: by its address, else by the identity a bonded IRK
    /// resolves its private address to.
    func bond(of peer: PeerAddress) -> Bond? {
        let local = localAddress.address
        // A resolvable private address is resolved first (Vol 6 Part B §1.3.2.3): never looked up
        // as itself, which another central could have bonded from.
        guard AddressResolver.isResolvable(peer) else { return context.store.bond(local: local, peer: peer) }
        guard let identity = AddressResolver(bonds: context.store.bonds(local: local)).identity(of: peer) else { return nil }
        return context.store.bond(local: local, peer: identity)
    }

    /// A pairing with a central ended: on success the bond checked (an identity that is
    /// another device's ends the link), stored when bondable, and the server told the level
    /// the pairing proves; on failure after encryption, the link ends.
    func pairingEnded(
        _ result: Result<PairingResult, PairingFailure>, security: CentralSecurity, peer: PeerAddress, central: AcceptedCentral
    ) async {
        defer { security.settle() }
        switch result {
        case .success(let pairing):
            let bond = adjustBond(context.bond(from: pairing, local: localAddress, peer: peer, pairedAs: "peripheral"))
            let store = pairing.bonded && bondable.withLock { $0 }
            var stored = store
            do {
                if store { try context.store.save(bond) } else { try context.store.admit(bond) }
            } catch let refusal {
                stored = false
                switch refusal {
                case .full, .file:
                    // The pairing itself is sound: the link keeps its level, unbonded.
                    context.warning("warning: paired with \(peer), but the bond was not stored: \(refusal)")
                default:
                    pairingFailed(peer)
                    context.warning("warning: pairing with \(peer) refused: \(refusal); the link ends")
                    await end(central)
                    return
                }
            }
            let now = context.clock.now
            throttle.withLock { $0.state.ended(SecurityContext.key(peer), succeeded: true, now: now) }
            security.pendingLevel.withLock { $0 = bond.securityLevel }
            await security.enter(bond.securityLevel)
            await context.delegate?.pairingCompleted(with: peer, method: pairing.method, bond: bond, stored: stored)
        case .failure(let failure):
            pairingFailed(peer)
            let encrypted = security.pairingKeyTaken.withLock { $0 }
            context.warning(
                "warning: pairing with \(peer) failed: \(failure)" + (encrypted ? "; the link, encrypted with its key, ends" : ""))
            if encrypted { await end(central) }
        }
    }

    /// A pairing with `peer` failed: the next attempts wait (§2.3.6).
    private func pairingFailed(_ peer: PeerAddress) {
        let now = context.clock.now
        throttle.withLock {
            $0.state.ended(SecurityContext.key(peer), succeeded: false, now: now)
            $0.warned = false
        }
    }

    /// Ends a central's link for its security (Authentication Failure).
    private func end(_ central: AcceptedCentral) async {
        guard let connection = central.connection, let host = central.host else {
            await central.link.disconnect(reason: .authenticationFailure)
            return
        }
        _ = try? await host.disconnect(connection, reason: .authenticationFailure)
    }

    static func seconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) + (duration.components.attoseconds > 0 ? 1 : 0)
    }
}

extension LocalPeripheral {
    /// Pairs when a central asks, with `options` (nil: refuse with Pairing Not Supported); the
    /// adapter's delegate answers the user's part and, once ``setBondable(_:)`` allows it, bonds
    /// go to its store (`pairedAs: peripheral`). By default we pair as NoInputNoOutput (Just
    /// Works). A pairing that fails after encrypting the link ends it; the level a pairing's key
    /// gives is granted when the pairing completes; failures make the next attempts wait
    /// (Pairing Failed, Repeated Attempts, §2.3.6).
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

    /// Whether a pairing a central asks to bond leaves a bond (off by default: bonding as a
    /// peripheral is opt-in, since any central in range may ask). When off, our Pairing Response
    /// does not ask to bond and nothing is stored. The adapter's bond store keeps at most its
    /// maximum of bonds made as peripheral; a new one beyond is refused and said.
    public func setBondable(_ bondable: Bool) {
        pairing?.setBondable(bondable)
    }
}
