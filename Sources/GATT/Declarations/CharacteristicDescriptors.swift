import Bluetooth

/// The Characteristic Extended Properties descriptor (0x2900) value.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3.1 (Table 3.8)
public struct CharacteristicExtendedProperties: OptionSet, AttributeValueCodable, CustomStringConvertible {
    public static let attributeType = GATTUUID.characteristicExtendedProperties
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Reliable Write (Prepare/Execute Write with the Reliable Writes procedure) is permitted.
    public static let reliableWrite = CharacteristicExtendedProperties(rawValue: 0x0001)
    /// The Characteristic User Description descriptor may be written.
    public static let writableAuxiliaries = CharacteristicExtendedProperties(rawValue: 0x0002)

    /// Exactly 2 octets; reserved bits are kept as received.
    public init(parsing reader: inout ByteReader) throws(GATTError) {
        try Self.checkLength(reader, [2])
        rawValue = (try? reader.readUInt16LE()) ?? 0
    }

    public var encodedLength: Int { 2 }
    public func write(to writer: inout ByteWriter) { writer.writeUInt16LE(rawValue) }

    public var description: String {
        var names: [String] = []
        if contains(.reliableWrite) { names.append("reliableWrite") }
        if contains(.writableAuxiliaries) { names.append("writableAuxiliaries") }
        return "[" + names.joined(separator: ", ") + "]"
    }
}

/// The Client Characteristic Configuration descriptor (0x2902) value: bit 0 notifications,
/// bit 1 indications.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3.3 (Table 3.11)
public struct ClientCharacteristicConfiguration: OptionSet, AttributeValueCodable, CustomStringConvertible {
    public static let attributeType = GATTUUID.clientCharacteristicConfiguration
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let notifications = ClientCharacteristicConfiguration(rawValue: 0x0001)
    public static let indications = ClientCharacteristicConfiguration(rawValue: 0x0002)

    /// Exactly 2 octets; reserved bits are kept as received.
    public init(parsing reader: inout ByteReader) throws(GATTError) {
        try Self.checkLength(reader, [2])
        rawValue = (try? reader.readUInt16LE()) ?? 0
    }

    public var encodedLength: Int { 2 }
    public func write(to writer: inout ByteWriter) { writer.writeUInt16LE(rawValue) }

    public var description: String {
        var names: [String] = []
        if contains(.notifications) { names.append("notifications") }
        if contains(.indications) { names.append("indications") }
        return "[" + names.joined(separator: ", ") + "]"
    }
}
