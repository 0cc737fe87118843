import Bluetooth
import L2CAP

/// The keys and facts a completed pairing produced. Keys are in SMP PDU octet order (least
/// significant first), as the bond file keeps them.
public struct PairingResult: Hashable, Sendable {
    public var method: PairingMethod
    public var secureConnections: Bool
    /// Whether the keys are protected against a man in the middle.
    public var authenticated: Bool
    /// The encryption key size in octets (7–16).
    public var keySize: Int
    /// Secure Connections: the one LTK both derived. Legacy: the LTK the peer distributed (it
    /// encrypts when the peer is peripheral), with its EDIV and Rand.
    public var peerLTK: LongTermKey?
    /// Legacy: the LTK we distributed (for when the peer is central).
    public var localLTK: LongTermKey?
    public var peerIRK: [UInt8]?
    public var peerIdentity: IdentityAddressInformation?
    public var peerCSRK: [UInt8]?
    public var localIRK: [UInt8]?
    public var localCSRK: [UInt8]?
    /// Both asked to bond.
    public var bonded: Bool

    /// A result with its facts; keys are added as they are distributed.
    public init(method: PairingMethod, secureConnections: Bool, authenticated: Bool, keySize: Int, bonded: Bool) {
        self.method = method
        self.secureConnections = secureConnections
        self.authenticated = authenticated
        self.keySize = keySize
        self.bonded = bonded
    }
}

/// A Long Term Key with the EDIV and Rand that name it (zero under Secure Connections).
public struct LongTermKey: Hashable, Sendable {
    /// 16 octets, least significant first (as in Encryption Information and HCI).
    public var key: [UInt8]
    public var ediv: UInt16
    public var rand: UInt64

    public init(key: [UInt8], ediv: UInt16 = 0, rand: UInt64 = 0) {
        self.key = key
        self.ediv = ediv
        self.rand = rand
    }
}

/// Why a pairing ended without keys.
public enum PairingFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// We sent Pairing Failed with this reason (what we found wrong).
    case local(PairingFailedReason, String)
    /// The peer sent Pairing Failed.
    case peer(PairingFailedReason)
    /// No SMP progress within 30 s (§3.4): no more SMP on this link.
    case timeout
    /// The link was encrypted with a key the peer did not accept (Encryption Change status).
    case encryption(UInt8)
    /// The user declined the numeric comparison or gave no passkey.
    case userDeclined(String)

    public var description: String {
        switch self {
        case .local(let reason, let why): return "pairing failed (\(reason)): \(why)"
        case .peer(let reason): return "the peer ended pairing: \(reason)"
        case .timeout: return "pairing timed out (30 s without progress, Vol 3 Part H §3.4)"
        case .encryption(let status): return "encrypting the link failed (HCI status 0x\(String(status, radix: 16)))"
        case .userDeclined(let why): return "pairing declined: \(why)"
        }
    }
}

/// The central's side of LE pairing (we initiate), sans-I/O: feed it the peer's SMP PDUs, the
/// user's answers, the link's Encryption Change and the timer; perform its actions in order.
/// LE Secure Connections (Just Works, Numeric Comparison, Passkey Entry) and LE legacy pairing
/// (Just Works, Passkey Entry); OOB is not supported (flag 0). Randomness and the P-256 key pair
/// are injected, so runs are reproducible in tests.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3 (pairing), §2.4 (key distribution), §3 (SMP)
public struct PairingInitiator: Sendable {
    /// What to do next.
    public enum Action: Hashable, Sendable {
        /// Send this SMP PDU on CID 0x0006 (and restart the 30 s SMP timer).
        case send([UInt8])
        /// Show this passkey to the user (six digits) — the peer's user enters it.
        case displayPasskey(UInt32)
        /// Ask the user for the passkey the peer displays; answer with ``passkeyEntered(_:)``.
        case requestPasskey
        /// Ask the user whether both devices show this six-digit number; answer with
        /// ``comparisonAnswered(_:)``.
        case confirmNumber(UInt32)
        /// Start encryption (LE Enable Encryption) with this key (least significant octet first).
        case startEncryption(LongTermKey)
        /// Pairing is done: keys and facts.
        case completed(PairingResult)
        /// Pairing ended without keys.
        case failed(PairingFailure)
    }

