import Bluetooth
import L2CAP

/// What distinguishes the two commands with the pairing features: their Code.
public protocol PairingFeaturesKind: Sendable {
    static var code: SecurityManagerCode { get }
    static var context: String { get }
}

/// Marks ``PairingRequest``.
public enum PairingRequestKind: PairingFeaturesKind {
    public static var code: SecurityManagerCode { .pairingRequest }
    public static var context: String { "SMP Pairing Request" }
}

/// Marks ``PairingResponse``.
public enum PairingResponseKind: PairingFeaturesKind {
    public static var code: SecurityManagerCode { .pairingResponse }
    public static var context: String { "SMP Pairing Response" }
}

/// Pairing Request (§3.5.1) or Pairing Response (§3.5.2): IO Capability, OOB data flag, AuthReq,
/// Maximum Encryption Key Size, Initiator and Responder Key Distribution. The two commands share
/// their layout; ``PairingRequest`` and ``PairingResponse`` name them.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.1, §3.5.2
public struct PairingFeaturesCommand<Kind: PairingFeaturesKind>: Hashable, Sendable {
    /// Code and parameters.
    public static var encodedLength: Int { 7 }

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
        let c = Kind.context
        try reader.smpExpectCode(Kind.code, c)
        ioCapability = try reader.l2capUInt8(c)
        oobDataFlag = try reader.l2capUInt8(c)
        authenticationRequirements = try reader.l2capUInt8(c)
        maximumEncryptionKeySize = try reader.l2capUInt8(c)
        initiatorKeyDistribution = try reader.l2capUInt8(c)
        responderKeyDistribution = try reader.l2capUInt8(c)
        try reader.l2capExpectEnd(c)
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Kind.code.rawValue)
        writer.writeUInt8(ioCapability)
        writer.writeUInt8(oobDataFlag)
        writer.writeUInt8(authenticationRequirements)
        writer.writeUInt8(maximumEncryptionKeySize)
        writer.writeUInt8(initiatorKeyDistribution)
        writer.writeUInt8(responderKeyDistribution)
    }

    /// The command's octets as sent (the `preq`/`pres` of c1 are these, reversed).
    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedLength)
        write(to: &writer)
        return writer.bytes
    }
}

/// Pairing Request. - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.1
public typealias PairingRequest = PairingFeaturesCommand<PairingRequestKind>
/// Pairing Response. - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.2
public typealias PairingResponse = PairingFeaturesCommand<PairingResponseKind>

/// The commands that carry one 128-bit value after their Code.
public protocol SecurityValueKind: Sendable {
    static var code: SecurityManagerCode { get }
    static var context: String { get }
}

/// A command whose parameter is one 128-bit value, kept in wire order (least significant octet
/// first): Pairing Confirm, Pairing Random, Pairing DHKey Check, Encryption Information (LTK),
/// Identity Information (IRK), Signing Information (CSRK).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.3, §3.5.4, §3.5.7, §3.6.2, §3.6.4, §3.6.6
public struct SecurityValueCommand<Kind: SecurityValueKind>: Hashable, Sendable {
    public static var encodedLength: Int { 17 }

    /// The 16 octets as the PDU carries them (least significant first).
    public var value: [UInt8]

    /// `value` must hold 16 octets (wire order).
    public init(value: [UInt8]) throws(L2CAPError) {
        guard value.count == 16 else {
            throw .invalidArgument(context: Kind.context, reason: "\(value.count) octets, 16 expected")
        }
        self.value = value
    }

    /// Parses the whole command, Code included.
    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Kind.context
        try reader.smpExpectCode(Kind.code, c)
        value = try reader.smpBytes(16, c)
        try reader.l2capExpectEnd(c)
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Kind.code.rawValue)
        writer.writeBytes(value)
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedLength)
        write(to: &writer)
        return writer.bytes
    }
}

