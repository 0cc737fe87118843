import HCI
import Bluetooth
import L2CAP
import ATT

/// A btsnoop datalink type (the header's fourth field). Open: unknown values keep their value.
/// - SeeAlso: BlueZ doc/btsnoop.rst; RFC 1761 (the snoop format btsnoop derives from)
public struct BTSnoopDatalink: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Un-encapsulated HCI (H1): not supported.
    public static let hci = BTSnoopDatalink(rawValue: 1001)
    /// HCI UART (H4): each record starts with the H4 packet indicator. Supported.
    public static let h4 = BTSnoopDatalink(rawValue: 1002)
    /// HCI BCSP: not supported.
    public static let bcsp = BTSnoopDatalink(rawValue: 1003)
    /// HCI three-wire UART (H5): not supported.
    public static let threeWire = BTSnoopDatalink(rawValue: 1004)
    /// BlueZ Linux monitor: flags carry controller index and opcode. Supported.
    public static let monitor = BTSnoopDatalink(rawValue: 2001)
    /// BlueZ simulator: not supported.
    public static let simulator = BTSnoopDatalink(rawValue: 2002)

    public var isSupported: Bool { self == .h4 || self == .monitor }

    public var description: String {
        let name: String
        switch rawValue {
        case 1001: name = "HCI un-encapsulated (H1)"
        case 1002: name = "HCI UART (H4)"
        case 1003: name = "HCI BCSP"
        case 1004: name = "HCI three-wire UART (H5)"
        case 2001: name = "Linux monitor"
        case 2002: name = "simulator"
        default: name = "unknown"
        }
        return "\(rawValue) (\(name))"
    }
}

/// A pcap / pcapng link type (LINKTYPE_ value). Open: unknown values keep their value.
/// - SeeAlso: https://www.tcpdump.org/linktypes.html
public struct PcapLinkType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// H4 packets without direction: supported, direction `.unknown`.
    public static let bluetoothHCIH4 = PcapLinkType(rawValue: 187)
    /// 4-octet big-endian direction pseudo-header (bit 0: received), then the H4 packet.
    public static let bluetoothHCIH4WithPHDR = PcapLinkType(rawValue: 201)
    public static let bluetoothLELL = PcapLinkType(rawValue: 251)
    /// 4-octet big-endian header: adapter index, monitor opcode; then the packet. Supported.
    public static let bluetoothLinuxMonitor = PcapLinkType(rawValue: 254)
    public static let bluetoothBREDRBB = PcapLinkType(rawValue: 255)
    public static let bluetoothLELLWithPHDR = PcapLinkType(rawValue: 256)

    public var isSupported: Bool {
        self == .bluetoothHCIH4 || self == .bluetoothHCIH4WithPHDR || self == .bluetoothLinuxMonitor
    }

    /// The LINKTYPE_ name without its prefix, or nil when we do not know it.
    public var name: String? {
        switch rawValue {
        case 0: return "NULL"
        case 1: return "ETHERNET"
        case 101: return "RAW"
        case 113: return "LINUX_SLL"
        case 147...162: return "USER\(rawValue - 147)"
        case 187: return "BLUETOOTH_HCI_H4"
        case 201: return "BLUETOOTH_HCI_H4_WITH_PHDR"
        case 220: return "USB_LINUX_MMAPPED"
        case 251: return "BLUETOOTH_LE_LL"
        case 254: return "BLUETOOTH_LINUX_MONITOR"
        case 255: return "BLUETOOTH_BREDR_BB"
        case 256: return "BLUETOOTH_LE_LL_WITH_PHDR"
        case 272: return "NORDIC_BLE"
        case 276: return "LINUX_SLL2"
        default: return nil
        }
    }

    public var description: String {
        if let name { return "\(rawValue) (\(name))" }
        return "\(rawValue)"
    }
}

/// The container a `CaptureReader` decodes.
public enum CaptureFormat: Hashable, Sendable, CustomStringConvertible {
    case btsnoop(BTSnoopDatalink)
    /// Classic pcap; `nanosecond` for the a1b23c4d magic, `bigEndian` for the file byte order.
    case pcap(PcapLinkType, nanosecond: Bool, bigEndian: Bool)
    /// pcapng; link types are per interface.
    case pcapng

    public var description: String {
        switch self {
        case .btsnoop(let datalink): return "btsnoop, datalink \(datalink)"
        case .pcap(let linkType, let nanosecond, _):
            return "pcap\(nanosecond ? " (nanosecond)" : ""), link type \(linkType)"
        case .pcapng: return "pcapng"
        }
    }
}

extension HCIError {
    /// What to say about a capture whose link layer is not HCI.
    static let supportedCaptures =
        "only HCI captures (btsnoop datalink 1002/2001, pcap/pcapng link type 201, 187 or 254) can be decoded"

    static func unsupported(linkType: PcapLinkType) -> HCIError {
        .captureFile(unsupportedMessage(linkType: linkType))
    }

    static func unsupportedMessage(linkType: PcapLinkType) -> String {
        var message = "link type \(linkType) is not supported: " + supportedCaptures
        switch linkType.rawValue {
        case 251, 255, 256, 272:
            message += "; this is an over-the-air sniffer capture of the link layer, not HCI"
        default: break
        }
        return message
    }

    static func unsupported(datalink: BTSnoopDatalink) -> HCIError {
        .captureFile("btsnoop datalink \(datalink) is not supported: " + supportedCaptures)
    }
}
