import Bluetooth
import L2CAP
import Security
import Testing

/// Our responder against our initiator, every association model both ways: the keys agree.
struct PairingPair {
    var initiator: PairingInitiator
    var responder: PairingResponder
    var initiatorResult: PairingResult?
    var responderResult: PairingResult?
    var failure: PairingFailure?
    var shown: UInt32?
    var typedByResponder: UInt32?
    var typedByInitiator: UInt32?
    var encryptionKey: LongTermKey?
    var responderKey: LongTermKey?
    /// A man in the middle on the initiator's PDUs: may change one in place, saying whether it did.
    var tamper: ((inout [UInt8]) -> Bool)?
    /// How many PDUs `tamper` changed.
    var tampered = 0
    /// The users compare the six digits and refuse when they differ (a man in the middle's
    /// doing), instead of the tests' expectation that they match.
    var usersCompare = false

    static func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    init(central: PairingOptions, peripheral: PairingOptions) {
        let addresses = PairingRun.addresses
        initiator = PairingInitiator(
            options: central, addresses: addresses,
            identity: IdentityAddressInformation(addressType: .public, address: addresses.initiator), random: Self.random)
        responder = PairingResponder(
            options: peripheral, addresses: addresses,
            identity: IdentityAddressInformation(addressType: .random, address: addresses.responder), random: Self.random)
    }