public enum PairingConfirmKind: SecurityValueKind {
    public static var code: SecurityManagerCode { .pairingConfirm }
    public static var context: String { "SMP Pairing Confirm" }
}
public enum PairingRandomKind: SecurityValueKind {
    public static var code: SecurityManagerCode { .pairingRandom }
    public static var context: String { "SMP Pairing Random" }
}
public enum PairingDHKeyCheckKind: SecurityValueKind {
    public static var code: SecurityManagerCode { .pairingDHKeyCheck }
    public static var context: String { "SMP Pairing DHKey Check" }
}
public enum EncryptionInformationKind: SecurityValueKind {
    public static var code: SecurityManagerCode { .encryptionInformation }
    public static var context: String { "SMP Encryption Information" }
}
public enum IdentityInformationKind: SecurityValueKind {
    public static var code: SecurityManagerCode { .identityInformation }
    public static var context: String { "SMP Identity Information" }
}
public enum SigningInformationKind: SecurityValueKind {
    public static var code: SecurityManagerCode { .signingInformation }
    public static var context: String { "SMP Signing Information" }
}

/// Pairing Confirm (Mconfirm/Sconfirm, or Ca/Cb). - SeeAlso: Vol 3, Part H, §3.5.3
public typealias PairingConfirm = SecurityValueCommand<PairingConfirmKind>
/// Pairing Random (Mrand/Srand, or Na/Nb). - SeeAlso: Vol 3, Part H, §3.5.4
public typealias PairingRandom = SecurityValueCommand<PairingRandomKind>
/// Pairing DHKey Check (Ea/Eb). - SeeAlso: Vol 3, Part H, §3.5.7
public typealias PairingDHKeyCheck = SecurityValueCommand<PairingDHKeyCheckKind>
/// Encryption Information: the LTK. - SeeAlso: Vol 3, Part H, §3.6.2
public typealias EncryptionInformation = SecurityValueCommand<EncryptionInformationKind>
/// Identity Information: the IRK. - SeeAlso: Vol 3, Part H, §3.6.4
public typealias IdentityInformation = SecurityValueCommand<IdentityInformationKind>
/// Signing Information: the CSRK. - SeeAlso: Vol 3, Part H, §3.6.6
public typealias SigningInformation = SecurityValueCommand<SigningInformationKind>

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

/// Pairing Public Key: the P-256 public key, X then Y, each least significant octet first.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.6
public struct PairingPublicKey: Hashable, Sendable {
    static let context = "SMP Pairing Public Key"
    public static let encodedLength = 65

    /// X and Y in wire order (least significant octet first), 32 octets each.
    public var x: [UInt8]
    public var y: [UInt8]

    public init(x: [UInt8], y: [UInt8]) throws(L2CAPError) {
        guard x.count == 32, y.count == 32 else {
            throw .invalidArgument(context: Self.context, reason: "X and Y take 32 octets each")
        }
        self.x = x
        self.y = y
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        try reader.smpExpectCode(.pairingPublicKey, c)
        x = try reader.smpBytes(32, c)
        y = try reader.smpBytes(32, c)
        try reader.l2capExpectEnd(c)
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(SecurityManagerCode.pairingPublicKey.rawValue)
        writer.writeBytes(x)
        writer.writeBytes(y)
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedLength)
        write(to: &writer)
        return writer.bytes
    }
}

/// Pairing Keypress Notification (Passkey Entry progress).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.8
public struct PairingKeypressNotification: Hashable, Sendable {
    static let context = "SMP Pairing Keypress Notification"
    public static let encodedLength = 2

    /// 0 entry started, 1 digit entered, 2 digit erased, 3 cleared, 4 entry completed.
    public var notificationType: UInt8

    public init(notificationType: UInt8) { self.notificationType = notificationType }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        try reader.smpExpectCode(.pairingKeypressNotification, c)
        notificationType = try reader.l2capUInt8(c)
        try reader.l2capExpectEnd(c)
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(SecurityManagerCode.pairingKeypressNotification.rawValue)
        writer.writeUInt8(notificationType)
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

    /// Reads `count` octets, as they are on the wire.
    mutating func smpBytes(_ count: Int, _ context: String) throws(L2CAPError) -> [UInt8] {
        do { return Array(try readBytes(count)) } catch { throw L2CAPError(error, context: context) }
    }
}
