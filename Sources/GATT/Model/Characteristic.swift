import Bluetooth

/// A discovered characteristic: its declaration, value handle, properties and descriptors.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3
public struct Characteristic: Hashable, Sendable {
    /// The characteristic UUID (the type of the value attribute).
    public var uuid: BluetoothUUID
    /// The handle of the characteristic declaration (0x2803).
    public var declarationHandle: UInt16
    /// The handle of the characteristic value attribute.
    public var valueHandle: UInt16
    /// The last handle of the characteristic definition: the handle before the next
    /// declaration, or the service's end. Descriptors lie in `valueHandle + 1 ... endHandle`.
    public var endHandle: UInt16
    public var properties: CharacteristicProperties
    /// Characteristic descriptor declarations, in handle order.
    public var descriptors: [Descriptor]

    public init(
        uuid: BluetoothUUID, declarationHandle: UInt16, valueHandle: UInt16, endHandle: UInt16? = nil,
        properties: CharacteristicProperties, descriptors: [Descriptor] = []
    ) {
        self.uuid = uuid
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.endHandle = endHandle ?? max(valueHandle, descriptors.last?.handle ?? valueHandle)
        self.properties = properties
        self.descriptors = descriptors
    }

    /// The handles of the definition: declaration through `endHandle`.
    public var handleRange: ClosedRange<UInt16> { declarationHandle...max(declarationHandle, endHandle) }

    /// The handles where descriptors may be, or `nil` when the value is the last handle.
    public var descriptorRange: ClosedRange<UInt16>? {
        guard valueHandle < endHandle else { return nil }
        return (valueHandle + 1)...endHandle
    }

    /// The first descriptor with this UUID.
    public func descriptor(uuid: BluetoothUUID) -> Descriptor? {
        descriptors.first { $0.uuid == uuid }
    }

    /// The handle of the Client Characteristic Configuration descriptor, if discovered.
    public var clientConfigurationHandle: UInt16? {
        descriptor(uuid: GATTUUID.clientCharacteristicConfiguration)?.handle
    }
}

/// A characteristic descriptor: its handle and type.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3
public struct Descriptor: Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID

    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}
