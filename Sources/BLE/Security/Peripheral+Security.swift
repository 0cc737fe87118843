import ATT
import GATT
import Kernel
import Security
import Synchronization

extension Peripheral {
    /// Pairs with the peer as initiator (LE Secure Connections when both support it, else LE
    /// legacy), encrypts the link with the new key and, when both asked to bond, stores the bond.
    /// On the kernel path (`hciN`) the kernel pairs (Pair Device), the adapter's agent answering
    /// it on the management channel; where bluetoothd runs, its agent does and this refuses.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3, §2.4
    ///
    /// The new bond never replaces another device's: a peer that distributes the identity
    /// address of a device bonded already (or connects by it) fails the pairing, the link ends and
    /// the old bond stays as it was, unless `replacing` names that identity — an explicit repair
    /// of that device (`gattclient pair --force`) — and the new bond is at least as strong.
    /// - Parameter replacing: the bonded identity this pairing repairs: the peer must distribute
    ///   that identity (a different one fails the pairing and keeps that bond); nil: none.
    public func pair(_ options: PairingOptions = PairingOptions(), replacing: PeerAddress? = nil) async throws(BLEError) -> Bond {
        try await pair(options, replacing: replacing, required: .encrypted)
    }

    /// ``pair(_:replacing:)`` that fails, before anything is stored, when the keys give less
    /// than `required`.
    func pair(_ options: PairingOptions, replacing: PeerAddress?, required: SecurityLevel) async throws(BLEError) -> Bond {
        if session.link.kernelSecurity != nil { return try await pairThroughKernel(options) }
        let manager = try securityManager()
        // Repeated attempts (§2.3.6): after a failure, a growing wait before the next try.
        if let wait = securityContext.waitBeforePairing(with: peer) {
            let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
            throw BLEError(
                "pairing with \(peer) failed recently: wait \(Int(seconds.rounded(.up))) s before trying again "
                    + "(repeated attempts, Vol 3 Part H §2.3.6)", kind: "pairing")
        }
        let result: PairingResult
        do {
            result = try await manager.pair(options, agent: securityContext.agent(for: peer))
        } catch {
            securityContext.pairingEnded(with: peer, succeeded: false)
            throw BLEError("pairing with \(peer) failed: \(error)", kind: "pairing")
        }
        let bond = securityContext.bond(from: result, local: localAddress, peer: peer, pairedAs: "central")
        // Before the link counts as secure: whose keys these are (an identity that is another
        // device's, or not the one being repaired, an invalid identity or IRK, a level below
        // what was asked refuse the pairing, whether or not it bonds).
        var refusal: String?
        if let replacing, bond.peerIdentity != replacing {
            refusal = "repairing \(replacing), the peer distributed the identity \(bond.peerIdentity) (\(bond.identityType.jsonName)): "
                + "the bond with \(replacing) is kept (`gattclient unpair \(replacing.address)` first if this device's identity changed)"
        } else if bond.securityLevel < required {
            refusal = "the pairing gave \(bond.securityLevel), not \(required) as asked; nothing is stored"
        } else {
            do {
                try securityContext.store.admit(bond, replacing: replacing)
            } catch {
                refusal = "\(error)"
            }
        }
        if let refusal {
            securityContext.pairingEnded(with: peer, succeeded: false)
            // The link is encrypted with keys we refuse: it ends, at the level it had.
            await disconnect()
            throw BLEError("pairing with \(peer) refused: \(refusal)", kind: "pairing")
        }
        securityContext.pairingEnded(with: peer, succeeded: true)
        await raiseSecurityLevel(to: bond.securityLevel)
        let stored = options.bonding && result.bonded
        if stored {
            do {
                try securityContext.store.save(bond, replacing: replacing)
            } catch {
                throw BLEError("paired with \(peer), but the bond could not be stored: \(error)", kind: "bonds")
            }
        }
        await securityContext.delegate?.pairingCompleted(with: peer, method: result.method, bond: bond, stored: stored)
        return bond
    }

