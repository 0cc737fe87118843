import Bluetooth

/// An LE address type as HCI events report it (Peer_Address_Type, Address_Type,
/// Direct_Address_Type). Open: reserved values keep their code.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.10 and §7.7.65.13
public struct LEAddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x00: Public Device Address.
    public static let `public` = LEAddressType(rawValue: 0x00)
    /// 0x01: Random Device Address.
    public static let random = LEAddressType(rawValue: 0x01)
    /// 0x02: Public Identity Address (the controller resolved a resolvable private address).
    public static let publicIdentity = LEAddressType(rawValue: 0x02)
    /// 0x03: Random (static) Identity Address (the controller resolved a resolvable private address).
    public static let randomIdentity = LEAddressType(rawValue: 0x03)
    /// 0xFE: Random Device Address the controller could not resolve (Direct_Address_Type only).
    public static let unresolvedRandom = LEAddressType(rawValue: 0xFE)
    /// 0xFF: No address provided (anonymous advertisement, extended reports only).
    public static let anonymous = LEAddressType(rawValue: 0xFF)

    public init(_ type: AddressType) { rawValue = type.rawValue }

    /// The on-air type of the address: public for 0x00/0x02, random for 0x01/0x03/0xFE, else `nil`.
    public var addressType: AddressType? {
        switch rawValue {
        case 0x00, 0x02: return .public
        case 0x01, 0x03, 0xFE: return .random
        default: return nil
        }
    }

    public var description: String {
        switch rawValue {
        case 0x00: return "public"
        case 0x01: return "random"
        case 0x02: return "public identity"
        case 0x03: return "random identity"
        case 0xFE: return "random (unresolved)"
        case 0xFF: return "anonymous"
        default: return "address type " + hciHexString(rawValue, 2)
        }
    }
}

/// The Role of a connection: whether the local device is Central or Peripheral.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.1
public struct LERole: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let central = LERole(rawValue: 0x00)
    public static let peripheral = LERole(rawValue: 0x01)

    public var description: String {
        switch rawValue {
        case 0x00: return "central"
        case 0x01: return "peripheral"
        default: return "role " + hciHexString(rawValue, 2)
        }
    }
}

/// A PHY as HCI events name it (TX_PHY, RX_PHY, Primary_PHY, Secondary_PHY). 0x00 means
/// "no packets on the secondary advertising physical channel" in Secondary_PHY.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.12 and §7.7.65.13
public struct LEPHY: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let none = LEPHY(rawValue: 0x00)
    public static let le1M = LEPHY(rawValue: 0x01)
    public static let le2M = LEPHY(rawValue: 0x02)
    public static let leCoded = LEPHY(rawValue: 0x03)

    public var description: String {
        switch rawValue {
        case 0x00: return "none"
        case 0x01: return "LE 1M"
        case 0x02: return "LE 2M"
        case 0x03: return "LE Coded"
        default: return "PHY " + hciHexString(rawValue, 2)
        }
    }
}
