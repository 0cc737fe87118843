import Bluetooth
import L2CAP

/// The peripheral's side of LE pairing (the central initiates), sans-I/O, the mirror of
/// ``PairingInitiator``: feed it the central's SMP PDUs, the user's answers, the controller's LTK
/// request and Encryption Change; perform its actions in order. LE Secure Connections (Just
/// Works, Numeric Comparison, Passkey Entry) and LE legacy pairing (Just Works, Passkey Entry).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3, §2.4, §3.5, §3.6
public struct PairingResponder: Sendable {
    public enum Action: Hashable, Sendable {
        /// Send this SMP PDU (and restart the 30 s SMP timer).
        case send([UInt8])
        case displayPasskey(UInt32)
        case requestPasskey
        case confirmNumber(UInt32)
        /// The key the central will encrypt with: answer its LE Long Term Key Request with it
        /// (the STK under legacy pairing, the LTK under Secure Connections; EDIV and Rand zero).
        case keyReady(LongTermKey)
        case completed(PairingResult)
        case failed(PairingFailure)
    }

    enum Phase: Hashable, Sendable {
        case idle
        case legacyAwaitingConfirm
        case legacyAwaitingRandom
        case awaitingPublicKey
        case scAwaitingRandom  // Na (Just Works / Numeric Comparison)
        case scPasskeyAwaitingConfirm(round: Int)
        case scPasskeyAwaitingRandom(round: Int)
        case scAwaitingDHKeyCheck
        case awaitingEncryption
        case distributing
        case done
        case failed
    }

    let options: PairingOptions
    let addresses: PairingInitiator.Addresses
    let identity: IdentityAddressInformation
    let random: @Sendable (Int) -> [UInt8]
    let keyPair: P256KeyPair?
    let localIRK: [UInt8]?

    var phase: Phase = .idle
    var request: PairingRequest?
    var response: PairingResponse?
    var method: PairingMethod = .justWorks
    var secureConnections = false
    var keySize = 16
    var responderKeys: KeyDistribution = []
    var pendingPeerKeys: [SecurityManagerCode] = []
    var usedKeyPair: P256KeyPair?
    // Values most significant octet first.
    var tk = [UInt8](repeating: 0, count: 16)
    var passkey: UInt32 = 0
    /// The user's part is still open (a passkey to enter, a number to confirm); what the central
    /// sends meanwhile waits in `held`.
    var awaitingUser = false
    var comparisonConfirmed = false
    var held: [SecurityManagerPDU] = []
    var mconfirm: [UInt8] = []
    var srand: [UInt8] = []
    var peerX: [UInt8] = []
    var peerY: [UInt8] = []
    var dhKey: [UInt8] = []
    var na: [UInt8] = []
    var nb: [UInt8] = []
    var cai: [UInt8] = []
    var result = PairingResult(method: .justWorks, secureConnections: false, authenticated: false, keySize: 16, bonded: false)

    public init(
        options: PairingOptions, addresses: PairingInitiator.Addresses, identity: IdentityAddressInformation,
        random: @escaping @Sendable (Int) -> [UInt8], keyPair: P256KeyPair? = nil, localIRK: [UInt8]? = nil
    ) {
        self.options = options
        self.addresses = addresses
        self.identity = identity
        self.random = random
        self.keyPair = keyPair
        self.localIRK = localIRK
    }

    /// Whether pairing runs.
    public var isActive: Bool {
        switch phase {
        case .idle, .done, .failed: return false
        default: return true
        }
    }

    public mutating func timerExpired(into actions: inout [Action]) {
        guard isActive else { return }
        phase = .failed
        actions.append(.failed(.timeout))
    }

    /// One SMP PDU from the central.
    public mutating func receive(_ bytes: ArraySlice<UInt8>, into actions: inout [Action]) {
        guard phase != .done, phase != .failed else { return }
        let pdu: SecurityManagerPDU
        do {
            pdu = try SecurityManagerPDU(decoding: bytes)
        } catch {
            if let first = bytes.first, first == 0 || first > 0x0E { return }
            fail(.invalidParameters, "malformed SMP command: \(error)", into: &actions)
            return
        }
        if case .pairingFailed(let failed) = pdu {
            guard isActive else { return }
            phase = .failed
            actions.append(.failed(.peer(failed.reason)))
            return
        }
        if case .pairingKeypressNotification = pdu { return }
        if awaitingUser, isActive {
            held.append(pdu)
            return
        }
        handle(pdu, into: &actions)
    }

