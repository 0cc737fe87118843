import Bluetooth
import L2CAP
import Security
import Synchronization
import Testing

/// A responder written from the specification for these tests: it answers the initiator's PDUs
/// as a peripheral would (legacy and Secure Connections), computing every value with the
/// toolbox, and can be told to misbehave.
struct TestResponder {
    enum Fault { case none, wrongConfirm, offCurveKey, wrongDHKeyCheck, smallKey, reflectKey, noChecks }

    var io: IOCapability
    var auth: AuthenticationRequirements
    var keys: KeyDistribution = [.encryptionKey, .identityKey, .signingKey]
    var maxKeySize: UInt8 = 16
    var fault: Fault = .none
    /// The passkey this side displays or its user enters.
    var passkey: UInt32 = 123_456
    let addresses: PairingInitiator.Addresses
    let keyPair: P256KeyPair
    var request: PairingRequest?
    var response: PairingResponse?
    var peerX: [UInt8] = [], peerY: [UInt8] = []
    var dhKey: [UInt8] = []
    var nb: [UInt8] = [], na: [UInt8] = [], cai: [UInt8] = []
    var mconfirm: [UInt8] = []
    var srand = [UInt8](repeating: 0x5A, count: 16)
    var round = 0
    var tk = [UInt8](repeating: 0, count: 16)
    var method: PairingMethod = .justWorks
    let ltk: [UInt8] = (0..<16).map { UInt8($0 * 3) }  // legacy: what we distribute (wire order)
    let irk: [UInt8] = (0..<16).map { UInt8(0xA0 + $0) }
    let csrk: [UInt8] = (0..<16).map { UInt8(0xC0 + $0) }
    var derivedLTK: [UInt8] = []

    init(io: IOCapability, auth: AuthenticationRequirements, addresses: PairingInitiator.Addresses) throws {
        self.io = io
        self.auth = auth
        self.addresses = addresses
        keyPair = try P256KeyPair.generate()
    }