    /// Raises the link to `level`: encrypts with the stored bond when it gives that level, else
    /// pairs (MITM for `.authenticated`, Secure Connections and a 16-octet key for
    /// `.secureConnections`). A peer that lost the bond is reported; it is paired again only when
    /// the adapter allows it (`--repair`).
    package func ensureSecurity(_ level: SecurityLevel, options given: PairingOptions? = nil) async throws(BLEError) {
        // One securing at a time on a link (a Security Request and a read's Insufficient
        // Authentication often come together): a second caller waits for the first, then checks.
        while let running = securing {
            _ = await running.result
            if securing == running { securing = nil }
        }
        guard level > securityLevel else { return }
        let task = Task { () async throws -> Void in try await self.raiseSecurity(to: level, options: given) }
        securing = task
        defer { if securing == task { securing = nil } }
        do {
            try await task.value
        } catch let error as BLEError {
            throw error
        } catch {
            throw BLEError("raising the security of \(peer): \(error)", kind: "security")
        }
    }

    private func raiseSecurity(to level: SecurityLevel, options given: PairingOptions?) async throws(BLEError) {
        guard level > securityLevel else { return }
        if let kernel = session.link.kernelSecurity {
            try await raiseThroughKernel(to: level, kernel)
            return
        }
        let manager = try securityManager()
        var lostBond: Bond?
        var upgrading: PeerAddress?
        let stored = securityContext.store.bond(local: localAddress.address, peer: bondPeer)
        if let stored, stored.keySize < securityContext.minimumKeySize {
            throw BLEError(
                "the bond with \(stored.identity) has a \(stored.keySize)-octet key, below the minimum \(securityContext.minimumKeySize) "
                    + "(--min-key-size): not used; `gattclient pair \(stored.identity) --force` pairs again", kind: "security")
        }
        if let bond = stored, let key = bond.peerLTK, bond.securityLevel >= level || securityLevel < .encrypted {
            let outcome: (status: UInt8, enabled: Bool)
            do {
                outcome = try await manager.encrypt(with: key)
            } catch {
                // MIC Failure (0x3D) ends the link: the two keys differ, the peer lost the bond.
                // No pairing can follow on that link (--repair included): say how to pair anew.
                throw BLEError(
                    "\(peer) no longer has the bond (the link ended on encryption: \(error)); pair again with "
                        + "`gattclient pair \(bondPeer.address)\(bondPeer.type == .random ? "/random" : "") --force`", kind: "security")
            }
            if outcome.status == 0, outcome.enabled {
                encryptedWithBond = bond.peerIdentity
                await raiseSecurityLevel(to: bond.securityLevel)
                guard bond.securityLevel < level else { return }
                // Encrypted with a bond weaker than asked: the peer holds that bond's key, so
                // pairing again at the level asked may replace it.
                upgrading = bond.peerIdentity
            } else {
                // PIN or Key Missing (0x06): the peer has no key for us (Vol 1, Part F, §2.6).
                guard outcome.status == 0x06 else {
                    throw BLEError(
                        "encrypting the link to \(peer) with its bond failed (HCI status 0x\(String(outcome.status, radix: 16)))",
                        kind: "security")
                }
                let lost = "\(peer) no longer has the bond (PIN or Key Missing)"
                guard securityContext.allowRepair else {
                    throw BLEError(lost + "; pair again with `gattclient pair \(peer.address) --force` or --repair", kind: "security")
                }
                securityContext.warning("warning: " + lost + "; pairing again (--repair)")
                lostBond = bond
            }
        } else if let proven = encryptedWithBond, proven == bondPeer {
            // Encrypted with this device's bond earlier on this link: an upgrade may replace it.
            upgrading = proven
        }
        var options = given ?? PairingOptions()
        if given == nil { options.minimumKeySize = securityContext.minimumKeySize }
        // A replacement is at least as strong as the bond it replaces (a device spoofing the
        // address only has to say PIN or Key Missing to get a new bond otherwise).
        let required = max(level, lostBond?.securityLevel ?? .none)
        if required >= .authenticated { options.requireMITM = true }
        if required == .secureConnections || lostBond?.secureConnections == true { options.secureConnectionsOnly = true }
        if required == .secureConnections { options.minimumKeySize = 16 }
        if let lostBond { options.minimumKeySize = max(options.minimumKeySize, lostBond.keySize) }
        // A repair replaces the lost bond of this same identity; an upgrade replaces the weaker
        // bond the link was encrypted with (the peer proved it holds that key).
        _ = try await pair(options, replacing: lostBond?.peerIdentity ?? upgrading, required: required)
    }

