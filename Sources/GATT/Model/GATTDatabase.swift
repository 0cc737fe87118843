import Bluetooth

/// A discovered GATT database: the services of one server, in handle order, with lookups by
/// handle and by UUID.
///
/// A UUID may name several characteristics (two sensors of one kind, one per service):
/// `characteristic(uuid:)` throws `ambiguousUUID` with every value handle so the caller can
/// ask for one, and `characteristics(uuid:)` lists them all.
public struct GATTDatabase: Hashable, Sendable {
    /// Services sorted by start handle; within each, includes, characteristics and
    /// descriptors sorted by handle.
    public private(set) var services: [Service]

    /// Sorts what it is given; `validate()` checks that the groups nest and do not overlap.
    public init(services: [Service] = []) {
        self.services = services.map { service in
            var service = service
            service.includes.sort { $0.handle < $1.handle }
            service.characteristics = service.characteristics.map { characteristic in
                var characteristic = characteristic
                characteristic.descriptors.sort { $0.handle < $1.handle }
                return characteristic
            }.sorted { $0.declarationHandle < $1.declarationHandle }
            return service
        }.sorted { $0.startHandle < $1.startHandle }
    }

    /// Every characteristic, in handle order.
    public var characteristics: [Characteristic] { services.flatMap(\.characteristics) }

    // MARK: By UUID

    /// Services with this UUID (primary and secondary).
    public func services(uuid: BluetoothUUID) -> [Service] {
        services.filter { $0.uuid == uuid }
    }

    /// Every characteristic with this UUID, in handle order.
    public func characteristics(uuid: BluetoothUUID) -> [Characteristic] {
        services.flatMap { $0.characteristics(uuid: uuid) }
    }

    /// The one characteristic with this UUID. Throws `notFound` when there is none and
    /// `ambiguousUUID` (listing the value handles) when there are several.
    public func characteristic(uuid: BluetoothUUID) throws(GATTError) -> Characteristic {
        let matches = characteristics(uuid: uuid)
        guard let first = matches.first else { throw GATTError.notFound(uuid) }
        guard matches.count == 1 else { throw GATTError.ambiguousUUID(uuid, handles: matches.map(\.valueHandle)) }
        return first
    }

    // MARK: By handle

    /// The index of the service whose group contains `handle`.
    private func serviceIndex(containing handle: UInt16) -> Int? {
        // Last service starting at or before `handle` (binary search), then check its end.
        var low = 0
        var high = services.count
        while low < high {
            let mid = (low + high) / 2
            if services[mid].startHandle <= handle { low = mid + 1 } else { high = mid }
        }
        guard low > 0, services[low - 1].handleRange.contains(handle) else { return nil }
        return low - 1
    }

    /// The service whose group contains `handle`.
    public func service(containing handle: UInt16) -> Service? {
        serviceIndex(containing: handle).map { services[$0] }
    }

    /// The characteristic whose definition (declaration through last descriptor) contains
    /// `handle`.
    public func characteristic(containing handle: UInt16) -> Characteristic? {
        guard let index = serviceIndex(containing: handle) else { return nil }
        let characteristics = services[index].characteristics
        var low = 0
        var high = characteristics.count
        while low < high {
            let mid = (low + high) / 2
            if characteristics[mid].declarationHandle <= handle { low = mid + 1 } else { high = mid }
        }
        guard low > 0, characteristics[low - 1].handleRange.contains(handle) else { return nil }
        return characteristics[low - 1]
    }

    /// The characteristic whose value attribute has this handle.
    public func characteristic(valueHandle: UInt16) -> Characteristic? {
        guard let characteristic = characteristic(containing: valueHandle),
            characteristic.valueHandle == valueHandle
        else { return nil }
        return characteristic
    }

    /// The characteristic a user means by `handle`: the one whose value or declaration has it.
    public func characteristic(handle: UInt16) -> Characteristic? {
        guard let characteristic = characteristic(containing: handle),
            characteristic.valueHandle == handle || characteristic.declarationHandle == handle
        else { return nil }
        return characteristic
    }

    /// The descriptor at `handle`.
    public func descriptor(handle: UInt16) -> Descriptor? {
        characteristic(containing: handle)?.descriptors.first { $0.handle == handle }
    }

    /// What the attribute at `handle` is.
    public func attribute(at handle: UInt16) -> Attribute? {
        guard let index = serviceIndex(containing: handle) else { return nil }
        let service = services[index]
        if service.startHandle == handle { return .service(service) }
        if let include = service.includes.first(where: { $0.handle == handle }) {
            return .include(include, in: service)
        }
        guard let characteristic = characteristic(containing: handle) else { return nil }
        if characteristic.declarationHandle == handle { return .characteristicDeclaration(characteristic) }
        if characteristic.valueHandle == handle { return .characteristicValue(characteristic) }
        if let descriptor = characteristic.descriptors.first(where: { $0.handle == handle }) {
            return .descriptor(descriptor, of: characteristic)
        }
        return nil
    }

    /// An attribute of the database, as `attribute(at:)` finds it.
    public enum Attribute: Hashable, Sendable {
        /// A primary or secondary service declaration.
        case service(Service)
        case include(IncludedService, in: Service)
        case characteristicDeclaration(Characteristic)
        case characteristicValue(Characteristic)
        case descriptor(Descriptor, of: Characteristic)
    }

    // MARK: Consistency

    /// Checks that the database is well formed: every group has start ≤ end, services do not
    /// overlap, includes and characteristics lie inside their service, characteristic
    /// definitions do not overlap, each value handle follows its declaration, and descriptors
    /// lie after their value and inside their definition.
    public func validate() throws(GATTError) {
        var previousEnd: UInt16? = nil
        for service in services {
            guard service.startHandle != 0 else {
                throw GATTError.inconsistentDatabase(handle: 0, reason: "service starts at handle 0x0000")
            }
            guard service.startHandle <= service.endHandle else {
                throw GATTError.inconsistentDatabase(
                    handle: service.startHandle, reason: "service ends before it starts")
            }
            if let end = previousEnd, service.startHandle <= end {
                throw GATTError.inconsistentDatabase(handle: service.startHandle, reason: "services overlap")
            }
            previousEnd = service.endHandle
            for include in service.includes {
                guard include.handle > service.startHandle, include.handle <= service.endHandle else {
                    throw GATTError.inconsistentDatabase(handle: include.handle, reason: "include outside its service")
                }
                guard include.startHandle != 0, include.startHandle <= include.endHandle else {
                    throw GATTError.inconsistentDatabase(
                        handle: include.handle, reason: "include names an invalid range")
                }
            }
            var previousCharacteristicEnd = service.startHandle
            for characteristic in service.characteristics {
                let declaration = characteristic.declarationHandle
                guard declaration > previousCharacteristicEnd else {
                    throw GATTError.inconsistentDatabase(handle: declaration, reason: "characteristics overlap")
                }
                guard characteristic.valueHandle > declaration,
                    characteristic.valueHandle <= characteristic.endHandle,
                    characteristic.endHandle <= service.endHandle
                else {
                    throw GATTError.inconsistentDatabase(
                        handle: declaration, reason: "characteristic outside its service")
                }
                for descriptor in characteristic.descriptors {
                    guard descriptor.handle > characteristic.valueHandle, descriptor.handle <= characteristic.endHandle
                    else {
                        throw GATTError.inconsistentDatabase(
                            handle: descriptor.handle, reason: "descriptor outside its characteristic")
                    }
                }
                previousCharacteristicEnd = characteristic.endHandle
            }
        }
    }
}