    static func be(_ v: [UInt8]) -> [UInt8] { v.reversed() }
    static func tk(_ passkey: UInt32) -> [UInt8] {
        [UInt8](repeating: 0, count: 12) + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: passkey >> $0) }
    }
    var a: [UInt8] { [addresses.initiatorType == .random ? 1 : 0] + Self.bytes(addresses.initiator) }
    var b: [UInt8] { [addresses.responderType == .random ? 1 : 0] + Self.bytes(addresses.responder) }
    static func bytes(_ address: BluetoothAddress) -> [UInt8] {
        (0..<6).reversed().map { UInt8(truncatingIfNeeded: address.rawValue >> (8 * UInt64($0))) }
    }
    var sc: Bool { response.map { $0.authenticationRequirements & 0x08 != 0 } == true && request.map { $0.authenticationRequirements & 0x08 != 0 } == true }

    func legacyConfirm(_ r: [UInt8]) throws -> [UInt8] {
        try SecurityFunctions.c1(
            tk, r, preq: request!.encode().reversed(), pres: response!.encode().reversed(),
            iat: addresses.initiatorType == .random ? 1 : 0, rat: addresses.responderType == .random ? 1 : 0,
            ia: Self.bytes(addresses.initiator), ra: Self.bytes(addresses.responder))
    }

    /// The responder's answers to one initiator PDU.
    mutating func answer(_ bytes: [UInt8]) throws -> [[UInt8]] {
        switch try SecurityManagerPDU(decoding: bytes[...]) {
        case .pairingRequest(let request):
            self.request = request
            let response = PairingResponse(
                ioCapability: io.rawValue, oobDataFlag: 0, authenticationRequirements: auth.rawValue,
                maximumEncryptionKeySize: fault == .smallKey ? 7 : maxKeySize,
                initiatorKeyDistribution: request.initiatorKeyDistribution & keys.rawValue,
                responderKeyDistribution: request.responderKeyDistribution & keys.rawValue)
            self.response = response
            let initiatorIO = IOCapability(rawValue: request.ioCapability)!
            method = PairingMethod.select(
                initiator: initiatorIO, responder: io, initiatorMITM: request.authenticationRequirements & 4 != 0,
                responderMITM: auth.contains(.mitm), secureConnections: sc)
            return [response.encode()]
        case .pairingConfirm(let confirm) where !sc:
            // The passkey is known by now (the initiator displayed it, or ours is typed).
            if case .passkeyEntry = method { tk = Self.tk(passkey) }
            mconfirm = Self.be(confirm.value)
            var sconfirm = try legacyConfirm(srand)
            if fault == .wrongConfirm { sconfirm[0] ^= 1 }
            return [PairingConfirm.make(sconfirm)]
        case .pairingRandom(let random) where !sc:
            let mrand = Self.be(random.value)
            guard try legacyConfirm(mrand) == mconfirm || fault == .noChecks else {
                return [PairingFailed(reason: .confirmValueFailed).encode()]
            }
            return [PairingRandom.make(srand)]
        case .pairingPublicKey(let key):
            peerX = Self.be(key.x)
            peerY = Self.be(key.y)
            dhKey = try keyPair.dhKey(peerX: peerX, peerY: peerY)
            var x = keyPair.x, y = keyPair.y
            if fault == .offCurveKey { y[31] ^= 1 }
            if fault == .reflectKey { x = peerX; y = peerY }
            var answers = [try PairingPublicKey(x: x.reversed(), y: y.reversed()).encode()]
            if method == .justWorks || method == .numericComparison {
                nb = (0..<16).map { _ in UInt8.random(in: 0...255) }
                answers.append(PairingConfirm.make(try SecurityFunctions.f4(keyPair.x, peerX, nb, 0)))
            }
            return answers
        case .pairingConfirm(let confirm):  // Secure Connections Passkey Entry: Cai
            cai = Self.be(confirm.value)
            nb = (0..<16).map { _ in UInt8.random(in: 0...255) }
            let bit = 0x80 | UInt8((passkey >> UInt32(round)) & 1)
            return [PairingConfirm.make(try SecurityFunctions.f4(keyPair.x, peerX, nb, bit))]
        case .pairingRandom(let random):
            na = Self.be(random.value)
            if case .passkeyEntry = method {
                let bit = 0x80 | UInt8((passkey >> UInt32(round)) & 1)
                guard try SecurityFunctions.f4(peerX, keyPair.x, na, bit) == cai || fault == .noChecks else {
                    return [PairingFailed(reason: .confirmValueFailed).encode()]
                }
                round += 1
            }
            return [PairingRandom.make(nb)]
        case .pairingDHKeyCheck(let check):
            let (macKey, ltk) = try SecurityFunctions.f5(dhKey, na, nb, a, b)
            derivedLTK = ltk
            var r = [UInt8](repeating: 0, count: 16)
            if case .passkeyEntry = method { r = Self.tk(passkey) }
            let ioCapA = [request!.authenticationRequirements, request!.oobDataFlag, request!.ioCapability]
            guard try SecurityFunctions.f6(macKey, na, nb, r, ioCapA, a, b) == Self.be(check.value) else {
                return [PairingFailed(reason: .dhKeyCheckFailed).encode()]
            }
            let ioCapB = [response!.authenticationRequirements, response!.oobDataFlag, response!.ioCapability]
            var eb = try SecurityFunctions.f6(macKey, nb, na, r, ioCapB, b, a)
            if fault == .wrongDHKeyCheck { eb[3] ^= 0x40 }
            return [PairingDHKeyCheck.make(eb)]
        default:
            return []
        }
    }

    /// What the responder distributes once the link is encrypted.
    func distribution() throws -> [[UInt8]] {
        let agreed = KeyDistribution(rawValue: response!.responderKeyDistribution)
        var pdus: [[UInt8]] = []
        if agreed.contains(.encryptionKey), !sc {
            pdus.append(try EncryptionInformation(value: ltk).encode())
            pdus.append(CentralIdentification(ediv: 0xBEEF, rand: 0x0102_0304_0506_0708).encode())
        }
        if agreed.contains(.identityKey) {
            pdus.append(try IdentityInformation(value: irk).encode())
            pdus.append(IdentityAddressInformation(addressType: addresses.responderType, address: addresses.responder).encode())
        }
        if agreed.contains(.signingKey) { pdus.append(try SigningInformation(value: csrk).encode()) }
        return pdus
    }
}

