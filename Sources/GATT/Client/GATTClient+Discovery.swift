import ATT
import Bluetooth

extension GATTClient {
    /// Every primary service (§4.4.1).
    public func discoverPrimaryServices() async throws(GATTError) -> [Service] {
        try await run(DiscoverAllPrimaryServices(mtu: try await readyMTU()))
    }

    /// The primary services with `uuid` (§4.4.2).
    public func discoverPrimaryServices(uuid: BluetoothUUID) async throws(GATTError) -> [Service] {
        try await run(DiscoverPrimaryServiceByServiceUUID(uuid: uuid, mtu: try await readyMTU()))
    }

    /// The includes of `service` (§4.5.1).
    public func findIncludedServices(of service: Service) async throws(GATTError) -> [IncludedService] {
        try await run(FindIncludedServices(service: service, mtu: try await readyMTU()))
    }

    /// The characteristics of `service` (§4.6.1).
    public func discoverCharacteristics(of service: Service) async throws(GATTError) -> [Characteristic] {
        try await run(DiscoverAllCharacteristics(service: service, mtu: try await readyMTU()))
    }

    /// The descriptors of `characteristic` (§4.7.1); none without a request when its value is
    /// the last handle of its definition.
    public func discoverDescriptors(of characteristic: Characteristic) async throws(GATTError) -> [Descriptor] {
        guard let range = characteristic.descriptorRange else { return [] }
        return try await run(DiscoverAllCharacteristicDescriptors(range: range, mtu: try await readyMTU()))
    }

    /// The type of the attribute at `handle` — a characteristic's UUID for its value, a
    /// descriptor's for a descriptor — from the discovered ``database``, else with one Find
    /// Information Request on the one-handle range (§4.7.1); nil for a declaration or a handle
    /// the server does not have.
    public func attributeType(at handle: UInt16) async throws(GATTError) -> BluetoothUUID? {
        if let database {
            for service in database.services where service.startHandle <= handle && handle <= service.endHandle {
                for characteristic in service.characteristics {
                    if characteristic.valueHandle == handle { return characteristic.uuid }
                    if let descriptor = characteristic.descriptors.first(where: { $0.handle == handle }) { return descriptor.uuid }
                }
            }
        }
        let found = try await run(DiscoverAllCharacteristicDescriptors(range: handle...handle, mtu: try await readyMTU()))
        return found.first?.uuid
    }

    /// The whole database in the fewest requests (``DatabaseDiscovery``), without the cache;
    /// it becomes the client's ``database``. With Enhanced ATT bearers, in parts in parallel
    /// (fewer sequential round trips). `findIncludes: false` skips the include search
    /// for a server known to have none.
    public func discoverDatabase(findIncludes: Bool = true) async throws(GATTError) -> GATTDatabase {
        if !enhancedBearers.isEmpty {
            let found = try await discoverDatabaseInParallel(findIncludes: findIncludes)
            database = found
            return found
        }
        let before = await connection.requestsSent
        let found = try await run(DatabaseDiscovery(mtu: try await readyMTU(), findIncludes: findIncludes))
        let sent = await connection.requestsSent - before
        lastDiscovery = (sent, sent)
        database = found
        return found
    }

    /// `service` with its includes, characteristics and their descriptors discovered.
    public func discoverDefinitions(of service: Service, findIncludes: Bool = true) async throws(GATTError) -> Service {
        var service = service
        if findIncludes { service.includes = try await findIncludedServices(of: service) }
        var characteristics = try await discoverCharacteristics(of: service)
        for index in characteristics.indices {
            characteristics[index].descriptors = try await discoverDescriptors(of: characteristics[index])
        }
        service.characteristics = characteristics
        return service
    }

    /// The characteristics with `uuid` anywhere on the server (§4.6.2 over 0x0001–0xFFFF),
    /// with their descriptors: what a targeted `read`/`subscribe` by UUID needs, without
    /// discovering the services. A characteristic's range may run past its service's end, to
    /// the next characteristic declaration; descriptor discovery stops at any declaration.
    /// With a known ``database`` the answer comes from it, without a request.
    public func findCharacteristics(uuid: BluetoothUUID) async throws(GATTError) -> [Characteristic] {
        if let database { return database.characteristics(uuid: uuid) }
        var found = try await run(
            DiscoverCharacteristicsByUUID(uuid: uuid, range: 0x0001...0xFFFF, mtu: try await readyMTU()))
        for index in found.indices {
            found[index].descriptors = try await discoverDescriptors(of: found[index])
        }
        return found
    }
}
