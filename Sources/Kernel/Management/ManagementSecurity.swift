import Bluetooth
import HCI

// The management commands and events of LE pairing, bonding and key loading: what bluetoothd's
// agent and key store do, for a process that manages an adapter without bluetoothd.
// - SeeAlso: BlueZ doc/mgmt-api.txt

extension ManagementOpcode {
    public static let loadLongTermKeys = ManagementOpcode(rawValue: 0x0013)
    public static let setIOCapability = ManagementOpcode(rawValue: 0x0018)
    public static let pairDevice = ManagementOpcode(rawValue: 0x0019)
    public static let cancelPairDevice = ManagementOpcode(rawValue: 0x001A)
    public static let unpairDevice = ManagementOpcode(rawValue: 0x001B)
    public static let userConfirmationReply = ManagementOpcode(rawValue: 0x001C)
    public static let userConfirmationNegativeReply = ManagementOpcode(rawValue: 0x001D)
    public static let userPasskeyReply = ManagementOpcode(rawValue: 0x001E)
    public static let userPasskeyNegativeReply = ManagementOpcode(rawValue: 0x001F)
    public static let setSecureConnections = ManagementOpcode(rawValue: 0x002D)
    public static let loadIdentityResolvingKeys = ManagementOpcode(rawValue: 0x0030)

    static let securityNames: [UInt16: String] = [
        0x0013: "Load Long Term Keys",
        0x0018: "Set IO Capability",
        0x0019: "Pair Device",
        0x001A: "Cancel Pair Device",
        0x001B: "Unpair Device",
        0x001C: "User Confirmation Reply",
        0x001D: "User Confirmation Negative Reply",
        0x001E: "User Passkey Reply",
        0x001F: "User Passkey Negative Reply",
        0x002D: "Set Secure Connections",
        0x0030: "Load Identity Resolving Keys",
    ]
}

extension ManagementEventCode {
    public static let newLongTermKey = ManagementEventCode(rawValue: 0x000A)
    public static let userConfirmationRequest = ManagementEventCode(rawValue: 0x000F)
    public static let userPasskeyRequest = ManagementEventCode(rawValue: 0x0010)
    public static let authenticationFailed = ManagementEventCode(rawValue: 0x0011)
    public static let passkeyNotify = ManagementEventCode(rawValue: 0x0017)
    public static let newIdentityResolvingKey = ManagementEventCode(rawValue: 0x0018)
    public static let newSignatureResolvingKey = ManagementEventCode(rawValue: 0x0019)

    static let securityNames: [UInt16: String] = [
        0x000A: "New Long Term Key",
        0x000F: "User Confirmation Request",
        0x0010: "User Passkey Request",
        0x0011: "Authentication Failed",
        0x0017: "Passkey Notify",
        0x0018: "New Identity Resolving Key",
        0x0019: "New Signature Resolving Key",
    ]
}

/// Address and Address_Type as the management interface writes them: 0x00 BR/EDR, 0x01 LE
/// public, 0x02 LE random.
public struct ManagementAddress: Hashable, Sendable, CustomStringConvertible {
    public static let encodedLength = 7
    public var address: BluetoothAddress
    /// The raw Address_Type.
    public var type: UInt8

    public init(address: BluetoothAddress, type: UInt8) {
        self.address = address
        self.type = type
    }

    /// An LE address.
    public init(le address: BluetoothAddress, type: AddressType) {
        self.init(address: address, type: type == .public ? 0x01 : 0x02)
    }

    /// The LE address type; nil for BR/EDR and unknown values.
    public var leType: AddressType? {
        switch type {
        case 0x01: return .public
        case 0x02: return .random
        default: return nil
        }
    }

    public init(parsing reader: inout ByteReader) throws(ByteReaderError) {
        address = try BluetoothAddress(parsingLittleEndian: &reader)
        type = try reader.readUInt8()
    }

    public func write(to writer: inout ByteWriter) {
        address.write(littleEndian: &writer)
        writer.writeUInt8(type)
    }

    public var description: String {
        "\(address)/" + (leType.map { "\($0)" } ?? (type == 0 ? "BR/EDR" : "type \(type)"))
    }
}

/// A Long Term Key as Load Long Term Keys takes it and New Long Term Key gives it.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Load Long Term Keys Command"
public struct ManagementLongTermKey: Hashable, Sendable {
    public static let encodedLength = 36

