import Bluetooth
import L2CAP

// LE legacy pairing (§2.3.5.2–§2.3.5.5) and LE Secure Connections (§2.3.5.6), initiator side.
extension PairingInitiator {
    // MARK: - Legacy

    mutating func legacyStart(into actions: inout [Action]) {
        switch method {
        case .passkeyEntry(initiatorInputs: true, _):
            phase = .legacyAwaitingPasskey
            actions.append(.requestPasskey)
        case .passkeyEntry(initiatorInputs: false, _):
            passkey = newPasskey()
            tk = Self.passkeyTK(passkey)
            actions.append(.displayPasskey(passkey))
            legacySendConfirm(into: &actions)
        case .justWorks, .numericComparison:
            tk = [UInt8](repeating: 0, count: 16)
            legacySendConfirm(into: &actions)
        }
    }

    /// c1 over our two commands and the two addresses.
    func legacyConfirm(_ r: [UInt8]) throws(SecurityCryptoError) -> [UInt8] {
        try PairingSteps.legacyConfirm(tk: tk, r: r, request: request, response: response, addresses: addresses)
    }

    mutating func legacySendConfirm(into actions: inout [Action]) {
        mrand = random(16)
        do {
            let confirm = try legacyConfirm(mrand)
            mconfirm = confirm
            phase = .legacyAwaitingConfirm
            send(.pairingConfirm(Self.value(confirm)), &actions)
        } catch {
            fail(.unspecifiedReason, "computing Mconfirm: \(error)", into: &actions)
        }
    }

    mutating func legacyReceivedConfirm(_ confirm: PairingConfirm, into actions: inout [Action]) {
        sconfirm = Array(confirm.value.reversed())
        // A peer that reflects our own confirm value learns nothing from it; refuse (§2.3.5.5).
        guard sconfirm != mconfirm else {
            fail(.confirmValueFailed, "the peer sent our own confirm value back", into: &actions)
            return
        }
        phase = .legacyAwaitingRandom
        send(.pairingRandom(Self.value(mrand)), &actions)
    }

    mutating func legacyReceivedRandom(_ random: PairingRandom, into actions: inout [Action]) {
        let srand = Array(random.value.reversed())
        do {
            guard try legacyConfirm(srand) == sconfirm else {
                fail(.confirmValueFailed, "Sconfirm does not match Srand (a wrong passkey?)", into: &actions)
                return
            }
            let stk = Self.shortened(try SecurityFunctions.s1(tk, srand, mrand), to: keySize)
            phase = .awaitingEncryption
            actions.append(.startEncryption(LongTermKey(key: stk.reversed())))
        } catch {
            fail(.unspecifiedReason, "computing the STK: \(error)", into: &actions)
        }
    }

    // MARK: - Secure Connections

    mutating func scStart(into actions: inout [Action]) {
        do {
            let pair = try keyPair ?? P256KeyPair.generate()
            usedKeyPair = pair
            phase = .awaitingPublicKey
            // 32 octets each by construction of P256KeyPair.
            send(.pairingPublicKey(try! PairingPublicKey(x: pair.x.reversed(), y: pair.y.reversed())), &actions)
        } catch {
            fail(.unspecifiedReason, "making a P-256 key pair: \(error)", into: &actions)
        }
    }

    mutating func receivedPublicKey(_ key: PairingPublicKey, into actions: inout [Action]) {
        guard let pair = usedKeyPair else { return }
        peerX = Array(key.x.reversed())
        peerY = Array(key.y.reversed())
        switch PairingSteps.dhKey(pair, peerX: peerX, peerY: peerY, peer: "peer") {
        case .success(let key): dhKey = key
        case .failure(let failure):
            fail(failure.reason, failure.why, into: &actions)
            return
        }
        switch method {
        case .justWorks, .numericComparison:
            phase = .scAwaitingConfirm
        case .passkeyEntry(initiatorInputs: true, _):
            phase = .scAwaitingPasskey
            actions.append(.requestPasskey)
        case .passkeyEntry(initiatorInputs: false, _):
            passkey = newPasskey()
            actions.append(.displayPasskey(passkey))
            passkeyRound(0, into: &actions)
        }
    }

    /// Just Works and Numeric Comparison: Nb checks Cb = f4(PKbx, PKax, Nb, 0) (§2.3.5.6.2).
    mutating func scReceivedRandom(_ random: PairingRandom, into actions: inout [Action]) {
        guard let pair = usedKeyPair else { return }
        nb = Array(random.value.reversed())
        do {
            guard try SecurityFunctions.f4(peerX, pair.x, nb, 0) == cb else {
                fail(.confirmValueFailed, "Cb does not match Nb", into: &actions)
                return
            }
            if method == .numericComparison {
                let va = try SecurityFunctions.g2(pair.x, peerX, na, nb) % 1_000_000
                phase = .scAwaitingComparison
                actions.append(.confirmNumber(va))
            } else {
                sendDHKeyCheck(into: &actions)
            }
        } catch {
            fail(.unspecifiedReason, "checking Cb: \(error)", into: &actions)
        }
    }

