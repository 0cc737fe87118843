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
}

/// Pairing Request: IO Capability, OOB data flag, AuthReq, Maximum Encryption Key Size,
/// Initiator and Responder Key Distribution.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.1
public struct PairingRequest: Hashable, Sendable {
    static let context = "SMP Pairing Request"
    /// Code and parameters.
    public static let encodedLength = 7

    public var ioCapability: UInt8
    public var oobDataFlag: UInt8
    public var authenticationRequirements: UInt8
    public var maximumEncryptionKeySize: UInt8
    public var initiatorKeyDistribution: UInt8
    public var responderKeyDistribution: UInt8

    public init(
        ioCapability: UInt8, oobDataFlag: UInt8, authenticationRequirements: UInt8, maximumEncryptionKeySize: UInt8,
        initiatorKeyDistribution: UInt8, responderKeyDistribution: UInt8
    ) {
        self.ioCapability = ioCapability
        self.oobDataFlag = oobDataFlag
        self.authenticationRequirements = authenticationRequirements
        self.maximumEncryptionKeySize = maximumEncryptionKeySize
        self.initiatorKeyDistribution = initiatorKeyDistribution
        self.responderKeyDistribution = responderKeyDistribution
    }

    /// Parses the whole command, Code included.
    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        try reader.smpExpectCode(.pairingRequest, c)
        ioCapability = try reader.l2capUInt8(c)
        oobDataFlag = try reader.l2capUInt8(c)
        authenticationRequirements = try reader.l2capUInt8(c)
        maximumEncryptionKeySize = try reader.l2capUInt8(c)
        initiatorKeyDistribution = try reader.l2capUInt8(c)
        responderKeyDistribution = try reader.l2capUInt8(c)
        try reader.l2capExpectEnd(c)
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(SecurityManagerCode.pairingRequest.rawValue)
        writer.writeUInt8(ioCapability)
        writer.writeUInt8(oobDataFlag)
        writer.writeUInt8(authenticationRequirements)
        writer.writeUInt8(maximumEncryptionKeySize)
        writer.writeUInt8(initiatorKeyDistribution)
        writer.writeUInt8(responderKeyDistribution)
    }
}

/// Security Request: a Peripheral asks the Central to start pairing or encryption.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.6.7
public struct SecurityRequest: Hashable, Sendable {
    static let context = "SMP Security Request"
    public static let encodedLength = 2

    public var authenticationRequirements: UInt8

    public init(authenticationRequirements: UInt8) { self.authenticationRequirements = authenticationRequirements }

    /// Parses the whole command, Code included.
    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        try reader.smpExpectCode(.securityRequest, c)
        authenticationRequirements = try reader.l2capUInt8(c)
        try reader.l2capExpectEnd(c)
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(SecurityManagerCode.securityRequest.rawValue)
        writer.writeUInt8(authenticationRequirements)
    }
}

/// Pairing Failed: ends pairing with a Reason.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.5
public struct PairingFailed: Hashable, Sendable {
    static let context = "SMP Pairing Failed"
    public static let encodedLength = 2

    public var reason: PairingFailedReason

    public init(reason: PairingFailedReason) { self.reason = reason }

    /// Parses the whole command, Code included.
    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        try reader.smpExpectCode(.pairingFailed, c)
        reason = PairingFailedReason(rawValue: try reader.l2capUInt8(c))
        try reader.l2capExpectEnd(c)
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(SecurityManagerCode.pairingFailed.rawValue)
        writer.writeUInt8(reason.rawValue)
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedLength)
        write(to: &writer)
        return writer.bytes
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

extension ByteReader {
    /// Reads the Code octet of an SMP command and checks it is `code`.
    mutating func smpExpectCode(_ code: SecurityManagerCode, _ context: String) throws(L2CAPError) {
        let offset = self.offset
        let read = try l2capUInt8(context)
        guard read == code.rawValue else {
            throw L2CAPError.malformed(context: context, reason: .invalidValue(field: "Code", value: Int(read)), offset: offset)
        }
    }
}