    /// Key_Type: 0x00 unauthenticated (legacy), 0x01 authenticated (legacy), 0x02 unauthenticated
    /// P-256, 0x03 authenticated P-256, 0x04 debug P-256.
    public struct KeyType: RawRepresentable, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let unauthenticated = KeyType(rawValue: 0x00)
        public static let authenticated = KeyType(rawValue: 0x01)
        public static let unauthenticatedP256 = KeyType(rawValue: 0x02)
        public static let authenticatedP256 = KeyType(rawValue: 0x03)
        public static let debugP256 = KeyType(rawValue: 0x04)

        public init(authenticated: Bool, secureConnections: Bool) {
            switch (authenticated, secureConnections) {
            case (false, false): self = .unauthenticated
            case (true, false): self = .authenticated
            case (false, true): self = .unauthenticatedP256
            case (true, true): self = .authenticatedP256
            }
        }

        public var isAuthenticated: Bool { self == .authenticated || self == .authenticatedP256 }
        /// A key from LE Secure Connections (P-256), debug keys included.
        public var isSecureConnections: Bool { rawValue >= 0x02 && rawValue <= 0x04 }
    }

    public var peer: ManagementAddress
    public var keyType: KeyType
    /// Central: 0x01 when we use the key as central (the key the peripheral distributed under
    /// legacy pairing), 0x00 as peripheral. Secure Connections keys serve both roles.
    public var central: Bool
    public var encryptionSize: UInt8
    public var ediv: UInt16
    public var rand: UInt64
    /// 16 octets, least significant first (as HCI LE Enable Encryption takes it).
    public var value: [UInt8]

    public init(
        peer: ManagementAddress, keyType: KeyType, central: Bool, encryptionSize: UInt8, ediv: UInt16, rand: UInt64,
        value: [UInt8]
    ) {
        self.peer = peer
        self.keyType = keyType
        self.central = central
        self.encryptionSize = encryptionSize
        self.ediv = ediv
        self.rand = rand
        self.value = value
    }

    public init(parsing reader: inout ByteReader) throws(ByteReaderError) {
        peer = try ManagementAddress(parsing: &reader)
        keyType = KeyType(rawValue: try reader.readUInt8())
        central = try reader.readUInt8() != 0
        encryptionSize = try reader.readUInt8()
        ediv = try reader.readUInt16LE()
        rand = try reader.readUInt64LE()
        value = Array(try reader.readBytes(16))
    }

    public func write(to writer: inout ByteWriter) {
        peer.write(to: &writer)
        writer.writeUInt8(keyType.rawValue)
        writer.writeUInt8(central ? 1 : 0)
        writer.writeUInt8(encryptionSize)
        writer.writeUInt16LE(ediv)
        writer.writeUInt64LE(rand)
        writer.writeBytes(sixteenOctets(value))
    }
}

/// An Identity Resolving Key as Load Identity Resolving Keys takes it.
public struct ManagementIdentityResolvingKey: Hashable, Sendable {
    public static let encodedLength = 23
    /// The peer's identity address.
    public var peer: ManagementAddress
    /// 16 octets, in the order of the SMP Identity Information PDU.
    public var value: [UInt8]

    public init(peer: ManagementAddress, value: [UInt8]) {
        self.peer = peer
        self.value = value
    }

    public init(parsing reader: inout ByteReader) throws(ByteReaderError) {
        peer = try ManagementAddress(parsing: &reader)
        value = Array(try reader.readBytes(16))
    }

    public func write(to writer: inout ByteWriter) {
        peer.write(to: &writer)
        writer.writeBytes(sixteenOctets(value))
    }
}

/// `value` as exactly 16 octets (cut, or zero-filled at the end).
func sixteenOctets(_ value: [UInt8]) -> [UInt8] {
    value.count == 16 ? value : Array(value.prefix(16)) + [UInt8](repeating: 0, count: max(0, 16 - value.count))
}

// MARK: - Commands

/// The answer of a command without Return_Parameters.
public struct ManagementEmptyReply: Hashable, Sendable {
    public init() {}
}

extension ManagementCommand {
    /// A reply that is exactly Address and Address_Type.
    static func parseAddressReply(_ reader: inout ByteReader) throws(HCIError) -> ManagementAddress {
        try wrap("MGMT \(opcode) reply") { () throws(ByteReaderError) -> ManagementAddress in
            let address = try ManagementAddress(parsing: &reader)
            try reader.expectEnd()
            return address
        }
    }

    /// A reply with no parameters.
    static func parseEmptyReply(_ reader: inout ByteReader) throws(HCIError) -> ManagementEmptyReply {
        try wrap("MGMT \(opcode) reply") { () throws(ByteReaderError) in try reader.expectEnd() }
        return ManagementEmptyReply()
    }
}

