import HCI

/// The security an L2CAP socket demands of its link (`BT_SECURITY`); raising it on a connected
/// LE link makes the kernel start SMP pairing/encryption. Open: unknown levels keep their value.
public struct L2CAPSecurityLevel: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `BT_SECURITY_SDP`: none at all (BR/EDR SDP only).
    public static let sdp = L2CAPSecurityLevel(rawValue: 0)
    /// `BT_SECURITY_LOW`: no encryption (the LE default).
    public static let low = L2CAPSecurityLevel(rawValue: 1)
    /// `BT_SECURITY_MEDIUM`: encrypted, unauthenticated keys accepted (Just Works).
    public static let medium = L2CAPSecurityLevel(rawValue: 2)
    /// `BT_SECURITY_HIGH`: encrypted with authenticated (MITM-protected) keys.
    public static let high = L2CAPSecurityLevel(rawValue: 3)
    /// `BT_SECURITY_FIPS`: authenticated LE Secure Connections keys only.
    public static let fips = L2CAPSecurityLevel(rawValue: 4)

    public init?(_ text: String) {
        switch text.lowercased() {
        case "sdp": self = .sdp
        case "low": self = .low
        case "medium": self = .medium
        case "high": self = .high
        case "fips": self = .fips
        default: return nil
        }
    }

    public var description: String {
        switch rawValue {
        case 0: return "sdp"
        case 1: return "low"
        case 2: return "medium"
        case 3: return "high"
        case 4: return "fips"
        default: return "level \(rawValue)"
        }
    }

    public static func < (lhs: L2CAPSecurityLevel, rhs: L2CAPSecurityLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The MTUs of a kernel L2CAP channel (`BT_SNDMTU` / `BT_RCVMTU`, or `L2CAP_OPTIONS`).
public struct L2CAPMTU: Hashable, Sendable {
    /// The largest SDU the kernel lets us send (larger sends fail with EMSGSIZE).
    public var send: UInt16
    /// The largest SDU the kernel accepts from the peer (larger ones are dropped).
    public var receive: UInt16

    public init(send: UInt16, receive: UInt16) {
        self.send = send
        self.receive = receive
    }

    /// The limit to report as `ATTChannel.maximumSDUSize`: the smaller of the two, or `nil` when
    /// either is below the LE minimum of 23 (a kernel that reports no real value).
    public var maximumSDUSize: Int? {
        guard send >= 23, receive >= 23 else { return nil }
        return Int(min(send, receive))
    }
}
