import Bluetooth

/// The value of a characteristic declaration (0x2803): properties, value handle, UUID.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.1 (Table 3.4)
public struct CharacteristicDeclaration: AttributeValueCodable {
    public static let attributeType = GATTUUID.characteristic
    public var properties: CharacteristicProperties
    /// The Characteristic Value Attribute Handle; never 0x0000.
    public var valueHandle: UInt16
    public var uuid: BluetoothUUID

    public init(properties: CharacteristicProperties, valueHandle: UInt16, uuid: BluetoothUUID) {
        self.properties = properties
        self.valueHandle = valueHandle
        self.uuid = uuid
    }

    /// Exactly 5 or 19 octets; a zero value handle is invalid.
    public init(parsing reader: inout ByteReader) throws(GATTError) {
        try Self.checkLength(reader, [5, 19])
        properties = CharacteristicProperties(rawValue: (try? reader.readUInt8()) ?? 0)
        valueHandle = try Self.readHandle(&reader, field: "Characteristic Value Attribute Handle")
        uuid = try Self.readUUID(&reader)
    }

    public var encodedLength: Int { 3 + attributeUUIDWidth(uuid) }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(properties.rawValue)
        writer.writeUInt16LE(valueHandle)
        writeAttributeUUID(uuid, to: &writer)
    }
}
