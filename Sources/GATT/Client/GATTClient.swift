import ATT
import Bluetooth

/// Runs GATT client procedures over one ATT bearer (`ATTConnection`): sends each request the
/// procedure asks for, feeds each answer back, until the procedure ends. The bearer keeps one
/// request outstanding and applies the 30 s transaction timeout; an Error Response, which the
/// bearer reports as `ATTError.peerError`, is handed to the procedure as the PDU it was (so
/// Attribute Not Found can end a discovery); any other bearer failure ends the procedure with
/// `GATTError.att`.
///
/// Each procedure uses the ATT_MTU current when it starts; exchange MTU first
/// (`ATTConnection.exchangeMTU`) so it does not change under a procedure.
public struct GATTClient: Sendable {
    public let connection: ATTConnection

    public init(connection: ATTConnection) {
        self.connection = connection
    }

    /// The current ATT_MTU.
    public var mtu: Int {
        get async { await connection.mtu }
    }

    /// Runs `procedure` to its end and returns its result.
    public func run<P: GATTClientProcedure>(_ procedure: P) async throws(GATTError) -> P.Result {
        var procedure = procedure
        var action = procedure.start()
        while true {
            switch action {
            case .done(let result):
                return result
            case .fail(let error):
                throw error
            case .send(let request):
                let answer: ATTPDU
                do {
                    answer = try await connection.request(request)
                } catch {
                    guard case .peerError(let opcode, let handle, let code) = error else { throw GATTError.att(error) }
                    answer = .errorResponse(ErrorResponse(requestOpcode: opcode, handle: handle, errorCode: code))
                }
                // A peer-initiated MTU exchange may have completed while the request was out.
                procedure.updateMTU(await connection.mtu)
                action = procedure.receive(answer)
            }
        }
    }

    // MARK: Discovery

    /// Every primary service (§4.4.1).
    public func discoverPrimaryServices() async throws(GATTError) -> [Service] {
        try await run(DiscoverAllPrimaryServices(mtu: await mtu))
    }

    /// The primary services with `uuid` (§4.4.2).
    public func discoverPrimaryServices(uuid: BluetoothUUID) async throws(GATTError) -> [Service] {
        try await run(DiscoverPrimaryServiceByServiceUUID(uuid: uuid, mtu: await mtu))
    }

    /// The includes of `service` (§4.5.1).
    public func findIncludedServices(of service: Service) async throws(GATTError) -> [IncludedService] {
        try await run(FindIncludedServices(service: service, mtu: await mtu))
    }

    /// The characteristics of `service` (§4.6.1).
    public func discoverCharacteristics(of service: Service) async throws(GATTError) -> [Characteristic] {
        try await run(DiscoverAllCharacteristics(service: service, mtu: await mtu))
    }

    /// The descriptors of `characteristic` (§4.7.1); none without a request when its value is
    /// the last handle of its definition.
    public func discoverDescriptors(of characteristic: Characteristic) async throws(GATTError) -> [Descriptor] {
        guard let range = characteristic.descriptorRange else { return [] }
        return try await run(DiscoverAllCharacteristicDescriptors(range: range, mtu: await mtu))
    }

    /// The whole database in few requests (`DatabaseDiscovery`: includes and characteristics
    /// searched once over all services, descriptors only where a gap leaves room for them).
    /// `findIncludes: false` skips the include search for a server known to have none.
    public func discoverDatabase(findIncludes: Bool = true) async throws(GATTError) -> GATTDatabase {
        try await run(DatabaseDiscovery(mtu: await mtu, findIncludes: findIncludes))
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
    public func findCharacteristics(uuid: BluetoothUUID) async throws(GATTError) -> [Characteristic] {
        var found = try await run(DiscoverCharacteristicsByUUID(uuid: uuid, range: 0x0001...0xFFFF, mtu: await mtu))
        for index in found.indices {
            found[index].descriptors = try await discoverDescriptors(of: found[index])
        }
        return found
    }

    // MARK: Reads and writes

    /// The value at `handle` (§4.8.1), at most ATT_MTU − 1 octets.
    public func read(handle: UInt16) async throws(GATTError) -> [UInt8] {
        try await run(ReadCharacteristicValue(handle: handle, mtu: await mtu))
    }

    /// The whole value at `handle` from `offset` (§4.8.3).
    public func readLong(handle: UInt16, offset: UInt16 = 0) async throws(GATTError) -> [UInt8] {
        try await run(ReadLongCharacteristicValues(handle: handle, offset: offset, mtu: await mtu))
    }

    /// Every value of characteristics with `uuid` in `range` (§4.8.2).
    public func read(uuid: BluetoothUUID, in range: ClosedRange<UInt16> = 0x0001...0xFFFF) async throws(GATTError)
        -> [ReadByTypeResponse.AttributeData]
    {
        try await run(ReadUsingCharacteristicUUID(uuid: uuid, range: range, mtu: await mtu))
    }

    /// The values at `handles`, concatenated (§4.8.4).
    public func readMultiple(handles: [UInt16]) async throws(GATTError) -> [UInt8] {
        try await run(ReadMultipleCharacteristicValues(handles: handles, mtu: await mtu))
    }

    /// Writes `value` with a Write Request (§4.9.3); returns the octets written.
    @discardableResult
    public func write(handle: UInt16, value: [UInt8]) async throws(GATTError) -> Int {
        try await run(WriteCharacteristicValue(handle: handle, value: value, mtu: await mtu))
    }

    /// Writes `value` with Prepare/Execute Write (§4.9.4); returns the octets written.
    @discardableResult
    public func writeLong(handle: UInt16, value: [UInt8], offset: UInt16 = 0) async throws(GATTError) -> Int {
        try await run(WriteLongCharacteristicValues(handle: handle, value: value, offset: offset, mtu: await mtu))
    }

    /// Writes several values atomically (§4.9.5); returns the octets written.
    @discardableResult
    public func reliableWrite(_ writes: [ReliableWrites.Write]) async throws(GATTError) -> Int {
        try await run(ReliableWrites(writes: writes, mtu: await mtu))
    }

    /// Writes the Client Characteristic Configuration descriptor of `characteristic` (§4.12.3):
    /// `.notifications`, `.indications`, or `[]` to stop. Throws `noAttribute` when its
    /// descriptors hold no CCCD (discover them first).
    public func configure(
        _ characteristic: Characteristic, _ configuration: ClientCharacteristicConfiguration
    ) async throws(GATTError) {
        guard let handle = characteristic.clientConfigurationHandle else {
            throw GATTError.noAttribute(handle: characteristic.valueHandle)
        }
        try await write(handle: handle, value: configuration.encoded)
    }

    /// Sends an ATT_WRITE_CMD (§4.9.1): no answer, no confirmation of delivery.
    public func writeWithoutResponse(handle: UInt16, value: [UInt8]) async throws(GATTError) {
        let command = try WriteWithoutResponse.command(handle: handle, value: value, mtu: await mtu)
        do {
            try await connection.send(command)
        } catch {
            throw GATTError.att(error)
        }
    }
}
