import ATT
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

extension Characteristic {
    /// The characteristic one entry of a Read By Type Response for «Characteristic» declares,
    /// checked as both characteristic sweeps need it (Vol 3 Part G §4.6.1): the declaration
    /// inside `range` and after `previous` (the last value handle received), its value handle
    /// after the declaration and inside `range`. `endHandle` is the value handle until the
    /// caller learns the next declaration.
    static func declared(
        by entry: ReadByTypeResponse.AttributeData, in range: ClosedRange<UInt16>, after previous: UInt16?,
        opcode: ATTOpcode
    ) throws(GATTError) -> Characteristic {
        let handle = entry.handle
        guard range.contains(handle) else {
            throw .invalidResponse(opcode: opcode, reason: .handleOutOfRange(handle, range: range))
        }
        if let previous, handle <= previous {
            throw .invalidResponse(opcode: opcode, reason: .handleNotAdvancing(handle, previous: previous))
        }
        let declaration = try CharacteristicDeclaration(decoding: entry.value, handle: handle)
        guard declaration.valueHandle > handle, declaration.valueHandle <= range.upperBound else {
            throw .invalidResponse(
                opcode: opcode, reason: .invalidValueHandle(declaration: handle, value: declaration.valueHandle))
        }
        return Characteristic(
            uuid: declaration.uuid, declarationHandle: handle, valueHandle: declaration.valueHandle,
            endHandle: declaration.valueHandle, properties: declaration.properties)
    }
}
