import Bluetooth

extension SecurityManagerPDU: CustomStringConvertible {
    /// One line: the command and its fields, keys and values in hex as the PDU carries them
    /// (least significant octet first), as `dump` shows them.
    public var description: String {
        func features<Kind>(_ command: PairingFeaturesCommand<Kind>) -> String {
            let io = IOCapability(rawValue: command.ioCapability).map { "\($0)" } ?? "reserved 0x" + hex2(command.ioCapability)
            return "IO \(io), OOB \(command.oobDataFlag), AuthReq 0x\(hex2(command.authenticationRequirements))"
                + Self.authText(command.authenticationRequirements)
                + ", max key \(command.maximumEncryptionKeySize), initiator keys "
                + Self.keysText(command.initiatorKeyDistribution) + ", responder keys "
                + Self.keysText(command.responderKeyDistribution)
        }
        switch self {
        case .pairingRequest(let command): return "SMP Pairing Request: " + features(command)
        case .pairingResponse(let command): return "SMP Pairing Response: " + features(command)
        case .pairingConfirm(let command): return "SMP Pairing Confirm: " + Hex.encode(command.value)
        case .pairingRandom(let command): return "SMP Pairing Random: " + Hex.encode(command.value)
        case .pairingFailed(let command): return "SMP Pairing Failed: \(command.reason)"
        case .encryptionInformation(let command): return "SMP Encryption Information: LTK " + Hex.encode(command.value)
        case .centralIdentification(let command):
            return "SMP Central Identification: EDIV 0x" + String(command.ediv, radix: 16) + ", Rand 0x"
                + String(command.rand, radix: 16)
        case .identityInformation(let command): return "SMP Identity Information: IRK " + Hex.encode(command.value)
        case .identityAddressInformation(let command):
            return "SMP Identity Address Information: \(command.address) (\(command.addressType))"
        case .signingInformation(let command): return "SMP Signing Information: CSRK " + Hex.encode(command.value)
        case .securityRequest(let command):
            return "SMP Security Request: AuthReq 0x\(hex2(command.authenticationRequirements))"
                + Self.authText(command.authenticationRequirements)
        case .pairingPublicKey(let command):
            return "SMP Pairing Public Key: X " + Hex.encode(command.x) + ", Y " + Hex.encode(command.y)
        case .pairingDHKeyCheck(let command): return "SMP Pairing DHKey Check: " + Hex.encode(command.value)
        case .pairingKeypressNotification(let command):
            let names = ["entry started", "digit entered", "digit erased", "cleared", "entry completed"]
            let type = Int(command.notificationType)
            return "SMP Pairing Keypress Notification: " + (type < names.count ? names[type] : "type \(type)")
        }
    }

    static func authText(_ raw: UInt8) -> String {
        let auth = AuthenticationRequirements(rawValue: raw)
        var names: [String] = []
        if auth.contains(.bonding) { names.append("bonding") }
        if auth.contains(.mitm) { names.append("MITM") }
        if auth.contains(.secureConnections) { names.append("SC") }
        if auth.contains(.keypress) { names.append("keypress") }
        if auth.contains(.ct2) { names.append("CT2") }
        return names.isEmpty ? "" : " (" + names.joined(separator: ", ") + ")"
    }

    static func keysText(_ raw: UInt8) -> String {
        let keys = KeyDistribution(rawValue: raw)
        var names: [String] = []
        if keys.contains(.encryptionKey) { names.append("EncKey") }
        if keys.contains(.identityKey) { names.append("IdKey") }
        if keys.contains(.signingKey) { names.append("SignKey") }
        if keys.contains(.linkKey) { names.append("LinkKey") }
        return names.isEmpty ? "none" : names.joined(separator: "|")
    }
}

private func hex2(_ value: UInt8) -> String {
    let text = String(value, radix: 16)
    return text.count < 2 ? "0" + text : text
}
