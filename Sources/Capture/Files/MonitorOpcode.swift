import HCI
import Bluetooth
import L2CAP
import ATT

/// A BlueZ monitor record opcode (btsnoop datalink 2001, pcap link type 254, monitor channel).
/// Open: unknown opcodes keep their value.
/// - SeeAlso: BlueZ doc/btsnoop.rst "Opcode definitions"; src/shared/btsnoop.h
public struct MonitorOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let newIndex = MonitorOpcode(rawValue: 0)
    public static let deleteIndex = MonitorOpcode(rawValue: 1)
    public static let commandPacket = MonitorOpcode(rawValue: 2)
    public static let eventPacket = MonitorOpcode(rawValue: 3)
    public static let aclTxPacket = MonitorOpcode(rawValue: 4)
    public static let aclRxPacket = MonitorOpcode(rawValue: 5)
    public static let scoTxPacket = MonitorOpcode(rawValue: 6)
    public static let scoRxPacket = MonitorOpcode(rawValue: 7)
    public static let openIndex = MonitorOpcode(rawValue: 8)
    public static let closeIndex = MonitorOpcode(rawValue: 9)
    public static let indexInfo = MonitorOpcode(rawValue: 10)
    public static let vendorDiagnostic = MonitorOpcode(rawValue: 11)
    public static let systemNote = MonitorOpcode(rawValue: 12)
    public static let userLogging = MonitorOpcode(rawValue: 13)
    public static let controlOpen = MonitorOpcode(rawValue: 14)
    public static let controlClose = MonitorOpcode(rawValue: 15)
    public static let controlCommand = MonitorOpcode(rawValue: 16)
    public static let controlEvent = MonitorOpcode(rawValue: 17)
    public static let isoTxPacket = MonitorOpcode(rawValue: 18)
    public static let isoRxPacket = MonitorOpcode(rawValue: 19)

    /// The HCI packet type and direction this opcode carries, or nil for a note.
    @inlinable
    public var packet: (type: HCIPacketType, direction: CaptureDirection)? {
        switch rawValue {
        case 2: return (.command, .sent)
        case 3: return (.event, .received)
        case 4: return (.acl, .sent)
        case 5: return (.acl, .received)
        case 6: return (.sco, .sent)
        case 7: return (.sco, .received)
        case 18: return (.iso, .sent)
        case 19: return (.iso, .received)
        default: return nil
        }
    }

    /// The opcode that records `type` travelling `direction`, or nil when the monitor format
    /// cannot express it (a received command, a sent event, an unknown direction for data).
    public init?(packet type: HCIPacketType, direction: CaptureDirection) {
        switch (type, direction) {
        case (.command, .sent), (.command, .unknown): self = .commandPacket
        case (.event, .received), (.event, .unknown): self = .eventPacket
        case (.acl, .sent): self = .aclTxPacket
        case (.acl, .received): self = .aclRxPacket
        case (.sco, .sent): self = .scoTxPacket
        case (.sco, .received): self = .scoRxPacket
        case (.iso, .sent): self = .isoTxPacket
        case (.iso, .received): self = .isoRxPacket
        default: return nil
        }
    }

    public var description: String {
        let names = [
            "New Index", "Delete Index", "Command", "Event", "ACL TX", "ACL RX", "SCO TX", "SCO RX",
            "Open Index", "Close Index", "Index Info", "Vendor Diagnostic", "System Note",
            "User Logging", "Control Open", "Control Close", "Control Command", "Control Event",
            "ISO TX", "ISO RX",
        ]
        if Int(rawValue) < names.count { return names[Int(rawValue)] }
        return "monitor opcode 0x" + String(rawValue, radix: 16).leftPadded(4)
    }
}
