import Bluetooth

/// One attribute as a server holds it: handle, type, value and access rules.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.2 (attribute type, handle, value, permissions)
public struct ServerAttribute: Hashable, Sendable {
    /// The role of the attribute in the GATT hierarchy.
    public enum Kind: Hashable, Sendable {
        case primaryService, secondaryService, include, characteristicDeclaration, characteristicValue, descriptor
    }

    public var handle: UInt16
    public var type: BluetoothUUID
    /// The stored value in wire order. For a Client Characteristic Configuration descriptor
    /// and Client Supported Features this is the value a new client starts with (the server
    /// keeps one per client); for Database Hash it is kept equal to the database's hash.
    public var value: [UInt8]
    public var permissions: AttributePermissions
    /// The longest value a write may leave.
    public var maximumLength: Int
    /// Whether a write must keep the current length.
    public var isFixedLength: Bool
    public var kind: Kind
    /// The End Group Handle of a service declaration; the handle itself for other attributes.
    public var groupEndHandle: UInt16
    /// For a characteristic value or descriptor: the characteristic's value handle.
    public var characteristicValueHandle: UInt16?

    public init(
        handle: UInt16, type: BluetoothUUID, value: [UInt8], permissions: AttributePermissions,
        maximumLength: Int = AttributeDatabase.maximumValueLength, isFixedLength: Bool = false, kind: Kind,
        groupEndHandle: UInt16? = nil, characteristicValueHandle: UInt16? = nil
    ) {
        self.handle = handle
        self.type = type
        self.value = value
        self.permissions = permissions
        self.maximumLength = maximumLength
        self.isFixedLength = isFixedLength
        self.kind = kind
        self.groupEndHandle = groupEndHandle ?? handle
        self.characteristicValueHandle = characteristicValueHandle
    }

    /// Whether ATT carries this type as a 16-bit UUID (Find Information format 0x01).
    public var hasShortType: Bool { type.uuid16 != nil }

    /// Whether this is a Client Characteristic Configuration descriptor.
    public var isClientConfiguration: Bool {
        kind == .descriptor && type == GATTUUID.clientCharacteristicConfiguration
    }
}

/// A GATT server's attribute database: attributes in ascending handle order, built from
/// service definitions, with its Database Hash.
///
/// A value type: the server swaps in a new database when services change (and indicates
/// Service Changed).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3 (service interoperability requirements)
public struct AttributeDatabase: Hashable, Sendable {
    /// The longest attribute value ATT allows.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.2.9
    public static let maximumValueLength = 512

    /// Every attribute, in ascending handle order (handles unique, gaps allowed).
    public private(set) var attributes: [ServerAttribute]
    /// The Database Hash (AES-CMAC result, Vol 3 Part G §7.3) of the current structure.
    public private(set) var hash: UInt128
    /// The services as the model types a client discovers.
    public private(set) var model: GATTDatabase

    /// Builds the database from `services` in order: declarations generated, handles
    /// assigned (or kept as given), includes resolved, the Database Hash computed and stored in
    /// any Database Hash characteristic. Throws `inconsistentDatabase` for handles that do not
    /// ascend or overflow 0xFFFF, an include naming no service, a value longer than its maximum.
    public init(services: [ServiceDefinition]) throws(GATTError) {
        var builder = AttributeDatabaseBuilder()
        attributes = try builder.build(services)
        model = builder.model
        hash = 0
        try rehash()
    }

    /// The empty database. Its `hash` is 0 (not the CMAC of the empty message): it has no
    /// Database Hash characteristic to serve it.
    public init() {
        attributes = []
        hash = 0
        model = GATTDatabase()
    }

    // MARK: Lookup

    /// The index of the first attribute whose handle is at least `handle`.
    public func lowerBound(_ handle: UInt16) -> Int {
        var low = 0
        var high = attributes.count
        while low < high {
            let mid = (low + high) / 2
            if attributes[mid].handle < handle { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The index of the attribute at `handle`.
    public func index(of handle: UInt16) -> Int? {
        let index = lowerBound(handle)
        guard index < attributes.count, attributes[index].handle == handle else { return nil }
        return index
    }

    /// The attribute at `handle`.
    public func attribute(at handle: UInt16) -> ServerAttribute? {
        index(of: handle).map { attributes[$0] }
    }

    /// The attributes whose handles lie in `range`, in order.
    public func attributes(in range: ClosedRange<UInt16>) -> ArraySlice<ServerAttribute> {
        let start = lowerBound(range.lowerBound)
        var end = start
        while end < attributes.count, attributes[end].handle <= range.upperBound { end += 1 }
        return attributes[start..<end]
    }

    /// The properties of the characteristic whose value attribute is at `valueHandle`.
    public func properties(ofValue valueHandle: UInt16) -> CharacteristicProperties? {
        model.characteristic(valueHandle: valueHandle)?.properties
    }

    /// The Client Characteristic Configuration descriptor handle of the characteristic whose
    /// value is at `valueHandle`.
    public func clientConfigurationHandle(ofValue valueHandle: UInt16) -> UInt16? {
        model.characteristic(valueHandle: valueHandle)?.clientConfigurationHandle
    }

    /// The value handle of the first characteristic with this UUID.
    public func valueHandle(of uuid: BluetoothUUID) -> UInt16? {
        model.characteristics(uuid: uuid).first?.valueHandle
    }

    // MARK: Values

    /// Replaces the stored value at `handle` (no permission check: the local application
    /// writes). Throws `noAttribute`, or `valueTooLong` beyond the attribute's maximum. A
    /// value hashed into the Database Hash (an Extended Properties descriptor) rehashes.
    public mutating func setValue(_ value: [UInt8], handle: UInt16) throws(GATTError) {
        guard let index = index(of: handle) else { throw GATTError.noAttribute(handle: handle) }
        guard value.count <= attributes[index].maximumLength else {
            throw GATTError.valueTooLong(length: value.count, maximum: attributes[index].maximumLength)
        }
        attributes[index].value = value
        if attributes[index].type == GATTUUID.characteristicExtendedProperties { try rehash() }
    }

    /// The 16 octets a client reads from the Database Hash characteristic.
    public var databaseHashValue: [UInt8] { DatabaseHash.characteristicValue(hash) }

    /// Recomputes `hash` and stores it in every Database Hash characteristic value.
    mutating func rehash() throws(GATTError) {
        hash = try DatabaseHash.compute(
            attributes: attributes.map { DatabaseHash.Attribute(handle: $0.handle, type: $0.type, value: $0.value) })
        let value = databaseHashValue
        for index in attributes.indices
        where attributes[index].kind == .characteristicValue && attributes[index].type == GATTUUID.databaseHash {
            attributes[index].value = value
        }
    }
}