    mutating func handle(_ pdu: SecurityManagerPDU, into actions: inout [Action]) {
        switch (phase, pdu) {
        case (.idle, .pairingRequest(let request)):
            received(request, into: &actions)
        case (.legacyAwaitingConfirm, .pairingConfirm(let confirm)):
            mconfirm = Array(confirm.value.reversed())
            srand = random(16)
            do {
                let sconfirm = try legacyConfirm(srand)
                guard sconfirm != mconfirm else {
                    fail(.confirmValueFailed, "the central sent our own confirm value", into: &actions)
                    return
                }
                phase = .legacyAwaitingRandom
                send(.pairingConfirm(PairingInitiator.value(sconfirm)), &actions)
            } catch {
                fail(.unspecifiedReason, "computing Sconfirm: \(error)", into: &actions)
            }
        case (.legacyAwaitingRandom, .pairingRandom(let random)):
            let mrand = Array(random.value.reversed())
            do {
                guard try legacyConfirm(mrand) == mconfirm else {
                    fail(.confirmValueFailed, "Mconfirm does not match Mrand (a wrong passkey?)", into: &actions)
                    return
                }
                send(.pairingRandom(PairingInitiator.value(srand)), &actions)
                let stk = PairingInitiator.shortened(try SecurityFunctions.s1(tk, srand, mrand), to: keySize)
                phase = .awaitingEncryption
                actions.append(.keyReady(LongTermKey(key: stk.reversed())))
            } catch {
                fail(.unspecifiedReason, "computing the STK: \(error)", into: &actions)
            }
        case (.awaitingPublicKey, .pairingPublicKey(let key)):
            receivedPublicKey(key, into: &actions)
        case (.scAwaitingRandom, .pairingRandom(let random)):
            na = Array(random.value.reversed())
            send(.pairingRandom(PairingInitiator.value(nb)), &actions)
            if method == .numericComparison {
                do {
                    let vb = try SecurityFunctions.g2(peerX, ourX, na, nb) % 1_000_000
                    awaitingUser = true
                    phase = .scAwaitingDHKeyCheck
                    actions.append(.confirmNumber(vb))
                } catch {
                    fail(.unspecifiedReason, "computing the number to compare: \(error)", into: &actions)
                }
            } else {
                phase = .scAwaitingDHKeyCheck
            }
        case (.scPasskeyAwaitingConfirm(let round), .pairingConfirm(let confirm)):
            cai = Array(confirm.value.reversed())
            nb = random(16)
            do {
                let cb = try SecurityFunctions.f4(ourX, peerX, nb, passkeyBit(round))
                phase = .scPasskeyAwaitingRandom(round: round)
                send(.pairingConfirm(PairingInitiator.value(cb)), &actions)
            } catch {
                fail(.unspecifiedReason, "computing Cb: \(error)", into: &actions)
            }
        case (.scPasskeyAwaitingRandom(let round), .pairingRandom(let random)):
            na = Array(random.value.reversed())
            do {
                guard try SecurityFunctions.f4(peerX, ourX, na, passkeyBit(round)) == cai else {
                    fail(.confirmValueFailed, "Ca of round \(round + 1) does not match (a wrong passkey?)", into: &actions)
                    return
                }
            } catch {
                fail(.unspecifiedReason, "checking Ca: \(error)", into: &actions)
                return
            }
            send(.pairingRandom(PairingInitiator.value(nb)), &actions)
            phase = round < 19 ? .scPasskeyAwaitingConfirm(round: round + 1) : .scAwaitingDHKeyCheck
        case (.scAwaitingDHKeyCheck, .pairingDHKeyCheck(let check)):
            receivedDHKeyCheck(check, into: &actions)
        case (.awaitingEncryption, _) where PairingInitiator.isKeyDistribution(pdu.code):
            // The central distributes after ours; nothing may come before our Encryption Change.
            fail(.unspecifiedReason, "keys before the link was encrypted", into: &actions)
        case (.distributing, _):
            receivedKey(pdu, into: &actions)
        default:
            fail(.unspecifiedReason, "unexpected \(pdu.code) while \(phase)", into: &actions)
        }
    }

    /// The user entered the passkey the central shows.
    public mutating func passkeyEntered(_ value: UInt32?, into actions: inout [Action]) {
        guard awaitingUser, isActive else { return }
        guard let value, value <= 999_999 else {
            phase = .failed
            send(.pairingFailed(PairingFailed(reason: .passkeyEntryFailed)), &actions)
            actions.append(.failed(.userDeclined(value == nil ? "no passkey was entered" : "a passkey has six digits")))
            return
        }
        passkey = value
        tk = PairingInitiator.passkeyTK(value)
        userDone(into: &actions)
    }

