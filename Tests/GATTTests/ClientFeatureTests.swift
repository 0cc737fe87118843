import ATT
import Bluetooth
import Testing

@testable import GATT

/// The client actor: MTU first, cancellation, typed errors, targeted reads, Service Changed.
@Suite("GATT client actor")
struct ClientFeatureTests {
    /// Waits (bounded: 2 s) until `condition` holds.
    static func eventually(_ condition: @Sendable () async -> Bool) async -> Bool {
        for _ in 0..<2000 {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return false
    }

    @Test func exchangesTheLargestMTUFirst() async throws {
        let pair = ClientServerPair(serverMTU: 247)
        #expect(String(decoding: try await pair.client.read(handle: 3), as: UTF8.self) == "CC2650 SensorTag")
        #expect(await pair.clientConnection.mtu == 247)
        #expect(await pair.clientConnection.requestsSent == 2)
        // Once per bearer: an explicit exchange afterwards just reports ATT_MTU.
        #expect(try await pair.client.exchangeMTU() == 247)
        #expect(await pair.clientConnection.requestsSent == 2)
        await pair.client.close()
    }

    /// Cancelling the task stops the procedure after the outstanding response: nothing more is
    /// sent, the call throws `cancelled`, and the bearer stays usable.
    @Test func cancellationStopsAfterTheOutstandingResponse() async throws {
        let gate = Gate()
        let pair = ClientServerPair(configuration: .manual, beforeAnswer: { _ in await gate.wait() })
        let client = pair.client
        let task = Task { try await client.discoverDatabase() }
        #expect(await Self.eventually { await gate.arrivals == 1 })
        task.cancel()
        await gate.openGate()
        let result = await task.result
        guard case .failure(let error) = result else {
            Issue.record("discovery finished despite the cancellation")
            return
        }
        #expect(error as? GATTError == .cancelled)
        #expect(pair.server.requests == [ATTOpcode.readByGroupTypeRequest])
        #expect(try await client.read(handle: 0x21) == [0x5C])
        await client.close()
    }

    /// A refusal names the request, the handle and the ATT error.
    @Test func typedErrors() async throws {
        let pair = ClientServerPair(configuration: .manual)
        await #expect(throws: GATTError.peerError(request: .readRequest, handle: 0x0200, code: .invalidHandle)) {
            _ = try await pair.client.read(handle: 0x0200)
        }
        await pair.clientConnection.close()
        await #expect(throws: GATTError.att(.bearerClosed(reason: "closed locally"))) {
            _ = try await pair.client.read(handle: 3)
        }
    }

    /// Read by UUID is one Read By Type Request (plus the terminating one), no discovery.
    @Test func readByUUIDIsTargeted() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let values = try await pair.client.read(uuid: 0x2A19)
        #expect(values.map(\.handle) == [0x21])
        #expect(values.first?.value == [0x5C])
        #expect(pair.server.requests.allSatisfy { $0 == .readByTypeRequest })
        #expect(pair.server.requests.count <= 2)
        await pair.client.close()
    }

    /// A Service Changed indication makes the client rediscover the range and report it.
    @Test func serviceChangedRediscovers() async throws {
        let pair = ClientServerPair()
        let before = try await pair.client.loadDatabase()
        #expect(before.services.count == 11)
        // The client subscribed to Service Changed indications (CCCD 0x000B).
        #expect(pair.server.writes.last.map { [$0.handle] + $0.value.map(UInt16.init) } == [0x0B, 2, 0])

        let heartRate = (
            BluetoothUUID.bit16(0x180D),
            [
                BumbleSensorTag.Spec(
                    uuid: 0x2A37, properties: BumbleSensorTag.notify, value: [0, 60],
                    descriptors: [BumbleSensorTag.cccd()])
            ]
        )
        pair.server.replace(BumbleSensorTag.attributes(services: BumbleSensorTag.services + [heartRate]))
        try await pair.serverConnection.indicate(HandleValueIndication(handle: 0x0A, value: [0x66, 0x00, 0xFF, 0xFF]))
        var changes = pair.client.databaseChanges.makeAsyncIterator()
        guard let change = await changes.next() else {
            Issue.record("no database change reported")
            return
        }
        #expect(change.affected == 0x0066...0xFFFF)
        #expect(change.database.services.count == 12)
        let added = try change.database.characteristic(uuid: 0x2A37)
        #expect(added.valueHandle == 0x68)
        #expect(added.clientConfigurationHandle == 0x69)
        #expect(await pair.client.database == change.database)
        // The services outside the range were kept, not rediscovered.
        #expect(Array(change.database.services.prefix(11)) == before.services)
        await pair.client.close()
    }

    /// A change inside an existing service: the service is rediscovered whole.
    @Test func serviceChangedInsideAService() async throws {
        let pair = ClientServerPair()
        _ = try await pair.client.loadDatabase()
        // The Battery service (0x1F-0x22) loses its CCCD; the other handles stay.
        var attributes = BumbleSensorTag.attributes().filter { $0.handle != 0x22 }
        if let index = attributes.firstIndex(where: { $0.handle == 0x1F }) { attributes[index].groupEnd = 0x21 }
        pair.server.replace(attributes)
        try await pair.serverConnection.indicate(HandleValueIndication(handle: 0x0A, value: [0x21, 0x00, 0x22, 0x00]))
        var changes = pair.client.databaseChanges.makeAsyncIterator()
        let change = await changes.next()
        #expect(change?.rediscovered == 0x001F...0x0022)
        let battery = try #require(try change?.database.characteristic(uuid: 0x2A19))
        #expect(battery.descriptors.isEmpty)
        #expect(change?.database.services.count == 11)
        await pair.client.close()
    }
}
