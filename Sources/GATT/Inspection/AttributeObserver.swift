import ATT
import Bluetooth

/// Learns a server's attributes by watching the discovery traffic of one ATT bearer (in a
/// capture, or live), so that every handle can be named by its service, characteristic and
/// descriptor. Passive: it never sends anything; partial knowledge is fine.
public struct AttributeObserver: Sendable {
    /// What is known of one handle.
    public struct Context: Hashable, Sendable {
        public var service: BluetoothUUID?
        public var characteristic: BluetoothUUID?
        /// The attribute's type when it is a descriptor (or a declaration).
        public var descriptor: BluetoothUUID?
        /// Whether the handle is its characteristic's value.
        public var isValue: Bool
    }

    private struct ServiceRange: Hashable, Sendable {
        var start: UInt16, end: UInt16, uuid: BluetoothUUID
    }

    private var services: [ServiceRange] = []
    /// Characteristic declarations by declaration handle: (value handle, UUID).
    private var declarations: [UInt16: (value: UInt16, uuid: BluetoothUUID)] = [:]
    private var valueHandles: [UInt16: BluetoothUUID] = [:]
    /// Attribute types learnt from Find Information (descriptors, declarations, values).
    private var types: [UInt16: BluetoothUUID] = [:]
    /// Bounds for hostile or huge captures.
    public let maximumEntries = 65_536

    public init() {}

    /// Starts from a database discovered earlier (for example `services --json` output).
    public init(database: GATTDatabase) {
        for service in database.services {
            services.append(ServiceRange(start: service.startHandle, end: service.endHandle, uuid: service.uuid))
            for characteristic in service.characteristics {
                declarations[characteristic.declarationHandle] = (characteristic.valueHandle, characteristic.uuid)
                valueHandles[characteristic.valueHandle] = characteristic.uuid
                for descriptor in characteristic.descriptors { types[descriptor.handle] = descriptor.uuid }
            }
        }
        services.sort { $0.start < $1.start }
    }

    /// Learns from a response and the request it answers.
    public mutating func learn(request: ATTPDU?, response: ATTPDU) {
        guard declarations.count + types.count + services.count < maximumEntries else { return }
        switch (request, response) {
        case (.readByGroupTypeRequest(let r)?, .readByGroupTypeResponse(let p)):
            guard r.attributeGroupType == .bit16(0x2800) || r.attributeGroupType == .bit16(0x2801) else { return }
            for entry in p.entries {
                guard let uuid = BluetoothUUID(littleEndian: entry.value) else { continue }
                addService(start: entry.handle, end: entry.endGroupHandle, uuid: uuid)
            }
        case (.findByTypeValueRequest(let r)?, .findByTypeValueResponse(let p)):
            guard r.attributeType == 0x2800 || r.attributeType == 0x2801,
                  let uuid = BluetoothUUID(littleEndian: r.attributeValue) else { return }
            for entry in p.entries { addService(start: entry.foundAttributeHandle, end: entry.groupEndHandle, uuid: uuid) }
        case (.readByTypeRequest(let r)?, .readByTypeResponse(let p)):
            if r.attributeType == .bit16(0x2803) {
                for entry in p.entries where entry.value.count == 5 || entry.value.count == 19 {
                    let value = UInt16(entry.value[1]) | UInt16(entry.value[2]) << 8
                    guard let uuid = BluetoothUUID(littleEndian: entry.value[3...]) else { continue }
                    declarations[entry.handle] = (value, uuid)
                    valueHandles[value] = uuid
                }
            } else if r.attributeType != .bit16(0x2802) {
                // Read Using Characteristic UUID: each handle is a value of that type.
                for entry in p.entries where valueHandles[entry.handle] == nil { valueHandles[entry.handle] = r.attributeType }
            }
        case (_, .findInformationResponse(let p)):
            for entry in p.entries { types[entry.handle] = entry.uuid }
        default:
            break
        }
    }

    private mutating func addService(start: UInt16, end: UInt16, uuid: BluetoothUUID) {
        guard start <= end, !services.contains(where: { $0.start == start }) else { return }
        let index = services.firstIndex { $0.start > start } ?? services.endIndex
        services.insert(ServiceRange(start: start, end: end, uuid: uuid), at: index)
    }

    /// What is known of `handle`.
    public func context(of handle: UInt16) -> Context {
        var context = Context(service: nil, characteristic: nil, descriptor: nil, isValue: false)
        let service = services.last { $0.start <= handle && handle <= $0.end }
        context.service = service?.uuid
        if let uuid = valueHandles[handle] {
            context.characteristic = uuid
            context.isValue = true
            return context
        }
        if let declaration = declarations[handle] {
            context.characteristic = declaration.uuid
            context.descriptor = .bit16(0x2803)
            return context
        }
        // A descriptor belongs to the nearest characteristic declared before it (in its service):
        // the highest declaration handle below it, found in one pass (no filtered copy).
        let floor = service?.start ?? 0
        var owner: (handle: UInt16, uuid: BluetoothUUID)?
        for (declaration, entry) in declarations where declaration < handle && declaration >= floor {
            if owner.map({ declaration > $0.handle }) ?? true { owner = (declaration, entry.uuid) }
        }
        if let owner { context.characteristic = owner.uuid }
        context.descriptor = types[handle]
        return context
    }

    /// Whether anything at all is known.
    public var isEmpty: Bool { services.isEmpty && declarations.isEmpty && valueHandles.isEmpty && types.isEmpty }
}
