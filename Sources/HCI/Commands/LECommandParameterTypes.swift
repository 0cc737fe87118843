import Bluetooth

/// LE_Scan_Type / Scan_Type: passive or active scanning.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.10
public enum LEScanType: UInt8, Hashable, Sendable, CustomStringConvertible {
    case passive = 0x00
    case active = 0x01
    public var description: String { self == .passive ? "passive" : "active" }
}

/// Own_Address_Type: which address the controller uses for itself.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.5
public enum LEOwnAddressType: UInt8, Hashable, Sendable, CustomStringConvertible {
    case `public` = 0x00
    case random = 0x01
    /// A resolvable private address from the resolving list, else the public address.
    case resolvableOrPublic = 0x02
    /// A resolvable private address from the resolving list, else the random address.
    case resolvableOrRandom = 0x03

    public var description: String {
        switch self {
        case .public: return "public"
        case .random: return "random"
        case .resolvableOrPublic: return "RPA or public"
        case .resolvableOrRandom: return "RPA or random"
        }
    }
}

/// Peer_Address_Type of the connection commands (identity types allowed).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.12
public enum LEPeerAddressType: UInt8, Hashable, Sendable, CustomStringConvertible {
    case `public` = 0x00
    case random = 0x01
    case publicIdentity = 0x02
    case randomIdentity = 0x03

    public var description: String {
        switch self {
        case .public: return "public"
        case .random: return "random"
        case .publicIdentity: return "public identity"
        case .randomIdentity: return "random identity"
        }
    }
}

/// Scanning_Filter_Policy.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.10
public enum LEScanningFilterPolicy: UInt8, Hashable, Sendable, CustomStringConvertible {
    /// Basic unfiltered: accept all advertising (directed only to us).
    case acceptAll = 0x00
    /// Basic filtered: only devices in the Filter Accept List.
    case filterAcceptList = 0x01
    /// Extended unfiltered: also directed advertising to an unresolved RPA.
    case acceptAllExtended = 0x02
    /// Extended filtered.
    case filterAcceptListExtended = 0x03

    public var description: String {
        switch self {
        case .acceptAll: return "accept all"
        case .filterAcceptList: return "filter accept list"
        case .acceptAllExtended: return "accept all (extended)"
        case .filterAcceptListExtended: return "filter accept list (extended)"
        }
    }
}

/// Advertising_Filter_Policy: which scan and connect requests the advertiser processes.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.5
public enum LEAdvertisingFilterPolicy: UInt8, Hashable, Sendable, CustomStringConvertible {
    case acceptAll = 0x00
    case filterScanRequests = 0x01
    case filterConnectionRequests = 0x02
    case filterBoth = 0x03

    public var description: String {
        switch self {
        case .acceptAll: return "scan and connect from all"
        case .filterScanRequests: return "scan from accept list, connect from all"
        case .filterConnectionRequests: return "scan from all, connect from accept list"
        case .filterBoth: return "scan and connect from accept list"
        }
    }
}

/// Initiator_Filter_Policy: connect to the peer address given, or to any device on the list.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.12
public enum LEInitiatorFilterPolicy: UInt8, Hashable, Sendable, CustomStringConvertible {
    case peerAddress = 0x00
    case filterAcceptList = 0x01
    public var description: String { self == .peerAddress ? "peer address" : "filter accept list" }
}

/// Advertising_Type of legacy advertising.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.5
public enum LEAdvertisingType: UInt8, Hashable, Sendable, CustomStringConvertible {
    /// ADV_IND: connectable and scannable undirected.
    case connectableUndirected = 0x00
    /// ADV_DIRECT_IND, high duty cycle.
    case connectableDirectedHighDuty = 0x01
    /// ADV_SCAN_IND.
    case scannableUndirected = 0x02
    /// ADV_NONCONN_IND.
    case nonConnectableUndirected = 0x03
    /// ADV_DIRECT_IND, low duty cycle.
    case connectableDirectedLowDuty = 0x04

    public var description: String {
        switch self {
        case .connectableUndirected: return "ADV_IND"
        case .connectableDirectedHighDuty: return "ADV_DIRECT_IND (high duty)"
        case .scannableUndirected: return "ADV_SCAN_IND"
        case .nonConnectableUndirected: return "ADV_NONCONN_IND"
        case .connectableDirectedLowDuty: return "ADV_DIRECT_IND (low duty)"
        }
    }
}

/// One PHY (TX_PHY/RX_PHY of LE Read PHY, primary/secondary advertising PHY).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.47
public enum LEPHYType: UInt8, Hashable, Sendable, CustomStringConvertible {
    case le1M = 0x01
    case le2M = 0x02
    case leCoded = 0x03

    public var description: String {
        switch self {
        case .le1M: return "LE 1M"
        case .le2M: return "LE 2M"
        case .leCoded: return "LE Coded"
        }
    }
}

/// A set of PHYs as a bitmask (TX_PHYs, RX_PHYs, Scanning_PHYs, Initiating_PHYs):
/// bit 0 LE 1M, bit 1 LE 2M, bit 2 LE Coded. Open: other bits keep their value.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.49
public struct LEPHYMask: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let le1M = LEPHYMask(rawValue: 0x01)
    public static let le2M = LEPHYMask(rawValue: 0x02)
    public static let leCoded = LEPHYMask(rawValue: 0x04)

    /// The PHYs set, in bit order (the order of per-PHY parameter arrays).
    public var phys: [LEPHYType] {
        var out: [LEPHYType] = []
        if contains(.le1M) { out.append(.le1M) }
        if contains(.le2M) { out.append(.le2M) }
        if contains(.leCoded) { out.append(.leCoded) }
        return out
    }

    public var description: String {
        var parts = phys.map(\.description)
        let other = rawValue & ~0x07
        if other != 0 { parts.append(CommandFormat.hex(other, digits: 2)) }
        return parts.isEmpty ? "none" : parts.joined(separator: "/")
    }
}

