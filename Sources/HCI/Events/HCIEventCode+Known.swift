import Bluetooth

extension HCIEventCode: CustomStringConvertible {
    /// HCI_Disconnection_Complete. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.5
    public static let disconnectionComplete = HCIEventCode(rawValue: 0x05)
    /// HCI_Encryption_Change [v1]. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.8
    public static let encryptionChangeV1 = HCIEventCode(rawValue: 0x08)
    /// HCI_Read_Remote_Version_Information_Complete. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.12
    public static let readRemoteVersionInformationComplete = HCIEventCode(rawValue: 0x0C)
    /// HCI_Command_Complete. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.14
    public static let commandComplete = HCIEventCode(rawValue: 0x0E)
    /// HCI_Command_Status. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.15
    public static let commandStatus = HCIEventCode(rawValue: 0x0F)
    /// HCI_Hardware_Error. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.16
    public static let hardwareError = HCIEventCode(rawValue: 0x10)
    /// HCI_Number_Of_Completed_Packets. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.19
    public static let numberOfCompletedPackets = HCIEventCode(rawValue: 0x13)
    /// HCI_Data_Buffer_Overflow. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.26
    public static let dataBufferOverflow = HCIEventCode(rawValue: 0x1A)
    /// HCI_Encryption_Key_Refresh_Complete. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.39
    public static let encryptionKeyRefreshComplete = HCIEventCode(rawValue: 0x30)
    /// HCI_LE_Meta. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65
    public static let leMeta = HCIEventCode(rawValue: 0x3E)
    /// HCI_Encryption_Change [v2]. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.8
    public static let encryptionChangeV2 = HCIEventCode(rawValue: 0x59)
    /// Vendor-specific debug event. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.4
    public static let vendorSpecific = HCIEventCode(rawValue: 0xFF)

    /// Every event Core 5.4 defines, named as btmon prints them: the spec name without `HCI_`, with
    /// "LE Meta Event", "Number of …" and a " v2" suffix where btmon has them. Events removed before 5.4
    /// (AMP 0x40–0x47 and 0x49–0x4D, Page Scan Mode Change 0x1F) have no entry.
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7
    static let names: [UInt8: String] = [
        0x01: "Inquiry Complete",
        0x02: "Inquiry Result",
        0x03: "Connection Complete",
        0x04: "Connection Request",
        0x05: "Disconnection Complete",
        0x06: "Authentication Complete",
        0x07: "Remote Name Request Complete",
        0x08: "Encryption Change",
        0x09: "Change Connection Link Key Complete",
        0x0A: "Link Key Type Changed",
        0x0B: "Read Remote Supported Features Complete",
        0x0C: "Read Remote Version Information Complete",
        0x0D: "QoS Setup Complete",
        0x0E: "Command Complete",
        0x0F: "Command Status",
        0x10: "Hardware Error",
        0x11: "Flush Occurred",
        0x12: "Role Change",
        0x13: "Number of Completed Packets",
        0x14: "Mode Change",
        0x15: "Return Link Keys",
        0x16: "PIN Code Request",
        0x17: "Link Key Request",
        0x18: "Link Key Notification",
        0x19: "Loopback Command",
        0x1A: "Data Buffer Overflow",
        0x1B: "Max Slots Change",
        0x1C: "Read Clock Offset Complete",
        0x1D: "Connection Packet Type Changed",
        0x1E: "QoS Violation",
        0x20: "Page Scan Repetition Mode Change",
        0x21: "Flow Specification Complete",
        0x22: "Inquiry Result with RSSI",
        0x23: "Read Remote Extended Features Complete",
        0x2C: "Synchronous Connection Complete",
        0x2D: "Synchronous Connection Changed",
        0x2E: "Sniff Subrating",
        0x2F: "Extended Inquiry Result",
        0x30: "Encryption Key Refresh Complete",
        0x31: "IO Capability Request",
        0x32: "IO Capability Response",
        0x33: "User Confirmation Request",
        0x34: "User Passkey Request",
        0x35: "Remote OOB Data Request",
        0x36: "Simple Pairing Complete",
        0x38: "Link Supervision Timeout Changed",
        0x39: "Enhanced Flush Complete",
        0x3B: "User Passkey Notification",
        0x3C: "Keypress Notification",
        0x3D: "Remote Host Supported Features Notification",
        0x3E: "LE Meta Event",
        0x48: "Number of Completed Data Blocks",
        0x4E: "Triggered Clock Capture",
        0x4F: "Synchronization Train Complete",
        0x50: "Synchronization Train Received",
        0x51: "Connectionless Peripheral Broadcast Receive",
        0x52: "Connectionless Peripheral Broadcast Timeout",
        0x53: "Truncated Page Complete",
        0x54: "Peripheral Page Response Timeout",
        0x55: "Connectionless Peripheral Broadcast Channel Map Change",
        0x56: "Inquiry Response Notification",
        0x57: "Authenticated Payload Timeout Expired",
        0x58: "SAM Status Change",
        0x59: "Encryption Change v2",
        0xFF: "Vendor",
    ]

