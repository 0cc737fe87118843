import Bluetooth
import L2CAP

/// The Code of a Security Manager Protocol command. Open.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.3 (Table 3.3)
public struct SecurityManagerCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let pairingRequest = SecurityManagerCode(rawValue: 0x01)
    public static let pairingResponse = SecurityManagerCode(rawValue: 0x02)
    public static let pairingConfirm = SecurityManagerCode(rawValue: 0x03)
    public static let pairingRandom = SecurityManagerCode(rawValue: 0x04)
    public static let pairingFailed = SecurityManagerCode(rawValue: 0x05)
    public static let encryptionInformation = SecurityManagerCode(rawValue: 0x06)
    public static let centralIdentification = SecurityManagerCode(rawValue: 0x07)
    public static let identityInformation = SecurityManagerCode(rawValue: 0x08)
    public static let identityAddressInformation = SecurityManagerCode(rawValue: 0x09)
    public static let signingInformation = SecurityManagerCode(rawValue: 0x0A)
    public static let securityRequest = SecurityManagerCode(rawValue: 0x0B)
    public static let pairingPublicKey = SecurityManagerCode(rawValue: 0x0C)
    public static let pairingDHKeyCheck = SecurityManagerCode(rawValue: 0x0D)
    public static let pairingKeypressNotification = SecurityManagerCode(rawValue: 0x0E)

    public var description: String {
        switch rawValue {
        case 0x01: return "Pairing Request"
        case 0x02: return "Pairing Response"
        case 0x03: return "Pairing Confirm"
        case 0x04: return "Pairing Random"
        case 0x05: return "Pairing Failed"
        case 0x06: return "Encryption Information"
        case 0x07: return "Central Identification"
        case 0x08: return "Identity Information"
        case 0x09: return "Identity Address Information"
        case 0x0A: return "Signing Information"
        case 0x0B: return "Security Request"
        case 0x0C: return "Pairing Public Key"
        case 0x0D: return "Pairing DHKey Check"
        case 0x0E: return "Pairing Keypress Notification"
        default: return "SMP code " + l2capHex(rawValue, 2)
        }
    }
}

/// Reason of a Pairing Failed command. Open.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.5 (Table 3.7)
public struct PairingFailedReason: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let passkeyEntryFailed = PairingFailedReason(rawValue: 0x01)
    public static let oobNotAvailable = PairingFailedReason(rawValue: 0x02)
    public static let authenticationRequirements = PairingFailedReason(rawValue: 0x03)
    public static let confirmValueFailed = PairingFailedReason(rawValue: 0x04)
    public static let pairingNotSupported = PairingFailedReason(rawValue: 0x05)
    public static let encryptionKeySize = PairingFailedReason(rawValue: 0x06)
    public static let commandNotSupported = PairingFailedReason(rawValue: 0x07)
    public static let unspecifiedReason = PairingFailedReason(rawValue: 0x08)
    public static let repeatedAttempts = PairingFailedReason(rawValue: 0x09)
    public static let invalidParameters = PairingFailedReason(rawValue: 0x0A)
    public static let dhKeyCheckFailed = PairingFailedReason(rawValue: 0x0B)
    public static let numericComparisonFailed = PairingFailedReason(rawValue: 0x0C)
    public static let brEDRPairingInProgress = PairingFailedReason(rawValue: 0x0D)
    public static let crossTransportKeyDerivationNotAllowed = PairingFailedReason(rawValue: 0x0E)
    public static let keyRejected = PairingFailedReason(rawValue: 0x0F)
    public static let busy = PairingFailedReason(rawValue: 0x10)
}

extension PairingFailedReason: CustomStringConvertible {
    public var description: String {
        let names: [UInt8: String] = [
            0x01: "Passkey Entry Failed", 0x02: "OOB Not Available", 0x03: "Authentication Requirements",
            0x04: "Confirm Value Failed", 0x05: "Pairing Not Supported", 0x06: "Encryption Key Size",
            0x07: "Command Not Supported", 0x08: "Unspecified Reason", 0x09: "Repeated Attempts",
            0x0A: "Invalid Parameters", 0x0B: "DHKey Check Failed", 0x0C: "Numeric Comparison Failed",
            0x0D: "BR/EDR pairing in progress", 0x0E: "Cross-transport Key Derivation/Generation not allowed",
            0x0F: "Key Rejected", 0x10: "Busy",
        ]
        return (names[rawValue] ?? "reason") + " (" + l2capHex(rawValue, 2) + ")"
    }
}

/// The Security Manager of a host that does not pair: a Pairing Request or a Security Request is
/// answered with Pairing Failed (Pairing Not Supported), or (Invalid Parameters) when it is
/// malformed; every other command is ignored (no pairing is ever in progress), as are reserved
/// codes (§3.3).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.3, §3.5.5 and §2.3.5.1
public struct SecurityManagerResponder: Sendable {
    /// What one SMP PDU led to.
    public enum Outcome: Hashable, Sendable {
        /// Answer with this Pairing Failed; `error` is set when the request was malformed.
        case pairingFailed(PairingFailed, request: SecurityManagerCode, error: L2CAPError?)
        /// Nothing to answer; the PDU is dropped.
        case ignored(SecurityManagerCode)
        /// An empty PDU (no Code).
        case empty
    }

    public init() {}

    public func receive(_ pdu: ArraySlice<UInt8>) -> Outcome {
        guard let first = pdu.first else { return .empty }
        let code = SecurityManagerCode(rawValue: first)
        var reader = ByteReader(pdu)
        do {
            switch code {
            case .pairingRequest: _ = try PairingRequest(parsing: &reader)
            case .securityRequest: _ = try SecurityRequest(parsing: &reader)
            default: return .ignored(code)
            }
            return .pairingFailed(PairingFailed(reason: .pairingNotSupported), request: code, error: nil)
        } catch {
            return .pairingFailed(PairingFailed(reason: .invalidParameters), request: code, error: error)
        }
    }
}

extension SecurityManagerResponder: LESecurityManagerChannel {
    /// Answers for L2CAP's Security Manager channel: Pairing Failed for a Pairing or Security
    /// Request, and a report line for everything.
    public func answer(_ pdu: ArraySlice<UInt8>) -> LESecurityManagerChannelOutcome {
        switch receive(pdu) {
        case .pairingFailed(let failed, let request, let error):
            return LESecurityManagerChannelOutcome(
                answer: failed.encode(),
                report: "answered \(request) with Pairing Failed \(l2capHex(failed.reason.rawValue, 2))"
                    + (error.map { ": \($0)" } ?? ""))
        case .ignored(let code):
            return LESecurityManagerChannelOutcome(report: "ignored SMP \(code)")
        case .empty:
            return LESecurityManagerChannelOutcome(report: "ignored SMP empty PDU")
        }
    }
}