extension SecurityValueCommand {
    /// The command for a value most significant octet first.
    static func make(_ bigEndian: [UInt8]) -> [UInt8] { try! SecurityValueCommand(value: bigEndian.reversed()).encode() }
}

/// Runs an initiator against a ``TestResponder`` until it completes or fails.
struct PairingRun {
    var initiator: PairingInitiator
    var responder: TestResponder
    var displayed: [UInt32] = []
    var compared: [UInt32] = []
    var sentCodes: [SecurityManagerCode] = []
    var encryptionKey: LongTermKey?
    /// The passkey our user types when asked (nil: none).
    var typed: UInt32?
    var confirms = true

    static let addresses = PairingInitiator.Addresses(
        initiator: BluetoothAddress("00:1B:DC:E0:6B:02")!, initiatorType: .public,
        responder: BluetoothAddress("F4:6C:0E:12:34:56")!, responderType: .random)

    init(options: PairingOptions, responderIO: IOCapability, responderAuth: AuthenticationRequirements) throws {
        initiator = PairingInitiator(
            options: options, addresses: Self.addresses,
            identity: IdentityAddressInformation(addressType: .public, address: Self.addresses.initiator),
            random: { count in (0..<count).map { _ in UInt8.random(in: 0...255) } })
        responder = try TestResponder(io: responderIO, auth: responderAuth, addresses: Self.addresses)
    }

    /// The outcome: the result, or the failure.
    mutating func run() throws -> Result<PairingResult, PairingFailure> {
        var actions: [PairingInitiator.Action] = []
        initiator.start(into: &actions)
        for _ in 0..<400 {
            guard !actions.isEmpty else { break }
            let action = actions.removeFirst()
            var next: [PairingInitiator.Action] = []
            switch action {
            case .send(let bytes):
                sentCodes.append(SecurityManagerCode(rawValue: bytes[0]))
                for answer in try responder.answer(bytes) { initiator.receive(answer[...], into: &next) }
            case .displayPasskey(let value):
                displayed.append(value)
                responder.passkey = value  // the peer's user types what we show
            case .requestPasskey:
                initiator.passkeyEntered(typed ?? responder.passkey, into: &next)
            case .confirmNumber(let value):
                compared.append(value)
                initiator.comparisonAnswered(confirms, into: &next)
            case .startEncryption(let key):
                encryptionKey = key
                initiator.encryptionChanged(status: 0, enabled: true, into: &next)
                for pdu in try responder.distribution() { initiator.receive(pdu[...], into: &next) }
            case .completed(let result):
                return .success(result)
            case .failed(let failure):
                return .failure(failure)
            }
            actions += next
        }
        throw PairingFailure.local(.unspecifiedReason, "the run did not end")
    }
}

@Suite("Security: the pairing initiator's state machine against a spec-written responder")
struct PairingInitiatorTests {
    @Test("Secure Connections Just Works: LTK derived, keys distributed both ways")
    func secureConnectionsJustWorks() throws {
        var run = try PairingRun(
            options: PairingOptions(ioCapability: .noInputNoOutput), responderIO: .noInputNoOutput,
            responderAuth: [.bonding, .secureConnections])
        let result = try run.run().get()
        #expect(result.method == .justWorks)
        #expect(result.secureConnections)
        #expect(!result.authenticated)
        #expect(result.peerLTK?.key == run.responder.derivedLTK.reversed())
        #expect(run.encryptionKey == result.peerLTK)
        #expect(result.peerIRK == run.responder.irk)
        #expect(result.peerIdentity?.address == PairingRun.addresses.responder)
        #expect(result.peerCSRK == run.responder.csrk)
        #expect(result.localLTK == nil, "no EncKey under Secure Connections")
        #expect(result.localIRK != nil && result.localCSRK != nil)
        #expect(run.sentCodes.first == .pairingRequest)
    }

