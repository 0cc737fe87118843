/// The H4 packet indicator that precedes every HCI packet on a UART/socket stream and in
/// btsnoop datalink 1002 records.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part A, §2
public enum HCIPacketType: UInt8, Hashable, Sendable, CustomStringConvertible {
    case command = 0x01
    case acl = 0x02
    case sco = 0x03
    case event = 0x04
    case iso = 0x05

    public var description: String {
        switch self {
        case .command: return "HCI Command"
        case .acl: return "ACL Data"
        case .sco: return "SCO Data"
        case .event: return "HCI Event"
        case .iso: return "ISO Data"
        }
    }
}
