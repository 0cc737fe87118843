import Bluetooth

/// Lays service definitions out as attributes: handles assigned or checked, declarations
/// encoded, includes resolved, and the model (`GATTDatabase`) built alongside.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.1–§3.3 (declaration layouts)
struct AttributeDatabaseBuilder {
    private(set) var model = GATTDatabase()
    private var attributes: [ServerAttribute] = []
    /// The next free handle (Int: 0x10000 means the handle space is exhausted).
    private var next = 1

    private mutating func take(_ given: UInt16?, _ what: String) throws(GATTError) -> UInt16 {
        if let given {
            guard given != 0, Int(given) >= next else {
                throw GATTError.inconsistentDatabase(
                    handle: given, reason: "\(what) handle does not follow the previous attribute")
            }
            next = Int(given) + 1
            return given
        }
        guard next <= 0xFFFF else {
            throw GATTError.inconsistentDatabase(handle: 0xFFFF, reason: "no handle left for \(what)")
        }
        defer { next += 1 }
        return UInt16(next)
    }

    private static func checkValue(_ value: [UInt8], maximum: Int, at handle: UInt16) throws(GATTError) {
        guard maximum >= 0, maximum <= AttributeDatabase.maximumValueLength else {
            throw GATTError.invalidParameter("maximum length \(maximum) at handle 0x\(hex4(handle)) (0...512)")
        }
        guard value.count <= maximum else {
            throw GATTError.inconsistentDatabase(
                handle: handle, reason: "value of \(value.count) octets exceeds its maximum \(maximum)")
        }
    }

    mutating func build(_ definitions: [ServiceDefinition]) throws(GATTError) -> [ServerAttribute] {
        var services: [Service] = []
        // Include declarations to fill once every service has its handles: (attribute index,
        // service index in `services`, target).
        var pendingIncludes: [(attribute: Int, service: Int, include: Int, target: IncludeDefinition.Target)] = []

        for definition in definitions {
            let start = try take(definition.handle, "service declaration")
            let declarationIndex = attributes.count
            attributes.append(
                ServerAttribute(
                    handle: start, type: definition.isPrimary ? GATTUUID.primaryService : GATTUUID.secondaryService,
                    value: ServiceDeclaration(uuid: definition.uuid).encoded, permissions: .read,
                    kind: definition.isPrimary ? .primaryService : .secondaryService))
            var service = Service(
                uuid: definition.uuid, startHandle: start, endHandle: start, isPrimary: definition.isPrimary)

            for include in definition.includes {
                let handle = try take(include.handle, "include declaration")
                pendingIncludes.append((attributes.count, services.count, service.includes.count, include.target))
                attributes.append(
                    ServerAttribute(
                        handle: handle, type: GATTUUID.include, value: [], permissions: .read, kind: .include))
                service.includes.append(IncludedService(handle: handle, startHandle: 0, endHandle: 0, uuid: nil))
            }

            for characteristic in definition.characteristics {
                let declaration = try take(characteristic.declarationHandle, "characteristic declaration")
                let valueHandle = try take(characteristic.valueHandle, "characteristic value")
                let declarationValue = CharacteristicDeclaration(
                    properties: characteristic.properties, valueHandle: valueHandle, uuid: characteristic.uuid)
                attributes.append(
                    ServerAttribute(
                        handle: declaration, type: GATTUUID.characteristic, value: declarationValue.encoded,
                        permissions: .read, kind: .characteristicDeclaration))
                try Self.checkValue(characteristic.value, maximum: characteristic.maximumLength, at: valueHandle)
                attributes.append(
                    ServerAttribute(
                        handle: valueHandle, type: characteristic.uuid, value: characteristic.value,
                        permissions: characteristic.permissions, maximumLength: characteristic.maximumLength,
                        isFixedLength: characteristic.isFixedLength, kind: .characteristicValue,
                        characteristicValueHandle: valueHandle))
                var descriptors: [Descriptor] = []
                for descriptor in characteristic.descriptors {
                    let handle = try take(descriptor.handle, "descriptor")
                    try Self.checkValue(descriptor.value, maximum: descriptor.maximumLength, at: handle)
                    attributes.append(
                        ServerAttribute(
                            handle: handle, type: descriptor.uuid, value: descriptor.value,
                            permissions: descriptor.permissions, maximumLength: descriptor.maximumLength,
                            isFixedLength: descriptor.isFixedLength, kind: .descriptor,
                            characteristicValueHandle: valueHandle))
                    descriptors.append(Descriptor(handle: handle, uuid: descriptor.uuid))
                }
                service.characteristics.append(
                    Characteristic(
                        uuid: characteristic.uuid, declarationHandle: declaration, valueHandle: valueHandle,
                        properties: characteristic.properties, descriptors: descriptors))
            }

            let last = UInt16(next - 1)
            if let end = definition.endHandle {
                guard end >= last else {
                    throw GATTError.inconsistentDatabase(
                        handle: start,
                        reason: "End Group Handle 0x\(hex4(end)) before the last attribute 0x\(hex4(last))")
                }
                next = Int(end) + 1
                service.endHandle = end
            } else {
                service.endHandle = last
            }
            attributes[declarationIndex].groupEndHandle = service.endHandle
            // A characteristic's definition runs to the next declaration or the service end.
            for index in service.characteristics.indices {
                let following =
                    service.characteristics.indices.contains(index + 1)
                    ? service.characteristics[index + 1].declarationHandle - 1 : service.endHandle
                service.characteristics[index].endHandle = following
            }
            services.append(service)
        }

        for pending in pendingIncludes {
            let (start, end, uuid): (UInt16, UInt16, BluetoothUUID)
            switch pending.target {
            case .range(let s, let e, let u):
                (start, end, uuid) = (s, e, u)
            case .service(let wanted):
                guard let target = services.first(where: { $0.uuid == wanted }) else {
                    throw GATTError.inconsistentDatabase(
                        handle: attributes[pending.attribute].handle, reason: "include names no service \(wanted)")
                }
                (start, end, uuid) = (target.startHandle, target.endHandle, target.uuid)
            }
            guard start != 0, start <= end else {
                throw GATTError.inconsistentDatabase(
                    handle: attributes[pending.attribute].handle, reason: "include names an invalid range")
            }
            attributes[pending.attribute].value =
                IncludeDeclaration(includedServiceHandle: start, endGroupHandle: end, uuid: uuid).encoded
            services[pending.service].includes[pending.include] =
                IncludedService(
                    handle: attributes[pending.attribute].handle, startHandle: start, endHandle: end, uuid: uuid)
        }
        model = GATTDatabase(services: services)
        return attributes
    }
}
