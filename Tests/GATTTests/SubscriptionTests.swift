import ATT
import Bluetooth
import Testing

@testable import GATT

/// Subscriptions: routing by value handle, order, overflow policies, values that arrive
/// before the CCCD Write Response, disconnect, unsubscribe, indications.
@Suite("GATT client subscriptions")
struct SubscriptionTests {
    /// Battery Level (value 0x21, CCCD 0x22) and the SensorTag key (value 0x63, CCCD 0x64) of
    /// the Bumble SensorTag table.
    static let battery = Characteristic(
        uuid: 0x2A19, declarationHandle: 0x20, valueHandle: 0x21, endHandle: 0x22, properties: [.read, .notify],
        descriptors: [Descriptor(handle: 0x22, uuid: 0x2902)])
    static let keys = Characteristic(
        uuid: 0xFFE1, declarationHandle: 0x62, valueHandle: 0x63, endHandle: 0x65, properties: [.read, .notify],
        descriptors: [Descriptor(handle: 0x64, uuid: 0x2902), Descriptor(handle: 0x65, uuid: 0x2901)])

    static func notify(_ connection: ATTConnection, _ handle: UInt16, _ value: [UInt8]) async throws {
        try await connection.send(.handleValueNotification(HandleValueNotification(handle: handle, value: value)))
    }

    /// Reads everything a subscription yields until it ends; returns the values and the error.
    static func drain(_ subscription: GATTSubscription) async -> (values: [[UInt8]], error: GATTError?) {
        var values: [[UInt8]] = []
        do {
            for try await notification in subscription { values.append(notification.value) }
            return (values, nil)
        } catch {
            return (values, error)
        }
    }

