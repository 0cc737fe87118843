import GATT
import HCI
import Host
import Security
import Synchronization

/// What one central's link needs for security: its server client (known once served), the
/// level its next encryption gives (bond or pairing), its Security Manager.
final class CentralSecurity: Sendable {
    let client = Mutex<GATTServer.ClientID?>(nil)
    let pendingLevel = Mutex<SecurityLevel?>(nil)
    let manager: PeripheralSecurityManager
    let handle: UInt16

    init(manager: PeripheralSecurityManager, handle: UInt16) {
        self.manager = manager
        self.handle = handle
    }
}

extension LocalPeripheral {
    /// Pairs when a central asks, with `options` (nil: refuse with Pairing Not Supported); the
    /// adapter's delegate answers the user's part and bonds go to its store (`pairedAs:
    /// peripheral`). By default we pair as NoInputNoOutput (Just Works).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3
    public func setPairing(_ options: PairingOptions?) {
        pairingOptions.withLock { $0 = options }
    }

    /// On the user-space host: our Security Manager on the central's SMP channel, the host's
    /// LE Long Term Key Request answered from the pairing in progress or the bond store, and the
    /// server told the link's level once it is encrypted.
    func attachSecurity(_ central: AcceptedCentral, peer: PeerAddress) async -> CentralSecurity? {
        guard let context = securityContext, let connection = central.connection, let host = central.host,
            let pdus = try? await host.securityManagerPDUs(connection)
        else { return nil }
        if !keyProviderSet {
            keyProviderSet = true
            await host.setLongTermKeyProvider { [weak self] connection, rand, ediv in
                await self?.longTermKey(handle: connection.handle, peer: connection.peerAddress, rand: rand, ediv: ediv)
            }
        }
        let (changes, changesContinuation) = AsyncStream.makeStream(of: (status: UInt8, enabled: Bool).self)
        let options = pairingOptions
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
        let server = server
        let securities = securities
        Task {
            for await outcome in connection.encryptionChanges {
                changesContinuation.yield((outcome.status.rawValue, outcome.enabled))
                guard outcome.status == .success, outcome.enabled,
                    let level = security.pendingLevel.withLock({ $0 }), let client = security.client.withLock({ $0 })
                else { continue }
                await server.setSecurity(level, for: client)
            }
            changesContinuation.finish()
            securities.withLock { _ = $0.removeValue(forKey: connection.handle) }
        }
        return security
    }

    /// The key a central encrypts with: the pairing in progress (EDIV and Rand zero), else the
    /// bond (Secure Connections: its LTK; legacy: the LTK we distributed, by EDIV and Rand).
    func longTermKey(handle: UInt16, peer address: BluetoothAddress, rand: UInt64, ediv: UInt16) async -> [UInt8]? {
        guard let security = securities.withLock({ $0[handle] }) else { return nil }
        if let key = await security.manager.pairingKey(rand: rand, ediv: ediv) { return key }
        guard let context = securityContext,
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
            let bond = Bond(result: pairing, local: localAddress, peer: peer, pairedAs: "peripheral")
            security.pendingLevel.withLock { $0 = bond.securityLevel }
            if let client = security.client.withLock({ $0 }) { await server.setSecurity(bond.securityLevel, for: client) }
            if pairing.bonded, let context = securityContext {
                do {
                    try context.store.save(bond)
                } catch {
                    context.warning("warning: paired with \(peer), but the bond could not be stored: \(error)")
                }
            }
        case .failure(let failure):
            securityContext?.warning("warning: pairing with \(peer) failed: \(failure)")
        }
    }
}
