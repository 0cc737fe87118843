import Bluetooth
import L2CAP

/// Central Identification: the EDIV and Rand that name a legacy LTK.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.6.3
public struct CentralIdentification: Hashable, Sendable {
    static let context = "SMP Central Identification"
    public static let encodedLength = 11

    public var ediv: UInt16
    public var rand: UInt64

    public init(ediv: UInt16, rand: UInt64) {
        self.ediv = ediv
        self.rand = rand
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        try reader.smpExpectCode(.centralIdentification, c)
        ediv = try reader.l2capUInt16(c)
        do { rand = try reader.readUInt64LE() } catch { throw L2CAPError(error, context: c) }
        try reader.l2capExpectEnd(c)
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(SecurityManagerCode.centralIdentification.rawValue)
        writer.writeUInt16LE(ediv)
        writer.writeUInt64LE(rand)
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedLength)
        write(to: &writer)
        return writer.bytes
    }
}

/// Identity Address Information: the device's public or static random identity address.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.6.5
public struct IdentityAddressInformation: Hashable, Sendable {
    static let context = "SMP Identity Address Information"
    public static let encodedLength = 8

    public var addressType: AddressType
    public var address: BluetoothAddress

    public init(addressType: AddressType, address: BluetoothAddress) {
        self.addressType = addressType
        self.address = address
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        try reader.smpExpectCode(.identityAddressInformation, c)
        let offset = reader.offset
        let type = try reader.l2capUInt8(c)
        guard type <= 1, let parsed = AddressType(rawValue: type) else {
            throw .malformed(context: c, reason: .invalidValue(field: "AddrType", value: Int(type)), offset: offset)
        }
        addressType = parsed
        do { address = try BluetoothAddress(parsingLittleEndian: &reader) } catch { throw L2CAPError(error, context: c) }
        try reader.l2capExpectEnd(c)
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(SecurityManagerCode.identityAddressInformation.rawValue)
        writer.writeUInt8(addressType.rawValue)
        address.write(littleEndian: &writer)
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedLength)
        write(to: &writer)
        return writer.bytes
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

/// Any SMP command, decoded by its Code.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.3
public enum SecurityManagerPDU: Hashable, Sendable {
    case pairingRequest(PairingRequest)
    case pairingResponse(PairingResponse)
    case pairingConfirm(PairingConfirm)
    case pairingRandom(PairingRandom)
    case pairingFailed(PairingFailed)
    case encryptionInformation(EncryptionInformation)
    case centralIdentification(CentralIdentification)
    case identityInformation(IdentityInformation)
    case identityAddressInformation(IdentityAddressInformation)
    case signingInformation(SigningInformation)
    case securityRequest(SecurityRequest)
    case pairingPublicKey(PairingPublicKey)
    case pairingDHKeyCheck(PairingDHKeyCheck)
    case pairingKeypressNotification(PairingKeypressNotification)

    /// Decodes one whole PDU; a reserved Code is `malformed` (§3.3: such a PDU is ignored).
    public init(decoding bytes: ArraySlice<UInt8>) throws(L2CAPError) {
        var reader = ByteReader(bytes)
        guard let first = bytes.first else {
            throw .malformed(context: "SMP", reason: .truncated(needed: 1, available: 0), offset: 0)
        }
        switch SecurityManagerCode(rawValue: first) {
        case .pairingRequest: self = .pairingRequest(try PairingRequest(parsing: &reader))
        case .pairingResponse: self = .pairingResponse(try PairingResponse(parsing: &reader))
        case .pairingConfirm: self = .pairingConfirm(try PairingConfirm(parsing: &reader))
        case .pairingRandom: self = .pairingRandom(try PairingRandom(parsing: &reader))
        case .pairingFailed: self = .pairingFailed(try PairingFailed(parsing: &reader))
        case .encryptionInformation: self = .encryptionInformation(try EncryptionInformation(parsing: &reader))
        case .centralIdentification: self = .centralIdentification(try CentralIdentification(parsing: &reader))
        case .identityInformation: self = .identityInformation(try IdentityInformation(parsing: &reader))
        case .identityAddressInformation:
            self = .identityAddressInformation(try IdentityAddressInformation(parsing: &reader))
        case .signingInformation: self = .signingInformation(try SigningInformation(parsing: &reader))
        case .securityRequest: self = .securityRequest(try SecurityRequest(parsing: &reader))
        case .pairingPublicKey: self = .pairingPublicKey(try PairingPublicKey(parsing: &reader))
        case .pairingDHKeyCheck: self = .pairingDHKeyCheck(try PairingDHKeyCheck(parsing: &reader))
        case .pairingKeypressNotification:
            self = .pairingKeypressNotification(try PairingKeypressNotification(parsing: &reader))
        default:
            throw .malformed(context: "SMP", reason: .invalidValue(field: "Code", value: Int(first)), offset: 0)
        }
    }

    /// The PDU's octets.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 65)
        switch self {
        case .pairingRequest(let c): c.write(to: &writer)
        case .pairingResponse(let c): c.write(to: &writer)
        case .pairingConfirm(let c): c.write(to: &writer)
        case .pairingRandom(let c): c.write(to: &writer)
        case .pairingFailed(let c): c.write(to: &writer)
        case .encryptionInformation(let c): c.write(to: &writer)
        case .centralIdentification(let c): c.write(to: &writer)
        case .identityInformation(let c): c.write(to: &writer)
        case .identityAddressInformation(let c): c.write(to: &writer)
        case .signingInformation(let c): c.write(to: &writer)
        case .securityRequest(let c): c.write(to: &writer)
        case .pairingPublicKey(let c): c.write(to: &writer)
        case .pairingDHKeyCheck(let c): c.write(to: &writer)
        case .pairingKeypressNotification(let c): c.write(to: &writer)
        }
        return writer.bytes
    }

    /// The command's Code.
    public var code: SecurityManagerCode {
        switch self {
        case .pairingRequest: return .pairingRequest
        case .pairingResponse: return .pairingResponse
        case .pairingConfirm: return .pairingConfirm
        case .pairingRandom: return .pairingRandom
        case .pairingFailed: return .pairingFailed
        case .encryptionInformation: return .encryptionInformation
        case .centralIdentification: return .centralIdentification
        case .identityInformation: return .identityInformation
        case .identityAddressInformation: return .identityAddressInformation
        case .signingInformation: return .signingInformation
        case .securityRequest: return .securityRequest
        case .pairingPublicKey: return .pairingPublicKey
        case .pairingDHKeyCheck: return .pairingDHKeyCheck
        case .pairingKeypressNotification: return .pairingKeypressNotification
        }
    }
}
