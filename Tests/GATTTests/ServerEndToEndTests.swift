import ATT
import Bluetooth
import Testing
import TestSupport

@testable import GATT

/// Our GATT client against our GATT server over an in-memory ATT channel: a smoke test of
/// the whole path (both roles are ours, so it cannot catch a misreading both share).
@Suite("GATT server: end to end with our client")
struct ServerEndToEndTests {
    static func definitions() -> [ServiceDefinition] {
        [StandardServices.genericAccess(deviceName: "Swift GATT"), StandardServices.genericAttribute()]
            + ServerFixture.definitions().dropFirst(2)
    }

    /// A served database and a client connection to it (`attach`: an existing server
    /// connection gets the handler; otherwise `serve` opens it).
    static func setUp(serverRxMTU: Int = 517, attach: Bool = false) async throws -> (
        GATTServerHost, GATTClient, ATTConnection
    ) {
        let (clientEnd, serverEnd) = InMemoryATTChannel.pair()
        let server = GATTServer(database: try AttributeDatabase(services: definitions()))
        let host = GATTServerHost(server: server)
        let configuration = ATTBearer.Configuration(rxMTU: serverRxMTU)
        if attach {
            await host.attach(ATTConnection(channel: serverEnd, configuration: configuration))
        } else {
            _ = await host.serve(serverEnd, configuration: configuration)
        }
        let clientConnection = ATTConnection(channel: clientEnd)
        return (host, GATTClient(connection: clientConnection, configuration: .manual), clientConnection)
    }