    /// The user's answer to ``Action/confirmNumber(_:)``.
    public mutating func comparisonAnswered(_ matches: Bool, into actions: inout [Action]) {
        guard awaitingUser, isActive, method == .numericComparison else { return }
        guard matches else {
            phase = .failed
            send(.pairingFailed(PairingFailed(reason: .numericComparisonFailed)), &actions)
            actions.append(.failed(.userDeclined("the numbers were not confirmed")))
            return
        }
        comparisonConfirmed = true
        userDone(into: &actions)
    }

    /// The user's part is done: what the central sent meanwhile is handled now.
    mutating func userDone(into actions: inout [Action]) {
        awaitingUser = false
        let waiting = held
        held = []
        for pdu in waiting where isActive { handle(pdu, into: &actions) }
    }

    /// Encryption Change after the central encrypted with the key of ``Action/keyReady(_:)``.
    public mutating func encryptionChanged(status: UInt8, enabled: Bool, into actions: inout [Action]) {
        guard phase == .awaitingEncryption else { return }
        guard status == 0, enabled else {
            phase = .failed
            actions.append(.failed(.encryption(status == 0 ? 0xFF : status)))
            return
        }
        phase = .distributing
        distributeOurKeys(into: &actions)
    }

    // MARK: - Steps

    var ourX: [UInt8] { usedKeyPair?.x ?? [] }

    func passkeyBit(_ round: Int) -> UInt8 { 0x80 | UInt8((passkey >> UInt32(round)) & 1) }

    mutating func fail(_ reason: PairingFailedReason, _ why: String, into actions: inout [Action]) {
        phase = .failed
        send(.pairingFailed(PairingFailed(reason: reason)), &actions)
        actions.append(.failed(.local(reason, why)))
    }

    func send(_ pdu: SecurityManagerPDU, _ actions: inout [Action]) { actions.append(.send(pdu.encoded())) }

    func legacyConfirm(_ r: [UInt8]) throws(SecurityCryptoError) -> [UInt8] {
        try PairingSteps.legacyConfirm(tk: tk, r: r, request: request, response: response, addresses: addresses)
    }

    func newPasskey() -> UInt32 { PairingSteps.newPasskey(random) }

    /// Pairing Request (§3.5.1): our response, the method, the keys.
    mutating func received(_ request: PairingRequest, into actions: inout [Action]) {
        self.request = request
        let centralIO: IOCapability
        switch PairingSteps.checkFeatures(request) {
        case .success(let capability): centralIO = capability
        case .failure(let failure):
            fail(failure.reason, failure.why, into: &actions)
            return
        }
        keySize = Int(request.maximumEncryptionKeySize)
        guard keySize >= options.minimumKeySize else {
            fail(.encryptionKeySize, "the central offers \(keySize)-octet keys; at least \(options.minimumKeySize) are required", into: &actions)
            return
        }
        let theirs = AuthenticationRequirements(rawValue: request.authenticationRequirements)
        var ours: AuthenticationRequirements = []
        if options.bonding, theirs.contains(.bonding) { ours.insert(.bonding) }
        if options.requireMITM || options.ioCapability != .noInputNoOutput { ours.insert(.mitm) }
        if !options.legacyOnly { ours.insert(.secureConnections) }
        secureConnections = ours.contains(.secureConnections) && theirs.contains(.secureConnections)
        guard secureConnections || !options.secureConnectionsOnly else {
            fail(.authenticationRequirements, "the central supports only legacy pairing (Secure Connections required)", into: &actions)
            return
        }
        method = PairingMethod.select(
            initiator: centralIO, responder: options.ioCapability, initiatorMITM: theirs.contains(.mitm),
            responderMITM: ours.contains(.mitm), secureConnections: secureConnections)
        if options.requireMITM, !method.isAuthenticated {
            fail(.authenticationRequirements, "only Just Works is possible with a \(centralIO) central, and MITM protection was required", into: &actions)
            return
        }
        let supported: KeyDistribution = [.encryptionKey, .identityKey, .signingKey]
        let ignoredUnderSC: KeyDistribution = secureConnections ? [.encryptionKey] : []
        let initiatorKeys = KeyDistribution(rawValue: request.initiatorKeyDistribution).intersection(supported)
        responderKeys = KeyDistribution(rawValue: request.responderKeyDistribution).intersection(supported)
        let response = PairingResponse(
            ioCapability: options.ioCapability.rawValue, oobDataFlag: 0, authenticationRequirements: ours.rawValue,
            maximumEncryptionKeySize: 16, initiatorKeyDistribution: initiatorKeys.rawValue,
            responderKeyDistribution: responderKeys.rawValue)
        self.response = response
        responderKeys.subtract(ignoredUnderSC)
        pendingPeerKeys = PairingInitiator.commands(for: initiatorKeys.subtracting(ignoredUnderSC))
        result = PairingResult(
            method: method, secureConnections: secureConnections, authenticated: method.isAuthenticated,
            keySize: keySize, bonded: ours.contains(.bonding))
        send(.pairingResponse(response), &actions)
        if secureConnections {
            phase = .awaitingPublicKey
            return
        }
        phase = .legacyAwaitingConfirm
        switch method {
        case .passkeyEntry(_, responderInputs: true):
            awaitingUser = true
            actions.append(.requestPasskey)
        case .passkeyEntry(_, responderInputs: false):
            passkey = newPasskey()
            tk = PairingInitiator.passkeyTK(passkey)
            actions.append(.displayPasskey(passkey))
        case .justWorks, .numericComparison:
            tk = [UInt8](repeating: 0, count: 16)
        }
    }

