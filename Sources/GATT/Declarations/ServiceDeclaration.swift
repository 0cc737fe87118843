import Bluetooth

/// The value of a primary (0x2800) or secondary (0x2801) service declaration: the service UUID,
/// 16-bit or 128-bit.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.1
public struct ServiceDeclaration: AttributeValueCodable {
    public static let attributeType = GATTUUID.primaryService
    public var uuid: BluetoothUUID

    public init(uuid: BluetoothUUID) { self.uuid = uuid }

    public init(parsing reader: inout ByteReader) throws(GATTError) {
        try Self.checkLength(reader, [2, 16])
        uuid = try Self.readUUID(&reader)
    }

    public var encodedLength: Int { attributeUUIDWidth(uuid) }
    public func write(to writer: inout ByteWriter) { writeAttributeUUID(uuid, to: &writer) }
}

/// The value of an include declaration (0x2802): the included service's handle range and,
/// only when it is 16-bit, its UUID.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.2 (Table 3.2)
public struct IncludeDeclaration: AttributeValueCodable {
    public static let attributeType = GATTUUID.include
    /// The included service's declaration handle.
    public var includedServiceHandle: UInt16
    /// The included service's End Group Handle.
    public var endGroupHandle: UInt16
    /// The included service's UUID when it is 16-bit; absent for a 128-bit one.
    public var uuid: BluetoothUUID?

    public init(includedServiceHandle: UInt16, endGroupHandle: UInt16, uuid: BluetoothUUID?) {
        self.includedServiceHandle = includedServiceHandle
        self.endGroupHandle = endGroupHandle
        self.uuid = uuid
    }

    public init(parsing reader: inout ByteReader) throws(GATTError) {
        try Self.checkLength(reader, [4, 6])
        includedServiceHandle = try Self.readHandle(&reader, field: "Included Service Attribute Handle")
        endGroupHandle = try Self.readHandle(&reader, field: "End Group Handle")
        guard includedServiceHandle <= endGroupHandle else {
            throw GATTError.invalidAttributeValue(
                type: Self.attributeType, handle: nil,
                reason: .invalidRange(start: includedServiceHandle, end: endGroupHandle))
        }
        uuid = reader.isAtEnd ? nil : try Self.readUUID(&reader)
    }

    /// 6 with a UUID that has a 16-bit alias, 4 otherwise (a 128-bit UUID is not carried).
    public var encodedLength: Int { uuid?.uuid16 == nil ? 4 : 6 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(includedServiceHandle)
        writer.writeUInt16LE(endGroupHandle)
        if let short = uuid?.uuid16 { writer.writeUInt16LE(short) }
    }
}
