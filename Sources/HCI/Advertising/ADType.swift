import Bluetooth

/// An AD type code (Assigned Numbers §2.3). Open: unknown codes keep their value.
/// - SeeAlso: Core Specification Supplement 11, Part A, §1
public struct ADType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let flags = ADType(rawValue: 0x01)
    public static let incompleteListOf16BitServiceUUIDs = ADType(rawValue: 0x02)
    public static let completeListOf16BitServiceUUIDs = ADType(rawValue: 0x03)
    public static let incompleteListOf32BitServiceUUIDs = ADType(rawValue: 0x04)
    public static let completeListOf32BitServiceUUIDs = ADType(rawValue: 0x05)
    public static let incompleteListOf128BitServiceUUIDs = ADType(rawValue: 0x06)
    public static let completeListOf128BitServiceUUIDs = ADType(rawValue: 0x07)
    public static let shortenedLocalName = ADType(rawValue: 0x08)
    public static let completeLocalName = ADType(rawValue: 0x09)
    public static let txPowerLevel = ADType(rawValue: 0x0A)
    public static let classOfDevice = ADType(rawValue: 0x0D)
    public static let peripheralConnectionIntervalRange = ADType(rawValue: 0x12)
    public static let listOf16BitServiceSolicitationUUIDs = ADType(rawValue: 0x14)
    public static let listOf128BitServiceSolicitationUUIDs = ADType(rawValue: 0x15)
    public static let serviceData16BitUUID = ADType(rawValue: 0x16)
    public static let publicTargetAddress = ADType(rawValue: 0x17)
    public static let randomTargetAddress = ADType(rawValue: 0x18)
    public static let appearance = ADType(rawValue: 0x19)
    public static let advertisingInterval = ADType(rawValue: 0x1A)
    public static let leBluetoothDeviceAddress = ADType(rawValue: 0x1B)
    public static let leRole = ADType(rawValue: 0x1C)
    public static let listOf32BitServiceSolicitationUUIDs = ADType(rawValue: 0x1F)
    public static let serviceData32BitUUID = ADType(rawValue: 0x20)
    public static let serviceData128BitUUID = ADType(rawValue: 0x21)
    public static let uri = ADType(rawValue: 0x24)
    public static let manufacturerSpecificData = ADType(rawValue: 0xFF)

    static let names: [UInt8: String] = [
        0x01: "Flags", 0x02: "Incomplete List of 16-bit Service UUIDs",
        0x03: "Complete List of 16-bit Service UUIDs", 0x04: "Incomplete List of 32-bit Service UUIDs",
        0x05: "Complete List of 32-bit Service UUIDs", 0x06: "Incomplete List of 128-bit Service UUIDs",
        0x07: "Complete List of 128-bit Service UUIDs", 0x08: "Shortened Local Name",
        0x09: "Complete Local Name", 0x0A: "Tx Power Level", 0x0D: "Class of Device",
        0x0E: "Simple Pairing Hash C-192", 0x0F: "Simple Pairing Randomizer R-192",
        0x10: "Device ID / Security Manager TK Value", 0x11: "Security Manager Out of Band Flags",
        0x12: "Peripheral Connection Interval Range", 0x14: "List of 16-bit Service Solicitation UUIDs",
        0x15: "List of 128-bit Service Solicitation UUIDs", 0x16: "Service Data - 16-bit UUID",
        0x17: "Public Target Address", 0x18: "Random Target Address", 0x19: "Appearance",
        0x1A: "Advertising Interval", 0x1B: "LE Bluetooth Device Address", 0x1C: "LE Role",
        0x1F: "List of 32-bit Service Solicitation UUIDs", 0x20: "Service Data - 32-bit UUID",
        0x21: "Service Data - 128-bit UUID", 0x24: "URI", 0x27: "LE Supported Features",
        0x2E: "Encrypted Advertising Data", 0x2F: "Advertising Interval - long",
        0xFF: "Manufacturer Specific Data",
    ]

    public var description: String { ADType.names[rawValue] ?? "AD type " + hciHexString(rawValue, 2) }
}

/// The Flags AD type's bits.
/// - SeeAlso: Core Specification Supplement 11, Part A, §1.3
public struct ADFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let leLimitedDiscoverableMode = ADFlags(rawValue: 1 << 0)
    public static let leGeneralDiscoverableMode = ADFlags(rawValue: 1 << 1)
    public static let brEdrNotSupported = ADFlags(rawValue: 1 << 2)
    public static let simultaneousLEAndBREDR = ADFlags(rawValue: 1 << 3)

    public var description: String {
        var text: [UInt8] = []
        writeText(to: &text)
        return text.asText
    }
}

/// Width of the UUIDs in a service UUID or solicitation list.
public enum ADUUIDWidth: Int, Hashable, Sendable {
    case bits16 = 2
    case bits32 = 4
    case bits128 = 16
}
