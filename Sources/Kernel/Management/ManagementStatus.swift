import HCI

/// A management status code. Open: codes newer than this table keep their value.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Error Codes"
public struct ManagementStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = ManagementStatus(rawValue: 0x00)
    public static let unknownCommand = ManagementStatus(rawValue: 0x01)
    public static let notConnected = ManagementStatus(rawValue: 0x02)
    public static let failed = ManagementStatus(rawValue: 0x03)
    public static let connectFailed = ManagementStatus(rawValue: 0x04)
    public static let authenticationFailed = ManagementStatus(rawValue: 0x05)
    public static let notPaired = ManagementStatus(rawValue: 0x06)
    public static let noResources = ManagementStatus(rawValue: 0x07)
    public static let timeout = ManagementStatus(rawValue: 0x08)
    public static let alreadyConnected = ManagementStatus(rawValue: 0x09)
    public static let busy = ManagementStatus(rawValue: 0x0A)
    public static let rejected = ManagementStatus(rawValue: 0x0B)
    public static let notSupported = ManagementStatus(rawValue: 0x0C)
    public static let invalidParameters = ManagementStatus(rawValue: 0x0D)
    public static let disconnected = ManagementStatus(rawValue: 0x0E)
    public static let notPowered = ManagementStatus(rawValue: 0x0F)
    public static let cancelled = ManagementStatus(rawValue: 0x10)
    public static let invalidIndex = ManagementStatus(rawValue: 0x11)
    public static let rfkilled = ManagementStatus(rawValue: 0x12)
    public static let alreadyPaired = ManagementStatus(rawValue: 0x13)
    public static let permissionDenied = ManagementStatus(rawValue: 0x14)

    /// The names mgmt-api.txt gives, indexed by code.
    static let names: [String] = [
        "Success", "Unknown Command", "Not Connected", "Failed", "Connect Failed", "Authentication Failed",
        "Not Paired", "No Resources", "Timeout", "Already Connected", "Busy", "Rejected", "Not Supported",
        "Invalid Parameters", "Disconnected", "Not Powered", "Cancelled", "Invalid Index", "RFKilled",
        "Already Paired", "Permission Denied",
    ]

    /// The spec name, or `nil` for a code this table does not know.
    public var name: String? { Int(rawValue) < ManagementStatus.names.count ? ManagementStatus.names[Int(rawValue)] : nil }

    /// "Permission Denied (0x14)".
    public var description: String {
        let code = "0x" + String(rawValue, radix: 16).leftPadded(2)
        return name.map { "\($0) (\(code))" } ?? "status \(code)"
    }
}

/// The controller settings bitmask of Read Controller Information and the mode commands.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, "Read Controller Information Command"
public struct ManagementSettings: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let powered = ManagementSettings(rawValue: 1 << 0)
    public static let connectable = ManagementSettings(rawValue: 1 << 1)
    public static let fastConnectable = ManagementSettings(rawValue: 1 << 2)
    public static let discoverable = ManagementSettings(rawValue: 1 << 3)
    public static let bondable = ManagementSettings(rawValue: 1 << 4)
    public static let linkLevelSecurity = ManagementSettings(rawValue: 1 << 5)
    public static let secureSimplePairing = ManagementSettings(rawValue: 1 << 6)
    public static let basicRateEDR = ManagementSettings(rawValue: 1 << 7)
    public static let highSpeed = ManagementSettings(rawValue: 1 << 8)
    public static let lowEnergy = ManagementSettings(rawValue: 1 << 9)
    public static let advertising = ManagementSettings(rawValue: 1 << 10)
    public static let secureConnections = ManagementSettings(rawValue: 1 << 11)
    public static let debugKeys = ManagementSettings(rawValue: 1 << 12)
    public static let privacy = ManagementSettings(rawValue: 1 << 13)
    public static let controllerConfiguration = ManagementSettings(rawValue: 1 << 14)
    public static let staticAddress = ManagementSettings(rawValue: 1 << 15)
    public static let phyConfiguration = ManagementSettings(rawValue: 1 << 16)
    public static let widebandSpeech = ManagementSettings(rawValue: 1 << 17)

    static let names: [String] = [
        "powered", "connectable", "fast-connectable", "discoverable", "bondable", "link-security", "ssp",
        "br/edr", "hs", "le", "advertising", "secure-conn", "debug-keys", "privacy", "configuration",
        "static-addr", "phy-configuration", "wide-band-speech",
    ]

    /// Space-separated names as `btmgmt info` prints them; unknown bits as `bitN`.
    public var description: String {
        (0..<32).compactMap { bit -> String? in
            guard rawValue & (1 << UInt32(bit)) != 0 else { return nil }
            return bit < ManagementSettings.names.count ? ManagementSettings.names[bit] : "bit\(bit)"
        }.joined(separator: " ")
    }
}