    @Test func routesByHandleInOrder() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let battery = try await pair.client.subscribe(characteristic: Self.battery)
        let keys = try await pair.client.subscribe(characteristic: Self.keys)
        #expect(pair.server.writes.map(\.handle) == [0x22, 0x64])
        #expect(pair.server.writes.map(\.value) == [[1, 0], [1, 0]])
        for index in 0..<20 {
            try await Self.notify(pair.serverConnection, index % 2 == 0 ? 0x21 : 0x63, [UInt8(index)])
            // A value for a handle nobody subscribed to is counted, not delivered.
            if index == 10 { try await Self.notify(pair.serverConnection, 0x30, [0xEE]) }
        }
        // Multiple Handle Value Notification: split, in order.
        try await pair.serverConnection.send(
            .multipleHandleValueNotification(
                MultipleHandleValueNotification(entries: [
                    .init(handle: 0x63, value: [100]), .init(handle: 0x21, value: [101]),
                ])))
        var batteryIterator = battery.makeAsyncIterator()
        var keyIterator = keys.makeAsyncIterator()
        var batteryValues: [[UInt8]] = []
        var keyValues: [[UInt8]] = []
        for _ in 0..<11 {
            if let value = try await batteryIterator.next() { batteryValues.append(value.value) }
            if let value = try await keyIterator.next() { keyValues.append(value.value) }
        }
        // Unsubscribing ends the streams normally.
        try await pair.client.unsubscribe(battery)
        try await pair.client.unsubscribe(keys)
        #expect(try await batteryIterator.next() == nil)
        #expect(try await keyIterator.next() == nil)
        #expect(batteryValues == stride(from: 0, to: 20, by: 2).map { [UInt8($0)] } + [[101]])
        #expect(keyValues == stride(from: 1, to: 20, by: 2).map { [UInt8($0)] } + [[100]])
        #expect(pair.server.writes.suffix(2).map(\.value) == [[0, 0], [0, 0]])
        #expect(pair.client.notificationCounters.unrouted == 1)
        await pair.client.close()
    }

    /// 10 000 notifications through the in-memory link: none lost, none reordered.
    @Test func tenThousandNotifications() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let subscription = try await pair.client.subscribe(characteristic: Self.battery)
        let consumer = Task { () -> (Int, Bool) in
            var count = 0
            var ordered = true
            do {
                for try await notification in subscription {
                    let value = Int(notification.value[0]) | Int(notification.value[1]) << 8
                    if value != count { ordered = false }
                    count += 1
                    if count == 10_000 { break }
                }
            } catch {
                return (count, false)
            }
            return (count, ordered)
        }
        for index in 0..<10_000 {
            try await Self.notify(pair.serverConnection, 0x21, [UInt8(index & 0xFF), UInt8(index >> 8)])
        }
        let (count, ordered) = await consumer.value
        #expect(count == 10_000)
        #expect(ordered)
        #expect(pair.client.notificationCounters.dropped == 0)
        await pair.client.close()
    }

    /// Fills `limit`+extra values into a subscription nobody reads, then waits until the
    /// router has handed them all over (a marker on another handle comes after them).
    static func overflow(_ policy: GATTOverflowPolicy, limit: Int, sent: Int) async throws -> (
        values: [[UInt8]], error: GATTError?
    ) {
        let pair = ClientServerPair(configuration: .manual)
        let subscription = try await pair.client.subscribe(
            characteristic: Self.battery, bufferLimit: limit, overflow: policy)
        let marker = try await pair.client.subscribe(characteristic: Self.keys)
        for index in 0..<sent { try await Self.notify(pair.serverConnection, 0x21, [UInt8(index)]) }
        try await Self.notify(pair.serverConnection, 0x63, [0xFF])
        var markers = marker.makeAsyncIterator()
        _ = try await markers.next()
        try await pair.client.unsubscribe(subscription)
        let result = await Self.drain(subscription)
        await pair.client.close()
        return result
    }

    @Test func overflowFailsByDefault() async throws {
        let (values, error) = try await Self.overflow(.fail, limit: 5, sent: 9)
        #expect(values == (0..<5).map { [UInt8($0)] })
        #expect(error == .subscriptionOverflow(handle: 0x21, limit: 5))
    }

    @Test func overflowDropOldest() async throws {
        let (values, error) = try await Self.overflow(.dropOldest, limit: 3, sent: 10)
        #expect(values == [[7], [8], [9]])
        #expect(error == nil)
    }

    @Test func overflowDropNewest() async throws {
        let (values, error) = try await Self.overflow(.dropNewest, limit: 3, sent: 10)
        #expect(values == [[0], [1], [2]])
        #expect(error == nil)
    }

    /// The server notifies as soon as the CCCD is written, before its Write Response: the
    /// value is delivered because the route exists before the write.
    @Test func notificationBeforeWriteResponse() async throws {
        let server = Box<ATTConnection>()
        let pair = ClientServerPair(configuration: .manual) { handle, value in
            guard handle == 0x22, value == [1, 0], let connection = server.value else { return }
            try? await SubscriptionTests.notify(connection, 0x21, [0x42])
        }
        server.value = pair.serverConnection
        let subscription = try await pair.client.subscribe(characteristic: Self.battery)
        var iterator = subscription.makeAsyncIterator()
        #expect(try await iterator.next()?.value == [0x42])
        await pair.client.close()
    }

    /// A disconnect ends every stream with the reason.
    @Test func disconnectEndsStreams() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let battery = try await pair.client.subscribe(characteristic: Self.battery)
        let keys = try await pair.client.subscribe(characteristic: Self.keys)
        try await Self.notify(pair.serverConnection, 0x21, [1])
        try await Self.notify(pair.serverConnection, 0x21, [2])
        var iterator = battery.makeAsyncIterator()
        #expect(try await iterator.next()?.value == [1])
        #expect(try await iterator.next()?.value == [2])
        pair.serverChannel.fail("supervision timeout")
        var values: [[UInt8]] = []
        var error: GATTError?
        do {
            while let value = try await iterator.next() { values.append(value.value) }
        } catch let caught {
            error = caught
        }
        #expect(values.isEmpty)
        guard case .att(.bearerClosed(let reason)) = error else {
            Issue.record("expected bearerClosed, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("supervision timeout"))
        #expect(await Self.drain(keys).error == error)
        // Subscribing after the disconnect fails at the CCCD write, and the route is gone.
        await #expect(throws: GATTError.self) { _ = try await pair.client.subscribe(characteristic: Self.battery) }
    }

    /// Indications: delivered on the stream and confirmed (the server's `indicate` returns).
    @Test func indications() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let serviceChanged = Characteristic(
            uuid: 0x2A05, declarationHandle: 0x09, valueHandle: 0x0A, endHandle: 0x0B, properties: .indicate,
            descriptors: [Descriptor(handle: 0x0B, uuid: 0x2902)])
        let subscription = try await pair.client.subscribe(characteristic: serviceChanged, indications: true)
        #expect(pair.server.writes.last?.value == [2, 0])
        for index in 0..<3 {
            try await pair.serverConnection.indicate(HandleValueIndication(handle: 0x0A, value: [UInt8(index)]))
        }
        try await pair.client.unsubscribe(subscription)
        let (values, error) = await Self.drain(subscription)
        #expect(values == [[0], [1], [2]])
        #expect(error == nil)
        await pair.client.close()
    }

    /// Subscribe by UUID: the characteristic and its CCCD without discovering services.
    @Test func subscribeByUUIDIsTargeted() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let subscription = try await pair.client.subscribe(uuid: 0xFFE1)
        #expect(subscription.characteristic.valueHandle == 0x63)
        #expect(subscription.characteristic.declarationHandle == 0x62)
        #expect(subscription.characteristic.properties == [.read, .notify])
        // Read Using Characteristic UUID (to Attribute Not Found), the declaration, Find
        // Information from the value (to Attribute Not Found: it is the last attribute), the CCCD.
        #expect(
            pair.server.requests == [
                ATTOpcode.readByTypeRequest, .readByTypeRequest, .readRequest, .findInformationRequest,
                .findInformationRequest, .writeRequest,
            ])
        #expect(pair.server.writes.last?.handle == 0x64)
        await #expect(throws: GATTError.notFound(0x2A37)) { _ = try await pair.client.subscribe(uuid: 0x2A37) }
        await pair.client.close()
    }

    /// Without a CCCD the subscription is refused and no route is left behind.
    @Test func noCCCD() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let name = Characteristic(uuid: 0x2A00, declarationHandle: 2, valueHandle: 3, endHandle: 3, properties: .read)
        await #expect(throws: GATTError.noAttribute(handle: 3)) {
            _ = try await pair.client.subscribe(characteristic: name)
        }
        #expect(pair.client.router.routes(on: 3).isEmpty)
        await pair.client.close()
    }

    /// Two subscriptions to one characteristic both get every value; the CCCD carries the
    /// union and is cleared only when the last one goes.
    @Test func twoSubscribersOneCharacteristic() async throws {
        let pair = ClientServerPair(configuration: .manual)
        let first = try await pair.client.subscribe(characteristic: Self.battery)
        let second = try await pair.client.subscribe(characteristic: Self.battery, indications: true)
        #expect(pair.server.writes.map(\.value) == [[1, 0], [3, 0]])
        try await Self.notify(pair.serverConnection, 0x21, [7])
        var a = first.makeAsyncIterator()
        var b = second.makeAsyncIterator()
        #expect(try await a.next()?.value == [7])
        #expect(try await b.next()?.value == [7])
        try await pair.client.unsubscribe(second)
        #expect(pair.server.writes.last?.value == [1, 0])
        #expect(try await b.next() == nil)
        try await pair.client.unsubscribe(first)
        #expect(pair.server.writes.last?.value == [0, 0])
        // Unsubscribing twice is harmless and writes nothing.
        try await pair.client.unsubscribe(first)
        #expect(pair.server.writes.count == 4)
        await pair.client.close()
    }
}