    // MARK: - The kernel path

    /// The kernel's pairing agent of this adapter; nil where bluetoothd runs (its agent answers).
    private func kernelAgent(doing what: String) async throws(BLEError) -> KernelPairingAgent? {
        guard let kernel = securityContext.kernel else { return nil }
        switch await kernel.agent(local: localAddress, context: securityContext) {
        case nil: return nil
        case .success(let agent)?: return agent
        case .failure(let error)?:
            throw BLEError.kernel(error, doing: "\(what): the pairing agent on the management channel", kind: "security")
        }
    }

    /// `pair` on `hciN`: the kernel pairs (Pair Device) and our agent answers it and keeps the keys.
    private func pairThroughKernel(_ options: PairingOptions) async throws(BLEError) -> Bond {
        if let kernel = securityContext.kernel, kernel.bluetoothd {
            throw BLEError("pairing with \(peer): \(kernel.bluetoothdHandles)", kind: "usage", exitCode: .unavailable)
        }
        // The kernel chooses Secure Connections whenever both support it.
        if options.legacyOnly || options.secureConnectionsOnly {
            throw BLEError(
                "on hci\(securityContext.kernel?.index ?? 0) the kernel chooses between Secure Connections and legacy pairing: "
                    + "drop \(options.legacyOnly ? "--legacy" : "Secure Connections only"), or pair on the user-space host (hci-user:N)",
                kind: "usage", exitCode: .usage)
        }
        if options.requireMITM, options.ioCapability == .noInputNoOutput {
            throw BLEError(
                "MITM protection needs an IO capability other than none on the kernel path", kind: "usage", exitCode: .usage)
        }
        guard let agent = try await kernelAgent(doing: "pairing with \(peer)") else {
            throw BLEError("pairing with \(peer): no pairing agent", kind: "security")
        }
        if let wait = securityContext.waitBeforePairing(with: peer) {
            throw BLEError(
                "pairing with \(peer) failed recently: wait \(wait.components.seconds + 1) s before trying again "
                    + "(repeated attempts, Vol 3 Part H §2.3.6)", kind: "pairing")
        }
        let bond: Bond
        do {
            bond = try await agent.pair(peer, capability: options.ioCapability, bonding: options.bonding, timeout: .seconds(90))
        } catch {
            securityContext.pairingEnded(with: peer, succeeded: false)
            if case .managementFailed(_, _, .alreadyPaired) = error {
                throw BLEError(
                    "pairing with \(peer): the link is encrypted already and the kernel paired no new keys; "
                        + "`gattclient unpair \(peer.address)` first", kind: "pairing")
            }
            throw BLEError.kernel(error, doing: "pairing with \(peer) failed", kind: "pairing")
        }
        securityContext.pairingEnded(with: peer, succeeded: true)
        await raiseSecurityLevel(to: bond.securityLevel)
        if bond.keySize < options.minimumKeySize || (options.requireMITM && !bond.authenticated) {
            throw BLEError(
                "pairing with \(peer) gave a \(bond.keySize)-octet \(bond.authenticated ? "authenticated" : "unauthenticated") key, "
                    + "less than asked", kind: "pairing")
        }
        return bond
    }