    @Test("Secure Connections Numeric Comparison: the six digits are asked, and a no fails")
    func numericComparison() throws {
        var run = try PairingRun(
            options: PairingOptions(ioCapability: .displayYesNo), responderIO: .displayYesNo,
            responderAuth: [.bonding, .mitm, .secureConnections])
        let result = try run.run().get()
        #expect(result.method == .numericComparison)
        #expect(result.authenticated)
        #expect(run.compared.count == 1 && run.compared[0] < 1_000_000)

        var declined = try PairingRun(
            options: PairingOptions(ioCapability: .displayYesNo), responderIO: .displayYesNo,
            responderAuth: [.bonding, .mitm, .secureConnections])
        declined.confirms = false
        #expect(try declined.run() == .failure(.userDeclined("the numbers were not confirmed")))
        #expect(declined.sentCodes.last == .pairingFailed)
    }

    @Test("Secure Connections Passkey Entry, we display and we enter: 20 rounds each")
    func secureConnectionsPasskey() throws {
        var display = try PairingRun(
            options: PairingOptions(ioCapability: .displayOnly), responderIO: .keyboardOnly,
            responderAuth: [.bonding, .mitm, .secureConnections])
        let shown = try display.run().get()
        #expect(shown.method == .passkeyEntry(initiatorInputs: false, responderInputs: true))
        #expect(display.displayed.count == 1)
        #expect(display.sentCodes.filter { $0 == .pairingConfirm }.count == 20)

        var enter = try PairingRun(
            options: PairingOptions(ioCapability: .keyboardOnly), responderIO: .displayOnly,
            responderAuth: [.bonding, .mitm, .secureConnections])
        let entered = try enter.run().get()
        #expect(entered.method == .passkeyEntry(initiatorInputs: true, responderInputs: false))
        #expect(entered.authenticated)
    }

    @Test("a wrong passkey fails with Confirm Value Failed")
    func wrongPasskey() throws {
        var run = try PairingRun(
            options: PairingOptions(ioCapability: .keyboardOnly), responderIO: .displayOnly,
            responderAuth: [.bonding, .mitm, .secureConnections])
        run.typed = 111_111
        // The responder checks Cai first and refuses.
        guard case .failure(.peer(.confirmValueFailed)) = try run.run() else {
            Issue.record("a wrong passkey did not fail the responder's confirm check")
            return
        }
        // A responder that does not check: our own check of Cbi refuses.
        var lenient = try PairingRun(
            options: PairingOptions(ioCapability: .keyboardOnly), responderIO: .displayOnly,
            responderAuth: [.bonding, .mitm, .secureConnections])
        lenient.typed = 111_111
        lenient.responder.fault = .noChecks
        guard case .failure(.local(.confirmValueFailed, _)) = try lenient.run() else {
            Issue.record("a wrong passkey did not fail our confirm check")
            return
        }
        var lenientLegacy = try PairingRun(
            options: PairingOptions(ioCapability: .keyboardOnly), responderIO: .displayOnly, responderAuth: [.bonding, .mitm])
        lenientLegacy.typed = 111_111
        lenientLegacy.responder.fault = .noChecks
        guard case .failure(.local(.confirmValueFailed, _)) = try lenientLegacy.run() else {
            Issue.record("a wrong legacy passkey did not fail our Sconfirm check")
            return
        }
        var legacy = try PairingRun(
            options: PairingOptions(ioCapability: .keyboardOnly), responderIO: .displayOnly, responderAuth: [.bonding, .mitm])
        legacy.typed = 111_111
        // Legacy: the responder checks Mconfirm first (it gets Mrand before we get Srand).
        guard case .failure(.peer(.confirmValueFailed)) = try legacy.run() else {
            Issue.record("a wrong legacy passkey did not fail the confirm check")
            return
        }
    }

