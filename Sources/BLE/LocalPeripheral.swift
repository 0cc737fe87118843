import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import Host
import Synchronization

/// A value a central wrote to our GATT server.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.9
public struct CharacteristicWrite: Sendable {
    /// The characteristic written.
    public var characteristic: BluetoothUUID
    /// Its value handle.
    public var handle: UInt16
    /// The value now stored.
    public var value: [UInt8]
    /// The central that wrote it.
    public var peer: PeerAddress

    /// A write of `value` by `peer`.
    public init(characteristic: BluetoothUUID, handle: UInt16, value: [UInt8], peer: PeerAddress) {
        self.characteristic = characteristic
        self.handle = handle
        self.value = value
        self.peer = peer
    }
}

/// Our GATT server, advertising on an adapter (we are peripheral): centrals connect, read,
/// write and subscribe; the app sets values and notifies. Several centrals may be connected at
/// once where the controller allows it. Made by ``Adapter/advertise(name:services:)``.
public actor LocalPeripheral {
    /// The database served (handles as assigned).
    package nonisolated let database: AttributeDatabase
    let server: GATTServerHost
    private let host: any PeripheralHost
    private let writeBroadcast = Broadcast<CharacteristicWrite>()
    private let clients = ClientTable()
    private let onStop: @Sendable () async -> Void
    private var acceptor: Task<Void, Never>?
    private var enhancedAcceptor: Task<Void, Never>?
    private var stopped = false
    /// Pairing and encryption with centrals, over the adapter's delegate and bond store (nil:
    /// this peripheral never pairs).
    let pairing: PeripheralPairing?

    /// The connected centrals by server client, shared with the server's event handler.
    private final class ClientTable: Sendable {
        struct Client: Sendable {
            var peer: PeerAddress
            var link: any GATTPeripheralLink
            /// L2CAP Connection Parameter Update Request (our host in user space).
            var requestParameters: (@Sendable (LEConnectionParameters) async throws -> Bool)?
            /// The link's connection handle (our host in user space): its Enhanced ATT bearers' too.
            var handle: UInt16?
        }
        private let table = Mutex<[GATTServer.ClientID: Client]>([:])

        func withLock<Result: Sendable>(_ body: (inout [GATTServer.ClientID: Client]) -> Result) -> Result {
            table.withLock { body(&$0) }
        }
    }

    private init(
        database: AttributeDatabase, host: any PeripheralHost, security: SecurityContext?, localAddress: PeerAddress,
        onStop: @escaping @Sendable () async -> Void
    ) {
        self.pairing = security.map {
            PeripheralPairing(
                context: $0, localAddress: localAddress, options: PairingOptions(ioCapability: .noInputNoOutput))
        }
        self.database = database
        self.server = GATTServerHost(server: GATTServer(database: database))
        self.host = host
        self.onStop = onStop
    }

    /// Builds the database and the advertising data, and starts advertising on `host`.
    static func start(
        name: String?, services: [ServiceDefinition], host: any PeripheralHost, security: SecurityContext? = nil,
        localAddress: PeerAddress = PeerAddress(address: .zero, type: .public),
        onStop: @escaping @Sendable () async -> Void
    ) async throws(BLEError) -> LocalPeripheral {
        let database = try Self.database(name: name, services: services, enhancedATT: host is UserSpacePeripheralHost)
        let parameters = try Self.advertisingParameters(name: name ?? Self.defaultName, services: services)
        let local = LocalPeripheral(
            database: database, host: host, security: security, localAddress: localAddress, onStop: onStop)
        try await local.begin(parameters)
        return local
    }

    private func begin(_ parameters: LEAdvertisingParameters) async throws(BLEError) {
        let writes = writeBroadcast
        let clients = clients
        let valueUUIDs = Dictionary(
            database.model.characteristics.map { ($0.valueHandle, $0.uuid) }, uniquingKeysWith: { first, _ in first })
        await server.setApplication(writeCheck: nil) { event in
            guard case .valueWritten(let client, let handle, let value) = event, let uuid = valueUUIDs[handle] else { return }
            guard let peer = clients.withLock({ $0[client]?.peer }) else { return }
            writes.yield(CharacteristicWrite(characteristic: uuid, handle: handle, value: value, peer: peer))
        }
        if let pairing {
            await server.setSecurityRefusalHandler { client, code in await pairing.refused(code, client: client) }
            await server.setSecuritySettling { client in await pairing.waitForPairing(of: client) }
        }
        // Enhanced ATT bearers of connected centrals, served as more bearers of their client.
        if let bearers = host.enhancedBearers {
            let server = server
            enhancedAcceptor = Task {
                for await channel in bearers {
                    let client = clients.withLock { table in table.first { $0.value.handle == channel.handle }?.key }
                    guard let client, let mtu = channel.maximumSDUSize,
                        await server.serveEnhancedBearer(channel, of: client, mtu: mtu) != nil
                    else {
                        await channel.close()
                        continue
                    }
                }
            }
        }
        let centrals: AsyncStream<AcceptedCentral>
        do {
            centrals = try await host.advertise(parameters)
        } catch {
            throw BLEError.from(error, doing: "advertising")
        }
        acceptor = Task { [weak self] in
            for await central in centrals {
                await self?.accepted(central)
            }
        }
    }

    private func accepted(_ central: AcceptedCentral) async {
        guard !stopped else {
            await central.link.disconnect(reason: .remoteUserTerminatedConnection)
            return
        }
        let peer = central.address ?? PeerAddress(address: .zero, type: .public)
        let clients = clients
        let link = central.link
        let requestParameters = central.requestParameters
        let handle = central.connection?.handle
        // SMP goes to our Security Manager from the start (before any ATT), on the user-space host.
        let security = await pairing?.attach(central, peer: peer)
        // Registered before the server handles the first PDU, so no write misses its peer.
        let (_, id) = await server.serve(
            central.channel, configuration: ATTBearer.Configuration(rxMTU: Self.rxMTU),
            registered: { id in
                clients.withLock {
                    $0[id] = ClientTable.Client(peer: peer, link: link, requestParameters: requestParameters, handle: handle)
                }
            })
        let server = server
        await security?.served(as: id) { level in await server.setSecurity(level, for: id) }
        if stopped {
            // stop() ran while the server was taking the central: it cleared the table first.
            clients.withLock { _ = $0.removeValue(forKey: id) }
            await link.disconnect(reason: .remoteUserTerminatedConnection)
            return
        }
        Task {
            _ = await central.ended()
            clients.withLock { _ = $0.removeValue(forKey: id) }
        }
    }

    /// Asks the central `peer` for new connection parameters with the L2CAP Connection Parameter
    /// Update Request (Vol 3, Part A, §4.20) and waits, bounded, for its answer: true when it
    /// accepted (the new parameters then take effect with its LE Connection Update), false when
    /// it rejected or did not understand the request.
    /// - Throws: a usage error for parameters out of range, or on the kernel path (its kernel
    ///   owns the link); when `peer` is not connected; when the central does not answer.
    public func requestConnectionParameters(
        _ request: ConnectionParameterRequest, from peer: PeerAddress
    ) async throws(BLEError) -> Bool {
        let parameters = try request.hciParameters()
        let client = clients.withLock { table in table.values.first { $0.peer == peer } }
        guard let client else { throw BLEError("\(peer) is not connected to this peripheral", kind: "usage", exitCode: .usage) }
        guard let ask = client.requestParameters else {
            throw BLEError(
                "asking \(peer) for connection parameters: on hciN the kernel owns the link; use hci-user:N", kind: "usage",
                exitCode: .usage)
        }
        do {
            return try await ask(parameters)
        } catch {
            throw BLEError("asking \(peer) for \(request): \(error)", kind: "l2cap")
        }
    }

    /// The centrals connected now.
    public var connectedCentrals: [PeerAddress] {
        clients.withLock { table in table.values.map(\.peer) }
    }

    /// Our Rx MTU: the largest ATT allows on LE.
    static let rxMTU = 517
    /// The Device Name when ``Adapter/advertise(name:services:)`` is given none.
    static let defaultName = "gattclient"

    /// Every value centrals write, for one caller, from the call on; finishes on ``stop()``.
    public nonisolated func writes() -> AsyncStream<CharacteristicWrite> {
        writeBroadcast.subscribe()
    }

    /// Stores `value` as the characteristic's value without telling anyone.
    public func setValue(_ value: [UInt8], for characteristic: BluetoothUUID) async throws(BLEError) {
        try await setValue(value, handle: try valueHandle(of: characteristic))
    }

    /// Stores `value` at `handle` without telling anyone.
    public func setValue(_ value: [UInt8], handle: UInt16) async throws(BLEError) {
        do {
            try await server.setValue(value, handle: handle)
        } catch {
            throw BLEError.gatt(error, doing: "setting the value at 0x\(hex4(handle))")
        }
    }

    /// Stores `value` and notifies each central whose CCCD enables notifications, or indicates
    /// (awaiting the confirmation) to each that enables only indications (Vol 3, Part G, §4.10,
    /// §4.11). The value is cut to each central's ATT_MTU − 3, as §4.10 allows.
    public func notify(_ value: [UInt8], for characteristic: BluetoothUUID) async throws(BLEError) {
        try await notify(value, handle: try valueHandle(of: characteristic))
    }

    /// ``notify(_:for:)`` by value handle.
    public func notify(_ value: [UInt8], handle: UInt16) async throws(BLEError) {
        let what = "notifying 0x\(hex4(handle))"
        guard let properties = database.properties(ofValue: handle) else {
            throw BLEError("\(what): 0x\(hex4(handle)) is not a characteristic value", kind: "usage", exitCode: .usage, handle: handle)
        }
        guard !properties.isDisjoint(with: [.notify, .indicate]) else {
            throw BLEError(
                "\(what): the characteristic has neither Notify nor Indicate", kind: "usage", exitCode: .usage, handle: handle)
        }
        try await setValue(value, handle: handle)
        for id in clients.withLock({ Array($0.keys) }) {
            let configuration = await server.clientConfiguration(ofValue: handle, for: id)
            let indication: Bool
            if configuration.contains(.notifications), properties.contains(.notify) {
                indication = false
            } else if configuration.contains(.indications), properties.contains(.indicate) {
                indication = true
            } else {
                continue
            }
            do {
                _ = try await server.push(value, handle: handle, indication: indication, to: id)
            } catch {
                // A central that left between the check and the push is no failure of ours.
                guard clients.withLock({ $0[id] }) == nil else { throw BLEError.gatt(error, doing: what) }
            }
        }
    }

    /// Stops advertising, disconnects every central and ends ``writes()``. Idempotent.
    public func stop() async {
        guard !stopped else { return }
        stopped = true
        acceptor?.cancel()
        enhancedAcceptor?.cancel()
        await host.stopAdvertising()
        let links = clients.withLock { clients in
            defer { clients = [:] }
            return clients.values.map(\.link)
        }
        for link in links { await link.disconnect(reason: .remoteUserTerminatedConnection) }
        writeBroadcast.finish()
        await onStop()
    }

    /// The value handle of the one characteristic with `uuid`.
    private func valueHandle(of uuid: BluetoothUUID) throws(BLEError) -> UInt16 {
        let matches = database.model.characteristics(uuid: uuid)
        guard let first = matches.first else {
            throw BLEError("this peripheral has no characteristic \(uuid)", kind: "notFound")
        }
        guard matches.count == 1 else {
            throw BLEError(
                "\(uuid) names \(matches.count) characteristics (value handles "
                    + matches.map { "0x" + hex4($0.valueHandle) }.joined(separator: ", ") + "); give a handle instead",
                kind: "usage", exitCode: .usage)
        }
        return first.valueHandle
    }

    // MARK: - Building

    /// `services` with Generic Access and Generic Attribute where absent and a CCCD on every
    /// notify/indicate characteristic without one; refused, naming the fault, when it cannot work.
    static func database(name: String?, services: [ServiceDefinition], enhancedATT: Bool = false) throws(BLEError) -> AttributeDatabase {
        var all = services
        for s in all.indices {
            for c in all[s].characteristics.indices {
                let characteristic = all[s].characteristics[c]
                guard !characteristic.properties.isDisjoint(with: [.notify, .indicate]),
                    !characteristic.descriptors.contains(where: { $0.uuid == GATTUUID.clientCharacteristicConfiguration })
                else { continue }
                all[s].characteristics[c].descriptors.append(.clientConfiguration())
            }
        }
        // Given handles are kept: the standard services then go after the app's, in free handles.
        let handlesGiven = services.contains { $0.handle != nil }
        var standard: [ServiceDefinition] = []
        if !all.contains(where: { $0.uuid == GATTUUID.genericAccess }) {
            standard.append(StandardServices.genericAccess(deviceName: name ?? defaultName))
        }
        if !all.contains(where: { $0.uuid == GATTUUID.genericAttribute }) {
            // Server Supported Features: EATT Supported (bit 0) where our host accepts EATT bearers.
            standard.append(StandardServices.genericAttribute(serverSupportedFeatures: enhancedATT ? 0x01 : nil))
        }
        all = handlesGiven ? all + standard : standard + all
        do {
            return try AttributeDatabase(services: all)
        } catch {
            throw BLEError("the services cannot be served: \(error)", kind: "usage", exitCode: .usage)
        }
    }

    /// Flags, then the primary services' UUIDs, then the name into the advertising data (31
    /// octets); what does not fit into the scan response (Vol 3, Part C, §11; Supplement Part A).
    static func advertisingParameters(name: String, services: [ServiceDefinition]) throws(BLEError) -> LEAdvertisingParameters {
        let limit = 31
        var advertising: [UInt8] = [0x02, 0x01, 0x06]  // LE General Discoverable, BR/EDR not supported
        var scanResponse: [UInt8] = []
        var uuids16: [UInt8] = []
        var uuids128: [UInt8] = []
        let advertised = services.filter {
            $0.isPrimary && $0.uuid != GATTUUID.genericAccess && $0.uuid != GATTUUID.genericAttribute
        }
        for service in advertised {
            if let short = service.uuid.uuid16 {
                uuids16 += [UInt8(truncatingIfNeeded: short), UInt8(truncatingIfNeeded: short >> 8)]
            } else {
                uuids128 += BluetoothUUID.bit128(service.uuid.uuid128).littleEndianBytes
            }
        }
        // Complete lists where one part fits; else as much as fits, marked incomplete.
        for (list, complete, incomplete, width) in [(uuids16, UInt8(0x03), UInt8(0x02), 2), (uuids128, 0x07, 0x06, 16)]
        where !list.isEmpty {
            let element = [UInt8(list.count + 1), complete] + list
            if advertising.count + element.count <= limit {
                advertising += element
            } else if scanResponse.count + element.count <= limit {
                scanResponse += element
            } else {
                let room = limit - scanResponse.count - 2
                let count = room / width * width
                if count > 0 { scanResponse += [UInt8(count + 1), incomplete] + list.prefix(count) }
            }
        }
        let nameBytes = Array(name.utf8)
        if !nameBytes.isEmpty {
            let element = [UInt8(nameBytes.count + 1), 0x09] + nameBytes
            if advertising.count + element.count <= limit {
                advertising += element
            } else if scanResponse.count + element.count <= limit {
                scanResponse += element
            } else {
                // Shortened Local Name in whichever part has more room, cut on a character boundary.
                let inAdvertising = limit - advertising.count >= limit - scanResponse.count
                let room = (inAdvertising ? limit - advertising.count : limit - scanResponse.count) - 2
                var cut = Substring(name)
                while cut.utf8.count > room, !cut.isEmpty { cut.removeLast() }
                if !cut.isEmpty {
                    let shortened = [UInt8(cut.utf8.count + 1), 0x08] + Array(cut.utf8)
                    if inAdvertising { advertising += shortened } else { scanResponse += shortened }
                }
            }
        }
        let parameters = LEAdvertisingParameters(advertisingData: advertising, scanResponseData: scanResponse)
        if let why = parameters.invalidity {
            throw BLEError("advertising: \(why)", kind: "usage", exitCode: .usage)
        }
        return parameters
    }
}
