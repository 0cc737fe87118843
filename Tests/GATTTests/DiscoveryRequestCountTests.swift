import ATT
import Bluetooth
import Testing

@testable import GATT

/// Fewest-request discovery of the CC2650-like database served by `scripts/bumble_peer.py`:
/// the whole client (Exchange MTU included) over an in-memory bearer against an attribute
/// server packing responses as ATT requires. Bumble's own client needs 47 (MTU 517) and 64
/// (MTU 23) requests; the targets are 28 and 54.
@Suite("GATT discovery request counts (Bumble SensorTag database)")
struct DiscoveryRequestCountTests {
    static func expectedDatabase() -> GATTDatabase {
        let attributes = BumbleSensorTag.attributes()
        var services: [Service] = []
        for attribute in attributes where attribute.type == 0x2800 {
            let end = attribute.groupEnd ?? attribute.handle
            let uuid = BluetoothUUID(littleEndian: attribute.value)!
            var characteristics: [Characteristic] = []
            let declarations = attributes.filter {
                $0.type == 0x2803 && $0.handle > attribute.handle && $0.handle <= end
            }
            for (index, declaration) in declarations.enumerated() {
                let decoded = try! CharacteristicDeclaration(decoding: declaration.value, handle: declaration.handle)
                let characteristicEnd = index + 1 < declarations.count ? declarations[index + 1].handle - 1 : end
                let descriptors = attributes.filter {
                    $0.handle > decoded.valueHandle && $0.handle <= characteristicEnd
                }
                .map { Descriptor(handle: $0.handle, uuid: $0.type) }
                characteristics.append(
                    Characteristic(
                        uuid: decoded.uuid, declarationHandle: declaration.handle, valueHandle: decoded.valueHandle,
                        endHandle: characteristicEnd, properties: decoded.properties, descriptors: descriptors))
            }
            services.append(
                Service(uuid: uuid, startHandle: attribute.handle, endHandle: end, characteristics: characteristics))
        }
        return GATTDatabase(services: services)
    }

    @Test func tableMatchesThePeer() {
        let database = Self.expectedDatabase()
        #expect(database.services.count == 11)
        #expect(database.characteristics.count == 32)
        #expect(database.characteristics.reduce(0) { $0 + $1.descriptors.count } == 26)
        #expect(database.services.last?.endHandle == 0x0065)
    }

    @Test(arguments: [(517, 28), (23, 54)])
    func fullDiscovery(serverMTU: Int, limit: Int) async throws {
        let pair = ClientServerPair(
            serverMTU: serverMTU, configuration: GATTClient.Configuration(watchesServiceChanged: false))
        let database = try await pair.client.discoverDatabase()
        let requests = await pair.clientConnection.requestsSent
        print("Bumble SensorTag database, server MTU \(serverMTU): \(requests) ATT requests (target \(limit))")
        #expect(await pair.clientConnection.mtu == min(serverMTU, 517))
        #expect(database == Self.expectedDatabase())
        #expect(requests <= limit)
        // The bearer answers Exchange MTU itself; the handler sees the rest.
        #expect(pair.server.requests.count == requests - 1)
        await pair.clientConnection.close()
    }

    /// The counts themselves, so a change that costs a request is noticed.
    @Test(arguments: [(517, 26), (23, 54)])
    func exactCounts(serverMTU: Int, count: Int) async throws {
        let pair = ClientServerPair(
            serverMTU: serverMTU, configuration: GATTClient.Configuration(watchesServiceChanged: false))
        _ = try await pair.client.discoverDatabase()
        #expect(await pair.clientConnection.requestsSent == count)
        // No include search (every service declaration is followed by a characteristic) and
        // one Read By Group Type more than the service responses (the terminating one).
        #expect(pair.server.requests.filter { $0 == .readRequest }.isEmpty)
        #expect(pair.server.requests.filter { $0 == .readByGroupTypeRequest }.count == (serverMTU == 23 ? 10 : 4))
        await pair.clientConnection.close()
    }

    /// The engine finds includes and secondary services where include definitions can be, and
    /// a characteristic left in the sweep's open tail.
    @Test func includesAndOpenTail() async throws {
        typealias A = ClientTestServer.Attribute
        let secondary = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        let tailA = BumbleSensorTag.ti(0xAA01)
        let tailB = BumbleSensorTag.ti(0xAA02)
        let attributes: [A] = [
            A(handle: 1, type: 0x2800, value: [0x0F, 0x18], groupEnd: 5),
            A(handle: 2, type: 0x2802, value: [0x10, 0x00, 0x12, 0x00]),  // 128-bit include: no UUID
            A(handle: 3, type: 0x2803, value: [0x12, 0x04, 0x00, 0x19, 0x2A]),
            A(handle: 4, type: 0x2A19, value: [0x50]),
            A(handle: 5, type: 0x2902, value: [0, 0]),
            A(handle: 0x10, type: 0x2801, value: secondary.littleEndianBytes, groupEnd: 0x12),
            A(handle: 0x11, type: 0x2803, value: [0x02, 0x12, 0x00, 0x00, 0x2A]),
            A(handle: 0x12, type: 0x2A00, value: [0x41]),
            A(handle: 0x20, type: 0x2800, value: [0x0A, 0x18], groupEnd: 0x28),
            A(handle: 0x21, type: 0x2803, value: [0x02, 0x22, 0x00] + tailA.littleEndianBytes),
            A(handle: 0x22, type: tailA, value: [0x41]),
            A(handle: 0x23, type: 0x2803, value: [0x02, 0x24, 0x00, 0x24, 0x2A]),
            A(handle: 0x24, type: 0x2A24, value: [0x42]),
            // The sweep's response from 0x23 is cut before this 128-bit declaration, and 0x23
            // is in the final service: the tail is left to Find Information, which finds this
            // declaration and resumes the sweep.
            A(handle: 0x25, type: 0x2803, value: [0x12, 0x26, 0x00] + tailB.littleEndianBytes),
            A(handle: 0x26, type: tailB, value: [0x43]),
            A(handle: 0x27, type: 0x2902, value: [0, 0]),
            A(handle: 0x28, type: 0x2901, value: [0x44]),
        ]
        let pair = ClientServerPair(
            attributes: attributes, serverMTU: 23, configuration: .init(watchesServiceChanged: false))
        let database = try await pair.client.discoverDatabase()
        try database.validate()
        #expect(database.services.map(\.startHandle) == [1, 0x10, 0x20])
        #expect(database.services[1].isPrimary == false)
        #expect(database.services[1].uuid == secondary)
        #expect(
            database.services[0].includes == [
                IncludedService(handle: 2, startHandle: 0x10, endHandle: 0x12, uuid: secondary)
            ])
        #expect(database.services[1].characteristics.map(\.uuid) == [0x2A00])
        #expect(database.services[2].characteristics.map(\.uuid) == [tailA, 0x2A24, tailB])
        #expect(
            database.services[2].characteristics.last?.descriptors
                == [Descriptor(handle: 0x27, uuid: 0x2902), Descriptor(handle: 0x28, uuid: 0x2901)])
        #expect(database.services[0].characteristics.first?.descriptors == [Descriptor(handle: 5, uuid: 0x2902)])
        await pair.clientConnection.close()
    }
}