    mutating func receivedPublicKey(_ key: PairingPublicKey, into actions: inout [Action]) {
        peerX = Array(key.x.reversed())
        peerY = Array(key.y.reversed())
        let pair: P256KeyPair
        do {
            pair = try keyPair ?? P256KeyPair.generate()
        } catch {
            fail(.unspecifiedReason, "making a P-256 key pair: \(error)", into: &actions)
            return
        }
        usedKeyPair = pair
        switch PairingSteps.dhKey(pair, peerX: peerX, peerY: peerY, peer: "central") {
        case .success(let key): dhKey = key
        case .failure(let failure):
            fail(failure.reason, failure.why, into: &actions)
            return
        }
        send(.pairingPublicKey(try! PairingPublicKey(x: pair.x.reversed(), y: pair.y.reversed())), &actions)
        switch method {
        case .justWorks, .numericComparison:
            nb = random(16)
            do {
                let cb = try SecurityFunctions.f4(pair.x, peerX, nb, 0)
                phase = .scAwaitingRandom
                send(.pairingConfirm(PairingInitiator.value(cb)), &actions)
            } catch {
                fail(.unspecifiedReason, "computing Cb: \(error)", into: &actions)
            }
        case .passkeyEntry(_, responderInputs: true):
            phase = .scPasskeyAwaitingConfirm(round: 0)
            awaitingUser = true
            actions.append(.requestPasskey)
        case .passkeyEntry(_, responderInputs: false):
            passkey = newPasskey()
            phase = .scPasskeyAwaitingConfirm(round: 0)
            actions.append(.displayPasskey(passkey))
        }
    }

    mutating func receivedDHKeyCheck(_ check: PairingDHKeyCheck, into actions: inout [Action]) {
        guard let request, let response else { return }
        let ea = Array(check.value.reversed())
        var r = [UInt8](repeating: 0, count: 16)
        if case .passkeyEntry = method { r = PairingInitiator.passkeyTK(passkey) }
        do {
            let (macKey, ltk) = try SecurityFunctions.f5(dhKey, na, nb, addresses.a, addresses.b)
            guard try SecurityFunctions.f6(macKey, na, nb, r, PairingSteps.ioCap(request), addresses.a, addresses.b) == ea else {
                fail(.dhKeyCheckFailed, "Ea does not match", into: &actions)
                return
            }
            let eb = try SecurityFunctions.f6(macKey, nb, na, r, PairingSteps.ioCap(response), addresses.b, addresses.a)
            send(.pairingDHKeyCheck(PairingInitiator.value(eb)), &actions)
            let key = LongTermKey(key: PairingInitiator.shortened(ltk, to: keySize).reversed())
            result.peerLTK = key
            phase = .awaitingEncryption
            actions.append(.keyReady(key))
        } catch {
            fail(.unspecifiedReason, "the DHKey check: \(error)", into: &actions)
        }
    }

    /// The responder distributes first (§2.4.3): LTK, EDIV, Rand (legacy), IRK and identity, CSRK.
    mutating func distributeOurKeys(into actions: inout [Action]) {
        let pdus = PairingSteps.ourKeys(
            responderKeys, keySize: keySize, localIRK: localIRK, identity: identity, random: random, into: &result)
        for pdu in pdus { send(pdu, &actions) }
        if pendingPeerKeys.isEmpty {
            phase = .done
            actions.append(.completed(result))
        }
    }

    mutating func receivedKey(_ pdu: SecurityManagerPDU, into actions: inout [Action]) {
        if let failure = PairingSteps.keep(pdu, pending: &pendingPeerKeys, keySize: keySize, into: &result) {
            fail(failure.reason, failure.why, into: &actions)
            return
        }
        if pendingPeerKeys.isEmpty {
            phase = .done
            actions.append(.completed(result))
        }
    }
}