    @Test("discovery at ATT_MTU 23 finds what the server holds; long reads and writes round-trip")
    func discoverAndReadAt23() async throws {
        try await withTimeout {
            let (host, client, connection) = try await Self.setUp(attach: true)
            let discovered = try await client.discoverDatabase()
            let served = await host.database.model
            // Secondary services reached through includes are part of the discovered database.
            let primaries = served.services
            #expect(discovered.services.map(\.uuid) == primaries.map(\.uuid))
            #expect(discovered.services.map(\.startHandle) == primaries.map(\.startHandle))
            #expect(discovered.services.map(\.endHandle) == primaries.map(\.endHandle))
            for (found, expected) in zip(discovered.services, primaries) {
                #expect(found.includes == expected.includes)
                #expect(found.characteristics.map(\.uuid) == expected.characteristics.map(\.uuid))
                #expect(found.characteristics.map(\.valueHandle) == expected.characteristics.map(\.valueHandle))
                #expect(found.characteristics.map(\.properties) == expected.characteristics.map(\.properties))
                #expect(found.characteristics.map(\.descriptors) == expected.characteristics.map(\.descriptors))
            }
            let manufacturer = try #require(served.characteristics(uuid: 0x2A29).first)
            #expect(try await client.readLong(handle: manufacturer.valueHandle) == ServerFixture.longValue)
            let custom = try #require(served.characteristics(uuid: ServerFixture.u2).first)
            let value: [UInt8] = Array(0..<16)
            #expect(try await client.writeLong(handle: custom.valueHandle, value: value) == 16)
            #expect(try await client.read(handle: custom.valueHandle) == value)
            // Read Multiple, Read Using Characteristic UUID.
            let name = try #require(served.characteristics(uuid: GATTUUID.deviceName).first)
            // 10 + 16 octets: cut at ATT_MTU − 1.
            let both = Array((Array("Swift GATT".utf8) + value).prefix(22))
            #expect(try await client.readMultiple(handles: [name.valueHandle, custom.valueHandle]) == both)
            #expect(try await client.read(uuid: GATTUUID.deviceName).map(\.value) == [Array("Swift GATT".utf8)])
            // A refused write comes back as the server's error.
            await #expect(
                throws: GATTError.peerError(request: .writeRequest, handle: name.valueHandle, code: .writeNotPermitted)
            ) {
                try await client.write(handle: name.valueHandle, value: [0x41])
            }
            #expect(await connection.mtu == 23)
            await connection.close()
        }
    }

    @Test("after Exchange MTU, notifications reach the subscribed client and Service Changed is indicated")
    func notificationsAndServiceChanged() async throws {
        try await withTimeout {
            let (host, client, connection) = try await Self.setUp(serverRxMTU: 100)
            #expect(try await connection.exchangeMTU(517) == 100)
            let custom = try #require(try await client.findCharacteristics(uuid: ServerFixture.u2).first)
            try await client.configure(custom, .notifications)
            let serviceChanged = try #require(try await client.findCharacteristics(uuid: GATTUUID.serviceChanged).first)
            try await client.configure(serviceChanged, .indications)

            var inbound = connection.inbound.makeAsyncIterator()
            try await host.updateValue([1, 2, 3], handle: custom.valueHandle)
            #expect(
                await inbound.next()
                    == .handleValueNotification(HandleValueNotification(handle: custom.valueHandle, value: [1, 2, 3])))

            let smaller = try AttributeDatabase(services: Array(Self.definitions().dropLast()))
            await host.replaceDatabase(smaller, changed: 0x0018...0xFFFF)
            #expect(
                await inbound.next()
                    == .handleValueIndication(
                        HandleValueIndication(handle: serviceChanged.valueHandle, value: [0x18, 0x00, 0xFF, 0xFF])))

            var events = host.events.makeAsyncIterator()
            let first = await events.next()
            #expect(
                first
                    == .clientConfigurationChanged(
                        GATTServer.ClientID(rawValue: 1), valueHandle: custom.valueHandle, .notifications))
            // The server answers from the new database.
            #expect(try await client.discoverPrimaryServices().count == 3)
            await connection.close()
        }
    }

    @Test("indications go out one at a time, in order, each confirmed")
    func indicationsInOrder() async throws {
        try await withTimeout {
            let (host, client, connection) = try await Self.setUp()
            let serviceChanged = try #require(try await client.findCharacteristics(uuid: GATTUUID.serviceChanged).first)
            try await client.configure(serviceChanged, .indications)
            let database = await host.database
            for start in [0x0010, 0x0011, 0x0012] as [UInt16] {
                await host.replaceDatabase(database, changed: start...0xFFFF)
            }
            var inbound = connection.inbound.makeAsyncIterator()
            for start in [0x10, 0x11, 0x12] as [UInt8] {
                #expect(
                    await inbound.next()
                        == .handleValueIndication(
                            HandleValueIndication(handle: serviceChanged.valueHandle, value: [start, 0x00, 0xFF, 0xFF]))
                )
            }
            await connection.close()
        }
    }

    @Test("two clients: one server, per-client subscriptions, shared values")
    func twoClients() async throws {
        try await withTimeout {
            let host = GATTServerHost(server: GATTServer(database: try AttributeDatabase(services: Self.definitions())))
            var clients: [(GATTClient, ATTConnection)] = []
            for _ in 0..<2 {
                let (clientEnd, serverEnd) = InMemoryATTChannel.pair()
                _ = await host.serve(serverEnd)
                let connection = ATTConnection(channel: clientEnd)
                clients.append((GATTClient(connection: connection), connection))
            }
            let (first, firstConnection) = clients[0]
            let (second, secondConnection) = clients[1]
            let custom = try #require(try await first.findCharacteristics(uuid: ServerFixture.u2).first)
            try await first.configure(custom, .notifications)
            try await second.write(handle: custom.valueHandle, value: [0x55])
            #expect(try await first.read(handle: custom.valueHandle) == [0x55])
            // Only the first subscribed.
            #expect(try await second.read(handle: custom.clientConfigurationHandle ?? 0) == [0, 0])
            try await host.updateValue([0x66], handle: custom.valueHandle)
            var inbound = firstConnection.inbound.makeAsyncIterator()
            #expect(
                await inbound.next()
                    == .handleValueNotification(HandleValueNotification(handle: custom.valueHandle, value: [0x66])))
            #expect(await host.state.connectedClients.count == 2)
            await firstConnection.close()
            await secondConnection.close()
        }
    }

    @Test("a closed bearer detaches the client from the server")
    func detachOnClose() async throws {
        try await withTimeout {
            let (host, _, connection) = try await Self.setUp()
            #expect(await host.state.connectedClients.count == 1)
            await connection.close()
            for _ in 0..<200 {
                if await host.state.connectedClients.isEmpty { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(await host.state.connectedClients.isEmpty)
        }
    }
}