    /// Raises a kernel link to `level` through `BT_SECURITY`: the kernel encrypts with its key for
    /// the peer (loaded from the bond store) or pairs, our agent answering.
    private func raiseThroughKernel(to level: SecurityLevel, _ kernel: KernelLinkSecurity) async throws(BLEError) {
        let wanted: L2CAPSecurityLevel
        switch level {
        case .none: return
        case .encrypted: wanted = .medium
        case .authenticated: wanted = .high
        case .secureConnections: wanted = .fips
        }
        let agent = try await kernelAgent(doing: "raising the security of \(peer)")
        // Without a bond that gives the level, the kernel pairs: its keys are to be kept.
        if (securityContext.store.bond(local: localAddress.address, peer: bondPeer)?.securityLevel ?? .none) < level {
            await agent?.expectKeys(from: kernel.peer.address)
        }
        let failure = Mutex<ManagementStatus?>(nil)
        await agent?.watchFailures(of: kernel.peer.address) { status in
            failure.withLock { $0 = status }
            kernel.abandon(.closed(operation: .setSecurity(level: wanted.rawValue)))
        }
        let reached: L2CAPSecurityLevel
        do {
            reached = try await kernel.raise(wanted, .seconds(90))
            await agent?.stopWatchingFailures(of: kernel.peer.address)
        } catch {
            await agent?.stopWatchingFailures(of: kernel.peer.address)
            if let status = failure.withLock({ $0 }) {
                throw BLEError("pairing with \(peer) failed: \(status) (the kernel's SMP)", kind: "pairing")
            }
            throw BLEError.kernel(error, doing: "raising the security of \(peer) to \(level)", kind: "security")
        }
        let got: SecurityLevel
        switch reached {
        case .fips: got = .secureConnections
        case .high: got = .authenticated
        case .medium: got = .encrypted
        default: got = .none
        }
        await raiseSecurityLevel(to: got)
        guard got >= level else {
            throw BLEError("the kernel raised the link to \(peer) to \(got), not \(level)", kind: "security")
        }
    }

    /// The link's Security Manager, or why there is none.
    func securityManager() throws(BLEError) -> SecurityManager {
        guard let manager = session.link.securityManager else {
            throw BLEError(
                "pairing in user space needs the user-space host (tcp:, unix:, serial:, hci-user:, sim); "
                    + "on the kernel path the kernel pairs: use --security", kind: "usage", exitCode: .unavailable)
        }
        return manager
    }

    /// An ATT error that more security cures (Vol 3, Part G, §8.1), and the level to ask for.
    func levelCuring(_ error: BLEError) -> SecurityLevel? {
        guard session.link.securityManager != nil || session.link.kernelSecurity != nil, let code = error.attError else {
            return nil
        }
        switch code {
        case .insufficientEncryption: return max(.encrypted, securityLevel)
        case .insufficientAuthentication: return securityLevel >= .encrypted ? .authenticated : .encrypted
        case .encryptionKeySizeTooShort: return .secureConnections
        default: return nil
        }
    }

    /// ``withSecurityRetry(_:)`` for `gattclient`'s commands, which drive the GATT client
    /// directly: `body` runs; when the peer answers Insufficient Authentication, Encryption or
    /// Encryption Key Size, security is raised (bond first, else pairing) and `body` runs once
    /// more. Other errors come out as thrown.
    package nonisolated func securing<T: Sendable>(
        doing what: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        do {
            return try await body()
        } catch {
            guard let level = await levelCuring(BLEError.from(error, doing: what)), await level > securityLevel else {
                throw error
            }
            try await ensureSecurity(level)
            return try await body()
        }
    }

    /// Runs `body`; when the peer answers that the link is not secure enough, raises security
    /// (bond first, else pairing) and runs it once more.
    func withSecurityRetry<T: Sendable>(_ body: () async throws(BLEError) -> T) async throws(BLEError) -> T {
        do {
            return try await body()
        } catch {
            guard let level = levelCuring(error), level > securityLevel else { throw error }
            try await ensureSecurity(level)
            return try await body()
        }
    }
}
