import Bluetooth

// The values that say what a device is: GAP's Appearance and Peripheral Preferred Connection
// Parameters, Device Information's System ID and PnP ID. Strict: a value of the wrong length
// does not decode (ByteCodingError; the callers show hex), never to a guess.

/// GAP Appearance (0x2A01): a category (bits 15–6) and a subcategory (bits 5–0).
/// - SeeAlso: Bluetooth Assigned Numbers, §2.6 (Appearance Values)
public struct Appearance: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public var category: UInt16 { rawValue >> 6 }
    public var subcategory: UInt8 { UInt8(rawValue & 0x3F) }

    /// The category's name from the Assigned Numbers; nil for a category not in this table.
    public var categoryName: String? { Self.categories[category] }

    static let categories: [UInt16: String] = [
        0x000: "Unknown", 0x001: "Phone", 0x002: "Computer", 0x003: "Watch", 0x004: "Clock", 0x005: "Display",
        0x006: "Remote Control", 0x007: "Eye-glasses", 0x008: "Tag", 0x009: "Keyring", 0x00A: "Media Player",
        0x00B: "Barcode Scanner", 0x00C: "Thermometer", 0x00D: "Heart Rate Sensor", 0x00E: "Blood Pressure",
        0x00F: "Human Interface Device", 0x010: "Glucose Meter", 0x011: "Running Walking Sensor", 0x012: "Cycling",
        0x013: "Control Device", 0x014: "Network Device", 0x015: "Sensor", 0x016: "Light Fixtures", 0x017: "Fan",
        0x018: "HVAC", 0x019: "Air Conditioning", 0x01A: "Humidifier", 0x01B: "Heating", 0x01C: "Access Control",
        0x01D: "Motorized Device", 0x01E: "Power Device", 0x01F: "Light Source", 0x020: "Window Covering",
        0x021: "Audio Sink", 0x022: "Audio Source", 0x023: "Motorized Vehicle", 0x024: "Domestic Appliance",
        0x025: "Wearable Audio Device", 0x026: "Aircraft", 0x027: "AV Equipment", 0x028: "Display Equipment",
        0x029: "Hearing aid", 0x02A: "Gaming", 0x02B: "Signage", 0x031: "Pulse Oximeter", 0x032: "Weight Scale",
        0x033: "Personal Mobility Device", 0x034: "Continuous Glucose Monitor", 0x035: "Insulin Pump",
        0x036: "Medication Delivery", 0x037: "Spirometer", 0x051: "Outdoor Sports Activity",
    ]

    /// `0x0340 Heart Rate Sensor` or `0x0341 Heart Rate Sensor, subcategory 1`.
    public var description: String {
        let name = categoryName ?? "category 0x" + String(category, radix: 16)
        return "0x" + hex4(rawValue) + " " + name
            + (subcategory == 0 ? "" : ", subcategory \(subcategory)")
    }
}

/// Peripheral Preferred Connection Parameters (0x2A04): intervals in 1.25 ms, the supervision
/// timeout in 10 ms; 0xFFFF means no specific value.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §12.3
public struct PreferredConnectionParameters: Hashable, Sendable, CustomStringConvertible {
    public var minimumInterval: UInt16
    public var maximumInterval: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16

    public init(minimumInterval: UInt16, maximumInterval: UInt16, latency: UInt16, supervisionTimeout: UInt16) {
        self.minimumInterval = minimumInterval
        self.maximumInterval = maximumInterval
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }

    static func milliseconds(_ units: UInt16, _ scale: Double) -> String {
        guard units != 0xFFFF else { return "any" }
        let value = Double(units) * scale
        return value == value.rounded() ? "\(Int(value)) ms" : "\(value) ms"
    }

    /// `interval 100–200 ms, latency 0, supervision timeout 10000 ms`.
    public var description: String {
        "interval \(Self.milliseconds(minimumInterval, 1.25))–\(Self.milliseconds(maximumInterval, 1.25)), "
            + "latency \(latency == 0xFFFF ? "any" : String(latency)), "
            + "supervision timeout \(Self.milliseconds(supervisionTimeout, 10))"
    }
}