    /// The spec name, e.g. `Disconnection Complete`, or `Event 0x42` when unknown.
    public var description: String {
        HCIEventCode.names[rawValue] ?? "Event 0x" + String(rawValue, radix: 16).leftPadded(2)
    }
}

extension LESubeventCode: CustomStringConvertible {
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.1
    public static let connectionComplete = LESubeventCode(rawValue: 0x01)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.2
    public static let advertisingReport = LESubeventCode(rawValue: 0x02)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.3
    public static let connectionUpdateComplete = LESubeventCode(rawValue: 0x03)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.4
    public static let readRemoteFeaturesComplete = LESubeventCode(rawValue: 0x04)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.5
    public static let longTermKeyRequest = LESubeventCode(rawValue: 0x05)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.6
    public static let remoteConnectionParameterRequest = LESubeventCode(rawValue: 0x06)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.7
    public static let dataLengthChange = LESubeventCode(rawValue: 0x07)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.10
    public static let enhancedConnectionCompleteV1 = LESubeventCode(rawValue: 0x0A)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.11
    public static let directedAdvertisingReport = LESubeventCode(rawValue: 0x0B)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.12
    public static let phyUpdateComplete = LESubeventCode(rawValue: 0x0C)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.13
    public static let extendedAdvertisingReport = LESubeventCode(rawValue: 0x0D)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.20
    public static let channelSelectionAlgorithm = LESubeventCode(rawValue: 0x14)
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.10
    public static let enhancedConnectionCompleteV2 = LESubeventCode(rawValue: 0x29)

    /// Every LE Meta subevent Core 5.4 defines, named as btmon prints them: the spec name without
    /// `HCI_`, with a " v2" suffix on the second versions.
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65
    static let names: [UInt8: String] = [
        0x01: "LE Connection Complete",
        0x02: "LE Advertising Report",
        0x03: "LE Connection Update Complete",
        0x04: "LE Read Remote Features Complete",
        0x05: "LE Long Term Key Request",
        0x06: "LE Remote Connection Parameter Request",
        0x07: "LE Data Length Change",
        0x08: "LE Read Local P-256 Public Key Complete",
        0x09: "LE Generate DHKey Complete",
        0x0A: "LE Enhanced Connection Complete",
        0x0B: "LE Directed Advertising Report",
        0x0C: "LE PHY Update Complete",
        0x0D: "LE Extended Advertising Report",
        0x0E: "LE Periodic Advertising Sync Established",
        0x0F: "LE Periodic Advertising Report",
        0x10: "LE Periodic Advertising Sync Lost",
        0x11: "LE Scan Timeout",
        0x12: "LE Advertising Set Terminated",
        0x13: "LE Scan Request Received",
        0x14: "LE Channel Selection Algorithm",
        0x15: "LE Connectionless IQ Report",
        0x16: "LE Connection IQ Report",
        0x17: "LE CTE Request Failed",
        0x18: "LE Periodic Advertising Sync Transfer Received",
        0x19: "LE CIS Established",
        0x1A: "LE CIS Request",
        0x1B: "LE Create BIG Complete",
        0x1C: "LE Terminate BIG Complete",
        0x1D: "LE BIG Sync Established",
        0x1E: "LE BIG Sync Lost",
        0x1F: "LE Request Peer SCA Complete",
        0x20: "LE Path Loss Threshold",
        0x21: "LE Transmit Power Reporting",
        0x22: "LE BIGInfo Advertising Report",
        0x23: "LE Subrate Change",
        0x24: "LE Periodic Advertising Sync Established v2",
        0x25: "LE Periodic Advertising Report v2",
        0x26: "LE Periodic Advertising Sync Transfer Received v2",
        0x27: "LE Periodic Advertising Subevent Data Request",
        0x28: "LE Periodic Advertising Response Report",
        0x29: "LE Enhanced Connection Complete v2",
    ]

    /// The spec name, e.g. `LE Advertising Report`, or `LE subevent 0x42` when unknown.
    public var description: String {
        LESubeventCode.names[rawValue] ?? "LE subevent 0x" + String(rawValue, radix: 16).leftPadded(2)
    }
}