    /// Passkey Entry round `round` (0–19): Cai = f4(PKax, PKbx, Nai, rai) with rai the passkey's
    /// bit `round` (§2.3.5.6.3).
    mutating func passkeyRound(_ round: Int, into actions: inout [Action]) {
        guard let pair = usedKeyPair else { return }
        na = random(16)
        do {
            let ca = try SecurityFunctions.f4(pair.x, peerX, na, passkeyBit(round))
            phase = .scPasskeyAwaitingConfirm(round: round)
            send(.pairingConfirm(Self.value(ca)), &actions)
        } catch {
            fail(.unspecifiedReason, "computing Ca: \(error)", into: &actions)
        }
    }

    func passkeyBit(_ round: Int) -> UInt8 { 0x80 | UInt8((passkey >> UInt32(round)) & 1) }

    mutating func passkeyRoundReceivedRandom(_ random: PairingRandom, round: Int, into actions: inout [Action]) {
        guard let pair = usedKeyPair else { return }
        nb = Array(random.value.reversed())
        do {
            guard try SecurityFunctions.f4(peerX, pair.x, nb, passkeyBit(round)) == cb else {
                fail(.confirmValueFailed, "Cb of round \(round + 1) does not match (a wrong passkey?)", into: &actions)
                return
            }
        } catch {
            fail(.unspecifiedReason, "checking Cb: \(error)", into: &actions)
            return
        }
        if round < 19 {
            passkeyRound(round + 1, into: &actions)
        } else {
            sendDHKeyCheck(into: &actions)
        }
    }

    /// r of f6: the passkey as a 128-bit number for Passkey Entry, else zero.
    var checkR: [UInt8] {
        if case .passkeyEntry = method { return Self.passkeyTK(passkey) }
        return [UInt8](repeating: 0, count: 16)
    }

    /// MacKey and LTK from f5, then Ea = f6(MacKey, Na, Nb, rb, IOcapA, A, B) (§2.3.5.6.5).
    mutating func sendDHKeyCheck(into actions: inout [Action]) {
        do {
            (macKey, ltk) = try SecurityFunctions.f5(dhKey, na, nb, addresses.a, addresses.b)
            let ea = try SecurityFunctions.f6(macKey, na, nb, checkR, PairingSteps.ioCap(request), addresses.a, addresses.b)
            phase = .scAwaitingDHKeyCheck
            send(.pairingDHKeyCheck(Self.value(ea)), &actions)
        } catch {
            fail(.unspecifiedReason, "computing Ea: \(error)", into: &actions)
        }
    }

    mutating func receivedDHKeyCheck(_ check: PairingDHKeyCheck, into actions: inout [Action]) {
        guard let response else { return }
        let eb = Array(check.value.reversed())
        do {
            guard try SecurityFunctions.f6(macKey, nb, na, checkR, PairingSteps.ioCap(response), addresses.b, addresses.a) == eb else {
                fail(.dhKeyCheckFailed, "Eb does not match", into: &actions)
                return
            }
        } catch {
            fail(.unspecifiedReason, "checking Eb: \(error)", into: &actions)
            return
        }
        let key = LongTermKey(key: Self.shortened(ltk, to: keySize).reversed())
        result.peerLTK = key
        phase = .awaitingEncryption
        actions.append(.startEncryption(key))
    }

    // MARK: - Key distribution (§2.4.3, §3.6)

    /// The commands the responder sends, in order, for `keys`.
    static func commands(for keys: KeyDistribution) -> [SecurityManagerCode] {
        var codes: [SecurityManagerCode] = []
        if keys.contains(.encryptionKey) { codes += [.encryptionInformation, .centralIdentification] }
        if keys.contains(.identityKey) { codes += [.identityInformation, .identityAddressInformation] }
        if keys.contains(.signingKey) { codes.append(.signingInformation) }
        return codes
    }

    mutating func receivedKey(_ pdu: SecurityManagerPDU, into actions: inout [Action]) {
        if let failure = PairingSteps.keep(pdu, pending: &pendingPeerKeys, keySize: keySize, into: &result) {
            fail(failure.reason, failure.why, into: &actions)
            return
        }
        if pendingPeerKeys.isEmpty { distributeOurKeys(into: &actions) }
    }

    /// A key in wire order with its most significant octets zeroed to `size`.
    static func wireShortened(_ key: [UInt8], to size: Int) -> [UInt8] {
        Array(key.prefix(size)) + [UInt8](repeating: 0, count: 16 - size)
    }

    mutating func distributeOurKeys(into actions: inout [Action]) {
        let pdus = PairingSteps.ourKeys(
            initiatorKeys, keySize: keySize, localIRK: localIRK, identity: identity, random: random, into: &result)
        for pdu in pdus { send(pdu, &actions) }
        phase = .done
        actions.append(.completed(result))
    }
}
