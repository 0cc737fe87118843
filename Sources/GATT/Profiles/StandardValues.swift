import Bluetooth

/// Values of the standard characteristics and descriptors decoded for people, by their UUID:
/// one decoder for `read`, `info`, `services --values`, `subscribe` and `dump`, through the
/// types' `ByteDecodable` codecs. Strict: a value of the wrong length for its type decodes to nil
/// (the callers show hex), never to a guess.
public enum StandardValues {
    /// Characteristics whose value is UTF-8 text: Device Name, the Device Information strings,
    /// and the Characteristic User Description descriptor.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §12.1; Vol 3, Part G, §3.3.3.2; DIS 1.1, §3
    public static let textTypes: Set<BluetoothUUID> = [
        0x2A00, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29, 0x2901, NordicUART.tx, NordicUART.rx,
    ]

    /// Whether `uuid` is a type whose format this decoder knows (a value of it that does not
    /// decode is malformed, not text to guess at).
    public static func knowsFormat(of uuid: BluetoothUUID) -> Bool {
        textTypes.contains(uuid) || uuid.uuid16.map { formatted.contains($0) } ?? false
    }

    static let formatted: Set<UInt16> = [
        0x2A01, 0x2A04, 0x2A05, 0x2A19, 0x2A23, 0x2A50, 0x2AA6, 0x2900, 0x2902, 0x2903, 0x2904, 0x2B29, 0x2B2A, 0x2B3A, 0x2803,
    ]

    /// `value` of an attribute of type `uuid` decoded, or nil where the type is not one of these
    /// or the value is malformed for it.
    public static func decode(_ value: [UInt8], uuid: BluetoothUUID) -> String? {
        if textTypes.contains(uuid) {
            guard let text = String(validating: value, as: UTF8.self) else { return nil }
            return text
        }
        guard let short = uuid.uuid16 else { return nil }
        func word(_ at: Int) -> UInt16 { UInt16(value[at]) | UInt16(value[at + 1]) << 8 }
        switch short {
        case 0x2A01: return (try? Appearance(decoding: value))?.description
        case 0x2A04: return (try? PreferredConnectionParameters(decoding: value))?.description
        case 0x2A05:
            // Service Changed: the affected range (Vol 3, Part G, §7.1).
            guard value.count == 4 else { return nil }
            return "handles 0x\(hex4(word(0)))-0x\(hex4(word(2))) changed"
        case 0x2A19:
            guard value.count == 1, value[0] <= 100 else { return nil }
            return "\(value[0]) %"
        case 0x2A23: return (try? SystemID(decoding: value))?.description
        case 0x2A50: return (try? PnPID(decoding: value))?.description
        case 0x2AA6:
            // Central Address Resolution (Vol 3, Part C, §12.4).
            guard value.count == 1, value[0] <= 1 else { return nil }
            return value[0] == 1 ? "address resolution supported" : "address resolution not supported"
        case 0x2900:
            // Characteristic Extended Properties (Vol 3, Part G, §3.3.3.1).
            guard value.count == 2 else { return nil }
            var names: [String] = []
            if value[0] & 0x01 != 0 { names.append("reliable write") }
            if value[0] & 0x02 != 0 { names.append("writable auxiliaries") }
            return names.isEmpty ? "no extended properties" : names.joined(separator: ", ")
        case 0x2902, 0x2903:
            // Client / Server Characteristic Configuration (Vol 3, Part G, §3.3.3.3–§3.3.3.4).
            guard value.count == 2 else { return nil }
            if short == 0x2903 { return value[0] & 0x01 != 0 ? "broadcasts on" : "broadcasts off" }
            switch value[0] & 0x03 {
            case 0x00: return "notifications and indications off"
            case 0x01: return "notifications on"
            case 0x02: return "indications on"
            default: return "notifications and indications on"
            }
        case 0x2904: return (try? PresentationFormat(decoding: value))?.description
        case 0x2B29:
            // Client Supported Features (Vol 3, Part G, §7.2).
            guard let first = value.first else { return nil }
            var names: [String] = []
            if first & 0x01 != 0 { names.append("Robust Caching") }
            if first & 0x02 != 0 { names.append("EATT") }
            if first & 0x04 != 0 { names.append("Multiple Handle Value Notifications") }
            return names.isEmpty ? "none" : names.joined(separator: ", ")
        case 0x2B3A:
            // Server Supported Features (Vol 3, Part G, §7.4).
            guard let first = value.first else { return nil }
            return first & 0x01 != 0 ? "EATT supported" : "EATT not supported"
        case 0x2B2A:
            // Database Hash (Vol 3, Part G, §7.3): 128 bits, shown most significant first.
            guard value.count == 16 else { return nil }
            return "hash " + Hex.encode(value.reversed())
        case 0x2803: return (try? CharacteristicDeclarationValue(decoding: value))?.description
        default: return nil
        }
    }
}