    /// The two addresses as the link layer saw them (c1, f5, f6 take them).
    public struct Addresses: Hashable, Sendable {
        public var initiator: BluetoothAddress
        public var initiatorType: AddressType
        public var responder: BluetoothAddress
        public var responderType: AddressType
        public init(
            initiator: BluetoothAddress, initiatorType: AddressType, responder: BluetoothAddress,
            responderType: AddressType
        ) {
            self.initiator = initiator
            self.initiatorType = initiatorType
            self.responder = responder
            self.responderType = responderType
        }

        /// The 56-bit value f5/f6 take: type octet, then the address, most significant first.
        var a: [UInt8] { [initiatorType == .random ? 1 : 0] + initiator.bigEndianBytes }
        var b: [UInt8] { [responderType == .random ? 1 : 0] + responder.bigEndianBytes }
    }

    enum Phase: Hashable, Sendable {
        case idle
        case awaitingResponse
        case legacyAwaitingPasskey
        case legacyAwaitingConfirm
        case legacyAwaitingRandom
        case awaitingPublicKey
        case scAwaitingConfirm  // Cb (Just Works / Numeric Comparison)
        case scAwaitingRandom  // Nb
        case scAwaitingComparison
        case scAwaitingPasskey
        case scPasskeyAwaitingConfirm(round: Int)
        case scPasskeyAwaitingRandom(round: Int)
        case scAwaitingDHKeyCheck
        case awaitingEncryption
        case distributing
        case done
        case failed
    }

    let options: PairingOptions
    let addresses: Addresses
    /// Our identity (public or static random address) to distribute with our IRK.
    let identity: IdentityAddressInformation
    var random: @Sendable (Int) -> [UInt8]
    let keyPair: P256KeyPair?
    /// Our IRK, distributed with our identity (nil: a fresh one for this pairing).
    let localIRK: [UInt8]?
    var usedKeyPair: P256KeyPair?
    var pendingPeerKeys: [SecurityManagerCode] = []
    /// Key distribution PDUs that came before our Encryption Change.
    var earlyKeys: [SecurityManagerPDU] = []

    var phase: Phase = .idle
    var request: PairingRequest
    var response: PairingResponse?
    var method: PairingMethod = .justWorks
    var secureConnections = false
    var keySize = 16
    var responderKeys: KeyDistribution = []
    var initiatorKeys: KeyDistribution = []
    // Legacy.
    var tk = [UInt8](repeating: 0, count: 16)
    var mrand: [UInt8] = []
    var mconfirm: [UInt8] = []
    var sconfirm: [UInt8] = []
    // Secure Connections (values most significant octet first).
    var peerX: [UInt8] = []
    var peerY: [UInt8] = []
    var dhKey: [UInt8] = []
    var na: [UInt8] = []
    var nb: [UInt8] = []
    var cb: [UInt8] = []
    var passkey: UInt32 = 0
    var ltk: [UInt8] = []
    var macKey: [UInt8] = []
    var result: PairingResult

