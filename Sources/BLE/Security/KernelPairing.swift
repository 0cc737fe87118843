import Bluetooth
import GATT
import Kernel
import Security
import SystemSupport
import Synchronization

// Pairing on the kernel path (`hciN`) without bluetoothd: the kernel runs SMP; we do what
// bluetoothd's agent and key store would, through the management channel (BlueZ
// doc/mgmt-api.txt): answer its pairing requests, keep the keys it reports in the bond store,
// and give them back to it when the tool starts.

/// Whether bluetoothd runs on this machine (a process named `bluetoothd` under `proc`). Where it
/// does, it owns the adapters' pairing agent and keys: we leave both alone.
package func bluetoothDaemonRuns(proc: String = "/proc") -> Bool {
    guard let entries = try? FileSystem.contentsOfDirectory(atPath: proc) else { return false }
    for entry in entries where entry.first?.isNumber == true {
        guard let bytes = try? FileSystem.readFile(atPath: proc + "/" + entry + "/comm") else { continue }
        if String(decoding: bytes, as: UTF8.self).trimmingNewline == "bluetoothd" { return true }
    }
    return false
}

extension String {
    fileprivate var trimmingNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}

/// Collects the keys the kernel reports for one pairing into a ``Bond`` (sans I/O). The kernel
/// sends the peer's IRK first, then the CSRKs, then the LTK(s) (one under Secure Connections,
/// two under legacy pairing), each naming the peer by its identity address once the IRK came.
/// A key of a kind already collected for that peer starts a new pairing.
package struct KernelKeyCollector: Sendable {
    package let local: PeerAddress
    package private(set) var pending: [BluetoothAddress: Partial] = [:]

    package struct Partial: Sendable, Hashable {
        var identity: ManagementAddress
        var linkAddress: BluetoothAddress?
        var irk: [UInt8]?
        var peerCSRK: [UInt8]?
        var localCSRK: [UInt8]?
        var peerLTK: ManagementLongTermKey?
        var localLTK: ManagementLongTermKey?
        /// Whether every key so far came with Store_Hint set (the kernel's "keep it").
        var persistent = true
    }

    package init(local: PeerAddress) { self.local = local }

    /// Takes one event; returns the bond as it stands after a Long Term Key (nil for other
    /// events, debug keys and non-LE addresses). `persistent` says whether to store it.
    package mutating func receive(_ event: ManagementSecurityEvent, created: String = Bond.now()) -> (bond: Bond, persistent: Bool)? {
        switch event {
        case .newIdentityResolvingKey(let hint, let random, let key):
            guard key.peer.leType != nil else { return nil }
            update(key.peer, hint: hint, starts: { $0.irk != nil }) { partial in
                partial.irk = key.value
                if random != .zero { partial.linkAddress = random }
            }
            return nil
        case .newSignatureResolvingKey(let hint, let peer, let type, let value):
            guard peer.leType != nil else { return nil }
            let local = type == 0x00 || type == 0x02
            update(peer, hint: hint, starts: { local ? $0.localCSRK != nil : $0.peerCSRK != nil }) { partial in
                if local { partial.localCSRK = value } else { partial.peerCSRK = value }
            }
            return nil
        case .newLongTermKey(let hint, let key):
            guard key.peer.leType != nil, key.keyType != .debugP256 else { return nil }
            // Secure Connections: one key for both roles. Legacy: ours (central 0) and theirs (1).
            let theirs = key.keyType.isSecureConnections || key.central
            update(key.peer, hint: hint, starts: { theirs ? $0.peerLTK != nil : $0.localLTK != nil }) { partial in
                if theirs { partial.peerLTK = key } else { partial.localLTK = key }
            }
            guard let partial = pending[key.peer.address], let bond = bond(from: partial, created: created) else { return nil }
            return (bond, partial.persistent)
        default:
            return nil
        }
    }

    private mutating func update(
        _ peer: ManagementAddress, hint: Bool, starts: (Partial) -> Bool, _ change: (inout Partial) -> Void
    ) {
        var partial = pending[peer.address] ?? Partial(identity: peer)
        if starts(partial) { partial = Partial(identity: peer) }
        partial.identity = peer
        if !hint { partial.persistent = false }
        change(&partial)
        pending[peer.address] = partial
    }

    /// The bond collected for `address` (identity or link address), if it has a key.
    package func bond(for address: BluetoothAddress, created: String = Bond.now()) -> Bond? {
        let partial = pending[address] ?? pending.values.first { $0.linkAddress == address }
        return partial.flatMap { bond(from: $0, created: created) }
    }

    private func bond(from partial: Partial, created: String) -> Bond? {
        guard let identityType = partial.identity.leType, let key = partial.peerLTK ?? partial.localLTK else { return nil }
        func ltk(_ key: ManagementLongTermKey?) -> LongTermKey? {
            key.map { LongTermKey(key: $0.value, ediv: $0.ediv, rand: $0.rand) }
        }
        return Bond(
            local: local.address, localType: local.type,
            peer: partial.linkAddress ?? partial.identity.address, peerType: partial.linkAddress == nil ? identityType : .random,
            identity: partial.identity.address, identityType: identityType,
            peerLTK: ltk(partial.peerLTK), localLTK: ltk(partial.localLTK), keySize: Int(key.encryptionSize),
            authenticated: key.keyType.isAuthenticated, secureConnections: key.keyType.isSecureConnections,
            peerIRK: partial.irk, peerCSRK: partial.peerCSRK, localIRK: nil, localCSRK: partial.localCSRK,
            pairedAs: "central", created: created)
    }
}