/// A characteristic declaration's value: properties, value handle, UUID.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.1
public struct CharacteristicDeclarationValue: Hashable, Sendable, ByteCodable, CustomStringConvertible {
    public var properties: CharacteristicProperties
    public var valueHandle: UInt16
    public var uuid: BluetoothUUID

    public init(properties: CharacteristicProperties, valueHandle: UInt16, uuid: BluetoothUUID) {
        self.properties = properties
        self.valueHandle = valueHandle
        self.uuid = uuid
    }

    /// 5 octets (a 16-bit UUID) or 19 (a 128-bit one); the value handle is never 0.
    public init(decoding value: [UInt8]) throws(ByteCodingError) {
        guard value.count == 5 || value.count == 19 else {
            throw ByteCodingError(expected: value.count < 5 ? 5 : 19, actual: value.count, field: "characteristic declaration")
        }
        properties = CharacteristicProperties(rawValue: value[0])
        valueHandle = UInt16(value[1]) | UInt16(value[2]) << 8
        guard valueHandle != 0, let uuid = BluetoothUUID(littleEndian: Array(value[3...])) else {
            throw ByteCodingError(expected: value.count, actual: value.count, field: "characteristic declaration: value handle 0")
        }
        self.uuid = uuid
    }

    public func encoded() -> [UInt8] { [properties.rawValue] + valueHandle.encoded() + uuid.littleEndianBytes }

    /// `Battery Level (2A19), value 0x0003, [read, notify]`.
    public var description: String {
        let name = GATTNames.name(for: uuid).map { "\($0) (\(uuid))" } ?? "\(uuid)"
        return "\(name), value 0x\(hex4(valueHandle)), [\(properties.names.joined(separator: ", "))]"
    }
}

/// Characteristic Presentation Format (0x2904): format, exponent, unit, namespace, description.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3.5
public struct PresentationFormat: Hashable, Sendable, CustomStringConvertible {
    public var format: UInt8
    public var exponent: Int8
    public var unit: UInt16
    public var namespace: UInt8
    public var descriptionCode: UInt16

    public init(format: UInt8, exponent: Int8, unit: UInt16, namespace: UInt8, descriptionCode: UInt16) {
        self.format = format
        self.exponent = exponent
        self.unit = unit
        self.namespace = namespace
        self.descriptionCode = descriptionCode
    }

    /// Format names from the Assigned Numbers (§2.4.1).
    static let formats: [UInt8: String] = [
        0x01: "boolean", 0x02: "2bit", 0x03: "nibble", 0x04: "uint8", 0x05: "uint12", 0x06: "uint16", 0x07: "uint24",
        0x08: "uint32", 0x09: "uint48", 0x0A: "uint64", 0x0B: "uint128", 0x0C: "sint8", 0x0D: "sint12", 0x0E: "sint16",
        0x0F: "sint24", 0x10: "sint32", 0x11: "sint48", 0x12: "sint64", 0x13: "sint128", 0x14: "float32",
        0x15: "float64", 0x16: "medfloat16", 0x17: "medfloat32", 0x18: "uint16[2]", 0x19: "utf8s", 0x1A: "utf16s",
        0x1B: "struct",
    ]

    /// `uint8, exponent 0, unit percentage (0x27AD)`.
    public var description: String {
        var parts = [Self.formats[format] ?? "format 0x" + String(format, radix: 16)]
        parts.append("exponent \(exponent)")
        let unitName = GATTNames.unit(unit).map { "\($0) (0x\(hex4(unit)))" } ?? "0x\(hex4(unit))"
        parts.append("unit " + unitName)
        if namespace == 0x01 { parts.append("description 0x\(hex4(descriptionCode)) (Bluetooth SIG namespace)") }
        return parts.joined(separator: ", ")
    }
}

extension PresentationFormat: ByteCodable {
    /// Exactly 7 octets.
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 7, field: "Characteristic Presentation Format")
        self.init(
            format: bytes[0], exponent: Int8(bitPattern: bytes[1]), unit: UInt16(bytes[2]) | UInt16(bytes[3]) << 8,
            namespace: bytes[4], descriptionCode: UInt16(bytes[5]) | UInt16(bytes[6]) << 8)
    }

    public func encoded() -> [UInt8] {
        [format, UInt8(bitPattern: exponent)] + unit.encoded() + [namespace] + descriptionCode.encoded()
    }
}