/// Set Bondable Command: Bondable 0x00 off, 0x01 on. Returns Current_Settings.
public struct SetBondableCommand: ManagementModeCommand {
    public static let opcode = ManagementOpcode.setBondable
    public static let modes: ClosedRange<UInt8> = 0...1
    public static let field = "Bondable"
    public var bondable: Bool
    public init(bondable: Bool) { self.bondable = bondable }
    public init(modeOctet: UInt8) { bondable = modeOctet == 1 }
    public var modeOctet: UInt8 { bondable ? 1 : 0 }
}

/// Set Secure Connections Command: 0x00 off, 0x01 on, 0x02 only. Returns Current_Settings. The
/// kernel's SMP offers LE Secure Connections only with it on (bluetoothd switches it on by default).
public struct SetSecureConnectionsCommand: ManagementModeCommand {
    public static let opcode = ManagementOpcode.setSecureConnections
    public static let modes: ClosedRange<UInt8> = 0...2
    public static let field = "Secure_Connections"
    public var mode: UInt8
    public init(mode: UInt8) { self.mode = mode }
    public init(modeOctet: UInt8) { mode = modeOctet }
    public var modeOctet: UInt8 { mode }
}

/// Set IO Capability Command: the capability the kernel's SMP announces (0x00 DisplayOnly …
/// 0x04 KeyboardDisplay, as in SMP). No return parameters.
public struct SetIOCapabilityCommand: ManagementCommand {
    public static let opcode = ManagementOpcode.setIOCapability
    public var capability: UInt8
    public init(capability: UInt8) { self.capability = capability }
    public var parameterLength: Int { 1 }
    public func writeParameters(to writer: inout ByteWriter) { writer.writeUInt8(capability) }
    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        capability = try Self.parseMode(&reader, allowed: 0...4, field: "IO_Capability")
    }
    public static func parseResponse(_ reader: inout ByteReader) throws(HCIError) -> ManagementEmptyReply {
        try parseEmptyReply(&reader)
    }
}

/// Pair Device Command: Address, Address_Type, IO_Capability. The kernel connects when needed,
/// pairs (bonding when the Bondable setting is on) and answers once pairing ended. Returns
/// Address and Address_Type.
public struct PairDeviceCommand: ManagementCommand {
    public static let opcode = ManagementOpcode.pairDevice
    public var peer: ManagementAddress
    public var capability: UInt8
    public init(peer: ManagementAddress, capability: UInt8) {
        self.peer = peer
        self.capability = capability
    }
    public var parameterLength: Int { 8 }
    public func writeParameters(to writer: inout ByteWriter) {
        peer.write(to: &writer)
        writer.writeUInt8(capability)
    }
    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        (peer, capability) = try Self.wrap("MGMT \(Self.opcode)") { () throws(ByteReaderError) -> (ManagementAddress, UInt8) in
            let peer = try ManagementAddress(parsing: &reader)
            let capability = try reader.readUInt8()
            try reader.expectEnd()
            return (peer, capability)
        }
    }
    public static func parseResponse(_ reader: inout ByteReader) throws(HCIError) -> ManagementAddress {
        try parseAddressReply(&reader)
    }
}

/// Unpair Device Command: Address, Address_Type, Disconnect (0x01: also end the link). The
/// kernel forgets the device's keys. Returns Address and Address_Type.
public struct UnpairDeviceCommand: ManagementCommand {
    public static let opcode = ManagementOpcode.unpairDevice
    public var peer: ManagementAddress
    public var disconnect: Bool
    public init(peer: ManagementAddress, disconnect: Bool) {
        self.peer = peer
        self.disconnect = disconnect
    }
    public var parameterLength: Int { 8 }
    public func writeParameters(to writer: inout ByteWriter) {
        peer.write(to: &writer)
        writer.writeUInt8(disconnect ? 1 : 0)
    }
    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        (peer, disconnect) = try Self.wrap("MGMT \(Self.opcode)") { () throws(ByteReaderError) -> (ManagementAddress, Bool) in
            let peer = try ManagementAddress(parsing: &reader)
            let disconnect = try reader.readUInt8()
            try reader.expectEnd()
            return (peer, disconnect != 0)
        }
    }
    public static func parseResponse(_ reader: inout ByteReader) throws(HCIError) -> ManagementAddress {
        try parseAddressReply(&reader)
    }
}

