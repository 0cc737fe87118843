import Bluetooth

/// The two services every GATT server carries: GAP (0x1800) and GATT (0x1801).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §12 (GAP service); Vol 3, Part G, §7 (GATT service)
public enum StandardServices {
    /// The Generic Access service: Device Name (0x2A00; writable when `deviceNameWritable`)
    /// and Appearance (0x2A01, two octets, little-endian).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §12.1, §12.2
    public static func genericAccess(
        deviceName: String, appearance: UInt16 = 0x0000, deviceNameWritable: Bool = false
    ) -> ServiceDefinition {
        ServiceDefinition(
            uuid: GATTUUID.genericAccess,
            characteristics: [
                CharacteristicDefinition(
                    uuid: GATTUUID.deviceName, properties: deviceNameWritable ? [.read, .write] : [.read],
                    value: Array(deviceName.utf8), maximumLength: 248),
                CharacteristicDefinition(
                    uuid: GATTUUID.appearance, properties: [.read],
                    value: [UInt8(truncatingIfNeeded: appearance), UInt8(truncatingIfNeeded: appearance >> 8)],
                    maximumLength: 2, isFixedLength: true),
            ])
    }

    /// The Generic Attribute service: Service Changed (0x2A05, indicate, with its Client
    /// Characteristic Configuration descriptor), Client Supported Features (0x2B29, read and
    /// write, one octet per client) and Database Hash (0x2B2A, read, filled in by the
    /// database). `serverSupportedFeatures` adds Server Supported Features (0x2B3A, read).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §7.1–§7.4
    public static func genericAttribute(serverSupportedFeatures: UInt8? = nil) -> ServiceDefinition {
        var characteristics = [
            serviceChanged,
            CharacteristicDefinition(
                uuid: GATTUUID.clientSupportedFeatures, properties: [.read, .write], value: [0x00],
                maximumLength: ClientSupportedFeatures.maximumLength),
            CharacteristicDefinition(
                uuid: GATTUUID.databaseHash, properties: [.read], value: [UInt8](repeating: 0, count: 16),
                maximumLength: 16, isFixedLength: true),
        ]
        if let serverSupportedFeatures {
            characteristics.append(
                CharacteristicDefinition(
                    uuid: GATTUUID.serverSupportedFeatures, properties: [.read], value: [serverSupportedFeatures],
                    maximumLength: 1, isFixedLength: true))
        }
        return ServiceDefinition(uuid: GATTUUID.genericAttribute, characteristics: characteristics)
    }

    /// The Generic Attribute service as servers before Core 5.1 have it (the TI CC2650 and
    /// Bluefruit firmware among them): Service Changed alone.
    public static func genericAttributeWithServiceChangedOnly() -> ServiceDefinition {
        ServiceDefinition(uuid: GATTUUID.genericAttribute, characteristics: [serviceChanged])
    }

    /// Service Changed (0x2A05): indicate only, with its Client Characteristic Configuration.
    static let serviceChanged = CharacteristicDefinition(
        uuid: GATTUUID.serviceChanged, properties: [.indicate], permissions: [], value: [0, 0, 0, 0],
        maximumLength: 4, isFixedLength: true, descriptors: [.clientConfiguration()])
}

/// The Client Supported Features bits a client sets in the GATT service.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §7.2 (Table 7.6)
public struct ClientSupportedFeatures: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let robustCaching = ClientSupportedFeatures(rawValue: 0x01)
    public static let enhancedATTBearer = ClientSupportedFeatures(rawValue: 0x02)
    public static let multipleHandleValueNotifications = ClientSupportedFeatures(rawValue: 0x04)

    /// The bits defined by Core 5.4: others are reserved and must not be set by a client.
    public static let defined: ClientSupportedFeatures = [
        .robustCaching, .enhancedATTBearer, .multipleHandleValueNotifications,
    ]

    /// The characteristic value is variable length; we accept this many octets.
    public static let maximumLength = 8
}
