import Bluetooth

/// Names of the UUIDs a BLE user meets: the Bluetooth SIG assigned numbers for services,
/// characteristics, descriptors and GATT declarations, and the 128-bit UUIDs of the two target
/// devices (TI CC2650 SensorTag, Nordic UART Service as used by Adafruit Bluefruit LE).
///
/// - SeeAlso: Bluetooth SIG Assigned Numbers, §3.4 (GATT Services), §3.5 (Declarations),
///   §3.6 (Descriptors), §3.8 (Characteristics)
public enum GATTNames {
    /// What a named UUID is.
    public enum Kind: String, Hashable, Sendable {
        case service, characteristic, descriptor, declaration
    }

    /// One named UUID.
    public struct Entry: Hashable, Sendable {
        public var uuid: BluetoothUUID
        public var name: String
        public var kind: Kind
        /// `true` for a vendor UUID (TI, Nordic) rather than a SIG assigned number.
        public var isVendor: Bool
    }

    /// The name of `uuid` (`"Battery Level"` for 0x2A19, also when spelt as 128 bits), or `nil`.
    public static func name(for uuid: BluetoothUUID) -> String? { entry(for: uuid)?.name }

    /// The table entry for `uuid`, or `nil`.
    public static func entry(for uuid: BluetoothUUID) -> Entry? {
        if let short = uuid.uuid16 { return sig[short] ?? vendor16[short] }
        return vendor[uuid.uuid128]
    }

    /// Every entry, SIG numbers first (ascending), then vendor UUIDs.
    public static var allEntries: [Entry] {
        sig.keys.sorted().compactMap { sig[$0] } + vendor16.keys.sorted().compactMap { vendor16[$0] }
            + vendor.keys.sorted().compactMap { vendor[$0] }
    }

    // MARK: Tables