    /// - Parameters:
    ///   - random: `count` random octets (the operating system's generator in the host).
    ///   - keyPair: our P-256 key pair for Secure Connections (nil: generated when needed).
    public init(
        options: PairingOptions, addresses: Addresses, identity: IdentityAddressInformation,
        random: @escaping @Sendable (Int) -> [UInt8], keyPair: P256KeyPair? = nil, localIRK: [UInt8]? = nil
    ) {
        self.localIRK = localIRK
        self.options = options
        self.addresses = addresses
        self.identity = identity
        self.random = random
        self.keyPair = keyPair
        var auth: AuthenticationRequirements = []
        if options.bonding { auth.insert(.bonding) }
        if options.requireMITM || options.ioCapability != .noInputNoOutput { auth.insert(.mitm) }
        if !options.legacyOnly { auth.insert(.secureConnections) }
        let keys: KeyDistribution = options.bonding ? [.encryptionKey, .identityKey, .signingKey] : []
        request = PairingRequest(
            ioCapability: options.ioCapability.rawValue, oobDataFlag: 0, authenticationRequirements: auth.rawValue,
            maximumEncryptionKeySize: 16, initiatorKeyDistribution: keys.rawValue, responderKeyDistribution: keys.rawValue)
        result = PairingResult(
            method: .justWorks, secureConnections: false, authenticated: false, keySize: 16, bonded: options.bonding)
    }

    /// Whether pairing still runs (the link's SMP belongs to it).
    public var isActive: Bool {
        switch phase {
        case .idle, .done, .failed: return false
        default: return true
        }
    }

    /// Starts pairing: the Pairing Request.
    public mutating func start(into actions: inout [Action]) {
        guard phase == .idle else { return }
        phase = .awaitingResponse
        actions.append(.send(request.encode()))
    }

    /// The 30 s SMP timer expired: pairing fails and no more SMP is exchanged on the link.
    public mutating func timerExpired(into actions: inout [Action]) {
        guard isActive else { return }
        phase = .failed
        actions.append(.failed(.timeout))
    }

    /// One SMP PDU from the peer.
    public mutating func receive(_ bytes: ArraySlice<UInt8>, into actions: inout [Action]) {
        guard isActive else { return }
        let pdu: SecurityManagerPDU
        do {
            pdu = try SecurityManagerPDU(decoding: bytes)
        } catch {
            // A reserved Code is ignored (§3.3); a malformed known command fails the pairing.
            if let first = bytes.first, first == 0 || first > 0x0E { return }
            fail(.invalidParameters, "malformed SMP command: \(error)", into: &actions)
            return
        }
        if case .pairingFailed(let failed) = pdu {
            phase = .failed
            actions.append(.failed(.peer(failed.reason)))
            return
        }
        if case .pairingKeypressNotification = pdu { return }  // progress only
        if case .securityRequest = pdu { return }  // pairing is already running
        switch (phase, pdu) {
        case (.awaitingResponse, .pairingResponse(let response)):
            received(response, into: &actions)
        case (.legacyAwaitingConfirm, .pairingConfirm(let confirm)):
            legacyReceivedConfirm(confirm, into: &actions)
        case (.legacyAwaitingRandom, .pairingRandom(let random)):
            legacyReceivedRandom(random, into: &actions)
        case (.awaitingPublicKey, .pairingPublicKey(let key)):
            receivedPublicKey(key, into: &actions)
        case (.scAwaitingConfirm, .pairingConfirm(let confirm)):
            cb = Array(confirm.value.reversed())
            na = random(16)
            phase = .scAwaitingRandom
            send(.pairingRandom(Self.value(na)), &actions)
        case (.scAwaitingRandom, .pairingRandom(let random)):
            scReceivedRandom(random, into: &actions)
        case (.scPasskeyAwaitingConfirm(let round), .pairingConfirm(let confirm)):
            cb = Array(confirm.value.reversed())
            phase = .scPasskeyAwaitingRandom(round: round)
            send(.pairingRandom(Self.value(na)), &actions)
        case (.scPasskeyAwaitingRandom(let round), .pairingRandom(let random)):
            passkeyRoundReceivedRandom(random, round: round, into: &actions)
        case (.scAwaitingDHKeyCheck, .pairingDHKeyCheck(let check)):
            receivedDHKeyCheck(check, into: &actions)
        case (.distributing, _):
            receivedKey(pdu, into: &actions)
        case (.awaitingEncryption, _) where Self.isKeyDistribution(pdu.code):
            // The peer sends its keys as soon as its side is encrypted; the host may see them
            // before our Encryption Change: they wait for it.
            earlyKeys.append(pdu)
        default:
            fail(.unspecifiedReason, "unexpected \(pdu.code) while \(phase)", into: &actions)
        }
    }

