import Bluetooth

/// A discovered service: its declaration handle, the group it spans, its includes and its
/// characteristics. A model type, separate from the ATT PDUs it is discovered with.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.1
public struct Service: Hashable, Sendable {
    /// The service UUID (the declaration's value).
    public var uuid: BluetoothUUID
    /// The handle of the service declaration: the first handle of the group.
    public var startHandle: UInt16
    /// The End Group Handle: the last handle of the group.
    public var endHandle: UInt16
    /// Primary (0x2800) or secondary (0x2801) service declaration.
    public var isPrimary: Bool
    /// Include definitions, in handle order.
    public var includes: [IncludedService]
    /// Characteristic definitions, in handle order.
    public var characteristics: [Characteristic]

    public init(
        uuid: BluetoothUUID, startHandle: UInt16, endHandle: UInt16, isPrimary: Bool = true,
        includes: [IncludedService] = [], characteristics: [Characteristic] = []
    ) {
        self.uuid = uuid
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.isPrimary = isPrimary
        self.includes = includes
        self.characteristics = characteristics
    }

    /// The handles of the group (an empty-looking range is never produced: a malformed
    /// `endHandle` below `startHandle` gives the single declaration handle).
    public var handleRange: ClosedRange<UInt16> { startHandle...max(startHandle, endHandle) }

    /// The characteristics with this UUID.
    public func characteristics(uuid: BluetoothUUID) -> [Characteristic] {
        characteristics.filter { $0.uuid == uuid }
    }
}

/// An include definition: a reference, inside one service, to another service.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.2
public struct IncludedService: Hashable, Sendable {
    /// The handle of the include declaration itself.
    public var handle: UInt16
    /// The included service's declaration handle.
    public var startHandle: UInt16
    /// The included service's End Group Handle.
    public var endHandle: UInt16
    /// The included service's UUID. The include declaration carries it only when it is 16-bit;
    /// a 128-bit one is read from the included service's declaration, and is `nil` until then.
    public var uuid: BluetoothUUID?

    public init(handle: UInt16, startHandle: UInt16, endHandle: UInt16, uuid: BluetoothUUID?) {
        self.handle = handle
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.uuid = uuid
    }
}