/// PnP ID (0x2A50): who assigned the vendor ID, the vendor, the product and its version.
/// - SeeAlso: Device Information Service 1.1, §3.9
public struct PnPID: Hashable, Sendable, CustomStringConvertible {
    /// 0x01: a Bluetooth SIG company identifier; 0x02: a USB Implementer's Forum vendor ID.
    public var vendorIDSource: UInt8
    public var vendorID: UInt16
    public var productID: UInt16
    public var productVersion: UInt16

    public init(vendorIDSource: UInt8, vendorID: UInt16, productID: UInt16, productVersion: UInt16) {
        self.vendorIDSource = vendorIDSource
        self.vendorID = vendorID
        self.productID = productID
        self.productVersion = productVersion
    }

    /// The vendor's name where the source is the Bluetooth SIG and the company is known.
    public var vendorName: String? { vendorIDSource == 1 ? CompanyIdentifiers.name(for: vendorID) : nil }

    public var description: String {
        let source: String
        switch vendorIDSource {
        case 1: source = "Bluetooth SIG"
        case 2: source = "USB IF"
        default: source = "source \(vendorIDSource)"
        }
        return "vendor " + (vendorName.map { "\($0) (\(source) 0x\(hex4(vendorID)))" } ?? "\(source) 0x\(hex4(vendorID))")
            + ", product 0x\(hex4(productID)), version 0x\(hex4(productVersion))"
    }
}

/// System ID (0x2A23): a 40-bit manufacturer-defined identifier and a 24-bit OUI, least
/// significant octet first.
public struct SystemID: Hashable, Sendable, CustomStringConvertible {
    public var manufacturerIdentifier: UInt64
    public var organizationallyUniqueIdentifier: UInt32

    public init(manufacturerIdentifier: UInt64, organizationallyUniqueIdentifier: UInt32) {
        self.manufacturerIdentifier = manufacturerIdentifier & 0xFF_FFFF_FFFF
        self.organizationallyUniqueIdentifier = organizationallyUniqueIdentifier & 0xFF_FFFF
    }

    /// `manufacturer 0x0000000000, OUI 54:6C:0E`.
    public var description: String {
        let manufacturer = String(manufacturerIdentifier, radix: 16)
        let oui = (0..<3).reversed().map { shift -> String in
            let octet = String((organizationallyUniqueIdentifier >> (UInt32(shift) * 8)) & 0xFF, radix: 16, uppercase: true)
            return octet.count == 1 ? "0" + octet : octet
        }
        return "manufacturer 0x" + String(repeating: "0", count: max(0, 10 - manufacturer.count)) + manufacturer
            + ", OUI " + oui.joined(separator: ":")
    }
}

extension PnPID: ByteCodable {
    /// Exactly 7 octets.
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 7, field: "PnP ID")
        func word(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
        self.init(vendorIDSource: bytes[0], vendorID: word(1), productID: word(3), productVersion: word(5))
    }

    public func encoded() -> [UInt8] {
        [vendorIDSource] + vendorID.encoded() + productID.encoded() + productVersion.encoded()
    }
}

extension SystemID: ByteCodable {
    /// Exactly 8 octets.
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 8, field: "System ID")
        self.init(
            manufacturerIdentifier: bytes[0..<5].reversed().reduce(0) { $0 << 8 | UInt64($1) },
            organizationallyUniqueIdentifier: bytes[5..<8].reversed().reduce(0) { $0 << 8 | UInt32($1) })
    }

    public func encoded() -> [UInt8] {
        (0..<5).map { UInt8(truncatingIfNeeded: manufacturerIdentifier >> (8 * UInt64($0))) }
            + (0..<3).map { UInt8(truncatingIfNeeded: organizationallyUniqueIdentifier >> (8 * UInt32($0))) }
    }
}

extension Appearance: ByteCodable {
    /// Exactly 2 octets.
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 2, field: "Appearance")
        self.init(rawValue: UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
    }

    public func encoded() -> [UInt8] { rawValue.encoded() }
}

extension PreferredConnectionParameters: ByteCodable {
    /// Exactly 8 octets.
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 8, field: "Peripheral Preferred Connection Parameters")
        func word(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
        self.init(minimumInterval: word(0), maximumInterval: word(2), latency: word(4), supervisionTimeout: word(6))
    }

    public func encoded() -> [UInt8] {
        minimumInterval.encoded() + maximumInterval.encoded() + latency.encoded() + supervisionTimeout.encoded()
    }
}
