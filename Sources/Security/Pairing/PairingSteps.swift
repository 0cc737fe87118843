import Bluetooth

/// What both roles of a pairing compute the same way: the passkey, the legacy confirm value,
/// and phase 3, key distribution (ours generated and sent, the peer's checked and kept).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3.5.3, §2.3.5.5, §3.6
/// Why a pairing step failed: the Pairing Failed reason and the words for the user.
struct PairingStepFailure: Error {
    let reason: PairingFailedReason
    let why: String
    init(_ reason: PairingFailedReason, _ why: String) {
        self.reason = reason
        self.why = why
    }
}

enum PairingSteps {
    /// A passkey from the random source: uniform below 10^6 (20 random bits, redrawn above
    /// 999999).
    static func newPasskey(_ random: (Int) -> [UInt8]) -> UInt32 {
        while true {
            let value = random(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x000F_FFFF
            if value <= 999_999 { return value }
        }
    }

    /// The checks of the peer's Pairing Request or Response every role makes (§3.5.1, §3.5.2): a
    /// defined IO capability, a maximum key size of 7–16 octets. The capability, or the reason
    /// and the words to fail with.
    static func checkFeatures<Kind>(_ features: PairingFeaturesCommand<Kind>) -> Result<IOCapability, PairingStepFailure> {
        guard let capability = IOCapability(rawValue: features.ioCapability) else {
            return .failure(PairingStepFailure(.invalidParameters, "IO capability 0x\(String(features.ioCapability, radix: 16)) is reserved"))
        }
        guard (7...16).contains(features.maximumEncryptionKeySize) else {
            return .failure(PairingStepFailure(.invalidParameters, "a maximum key size of \(features.maximumEncryptionKeySize) octets"))
        }
        return .success(capability)
    }

    /// IOcapA / IOcapB of f6: AuthReq, OOB data flag, IO capability (§2.2.8).
    static func ioCap<Kind>(_ features: PairingFeaturesCommand<Kind>) -> [UInt8] {
        [features.authenticationRequirements, features.oobDataFlag, features.ioCapability]
    }

    /// The DHKey from our key pair and the peer's public key (x, y most significant first),
    /// which must not be ours and must lie on P-256 (CVE-2018-5383) (§2.3.5.6.1). `peer` names
    /// the other side in the failure's words.
    static func dhKey(
        _ pair: P256KeyPair, peerX: [UInt8], peerY: [UInt8], peer: String
    ) -> Result<[UInt8], PairingStepFailure> {
        guard peerX != pair.x || peerY != pair.y else {
            return .failure(PairingStepFailure(.invalidParameters, "the \(peer) sent our own public key back"))
        }
        do {
            return .success(try pair.dhKey(peerX: peerX, peerY: peerY))
        } catch SecurityCryptoError.invalidPublicKey {
            return .failure(PairingStepFailure(.invalidParameters, "the \(peer)'s public key is not a point of P-256 (CVE-2018-5383)"))
        } catch {
            return .failure(PairingStepFailure(.unspecifiedReason, "computing the DHKey: \(error)"))
        }
    }

    /// c1 (legacy Mconfirm/Sconfirm) over the two pairing commands and the two addresses.
    static func legacyConfirm(
        tk: [UInt8], r: [UInt8], request: PairingRequest?, response: PairingResponse?,
        addresses: PairingInitiator.Addresses
    ) throws(SecurityCryptoError) -> [UInt8] {
        guard let request, let response else { throw .length("pairing features", expected: 7, actual: 0) }
        return try SecurityFunctions.c1(
            tk, r, preq: request.encode().reversed(), pres: response.encode().reversed(),
            iat: addresses.initiatorType == .random ? 1 : 0, rat: addresses.responderType == .random ? 1 : 0,
            ia: addresses.initiator.bigEndianBytes, ra: addresses.responder.bigEndianBytes)
    }

    /// Generates the keys of `keys` (a new LTK with EDIV and Rand, our IRK and identity, a new
    /// CSRK), records them in `result` and returns the commands that carry them, in order.
    static func ourKeys(
        _ keys: KeyDistribution, keySize: Int, localIRK: [UInt8]?, identity: IdentityAddressInformation,
        random: (Int) -> [UInt8], into result: inout PairingResult
    ) -> [SecurityManagerPDU] {
        var pdus: [SecurityManagerPDU] = []
        if keys.contains(.encryptionKey) {
            let key = LongTermKey(
                key: PairingInitiator.wireShortened(random(16), to: keySize),
                ediv: random(2).reduce(UInt16(0)) { $0 << 8 | UInt16($1) },
                rand: random(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            result.localLTK = key
            pdus.append(.encryptionInformation(try! EncryptionInformation(value: key.key)))
            pdus.append(.centralIdentification(CentralIdentification(ediv: key.ediv, rand: key.rand)))
        }
        if keys.contains(.identityKey) {
            let irk = localIRK ?? random(16)
            result.localIRK = irk
            pdus.append(.identityInformation(try! IdentityInformation(value: irk)))
            pdus.append(.identityAddressInformation(identity))
        }
        if keys.contains(.signingKey) {
            let csrk = random(16)
            result.localCSRK = csrk
            pdus.append(.signingInformation(try! SigningInformation(value: csrk)))
        }
        return pdus
    }

    /// Keeps one key the peer distributed in `result`, if it is the one `pending` expects next
    /// (which it then drops); otherwise the reason and the words to fail the pairing with.
    static func keep(
        _ pdu: SecurityManagerPDU, pending: inout [SecurityManagerCode], keySize: Int, into result: inout PairingResult
    ) -> (reason: PairingFailedReason, why: String)? {
        guard pending.first == pdu.code else { return (.unspecifiedReason, "unexpected \(pdu.code) during key distribution") }
        pending.removeFirst()
        switch pdu {
        case .encryptionInformation(let information):
            result.peerLTK = LongTermKey(key: PairingInitiator.wireShortened(information.value, to: keySize))
        case .centralIdentification(let identification):
            result.peerLTK?.ediv = identification.ediv
            result.peerLTK?.rand = identification.rand
        case .identityInformation(let information):
            // An all-zero IRK would make every address "resolve" to this peer (§2.4.2.1: the
            // IRK is random); refused like a bad key, never stored.
            guard information.value.contains(where: { $0 != 0 }) else {
                return (.invalidParameters, "the peer distributed an all-zero IRK")
            }
            result.peerIRK = information.value
        case .identityAddressInformation(let identity):
            // An identity address is public or static random (top two bits 0b11, §3.6.5), and a
            // static address's random part is neither all zeros nor all ones (Vol 6 Part B §1.3.2.1).
            let raw = identity.address.rawValue
            guard identity.addressType == .public || raw >> 46 == 0b11 else {
                return (.invalidParameters, "the identity address \(identity.address) is random but not static")
            }
            guard identity.addressType == .public ? raw != 0 : (raw & 0x3FFF_FFFF_FFFF != 0 && raw & 0x3FFF_FFFF_FFFF != 0x3FFF_FFFF_FFFF)
            else {
                return (.invalidParameters, "the identity address \(identity.address) is not a device's address")
            }
            result.peerIdentity = identity
        case .signingInformation(let information):
            result.peerCSRK = information.value
        default:
            break
        }
        return nil
    }
}