    /// The user entered the passkey the peer displays (0–999999).
    public mutating func passkeyEntered(_ value: UInt32?, into actions: inout [Action]) {
        guard let value, value <= 999_999 else {
            guard phase == .legacyAwaitingPasskey || phase == .scAwaitingPasskey else { return }
            phase = .failed
            send(.pairingFailed(PairingFailed(reason: .passkeyEntryFailed)), &actions)
            actions.append(.failed(.userDeclined(value == nil ? "no passkey was entered" : "a passkey has six digits")))
            return
        }
        switch phase {
        case .legacyAwaitingPasskey:
            tk = Self.passkeyTK(value)
            legacySendConfirm(into: &actions)
        case .scAwaitingPasskey:
            passkey = value
            passkeyRound(0, into: &actions)
        default:
            return
        }
    }

    /// The user's answer to ``Action/confirmNumber(_:)``.
    public mutating func comparisonAnswered(_ matches: Bool, into actions: inout [Action]) {
        guard phase == .scAwaitingComparison else { return }
        guard matches else {
            phase = .failed
            send(.pairingFailed(PairingFailed(reason: .numericComparisonFailed)), &actions)
            actions.append(.failed(.userDeclined("the numbers were not confirmed")))
            return
        }
        sendDHKeyCheck(into: &actions)
    }

    /// Encryption Change (or Encryption Key Refresh Complete) after ``Action/startEncryption(_:)``.
    public mutating func encryptionChanged(status: UInt8, enabled: Bool, into actions: inout [Action]) {
        guard phase == .awaitingEncryption else { return }
        guard status == 0, enabled else {
            phase = .failed
            actions.append(.failed(.encryption(status == 0 ? 0xFF : status)))
            return
        }
        phase = .distributing
        if pendingPeerKeys.isEmpty {
            distributeOurKeys(into: &actions)
            return
        }
        let early = earlyKeys
        earlyKeys = []
        for pdu in early where phase == .distributing { receivedKey(pdu, into: &actions) }
    }

    // MARK: - Shared steps

    static func isKeyDistribution(_ code: SecurityManagerCode) -> Bool {
        [.encryptionInformation, .centralIdentification, .identityInformation, .identityAddressInformation,
         .signingInformation].contains(code)
    }

    mutating func fail(_ reason: PairingFailedReason, _ why: String, into actions: inout [Action]) {
        phase = .failed
        send(.pairingFailed(PairingFailed(reason: reason)), &actions)
        actions.append(.failed(.local(reason, why)))
    }

    func send(_ pdu: SecurityManagerPDU, _ actions: inout [Action]) {
        actions.append(.send(pdu.encoded()))
    }

    /// A 16-octet value command from a value most significant octet first.
    static func value<Kind: SecurityValueKind>(_ bigEndian: [UInt8]) -> SecurityValueCommand<Kind> {
        // 16 octets by construction of every caller.
        try! SecurityValueCommand<Kind>(value: Array(bigEndian.reversed()))
    }