/// The keys of `bonds` as Load Long Term Keys and Load Identity Resolving Keys take them, and the
/// bonds the kernel cannot take (an identity that is a private address: it accepts public and
/// static random identities only).
package func kernelKeys(
    of bonds: [Bond]
) -> (longTermKeys: [ManagementLongTermKey], identityResolvingKeys: [ManagementIdentityResolvingKey], skipped: [Bond]) {
    var ltks: [ManagementLongTermKey] = []
    var irks: [ManagementIdentityResolvingKey] = []
    var skipped: [Bond] = []
    for bond in bonds {
        if bond.identityType == .random, bond.identity.randomAddressKind != .staticAddress {
            skipped.append(bond)
            continue
        }
        let peer = ManagementAddress(le: bond.identity, type: bond.identityType)
        let type = ManagementLongTermKey.KeyType(authenticated: bond.authenticated, secureConnections: bond.secureConnections)
        func add(_ key: LongTermKey?, central: Bool) {
            guard let key, key.key.count == 16 else { return }
            ltks.append(
                ManagementLongTermKey(
                    peer: peer, keyType: type, central: central, encryptionSize: UInt8(clamping: bond.keySize),
                    ediv: key.ediv, rand: key.rand, value: key.key))
        }
        add(bond.peerLTK, central: true)
        if !bond.secureConnections { add(bond.localLTK, central: false) }
        if let irk = bond.peerIRK, irk.count == 16 { irks.append(ManagementIdentityResolvingKey(peer: peer, value: irk)) }
    }
    return (ltks, irks, skipped)
}