    @Test("LE legacy Just Works and Passkey Entry: STK, then the peer's LTK, EDIV and Rand, and ours")
    func legacy() throws {
        var run = try PairingRun(
            options: PairingOptions(ioCapability: .noInputNoOutput), responderIO: .noInputNoOutput, responderAuth: [.bonding])
        let result = try run.run().get()
        #expect(!result.secureConnections)
        #expect(result.method == .justWorks)
        #expect(result.peerLTK == LongTermKey(key: run.responder.ltk, ediv: 0xBEEF, rand: 0x0102_0304_0506_0708))
        #expect(result.localLTK != nil)
        #expect(run.sentCodes.contains(.encryptionInformation) && run.sentCodes.contains(.centralIdentification))

        var passkey = try PairingRun(
            options: PairingOptions(ioCapability: .keyboardDisplay), responderIO: .keyboardOnly,
            responderAuth: [.bonding, .mitm])
        let entered = try passkey.run().get()
        #expect(entered.method == .passkeyEntry(initiatorInputs: false, responderInputs: true))
        #expect(entered.authenticated)
        #expect(passkey.displayed.count == 1)
    }

    @Test("a public key off the curve fails the pairing and yields no key (CVE-2018-5383)")
    func offCurvePublicKey() throws {
        var run = try PairingRun(
            options: PairingOptions(ioCapability: .noInputNoOutput), responderIO: .noInputNoOutput,
            responderAuth: [.bonding, .secureConnections])
        run.responder.fault = .offCurveKey
        guard case .failure(.local(.invalidParameters, let why)) = try run.run() else {
            Issue.record("an off-curve key was accepted")
            return
        }
        #expect(why.contains("CVE-2018-5383"))
        #expect(run.encryptionKey == nil)
    }

    @Test("a reflected public key, a wrong DHKey check, a key below the minimum")
    func otherFailures() throws {
        var reflect = try PairingRun(
            options: PairingOptions(ioCapability: .noInputNoOutput), responderIO: .noInputNoOutput,
            responderAuth: [.bonding, .secureConnections])
        reflect.responder.fault = .reflectKey
        guard case .failure(.local(.invalidParameters, _)) = try reflect.run() else {
            Issue.record("a reflected key was accepted")
            return
        }
        var check = try PairingRun(
            options: PairingOptions(ioCapability: .noInputNoOutput), responderIO: .noInputNoOutput,
            responderAuth: [.bonding, .secureConnections])
        check.responder.fault = .wrongDHKeyCheck
        guard case .failure(.local(.dhKeyCheckFailed, _)) = try check.run() else {
            Issue.record("a wrong Eb was accepted")
            return
        }
        #expect(check.encryptionKey == nil)
        var small = try PairingRun(
            options: PairingOptions(ioCapability: .noInputNoOutput), responderIO: .noInputNoOutput,
            responderAuth: [.bonding, .secureConnections])
        small.responder.fault = .smallKey
        guard case .failure(.local(.encryptionKeySize, _)) = try small.run() else {
            Issue.record("a 7-octet key was accepted with minimum 16")
            return
        }
        var smallAllowed = try PairingRun(
            options: PairingOptions(ioCapability: .noInputNoOutput, minimumKeySize: 7), responderIO: .noInputNoOutput,
            responderAuth: [.bonding, .secureConnections])
        smallAllowed.responder.fault = .smallKey
        let result = try smallAllowed.run().get()
        #expect(result.keySize == 7)
        #expect(result.peerLTK?.key.suffix(9).allSatisfy { $0 == 0 } == true, "the key's 9 most significant octets are zero")
    }