    /// Parsed once, on first use, from `sigTable` lines: `XXXX K Name` with K one of
    /// s(ervice), c(haracteristic), d(escriptor), a (declaration / attribute type).
    static let sig: [UInt16: Entry] = {
        var table: [UInt16: Entry] = [:]
        for line in sigTable.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3, let value = UInt16(fields[0], radix: 16), let kind = kind(fields[1]) else {
                continue
            }
            table[value] = Entry(uuid: .bit16(value), name: String(fields[2]), kind: kind, isVendor: false)
        }
        return table
    }()

    /// 16-bit UUIDs outside the SIG's assignments that a target device uses: TI's Simple Keys
    /// service of the CC2650 SensorTag is 0xFFE0 with its data characteristic 0xFFE1.
    static let vendor16: [UInt16: Entry] = [
        0xFFE0: Entry(uuid: .bit16(0xFFE0), name: "SensorTag Simple Keys", kind: .service, isVendor: true),
        0xFFE1: Entry(uuid: .bit16(0xFFE1), name: "SensorTag Simple Keys Data", kind: .characteristic, isVendor: true),
    ]

    static let vendor: [UInt128: Entry] = {
        var table: [UInt128: Entry] = [:]
        func add(_ text: String, _ kind: Kind, _ name: String) {
            guard let uuid = BluetoothUUID(text) else { return }
            table[uuid.uuid128] = Entry(uuid: uuid, name: name, kind: kind, isVendor: true)
        }
        for (short, kind, name) in sensorTag {
            add(tiBase(short), kind, name)
        }
        add("6E400001-B5A3-F393-E0A9-E50E24DCCA9E", .service, "Nordic UART Service")
        add("6E400002-B5A3-F393-E0A9-E50E24DCCA9E", .characteristic, "Nordic UART RX")
        add("6E400003-B5A3-F393-E0A9-E50E24DCCA9E", .characteristic, "Nordic UART TX")
        return table
    }()

    private static func kind(_ field: Substring) -> Kind? {
        switch field {
        case "s": return .service
        case "c": return .characteristic
        case "d": return .descriptor
        case "a": return .declaration
        default: return nil
        }
    }

    /// `F000xxxx-0451-4000-B000-000000000000`, TI's 128-bit base.
    static func tiBase(_ short: UInt16) -> String {
        "F000" + hex4(short) + "-0451-4000-B000-000000000000"
    }

    /// TI CC2650 SensorTag (firmware 1.4x) services and characteristics on TI's base.
    static let sensorTag: [(UInt16, Kind, String)] = [
        (0xAA00, .service, "SensorTag IR Temperature"),
        (0xAA01, .characteristic, "SensorTag IR Temperature Data"),
        (0xAA02, .characteristic, "SensorTag IR Temperature Config"),
        (0xAA03, .characteristic, "SensorTag IR Temperature Period"),
        (0xAA20, .service, "SensorTag Humidity"),
        (0xAA21, .characteristic, "SensorTag Humidity Data"),
        (0xAA22, .characteristic, "SensorTag Humidity Config"),
        (0xAA23, .characteristic, "SensorTag Humidity Period"),
        (0xAA40, .service, "SensorTag Barometer"),
        (0xAA41, .characteristic, "SensorTag Barometer Data"),
        (0xAA42, .characteristic, "SensorTag Barometer Config"),
        (0xAA44, .characteristic, "SensorTag Barometer Period"),
        (0xAA64, .service, "SensorTag IO"),
        (0xAA65, .characteristic, "SensorTag IO Data"),
        (0xAA66, .characteristic, "SensorTag IO Config"),
        (0xAA70, .service, "SensorTag Optical"),
        (0xAA71, .characteristic, "SensorTag Optical Data"),
        (0xAA72, .characteristic, "SensorTag Optical Config"),
        (0xAA73, .characteristic, "SensorTag Optical Period"),
        (0xAA80, .service, "SensorTag Movement"),
        (0xAA81, .characteristic, "SensorTag Movement Data"),
        (0xAA82, .characteristic, "SensorTag Movement Config"),
        (0xAA83, .characteristic, "SensorTag Movement Period"),
        (0xAC00, .service, "SensorTag Register"),
        (0xAC01, .characteristic, "SensorTag Register Data"),
        (0xAC02, .characteristic, "SensorTag Register Address"),
        (0xAC03, .characteristic, "SensorTag Register Device ID"),
        (0xCCC0, .service, "SensorTag Connection Control"),
        (0xCCC1, .characteristic, "SensorTag Connection Parameters"),
        (0xCCC2, .characteristic, "SensorTag Request Connection Parameters"),
        (0xCCC3, .characteristic, "SensorTag Disconnect Request"),
        (0xFFC0, .service, "TI OAD"),
        (0xFFC1, .characteristic, "TI OAD Image Identify"),
        (0xFFC2, .characteristic, "TI OAD Image Block"),
    ]
}

// MARK: Units and companies

extension GATTNames {
    /// The unit a Characteristic Presentation Format descriptor names (its 16-bit Unit field,
    /// 0x2700–0x27FF): `"Celsius temperature (degree Celsius)"` for 0x272F, or nil.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3.5.4
    public static func unit(_ code: UInt16) -> String? { units[code] }

    /// The unit named by `uuid` (0x27xx, also spelt as 128 bits), or nil.
    public static func unit(for uuid: BluetoothUUID) -> String? {
        uuid.uuid16.flatMap { units[$0] }
    }

    /// Every unit code in the table, ascending.
    public static var allUnitCodes: [UInt16] { units.keys.sorted() }

    /// The company with this SIG company identifier (Manufacturer Specific Data), or nil.
    public static func company(_ identifier: UInt16) -> String? { CompanyIdentifiers.name(for: identifier) }

    /// Parsed once from `unitTable` lines: `XXXX name`.
    static let units: [UInt16: String] = {
        var table: [UInt16: String] = [:]
        for line in unitTable.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 1)
            guard fields.count == 2, let value = UInt16(fields[0], radix: 16) else { continue }
            table[value] = String(fields[1])
        }
        return table
    }()
}