/// The pairing agent and key keeper of one kernel adapter, on the management channel: answers
/// the kernel's User Confirmation, User Passkey and Passkey Notify events through the adapter's
/// ``PairingDelegate``, stores the keys of New Long Term Key, New IRK and New CSRK events (Store
/// Hint set) in the bond store, loads the store into the kernel when it starts, pairs (Pair
/// Device) and unpairs (Unpair Device).
actor KernelPairingAgent {
    let index: UInt16
    let local: PeerAddress
    private let channel: ManagementChannel
    private let context: SecurityContext
    private var collector: KernelKeyCollector
    private var listener: Task<Void, Never>?
    /// Called with the status when a pairing with the peer (link or identity address) fails.
    private var failureWatchers: [BluetoothAddress: [@Sendable (ManagementStatus) -> Void]] = [:]
    /// Peers a pairing is under way with (the kernel pairs as the link's security is raised):
    /// their keys are still to come, and ``close()`` waits for them (bounded).
    private var expected: Set<BluetoothAddress> = []
    /// Peers the user asked this agent to pair (Pair Device): a bonded one may pair again.
    private var requested: Set<BluetoothAddress> = []
    /// Peers whose new keys were refused (and removed from the kernel).
    private var refused: Set<BluetoothAddress> = []
    private var expectedWaiters: [CheckedContinuation<Void, Never>] = []

    init(index: UInt16, local: PeerAddress, channel: ManagementChannel, context: SecurityContext) {
        self.index = index
        self.local = local
        self.channel = channel
        self.context = context
        collector = KernelKeyCollector(local: local)
    }

    /// Opens the management channel for adapter `index`, makes it bondable, sets the IO
    /// capability and loads the bonds of `local` from the store (Load Identity Resolving Keys,
    /// then Load Long Term Keys: each replaces the kernel's whole list).
    /// - Throws: `KernelBluetoothError` (no CAP_NET_ADMIN: Permission Denied).
    static func start(
        index: UInt16, local: PeerAddress, context: SecurityContext, capability: IOCapability
    ) async throws(KernelBluetoothError) -> KernelPairingAgent {
        let channel = try ManagementChannel.open()
        let agent = KernelPairingAgent(index: index, local: local, channel: channel, context: context)
        do {
            try await agent.configure(capability: capability)
        } catch {
            await channel.close()
            throw error
        }
        await agent.listen()
        return agent
    }

    /// What bluetoothd's defaults do: bondable, LE Secure Connections on where the controller
    /// allows it (without, the kernel pairs with LE legacy pairing only), our IO capability.
    private func configure(capability: IOCapability) async throws(KernelBluetoothError) {
        let information = try await channel.request(ReadControllerInformationCommand(), index: index)
        if !information.currentSettings.contains(.bondable) {
            _ = try await channel.request(SetBondableCommand(bondable: true), index: index)
        }
        if information.supportedSettings.contains(.secureConnections), !information.currentSettings.contains(.secureConnections) {
            _ = try await channel.request(SetSecureConnectionsCommand(mode: 1), index: index)
        }
        _ = try await channel.request(SetIOCapabilityCommand(capability: capability.rawValue), index: index)
        try await loadKeys()
    }

    /// Gives the kernel the store's keys for this adapter (replacing its lists). Bonds whose
    /// identity is a private address are left out with a warning.
    func loadKeys() async throws(KernelBluetoothError) {
        let keys = kernelKeys(of: context.store.bonds(local: local.address))
        for bond in keys.skipped {
            context.warning(
                "warning: the bond with \(bond.identity) is not loaded into the kernel: its identity is a private address")
        }
        _ = try await channel.request(LoadIdentityResolvingKeysCommand(keys: keys.identityResolvingKeys), index: index)
        _ = try await channel.request(LoadLongTermKeysCommand(keys: keys.longTermKeys), index: index)
    }

    private func listen() {
        let events = channel.events
        listener = Task { [weak self] in
            for await packet in events {
                guard let self else { return }
                await self.handle(packet)
            }
        }
    }

    private func handle(_ packet: ManagementEventPacket) async {
        guard packet.index == index, let event = try? ManagementSecurityEvent(packet) else { return }
        switch event {
        case .newLongTermKey, .newIdentityResolvingKey, .newSignatureResolvingKey:
            guard let (bond, persistent) = collector.receive(event) else { return }
            // A pairing we asked for (pair, --security) may replace the bond of the device we
            // asked about, and no other (BondStore: never another device's identity).
            // Asked for by the identity it distributed (a private link address asked for could
            // distribute anyone's).
            let asked = expected.contains(bond.identity) || requested.contains(bond.identity)
            keysArrived(for: [bond.identity, bond.peer])
            // Refused keys must not stay in the kernel either: it holds them already, ahead of the
            // bond it was loaded with (an identity another device's bond has, a short key).
            var refusal: String?
            if bond.keySize < context.minimumKeySize {
                refusal = "a \(bond.keySize)-octet key, below the minimum \(context.minimumKeySize) (--min-key-size)"
            } else {
                do {
                    if persistent {
                        try context.store.save(bond, replacing: asked ? bond.peerIdentity : nil)
                    } else {
                        try context.store.admit(bond, replacing: asked ? bond.peerIdentity : nil)
                    }
                } catch {
                    if case .file = error {
                        context.warning("warning: the kernel paired with \(bond.identity), but the bond could not be stored: \(error)")
                    } else {
                        refusal = "\(error)"
                    }
                }
            }
            if let refusal {
                refused.insert(bond.peer)
                context.warning("warning: the kernel paired with \(bond.peer): refused, \(refusal); its keys are removed and the link ends")
                await forget(PeerAddress(address: bond.peer, type: bond.peerType))
            }
        case .userConfirmationRequest(let peer, let justWorks, let value):
            // Just Works only asks to authorise: the user asked for this pairing.
            let accepted: Bool
            let who = Self.peerAddress(peer)
            if justWorks, !expected.contains(peer.address), !requested.contains(peer.address), !context.allowRepair,
                context.store.bond(local: collector.local.address, peer: who) != nil
            {
                // A device we are bonded with asks to pair again, unasked: as bluetoothd does by
                // default, refused (a device spoofing its address would otherwise get a new bond
                // for the price of saying it lost the old one).
                context.warning(
                    "warning: \(who) is bonded and asked to pair again: refused (`gattclient pair --force "
                        + "\(who.address)` or --repair to allow it)")
                accepted = false
            } else if justWorks {
                accepted = true
            } else if let delegate = context.delegate {
                let confirmed = await delegate.confirm(value, for: who)
                // The kernel keeps a compared number as authenticated whatever we say later: a
                // comparison nobody looked at (`--confirm`) is refused here rather than stored
                // as MITM-protected.
                if confirmed, !delegate.comparisonWasSeen(for: who) {
                    context.warning(
                        "warning: on the kernel path a numeric comparison accepted unseen (--confirm) would be kept as "
                            + "authenticated: refused; compare the numbers on a terminal, or pair on the user-space host")
                    accepted = false
                } else {
                    accepted = confirmed
                }
            } else {
                accepted = false
            }
            if accepted {
                try? await channel.send(UserConfirmationReplyCommand(peer: peer), index: index)
            } else {
                try? await channel.send(UserConfirmationNegativeReplyCommand(peer: peer), index: index)
            }
        case .userPasskeyRequest(let peer):
            if let delegate = context.delegate, let passkey = try? await delegate.enterPasskey(for: Self.peerAddress(peer)),
                passkey <= 999_999
            {
                try? await channel.send(UserPasskeyReplyCommand(peer: peer, passkey: passkey), index: index)
            } else {
                try? await channel.send(UserPasskeyNegativeReplyCommand(peer: peer), index: index)
            }
        case .passkeyNotify(let peer, let passkey, let entered):
            // Entered counts keypresses on the peer: show the passkey once, at the start.
            if entered == 0 { await context.delegate?.displayPasskey(passkey, for: Self.peerAddress(peer)) }
        case .authenticationFailed(let peer, let status):
            keysArrived(for: [peer.address])
            for watcher in failureWatchers[peer.address] ?? [] { watcher(status) }
        }
    }

    /// A pairing with `peer` is under way: its keys are to come. The kernel resumes the ATT
    /// socket at the Encryption Change, before key distribution ends, so a short command may end
    /// before the keys are reported: ``close()`` waits for them.
    func expectKeys(from peer: BluetoothAddress) {
        expected.insert(peer)
    }

    private func keysArrived(for peers: [BluetoothAddress]) {
        for peer in peers { expected.remove(peer) }
        guard expected.isEmpty else { return }
        let waiters = expectedWaiters
        expectedWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// Waits, at most `timeout`, until the keys of every pairing under way were reported.
    private func awaitExpectedKeys(timeout: Duration) async {
        guard !expected.isEmpty else { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.giveUpOnExpectedKeys()
        }
        await withCheckedContinuation { expectedWaiters.append($0) }
        timer.cancel()
    }

    private func giveUpOnExpectedKeys() {
        if !expected.isEmpty {
            context.warning("warning: the kernel reported no keys for \(expected.map(\.description).sorted().joined(separator: ", ")) in time: not bonded")
        }
        expected.removeAll()
        keysArrived(for: [])
    }

    static func peerAddress(_ address: ManagementAddress) -> PeerAddress {
        PeerAddress(address: address.address, type: address.leType ?? .public)
    }

    /// Runs `watcher` when a pairing with `peer` fails; the returned token ends the watch.
    func watchFailures(of peer: BluetoothAddress, _ watcher: @escaping @Sendable (ManagementStatus) -> Void) {
        failureWatchers[peer, default: []].append(watcher)
    }

    func stopWatchingFailures(of peer: BluetoothAddress) {
        failureWatchers[peer] = nil
    }

    /// Pairs with `peer` through the kernel (Pair Device): it connects when needed, runs SMP with
    /// `capability`, answers us through the events above, and bonds unless `bonding` is false
    /// (Set Bondable off for this pairing). A peer the kernel holds keys for already is unpaired
    /// in the kernel first (the store's bond is the caller's business).
    /// - Returns: the keys the pairing left (stored already when bonded).
    func pair(
        _ peer: PeerAddress, capability: IOCapability, bonding: Bool, timeout: Duration
    ) async throws(KernelBluetoothError) -> Bond {
        let address = ManagementAddress(le: peer.address, type: peer.type)
        requested.insert(peer.address)
        refused.remove(peer.address)
        defer { requested.remove(peer.address) }
        if !bonding { _ = try await channel.request(SetBondableCommand(bondable: false), index: index) }
        let command = PairDeviceCommand(peer: address, capability: capability.rawValue)
        var failure: KernelBluetoothError?
        do throws(KernelBluetoothError) {
            do throws(KernelBluetoothError) {
                _ = try await channel.request(command, index: index, timeout: timeout)
            } catch {
                guard case .managementFailed(_, _, .alreadyPaired) = error else { throw error }
                _ = try await channel.request(UnpairDeviceCommand(peer: address, disconnect: false), index: index)
                _ = try await channel.request(command, index: index, timeout: timeout)
            }
        } catch {
            failure = error
        }
        // Bondable again for the next pairing, whatever this one gave.
        if !bonding { _ = try? await channel.request(SetBondableCommand(bondable: true), index: index) }
        if let failure { throw failure }
        if refused.contains(peer.address) {
            throw .managementFailed(opcode: .pairDevice, index: index, status: .authenticationFailed)
        }
        guard let bond = collector.bond(for: peer.address) else {
            // Pair Device succeeds without SMP when the link is encrypted enough already.
            throw .managementFailed(opcode: .pairDevice, index: index, status: .alreadyPaired)
        }
        return bond
    }

    /// Removes the keys the kernel just made for `peer` and ends its link, then loads the store's
    /// keys again (Unpair Device drops the kernel's copy of a bond with the same identity too).
    private func forget(_ peer: PeerAddress) async {
        _ = try? await unpair(peer, disconnect: true)
        do {
            try await loadKeys()
        } catch {
            context.warning("warning: reloading the bonds into the kernel: \(error)")
        }
    }

    /// Whether keys the kernel made for `peer` were refused since it was last asked to pair.
    func wasRefused(_ peer: BluetoothAddress) -> Bool { refused.contains(peer) }

    /// Makes the kernel forget `peer`'s keys (Unpair Device), ending its link when `disconnect`.
    /// - Returns: whether the kernel had keys for it (Not Paired is not an error).
    @discardableResult
    func unpair(_ peer: PeerAddress, disconnect: Bool) async throws(KernelBluetoothError) -> Bool {
        do {
            _ = try await channel.request(
                UnpairDeviceCommand(peer: ManagementAddress(le: peer.address, type: peer.type), disconnect: disconnect), index: index)
            return true
        } catch {
            if case .managementFailed(_, _, .notPaired) = error { return false }
            throw error
        }
    }

    func close() async {
        await awaitExpectedKeys(timeout: .seconds(5))
        listener?.cancel()
        await channel.close()
    }
}

/// The kernel path's pairing for one adapter: whether bluetoothd owns it, and our agent, started
/// once (at the first connection, pairing or unpairing) where it does not.
final class KernelSecurity: Sendable {
    let index: UInt16
    /// bluetoothd runs: its agent answers the kernel's pairing requests and it keeps the keys.
    let bluetoothd: Bool
    private let started = Mutex<Task<Result<KernelPairingAgent, KernelBluetoothError>?, Never>?>(nil)
    /// The lock that makes this process the adapter's one agent, while it is.
    private let lock = Locked<Int32?>(nil)

    init(index: UInt16, bluetoothd: Bool = bluetoothDaemonRuns()) {
        self.index = index
        self.bluetoothd = bluetoothd
    }

    /// The agent, started on the first call (with the IO capability user-space pairing offers by
    /// default); nil where bluetoothd manages pairing, or where another gattclient process is
    /// the adapter's agent already: one agent per adapter, held by a lock file
    /// (`/run/lock/gattclient-agent-hciN-ADDRESS.lock`, else `<bonds>/<local address>/.agent-hciN.lock`
    /// where the system has no `/run/lock`), so two processes never replace
    /// each other's kernel keys or answer each other's pairings. The second uses the keys the
    /// first loaded (said once).
    func agent(local: PeerAddress, context: SecurityContext) async -> Result<KernelPairingAgent, KernelBluetoothError>? {
        guard !bluetoothd else { return nil }
        let index = self.index
        let lock = self.lock
        let task = started.withLock { task in
            if let task { return task }
            let new = Task { () -> Result<KernelPairingAgent, KernelBluetoothError>? in
                // System-wide where the system has a lock directory (two processes with different
                // bond directories still share one adapter), else beside the bonds.
                let system = FileSystem.isDirectory(atPath: "/run/lock")
                let folder = system ? "/run/lock" : context.store.directory + "/" + local.address.description
                let path = folder + (system ? "/gattclient-agent-hci\(index)-\(local.address.description).lock" : "/.agent-hci\(index).lock")
                do {
                    if !system { try FileSystem.createDirectory(atPath: folder, mode: 0o700) }
                    guard let descriptor = try FileSystem.tryExclusiveLock(atPath: path) else {
                        context.warning(
                            "warning: another gattclient is the pairing agent of hci\(index) (\(path)): this one answers no "
                                + "pairing and loads no keys; the kernel uses the keys that one loaded")
                        return nil
                    }
                    lock.withLock { $0 = descriptor }
                } catch {
                    context.warning("warning: the pairing agent's lock \(path): \(error); going on without it")
                }
                do throws(KernelBluetoothError) {
                    return .success(
                        try await KernelPairingAgent.start(
                            index: index, local: local, context: context, capability: PairingOptions().ioCapability))
                } catch {
                    return .failure(error)
                }
            }
            task = new
            return new
        }
        return await task.value
    }

    /// The message for a pairing bluetoothd's agent handles.
    var bluetoothdHandles: String {
        "bluetoothd runs: its agent handles pairing on hci\(index) (bluetoothctl pair ADDRESS) and it keeps the keys"
    }

    func close() async {
        if let task = started.withLock({ $0 }), case .success(let agent)? = await task.value { await agent.close() }
        if let descriptor = lock.withLock({ $0 }) {
            lock.withLock { $0 = nil }
            FileSystem.releaseLock(descriptor)
        }
    }
}