    @Test("the peer's Pairing Not Supported, an unexpected PDU, the timeout; nothing after")
    func peerFailuresAndTimeout() throws {
        var initiator = PairingInitiator(
            options: PairingOptions(), addresses: PairingRun.addresses,
            identity: IdentityAddressInformation(addressType: .public, address: PairingRun.addresses.initiator),
            random: { Array(repeating: 1, count: $0) })
        var actions: [PairingInitiator.Action] = []
        initiator.start(into: &actions)
        actions.removeAll()
        initiator.receive(PairingFailed(reason: .pairingNotSupported).encode()[...], into: &actions)
        #expect(actions == [.failed(.peer(.pairingNotSupported))])
        #expect(!initiator.isActive)

        var unexpected = PairingInitiator(
            options: PairingOptions(), addresses: PairingRun.addresses,
            identity: IdentityAddressInformation(addressType: .public, address: PairingRun.addresses.initiator),
            random: { Array(repeating: 1, count: $0) })
        actions.removeAll()
        unexpected.start(into: &actions)
        actions.removeAll()
        unexpected.receive(PairingRandom.make([UInt8](repeating: 9, count: 16))[...], into: &actions)
        #expect(actions.first == .send(PairingFailed(reason: .unspecifiedReason).encode()))

        var timed = PairingInitiator(
            options: PairingOptions(), addresses: PairingRun.addresses,
            identity: IdentityAddressInformation(addressType: .public, address: PairingRun.addresses.initiator),
            random: { Array(repeating: 1, count: $0) })
        actions.removeAll()
        timed.start(into: &actions)
        actions.removeAll()
        timed.timerExpired(into: &actions)
        #expect(actions == [.failed(.timeout)])
        actions.removeAll()
        timed.receive(PairingResponse(
            ioCapability: 3, oobDataFlag: 0, authenticationRequirements: 1, maximumEncryptionKeySize: 16,
            initiatorKeyDistribution: 0, responderKeyDistribution: 0).encode()[...], into: &actions)
        #expect(actions.isEmpty, "no SMP after the timeout")
    }

    @Test("Secure Connections only refuses a legacy peer; MITM required refuses Just Works")
    func policies() throws {
        var options = PairingOptions(ioCapability: .noInputNoOutput, secureConnectionsOnly: true)
        var run = try PairingRun(options: options, responderIO: .noInputNoOutput, responderAuth: [.bonding])
        guard case .failure(.local(.authenticationRequirements, _)) = try run.run() else {
            Issue.record("a legacy peer was accepted under Secure Connections only")
            return
        }
        options = PairingOptions(ioCapability: .keyboardDisplay)
        options.requireMITM = true
        run = try PairingRun(options: options, responderIO: .noInputNoOutput, responderAuth: [.bonding, .secureConnections])
        guard case .failure(.local(.authenticationRequirements, _)) = try run.run() else {
            Issue.record("Just Works was accepted when MITM protection was required")
            return
        }
    }

    /// Table 2.8 spot checks (responder row, initiator column).
    @Test func associationModels() {
        let select = { (i: IOCapability, r: IOCapability, sc: Bool) in
            PairingMethod.select(initiator: i, responder: r, initiatorMITM: true, responderMITM: true, secureConnections: sc)
        }
        #expect(select(.keyboardDisplay, .keyboardDisplay, true) == .numericComparison)
        #expect(select(.keyboardDisplay, .keyboardDisplay, false) == .passkeyEntry(initiatorInputs: false, responderInputs: true))
        #expect(select(.keyboardOnly, .keyboardOnly, true) == .passkeyEntry(initiatorInputs: true, responderInputs: true))
        #expect(select(.displayYesNo, .displayOnly, true) == .justWorks)
        #expect(select(.keyboardOnly, .displayYesNo, true) == .passkeyEntry(initiatorInputs: true, responderInputs: false))
        #expect(select(.noInputNoOutput, .keyboardDisplay, true) == .justWorks)
        #expect(
            PairingMethod.select(
                initiator: .keyboardDisplay, responder: .keyboardDisplay, initiatorMITM: false, responderMITM: false,
                secureConnections: true) == .justWorks)
    }
}
