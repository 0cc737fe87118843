import Bluetooth

/// A service to put in a server's attribute database: its type, includes and characteristics.
///
/// Handles are optional: those left `nil` are assigned in order by
/// ``AttributeDatabase/init(services:)`` (declaration, then each attribute in the next free
/// handle); given handles are kept, gaps included (a database loaded from a description).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.1 (service definition)
public struct ServiceDefinition: Hashable, Sendable {
    public var uuid: BluetoothUUID
    /// Primary (0x2800) or secondary (0x2801) service declaration.
    public var isPrimary: Bool
    /// The declaration handle, or `nil` to assign the next free one.
    public var handle: UInt16?
    /// The End Group Handle, or `nil` for the service's last attribute.
    public var endHandle: UInt16?
    public var includes: [IncludeDefinition]
    public var characteristics: [CharacteristicDefinition]

    public init(
        uuid: BluetoothUUID, isPrimary: Bool = true, handle: UInt16? = nil, endHandle: UInt16? = nil,
        includes: [IncludeDefinition] = [], characteristics: [CharacteristicDefinition] = []
    ) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.handle = handle
        self.endHandle = endHandle
        self.includes = includes
        self.characteristics = characteristics
    }
}

/// An include definition: a reference to another service of the same database.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.2
public struct IncludeDefinition: Hashable, Sendable {
    /// Which service is included.
    public enum Target: Hashable, Sendable {
        /// The first service of the database with this UUID (resolved once handles are known).
        case service(BluetoothUUID)
        /// A service given by its handle range and UUID (a database loaded from a description).
        case range(start: UInt16, end: UInt16, uuid: BluetoothUUID)
    }

    public var target: Target
    /// The include declaration's handle, or `nil` to assign the next free one.
    public var handle: UInt16?

    public init(_ target: Target, handle: UInt16? = nil) {
        self.target = target
        self.handle = handle
    }

    /// Includes the first service with this UUID.
    public static func service(_ uuid: BluetoothUUID) -> IncludeDefinition { IncludeDefinition(.service(uuid)) }
}

/// A characteristic definition: declaration, value and descriptors.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3
public struct CharacteristicDefinition: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var properties: CharacteristicProperties
    /// Access to the value attribute.
    public var permissions: AttributePermissions
    /// The initial value, in wire order.
    public var value: [UInt8]
    /// The longest value a client may write (at most 512, Vol 3 Part F §3.2.9).
    public var maximumLength: Int
    /// Whether writes must keep the value's length (a fixed-length value).
    public var isFixedLength: Bool
    /// The declaration handle, or `nil` to assign the next free one.
    public var declarationHandle: UInt16?
    /// The value handle, or `nil` for the handle after the declaration.
    public var valueHandle: UInt16?
    public var descriptors: [DescriptorDefinition]

    /// `permissions` default from `properties`: `read` for the Read property, `write` for
    /// Write, Write Without Response and Authenticated Signed Writes.
    public init(
        uuid: BluetoothUUID, properties: CharacteristicProperties, permissions: AttributePermissions? = nil,
        value: [UInt8] = [], maximumLength: Int = AttributeDatabase.maximumValueLength, isFixedLength: Bool = false,
        declarationHandle: UInt16? = nil, valueHandle: UInt16? = nil, descriptors: [DescriptorDefinition] = []
    ) {
        self.uuid = uuid
        self.properties = properties
        self.permissions = permissions ?? CharacteristicDefinition.defaultPermissions(properties)
        self.value = value
        self.maximumLength = maximumLength
        self.isFixedLength = isFixedLength
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.descriptors = descriptors
    }

    static func defaultPermissions(_ properties: CharacteristicProperties) -> AttributePermissions {
        var permissions: AttributePermissions = []
        if properties.contains(.read) { permissions.insert(.read) }
        if !properties.intersection([.write, .writeWithoutResponse, .authenticatedSignedWrites]).isEmpty {
            permissions.insert(.write)
        }
        return permissions
    }
}

/// A characteristic descriptor definition.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3
public struct DescriptorDefinition: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var permissions: AttributePermissions
    /// The initial value (for a Client Characteristic Configuration descriptor, the value
    /// every client starts with; the server keeps one per client).
    public var value: [UInt8]
    public var maximumLength: Int
    public var isFixedLength: Bool
    /// The descriptor's handle, or `nil` to assign the next free one.
    public var handle: UInt16?

    public init(
        uuid: BluetoothUUID, permissions: AttributePermissions, value: [UInt8] = [],
        maximumLength: Int = AttributeDatabase.maximumValueLength, isFixedLength: Bool = false, handle: UInt16? = nil
    ) {
        self.uuid = uuid
        self.permissions = permissions
        self.value = value
        self.maximumLength = maximumLength
        self.isFixedLength = isFixedLength
        self.handle = handle
    }

    /// A Client Characteristic Configuration descriptor (0x2902), readable and writable
    /// (`permissions` may ask for security), two octets, starting at zero for every client.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3.3
    public static func clientConfiguration(
        permissions: AttributePermissions = .readWrite, handle: UInt16? = nil
    ) -> DescriptorDefinition {
        DescriptorDefinition(
            uuid: GATTUUID.clientCharacteristicConfiguration, permissions: permissions, value: [0, 0],
            maximumLength: 2, isFixedLength: true, handle: handle)
    }

    /// A Characteristic User Description descriptor (0x2901): UTF-8 text, read-only unless
    /// `writable` (then the Writable Auxiliaries extended property should be set too).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3.2
    public static func userDescription(_ text: String, writable: Bool = false, handle: UInt16? = nil)
        -> DescriptorDefinition
    {
        DescriptorDefinition(
            uuid: GATTUUID.characteristicUserDescription, permissions: writable ? .readWrite : .read,
            value: Array(text.utf8), handle: handle)
    }

    /// A Characteristic Extended Properties descriptor (0x2900), read-only.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3.1
    public static func extendedProperties(_ properties: CharacteristicExtendedProperties, handle: UInt16? = nil)
        -> DescriptorDefinition
    {
        DescriptorDefinition(
            uuid: GATTUUID.characteristicExtendedProperties, permissions: .read, value: properties.encoded,
            maximumLength: 2, isFixedLength: true, handle: handle)
    }

    /// A Characteristic Presentation Format descriptor (0x2904), read-only: Format, Exponent,
    /// Unit (a 0x27xx UUID), Name Space and Description.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3.5
    public static func presentationFormat(
        format: UInt8, exponent: Int8 = 0, unit: UInt16 = 0x2700, namespace: UInt8 = 0x01,
        description: UInt16 = 0x0000, handle: UInt16? = nil
    ) -> DescriptorDefinition {
        var writer = ByteWriter(capacity: 7)
        writer.writeUInt8(format)
        writer.writeInt8(exponent)
        writer.writeUInt16LE(unit)
        writer.writeUInt8(namespace)
        writer.writeUInt16LE(description)
        return DescriptorDefinition(
            uuid: GATTUUID.characteristicPresentationFormat, permissions: .read, value: writer.bytes,
            maximumLength: 7, isFixedLength: true, handle: handle)
    }
}

extension CharacteristicDefinition {
    /// A readable UTF-8 string with a 16-bit UUID (the Device Information strings).
    public static func text(_ uuid: UInt16, _ value: String) -> CharacteristicDefinition {
        CharacteristicDefinition(uuid: .bit16(uuid), properties: [.read], value: Array(value.utf8))
    }
}