    /// An event loop: each side's actions, the PDUs in flight both ways, users who type what
    /// was shown once it is shown, and the link layer's encryption when both keys are known.
    mutating func run() {
        var iActions: [PairingInitiator.Action] = []
        var rActions: [PairingResponder.Action] = []
        var toResponder: [[UInt8]] = []
        var toInitiator: [[UInt8]] = []
        var initiatorWantsPasskey = false
        var responderWantsPasskey = false
        initiator.start(into: &iActions)
        for _ in 0..<5000 {
            if failure != nil || (initiatorResult != nil && responderResult != nil) { return }
            if !iActions.isEmpty {
                let action = iActions.removeFirst()
                switch action {
                case .send(let pdu): toResponder.append(pdu)
                case .displayPasskey(let value): shown = value
                case .requestPasskey: initiatorWantsPasskey = true
                case .confirmNumber(let value):
                    let same = shown == nil || shown == value
                    if !usersCompare { #expect(same, "both show the same six digits") }
                    shown = shown ?? value
                    initiator.comparisonAnswered(same || !usersCompare, into: &iActions)
                case .startEncryption(let key): encryptionKey = key
                case .completed(let result): initiatorResult = result
                case .failed(let failure): self.failure = failure
                }
                continue
            }
            if !rActions.isEmpty {
                let action = rActions.removeFirst()
                switch action {
                case .send(let pdu): toInitiator.append(pdu)
                case .displayPasskey(let value): shown = value
                case .requestPasskey: responderWantsPasskey = true
                case .confirmNumber(let value):
                    let same = shown == nil || shown == value
                    if !usersCompare { #expect(same, "both show the same six digits") }
                    shown = shown ?? value
                    responder.comparisonAnswered(same || !usersCompare, into: &rActions)
                case .keyReady(let key): responderKey = key
                case .completed(let result): responderResult = result
                case .failed(let failure): self.failure = failure
                }
                continue
            }
            if initiatorWantsPasskey, let value = typedByInitiator ?? shown {
                initiatorWantsPasskey = false
                initiator.passkeyEntered(value, into: &iActions)
                continue
            }
            if responderWantsPasskey, let value = typedByResponder ?? shown {
                responderWantsPasskey = false
                responder.passkeyEntered(value, into: &rActions)
                continue
            }
            if !toResponder.isEmpty {
                var pdu = toResponder.removeFirst()
                if let tamper, tamper(&pdu) { tampered += 1 }
                responder.receive(pdu[...], into: &rActions)
                continue
            }
            if !toInitiator.isEmpty {
                initiator.receive(toInitiator.removeFirst()[...], into: &iActions)
                continue
            }
            // The link layer: the central encrypts with its key, the peripheral answers with its.
            if let key = encryptionKey, let answer = responderKey {
                encryptionKey = nil
                responderKey = nil
                let matched = key.key == answer.key
                initiator.encryptionChanged(status: matched ? 0 : 0x3D, enabled: matched, into: &iActions)
                responder.encryptionChanged(status: matched ? 0 : 0x3D, enabled: matched, into: &rActions)
                continue
            }
            return  // quiescent
        }
    }
}

@Suite("Security: our responder against our initiator")
struct PairingResponderTests {
    static let cases: [(IOCapability, IOCapability, Bool)] = [
        (.noInputNoOutput, .noInputNoOutput, true),
        (.displayYesNo, .displayYesNo, true),
        (.keyboardOnly, .displayOnly, true),
        (.displayOnly, .keyboardOnly, true),
        (.keyboardOnly, .keyboardOnly, true),
        (.keyboardDisplay, .keyboardDisplay, true),
        (.noInputNoOutput, .noInputNoOutput, false),
        (.keyboardOnly, .displayOnly, false),
        (.displayOnly, .keyboardOnly, false),
        (.keyboardDisplay, .keyboardDisplay, false),
    ]

    @Test(arguments: cases)
    func everyModelAgreesOnTheKeys(_ setup: (IOCapability, IOCapability, Bool)) {
        var central = PairingOptions(ioCapability: setup.0)
        var peripheral = PairingOptions(ioCapability: setup.1)
        central.legacyOnly = !setup.2
        peripheral.legacyOnly = !setup.2
        var pair = PairingPair(central: central, peripheral: peripheral)
        if case .passkeyEntry(true, true) = PairingMethod.select(
            initiator: setup.0, responder: setup.1, initiatorMITM: true, responderMITM: true, secureConnections: setup.2)
        {
            pair.typedByInitiator = 424_242
            pair.typedByResponder = 424_242
        }
        pair.run()
        #expect(pair.failure == nil, "\(setup): \(String(describing: pair.failure))")
        guard let central = pair.initiatorResult, let peripheral = pair.responderResult else {
            Issue.record("\(setup): did not complete")
            return
        }
        #expect(central.method == peripheral.method)
        #expect(central.secureConnections == setup.2)
        if setup.2 {
            #expect(central.peerLTK == peripheral.peerLTK, "one derived LTK")
        } else {
            #expect(central.peerLTK == peripheral.localLTK, "the peripheral's LTK, EDIV and Rand reached the central")
            #expect(central.localLTK == peripheral.peerLTK, "and the central's the peripheral")
        }
        #expect(central.peerIRK == peripheral.localIRK && central.localIRK == peripheral.peerIRK)
        #expect(central.peerCSRK == peripheral.localCSRK)
        #expect(peripheral.peerIdentity?.address == PairingRun.addresses.initiator)
    }

    @Test func aWrongPasskeyFailsOnBothSides() {
        var pair = PairingPair(central: PairingOptions(ioCapability: .keyboardOnly), peripheral: PairingOptions(ioCapability: .displayOnly))
        pair.typedByInitiator = 1
        pair.run()
        guard case .local(.confirmValueFailed, _)? = pair.failure else {
            Issue.record("a wrong passkey did not fail the confirm check: \(String(describing: pair.failure))")
            return
        }
        #expect(pair.initiatorResult == nil && pair.responderResult == nil)
    }

    @Test func anOffCurveKeyFromTheCentralIsRefused() {
        var responder = PairingResponder(
            options: PairingOptions(ioCapability: .noInputNoOutput), addresses: PairingRun.addresses,
            identity: IdentityAddressInformation(addressType: .random, address: PairingRun.addresses.responder),
            random: PairingPair.random)
        var actions: [PairingResponder.Action] = []
        responder.receive(PairingRequest(
            ioCapability: 3, oobDataFlag: 0, authenticationRequirements: 0x09, maximumEncryptionKeySize: 16,
            initiatorKeyDistribution: 3, responderKeyDistribution: 3).encode()[...], into: &actions)
        actions.removeAll()
        responder.receive(try! PairingPublicKey(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32)).encode()[...], into: &actions)
        #expect(actions.first == .send(PairingFailed(reason: .invalidParameters).encode()))
        #expect(!responder.isActive)
    }
}