/// All_PHYs of LE Set PHY: bit 0 "no TX preference", bit 1 "no RX preference".
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.49
public struct LEAllPHYsPreference: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let noTXPreference = LEAllPHYsPreference(rawValue: 0x01)
    public static let noRXPreference = LEAllPHYsPreference(rawValue: 0x02)

    public var description: String {
        var parts: [String] = []
        if contains(.noTXPreference) { parts.append("no TX preference") }
        if contains(.noRXPreference) { parts.append("no RX preference") }
        let other = rawValue & ~0x03
        if other != 0 { parts.append(CommandFormat.hex(other, digits: 2)) }
        return parts.isEmpty ? "preferences given" : parts.joined(separator: ", ")
    }
}

/// PHY_Options of LE Set PHY: the preferred coding on LE Coded. Open.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.49
public struct LECodedPHYOptions: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let noPreference = LECodedPHYOptions(rawValue: 0x0000)
    public static let preferS2 = LECodedPHYOptions(rawValue: 0x0001)
    public static let preferS8 = LECodedPHYOptions(rawValue: 0x0002)

    public var description: String {
        switch rawValue {
        case 0: return "no coding preference"
        case 1: return "prefer S=2"
        case 2: return "prefer S=8"
        default: return "options " + CommandFormat.hex(rawValue, digits: 4)
        }
    }
}

/// Advertising_Channel_Map: bit 0 channel 37, bit 1 channel 38, bit 2 channel 39.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.5
public struct LEAdvertisingChannelMap: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let channel37 = LEAdvertisingChannelMap(rawValue: 0x01)
    public static let channel38 = LEAdvertisingChannelMap(rawValue: 0x02)
    public static let channel39 = LEAdvertisingChannelMap(rawValue: 0x04)
    public static let all: LEAdvertisingChannelMap = [.channel37, .channel38, .channel39]

    /// At least one of the three channels and no reserved bit.
    public var isValid: Bool { rawValue & 0x07 != 0 && rawValue & ~0x07 == 0 }

    public var description: String {
        var channels: [String] = []
        if contains(.channel37) { channels.append("37") }
        if contains(.channel38) { channels.append("38") }
        if contains(.channel39) { channels.append("39") }
        return "channels " + (channels.isEmpty ? "none" : channels.joined(separator: ","))
    }
}

/// Advertising_Event_Properties of an extended advertising set. Open.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.53
public struct LEAdvertisingEventProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let connectable = LEAdvertisingEventProperties(rawValue: 1 << 0)
    public static let scannable = LEAdvertisingEventProperties(rawValue: 1 << 1)
    public static let directed = LEAdvertisingEventProperties(rawValue: 1 << 2)
    public static let highDutyCycleDirected = LEAdvertisingEventProperties(rawValue: 1 << 3)
    public static let useLegacyPDUs = LEAdvertisingEventProperties(rawValue: 1 << 4)
    public static let anonymous = LEAdvertisingEventProperties(rawValue: 1 << 5)
    public static let includeTxPower = LEAdvertisingEventProperties(rawValue: 1 << 6)

    static let named: [(LEAdvertisingEventProperties, String)] = [
        (.connectable, "connectable"), (.scannable, "scannable"), (.directed, "directed"),
        (.highDutyCycleDirected, "high duty cycle"), (.useLegacyPDUs, "legacy PDUs"),
        (.anonymous, "anonymous"), (.includeTxPower, "include TX power"),
    ]

    public var description: String {
        var parts = Self.named.filter { contains($0.0) }.map(\.1)
        let other = rawValue & ~0x7F
        if other != 0 { parts.append(CommandFormat.hex(other, digits: 4)) }
        return parts.isEmpty ? "non-connectable non-scannable" : parts.joined(separator: ", ")
    }
}

/// Operation of LE Set Extended Advertising Data / Scan Response Data.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.54
public enum LEAdvertisingDataOperation: UInt8, Hashable, Sendable, CustomStringConvertible {
    case intermediateFragment = 0x00
    case firstFragment = 0x01
    case lastFragment = 0x02
    case complete = 0x03
    /// Unchanged data, only a new Advertising DID.
    case unchanged = 0x04

    public var description: String {
        switch self {
        case .intermediateFragment: return "intermediate fragment"
        case .firstFragment: return "first fragment"
        case .lastFragment: return "last fragment"
        case .complete: return "complete"
        case .unchanged: return "unchanged data"
        }
    }
}

/// Filter_Duplicates of LE Set Extended Scan Enable (the legacy command allows only 0 and 1).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.65
public enum LEFilterDuplicates: UInt8, Hashable, Sendable, CustomStringConvertible {
    case disabled = 0x00
    case enabled = 0x01
    /// Enabled, reset for each scan period.
    case resetEachPeriod = 0x02

    public var description: String {
        switch self {
        case .disabled: return "duplicates reported"
        case .enabled: return "duplicates filtered"
        case .resetEachPeriod: return "duplicates filtered per period"
        }
    }
}

/// A 64-bit event mask (Set Event Mask, LE Set Event Mask). Open.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.3.1, §7.8.1
public struct HCIEventMask: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public func contains(bit: Int) -> Bool { bit >= 0 && bit < 64 && rawValue >> UInt64(bit) & 1 == 1 }

    public var description: String { CommandFormat.hex(rawValue, digits: 16) }
}