    /// The legacy TK of a passkey: the passkey as a 128-bit number, most significant first.
    static func passkeyTK(_ passkey: UInt32) -> [UInt8] {
        [UInt8](repeating: 0, count: 12) + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: passkey >> $0) }
    }

    /// A key of `size` octets: the most significant 16 − size octets zeroed (§2.3.4).
    static func shortened(_ key: [UInt8], to size: Int) -> [UInt8] {
        [UInt8](repeating: 0, count: 16 - size) + key.suffix(size)
    }

    /// A passkey from the random source: uniform below 10^6.
    func newPasskey() -> UInt32 { PairingSteps.newPasskey(random) }

    // MARK: - Pairing Response (§2.3.5.1)

    mutating func received(_ response: PairingResponse, into actions: inout [Action]) {
        self.response = response
        let peerIO: IOCapability
        switch PairingSteps.checkFeatures(response) {
        case .success(let capability): peerIO = capability
        case .failure(let failure):
            fail(failure.reason, failure.why, into: &actions)
            return
        }
        let responderKeys = KeyDistribution(rawValue: response.responderKeyDistribution)
        let initiatorKeys = KeyDistribution(rawValue: response.initiatorKeyDistribution)
        guard responderKeys.isSubset(of: KeyDistribution(rawValue: request.responderKeyDistribution)),
            initiatorKeys.isSubset(of: KeyDistribution(rawValue: request.initiatorKeyDistribution))
        else {
            fail(.invalidParameters, "the response asks for keys the request did not offer", into: &actions)
            return
        }
        keySize = Int(min(request.maximumEncryptionKeySize, response.maximumEncryptionKeySize))
        guard keySize >= options.minimumKeySize else {
            fail(.encryptionKeySize, "the peer offers \(keySize)-octet keys; at least \(options.minimumKeySize) are required", into: &actions)
            return
        }
        let ours = AuthenticationRequirements(rawValue: request.authenticationRequirements)
        let theirs = AuthenticationRequirements(rawValue: response.authenticationRequirements)
        secureConnections = ours.contains(.secureConnections) && theirs.contains(.secureConnections)
        guard secureConnections || !options.secureConnectionsOnly else {
            fail(.authenticationRequirements, "the peer supports only legacy pairing (Secure Connections required)", into: &actions)
            return
        }
        method = PairingMethod.select(
            initiator: options.ioCapability, responder: peerIO, initiatorMITM: ours.contains(.mitm),
            responderMITM: theirs.contains(.mitm), secureConnections: secureConnections)
        if options.requireMITM, !method.isAuthenticated {
            fail(.authenticationRequirements, "only Just Works is possible with a \(peerIO) peer, and MITM protection was required", into: &actions)
            return
        }
        // Under Secure Connections the LTK is derived: EncKey is not distributed (§3.6.1).
        self.responderKeys = secureConnections ? responderKeys.subtracting([.encryptionKey, .linkKey]) : responderKeys.subtracting(.linkKey)
        self.initiatorKeys = secureConnections ? initiatorKeys.subtracting([.encryptionKey, .linkKey]) : initiatorKeys.subtracting(.linkKey)
        result.method = method
        result.secureConnections = secureConnections
        result.authenticated = method.isAuthenticated
        result.keySize = keySize
        result.bonded = ours.contains(.bonding) && theirs.contains(.bonding)
        pendingPeerKeys = Self.commands(for: self.responderKeys)
        if secureConnections {
            scStart(into: &actions)
        } else {
            legacyStart(into: &actions)
        }
    }
}

extension BluetoothAddress {
    /// The six octets most significant first.
    var bigEndianBytes: [UInt8] { (0..<6).reversed().map { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt64($0))) } }
}

extension LongTermKey: CustomStringConvertible, CustomReflectable {
    /// The key is not shown (key material is printed only where the user asks: `bonds --json`).
    public var description: String { "LTK (hidden), EDIV 0x\(String(ediv, radix: 16))" }
    public var customMirror: Mirror { Mirror(self, children: ["ediv": ediv]) }
}

extension PairingResult: CustomStringConvertible, CustomReflectable {
    /// The facts, no key.
    public var description: String {
        "\(secureConnections ? "Secure Connections" : "legacy") \(method), "
            + "\(authenticated ? "authenticated" : "unauthenticated"), \(keySize)-octet key\(bonded ? ", bonded" : "")"
    }
    public var customMirror: Mirror {
        Mirror(self, children: ["method": method, "secureConnections": secureConnections, "authenticated": authenticated, "keySize": keySize, "bonded": bonded])
    }
}
