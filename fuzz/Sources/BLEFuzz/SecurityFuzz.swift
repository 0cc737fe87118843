import Bluetooth
import L2CAP
import Security

/// The pairing initiator fed by a hostile peer (issue 17).
enum SecurityFuzz {
    static let addresses = PairingInitiator.Addresses(
        initiator: BluetoothAddress("00:1B:DC:E0:6B:02")!, initiatorType: .public,
        responder: BluetoothAddress("F4:6C:0E:12:34:56")!, responderType: .random)

    /// The input is the peer's PDUs, each a length octet then that many octets; the first octet
    /// chooses our IO capability and whether we insist on Secure Connections. Invariants: every
    /// PDU we send decodes; nothing but a Pairing Failed after a failure, nothing at all after
    /// the end; keys (completion) only after encryption; a failure or completion at most once.
    static func initiator(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        var options = PairingOptions(
            ioCapability: IOCapability.allCases[Int(first % 5)], secureConnectionsOnly: first & 0x08 != 0)
        options.requireMITM = first & 0x10 != 0
        // Deterministic randomness and key pair: runs are reproducible.
        var machine = PairingInitiator(
            options: options, addresses: addresses,
            identity: IdentityAddressInformation(addressType: .public, address: addresses.initiator),
            random: { count in (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) } },
            keyPair: fixedKeyPair)
        var actions: [PairingInitiator.Action] = []
        machine.start(into: &actions)
        var ends = 0
        var encrypted = false
        var index = 1
        func check(_ actions: inout [PairingInitiator.Action]) {
            for action in actions {
                require(ends == 0, "an action after the end: \(action)")
                switch action {
                case .send(let pdu):
                    require((try? SecurityManagerPDU(decoding: pdu[...])) != nil, "we sent an undecodable SMP PDU")
                case .startEncryption(let key):
                    require(key.key.count == 16, "an encryption key of \(key.key.count) octets")
                    encrypted = true
                case .completed:
                    require(encrypted, "keys without encryption")
                    ends += 1
                case .failed:
                    ends += 1
                case .displayPasskey(let value), .confirmNumber(let value):
                    require(value <= 999_999, "a six-digit value of \(value)")
                case .requestPasskey:
                    break
                }
            }
        }
        check(&actions)
        while index < bytes.count {
            let length = Int(bytes[index])
            index += 1
            let pdu = Array(bytes[index..<min(bytes.count, index + length)])
            index += length
            var next: [PairingInitiator.Action] = []
            let wasActive = machine.isActive
            machine.receive(pdu[...], into: &next)
            if !wasActive { require(next.isEmpty, "an answer after the end") }
            // Answer what the machine asks, as a host would.
            var answered: [PairingInitiator.Action] = []
            for action in next {
                switch action {
                case .requestPasskey: machine.passkeyEntered(123_456, into: &answered)
                case .confirmNumber: machine.comparisonAnswered(true, into: &answered)
                case .startEncryption: machine.encryptionChanged(status: 0, enabled: true, into: &answered)
                default: break
                }
            }
            next += answered
            check(&next)
        }
        var timeout: [PairingInitiator.Action] = []
        machine.timerExpired(into: &timeout)
        if ends == 0 { check(&timeout) } else { require(timeout.isEmpty, "a timeout after the end acted") }
    }

    /// The responder fed by a hostile central: the same invariants as the initiator's (sent PDUs
    /// decode, keys only after encryption, one end, silence after it).
    static func responder(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        var options = PairingOptions(
            ioCapability: IOCapability.allCases[Int(first % 5)], secureConnectionsOnly: first & 0x08 != 0)
        options.requireMITM = first & 0x10 != 0
        var machine = PairingResponder(
            options: options, addresses: addresses,
            identity: IdentityAddressInformation(addressType: .public, address: addresses.responder),
            random: { count in (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 53 &+ 7) } }, keyPair: fixedKeyPair)
        var ends = 0
        var keyReady = false
        var index = 1
        while index < bytes.count {
            let length = Int(bytes[index])
            index += 1
            let pdu = Array(bytes[index..<min(bytes.count, index + length)])
            index += length
            var actions: [PairingResponder.Action] = []
            let wasActive = machine.isActive || ends == 0
            machine.receive(pdu[...], into: &actions)
            var answered: [PairingResponder.Action] = []
            for action in actions {
                switch action {
                case .requestPasskey: machine.passkeyEntered(123_456, into: &answered)
                case .confirmNumber: machine.comparisonAnswered(true, into: &answered)
                case .keyReady: machine.encryptionChanged(status: 0, enabled: true, into: &answered)
                default: break
                }
            }
            for action in actions + answered {
                require(wasActive, "an action after the end")
                switch action {
                case .send(let sent):
                    require((try? SecurityManagerPDU(decoding: sent[...])) != nil, "we sent an undecodable SMP PDU")
                case .keyReady(let key):
                    require(key.key.count == 16, "a key of \(key.key.count) octets")
                    keyReady = true
                case .completed:
                    require(keyReady, "keys without encryption")
                    ends += 1
                case .failed:
                    ends += 1
                case .displayPasskey(let value), .confirmNumber(let value):
                    require(value <= 999_999, "a six-digit value of \(value)")
                case .requestPasskey:
                    break
                }
                require(ends <= 1, "two ends")
            }
        }
    }

    /// Every SMP command: typed error or a round trip to the same octets.
    static func codec(_ bytes: [UInt8]) {
        guard let pdu = try? SecurityManagerPDU(decoding: bytes[...]) else { return }
        require(pdu.encoded() == bytes, "SMP re-encoding differs")
        _ = pdu.description
    }

    static let fixedKeyPair: P256KeyPair? = try? P256KeyPair(
        privateKey: Hex.decode("3f49f6d4a3c55f3874c9b3e3d2103f504aff607beb40b7995899b8a6cd3c1abd")!,
        x: Hex.decode("20b003d2f297be2c5e2c83a7e9f9a5b9eff49111acf4fddbcc0301480e359de6")!,
        y: Hex.decode("dc809c49652aeb6d63329abf5a52155c766345c28fed3024741c8ed01589d28b")!)
}
