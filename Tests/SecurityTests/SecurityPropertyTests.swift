import Bluetooth
import L2CAP
import Security
import Testing

/// Issue 36: security properties, not parsing — over random hostile SMP traffic into our
/// responder (the peripheral role) and a man in the middle between our two roles: the key and
/// level granted never exceed what a completed pairing proves; a failed pairing yields no key.
@Suite("Security: properties under hostile SMP traffic")
struct SecurityPropertyTests {
    static let addresses = PairingInitiator.Addresses(
        initiator: BluetoothAddress("00:1B:DC:E0:6B:02")!, initiatorType: .public,
        responder: BluetoothAddress("F4:6C:0E:12:34:56")!, responderType: .random)

    /// A deterministic generator (xorshift), so a failing seed can be replayed.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
        mutating func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
    }

    /// One well-formed SMP PDU of any kind, with random contents.
    static func randomPDU(_ g: inout Generator) -> [UInt8] {
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &g) } }
        switch Int.random(in: 0..<10, using: &g) {
        case 0: return [0x03] + bytes(16)  // Pairing Confirm
        case 1: return [0x04] + bytes(16)  // Pairing Random
        case 2: return [0x0C] + bytes(64)  // Pairing Public Key
        case 3: return [0x0D] + bytes(16)  // Pairing DHKey Check
        case 4: return [0x06] + bytes(16)  // Encryption Information
        case 5: return [0x07] + bytes(10)  // Central Identification
        case 6: return [0x08] + (Bool.random(using: &g) ? [UInt8](repeating: 0, count: 16) : bytes(16))  // Identity Information
        case 7: return [0x09, UInt8.random(in: 0...1, using: &g)] + bytes(6)  // Identity Address Information
        case 8: return [0x0A] + bytes(16)  // Signing Information
        default: return [0x02, 0x03, 0x00, 0x0D, 0x10, 0x07, 0x07]  // a Pairing Response, out of place
        }
    }

    @Test("random well-formed SMP after a Pairing Request never gives our responder a key or a completed pairing", arguments: 0..<8)
    func randomTrafficNeverCompletes(_ batch: Int) {
        for seed in UInt64(batch * 250)..<UInt64(batch * 250 + 250) {
            var g = Generator(seed: seed)
            var options = PairingOptions(ioCapability: [.noInputNoOutput, .displayOnly, .keyboardOnly, .displayYesNo].randomElement(using: &g)!)
            options.legacyOnly = Bool.random(using: &g)
            var responder = PairingResponder(
                options: options, addresses: Self.addresses,
                identity: IdentityAddressInformation(addressType: .random, address: Self.addresses.responder),
                random: { n in (0..<n).map { _ in UInt8.random(in: 0...255) } })
            var actions: [PairingResponder.Action] = []
            let authReq: UInt8 = [0x01, 0x05, 0x09, 0x0D].randomElement(using: &g)!
            responder.receive([0x01, UInt8.random(in: 0...4, using: &g), 0x00, authReq, 0x10, 0x07, 0x07][...], into: &actions)
            var failed = false
            for _ in 0..<Int.random(in: 1...12, using: &g) {
                switch Int.random(in: 0..<12, using: &g) {
                case 0: responder.encryptionChanged(status: 0, enabled: true, into: &actions)
                case 1: responder.passkeyEntered(UInt32.random(in: 0...999_999, using: &g), into: &actions)
                case 2: responder.comparisonAnswered(Bool.random(using: &g), into: &actions)
                default: responder.receive(Self.randomPDU(&g)[...], into: &actions)
                }
            }
            for action in actions {
                switch action {
                case .completed(let result): Issue.record("seed \(seed): completed \(result)")
                case .keyReady: Issue.record("seed \(seed): a key from random traffic")
                case .failed: failed = true
                case .send(let pdu) where failed && pdu.first != 0x05:
                    Issue.record("seed \(seed): sent \(pdu) after failing")
                default: break
                }
            }
        }
    }

    @Test(
        "a man in the middle changing any pre-encryption PDU: our responder never completes; untouched, both agree and the level is the method's",
        arguments: 0..<4)
    func tamperingNeverCompletes(_ batch: Int) {
        let models: [(IOCapability, IOCapability)] = [
            (.noInputNoOutput, .noInputNoOutput), (.displayYesNo, .displayYesNo), (.keyboardOnly, .displayOnly),
            (.displayOnly, .keyboardOnly), (.keyboardDisplay, .keyboardDisplay),
        ]
        for seed in UInt64(batch * 40)..<UInt64(batch * 40 + 40) {
            var g = Generator(seed: seed &+ 1000)
            let (centralIO, peripheralIO) = models.randomElement(using: &g)!
            var central = PairingOptions(ioCapability: centralIO)
            var peripheral = PairingOptions(ioCapability: peripheralIO)
            let legacy = Bool.random(using: &g)
            central.legacyOnly = legacy
            peripheral.legacyOnly = legacy
            var pair = PairingPair(central: central, peripheral: peripheral)
            pair.usersCompare = true
            let shouldTamper = Bool.random(using: &g)
            let target = Int.random(in: 0..<4, using: &g)
            let flip = Int.random(in: 0..<64, using: &g)
            let bit = UInt8(1) << UInt8.random(in: 0..<8, using: &g)
            var seen = 0
            if shouldTamper {
                pair.tamper = { pdu in
                    // Confirm, Random, Public Key, DHKey Check: the PDUs that carry the proof.
                    guard let code = pdu.first, [0x03, 0x04, 0x0C, 0x0D].contains(code) else { return false }
                    defer { seen += 1 }
                    guard seen == target || (seen > target && seen % 2 == 0) else { return false }
                    pdu[1 + flip % (pdu.count - 1)] ^= bit
                    return true
                }
            }
            pair.run()
            if pair.tampered > 0 {
                #expect(pair.responderResult == nil, "seed \(seed): completed after \(pair.tampered) changed PDU(s)")
            } else {
                let result = pair.responderResult
                #expect(result != nil && pair.initiatorResult != nil, "seed \(seed): \(String(describing: pair.failure))")
                if let result {
                    #expect(result.authenticated == result.method.isAuthenticated, "seed \(seed)")
                    #expect(result.peerLTK?.key ?? result.localLTK?.key == pair.initiatorResult.flatMap { $0.peerLTK?.key ?? $0.localLTK?.key }
                        || !result.secureConnections, "seed \(seed)")
                }
            }
        }
    }
}