/// A command whose parameters and reply are exactly Address and Address_Type.
public protocol ManagementAddressCommand: ManagementCommand where Response == ManagementAddress {
    var peer: ManagementAddress { get }
    init(peer: ManagementAddress)
}

extension ManagementAddressCommand {
    public var parameterLength: Int { ManagementAddress.encodedLength }
    public func writeParameters(to writer: inout ByteWriter) { peer.write(to: &writer) }
    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        self.init(peer: try Self.parseAddressReply(&reader))
    }
    public static func parseResponse(_ reader: inout ByteReader) throws(HCIError) -> ManagementAddress {
        try parseAddressReply(&reader)
    }
}

/// User Confirmation Reply: accept the comparison (or the Just Works authorisation).
public struct UserConfirmationReplyCommand: ManagementAddressCommand {
    public static let opcode = ManagementOpcode.userConfirmationReply
    public var peer: ManagementAddress
    public init(peer: ManagementAddress) { self.peer = peer }
}

/// User Confirmation Negative Reply: refuse it.
public struct UserConfirmationNegativeReplyCommand: ManagementAddressCommand {
    public static let opcode = ManagementOpcode.userConfirmationNegativeReply
    public var peer: ManagementAddress
    public init(peer: ManagementAddress) { self.peer = peer }
}

/// User Passkey Reply: Address, Address_Type, Passkey (0–999999). Returns Address and
/// Address_Type.
public struct UserPasskeyReplyCommand: ManagementCommand {
    public static let opcode = ManagementOpcode.userPasskeyReply
    public var peer: ManagementAddress
    public var passkey: UInt32
    public init(peer: ManagementAddress, passkey: UInt32) {
        self.peer = peer
        self.passkey = passkey
    }
    public var parameterLength: Int { 11 }
    public func writeParameters(to writer: inout ByteWriter) {
        peer.write(to: &writer)
        writer.writeUInt32LE(passkey)
    }
    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        (peer, passkey) = try Self.wrap("MGMT \(Self.opcode)") { () throws(ByteReaderError) -> (ManagementAddress, UInt32) in
            let peer = try ManagementAddress(parsing: &reader)
            let passkey = try reader.readUInt32LE()
            try reader.expectEnd()
            return (peer, passkey)
        }
    }
    public static func parseResponse(_ reader: inout ByteReader) throws(HCIError) -> ManagementAddress {
        try parseAddressReply(&reader)
    }
}

/// User Passkey Negative Reply: no passkey to give.
public struct UserPasskeyNegativeReplyCommand: ManagementAddressCommand {
    public static let opcode = ManagementOpcode.userPasskeyNegativeReply
    public var peer: ManagementAddress
    public init(peer: ManagementAddress) { self.peer = peer }
}

/// A key as a Load command lists it.
public protocol ManagementKeyRecord: Hashable, Sendable {
    static var encodedLength: Int { get }
    init(parsing reader: inout ByteReader) throws(ByteReaderError)
    func write(to writer: inout ByteWriter)
}

extension ManagementLongTermKey: ManagementKeyRecord {}
extension ManagementIdentityResolvingKey: ManagementKeyRecord {}

/// A Load command: a 16-bit count, then the keys; it replaces the kernel's whole list for the
/// adapter (keys not given are forgotten). No return parameters.
public protocol ManagementKeyListCommand: ManagementCommand where Response == ManagementEmptyReply {
    associatedtype Key: ManagementKeyRecord
    var keys: [Key] { get }
    init(keys: [Key])
}

extension ManagementKeyListCommand {
    public var parameterLength: Int { 2 + keys.count * Key.encodedLength }
    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(UInt16(clamping: keys.count))
        for key in keys.prefix(Int(UInt16.max)) { key.write(to: &writer) }
    }
    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        let keys = try Self.wrap("MGMT \(Self.opcode)") { () throws(ByteReaderError) -> [Key] in
            let count = Int(try reader.readUInt16LE())
            var keys: [Key] = []
            for _ in 0..<count { keys.append(try Key(parsing: &reader)) }
            try reader.expectEnd()
            return keys
        }
        self.init(keys: keys)
    }
    public static func parseResponse(_ reader: inout ByteReader) throws(HCIError) -> ManagementEmptyReply {
        try parseEmptyReply(&reader)
    }
}

/// Load Long Term Keys.
public struct LoadLongTermKeysCommand: ManagementKeyListCommand {
    public static let opcode = ManagementOpcode.loadLongTermKeys
    public var keys: [ManagementLongTermKey]
    public init(keys: [ManagementLongTermKey]) { self.keys = keys }
}

/// Load Identity Resolving Keys.
public struct LoadIdentityResolvingKeysCommand: ManagementKeyListCommand {
    public static let opcode = ManagementOpcode.loadIdentityResolvingKeys
    public var keys: [ManagementIdentityResolvingKey]
    public init(keys: [ManagementIdentityResolvingKey]) { self.keys = keys }
}

// MARK: - Events

/// The pairing and key events (mgmt-api.txt "Management Events").
public enum ManagementSecurityEvent: Hashable, Sendable {
    /// New Long Term Key: Store_Hint (whether the key is to be kept), the key.
    case newLongTermKey(storeHint: Bool, key: ManagementLongTermKey)
    /// User Confirmation Request: Confirm_Hint 0x01 asks only to authorise (Just Works), 0x00 to
    /// compare Value with the peer's display (numeric comparison).
    case userConfirmationRequest(peer: ManagementAddress, justWorks: Bool, value: UInt32)
    /// User Passkey Request: the passkey the peer displays is to be entered.
    case userPasskeyRequest(peer: ManagementAddress)
    /// Authentication Failed: the pairing with the peer failed with a management status.
    case authenticationFailed(peer: ManagementAddress, status: ManagementStatus)
    /// Passkey Notify: the passkey to display for the peer (Entered counts the digits typed there).
    case passkeyNotify(peer: ManagementAddress, passkey: UInt32, entered: UInt8)
    /// New Identity Resolving Key: the peer's IRK and identity address, and the random address
    /// it used on the link (00:00:00:00:00:00 when none).
    case newIdentityResolvingKey(storeHint: Bool, randomAddress: BluetoothAddress, key: ManagementIdentityResolvingKey)
    /// New Signature Resolving Key: Type 0x00/0x02 our (local) CSRK unauthenticated/authenticated,
    /// 0x01/0x03 the peer's.
    case newSignatureResolvingKey(storeHint: Bool, peer: ManagementAddress, type: UInt8, value: [UInt8])

    /// The event when `packet` is one of these; nil for other codes.
    /// - Throws: `HCIError` when its parameters do not have the documented shape.
    public init?(_ packet: ManagementEventPacket) throws(HCIError) {
        guard let name = ManagementEventCode.securityNames[packet.code.rawValue] else { return nil }
        var reader = ByteReader(packet.parameters)
        do {
            switch packet.code {
            case .newLongTermKey:
                let hint = try reader.readUInt8()
                self = .newLongTermKey(storeHint: hint != 0, key: try ManagementLongTermKey(parsing: &reader))
            case .userConfirmationRequest:
                let peer = try ManagementAddress(parsing: &reader)
                let hint = try reader.readUInt8()
                self = .userConfirmationRequest(peer: peer, justWorks: hint == 1, value: try reader.readUInt32LE())
            case .userPasskeyRequest:
                self = .userPasskeyRequest(peer: try ManagementAddress(parsing: &reader))
            case .authenticationFailed:
                let peer = try ManagementAddress(parsing: &reader)
                self = .authenticationFailed(peer: peer, status: ManagementStatus(rawValue: try reader.readUInt8()))
            case .passkeyNotify:
                let peer = try ManagementAddress(parsing: &reader)
                let passkey = try reader.readUInt32LE()
                self = .passkeyNotify(peer: peer, passkey: passkey, entered: try reader.readUInt8())
            case .newIdentityResolvingKey:
                let hint = try reader.readUInt8()
                let random = try BluetoothAddress(parsingLittleEndian: &reader)
                self = .newIdentityResolvingKey(
                    storeHint: hint != 0, randomAddress: random, key: try ManagementIdentityResolvingKey(parsing: &reader))
            default:  // .newSignatureResolvingKey
                let hint = try reader.readUInt8()
                let peer = try ManagementAddress(parsing: &reader)
                let type = try reader.readUInt8()
                self = .newSignatureResolvingKey(storeHint: hint != 0, peer: peer, type: type, value: Array(try reader.readBytes(16)))
            }
            try reader.expectEnd()
        } catch {
            throw HCIError(error, context: "MGMT \(name) Event")
        }
    }

    /// The peer the event is about.
    public var peer: ManagementAddress {
        switch self {
        case .newLongTermKey(_, let key): return key.peer
        case .userConfirmationRequest(let peer, _, _), .userPasskeyRequest(let peer), .authenticationFailed(let peer, _),
            .passkeyNotify(let peer, _, _), .newSignatureResolvingKey(_, let peer, _, _):
            return peer
        case .newIdentityResolvingKey(_, _, let key): return key.peer
        }
    }
}
