import ATT
import Synchronization
@testable import BLE
import Testing
import TestSupport

/// The front door end to end on the built-in simulation: what a user's program does.
@Suite("BLE: Adapter, Peripheral and LocalPeripheral on sim")
struct AdapterSimulationTests {
    static let movementData = BluetoothUUID("F000AA81-0451-4000-B000-000000000000")!
    static let movementConfiguration = BluetoothUUID("F000AA82-0451-4000-B000-000000000000")!
    static let movementPeriod = BluetoothUUID("F000AA83-0451-4000-B000-000000000000")!
    static let ledService = BluetoothUUID("19B10000-E8F2-537E-4F6C-D104768A1214")!
    static let ledState = BluetoothUUID("19B10001-E8F2-537E-4F6C-D104768A1214")!

    @Test("scan for AA80, connect, write, subscribe, take five values, disconnect")
    func sensorTagReader() async throws {
        try await withTimeout(60, "the SensorTag reader") {
            let adapter = try await Adapter.open("sim")
            var found: Advertisement?
            // First sight is the advertising PDU; the name comes with the scan response.
            for try await advertisement in await adapter.scan(ScanOptions(services: [0xAA80], duration: .seconds(10)))
            where advertisement.name != nil {
                found = advertisement
                break
            }
            let advertisement = try #require(found, "the SensorTag advertises AA80")
            #expect(advertisement.name == "CC2650 SensorTag")
            #expect(advertisement.isConnectable)
            let tag = try await adapter.connect(to: advertisement)
            #expect(await tag.state == .connected)
            #expect(await tag.mtu == 23, "the CC2650's firmware keeps the default ATT_MTU")
            #expect(try await tag.read(0x2A19) == [100])
            try await tag.write([10], to: Self.movementPeriod)
            let values = try await tag.subscribe(to: Self.movementData)
            try await tag.write([0x7F, 0x00], to: Self.movementConfiguration)
            var count = 0
            for try await value in values {
                #expect(value.value.count == 18)
                #expect(!value.isIndication)
                count += 1
                if count == 5 { break }
            }
            #expect(count == 5)
            await tag.disconnect()
            #expect(await tag.state == .disconnected(.local))
            await adapter.close()
        }
    }

    @Test("the link's parameters, and a parameter update the peripheral asks for, seen through the facade")
    func linkParametersAndEvents() async throws {
        try await withTimeout(60, "the link's events") {
            let adapter = try await Adapter.open("sim")
            let tag = try await adapter.connect(to: PeerAddress(address: BluetoothAddress("54:6C:0E:9A:3B:01")!, type: .public))
            #expect(tag.showsLinkEvents)
            let initial = try #require(tag.connectionParameters)
            #expect(initial.intervalMilliseconds == 30 && initial.peripheralLatency == 0 && initial.supervisionTimeoutMilliseconds == 4000)
            let events = tag.linkEvents()
            // TI's F000CCC2: the SensorTag asks (L2CAP Connection Parameter Update) for 100–200 ms.
            try await tag.write(
                [0x50, 0x00, 0xA0, 0x00, 0x00, 0x00, 0xE8, 0x03],
                to: BluetoothUUID("F000CCC2-0451-4000-B000-000000000000")!)
            var updated: ConnectionParameters?
            for await event in events {
                if case .parametersUpdated(let parameters) = event {
                    updated = parameters
                    break
                }
            }
            #expect(updated == ConnectionParameters(intervalUnits: 0x50, peripheralLatency: 0, supervisionTimeoutUnits: 1000))
            #expect(tag.connectionParameters == updated)
            await tag.disconnect()
            var ended = false
            for await _ in tag.linkEvents() {}
            ended = true
            #expect(ended, "the stream finishes with the link")
            await adapter.close()
        }
    }

    @Test("two adapters on one simulation: one serves Battery and an LED, the other reads, writes and is notified")
    func centralAndPeripheralPair() async throws {
        try await withTimeout(60, "the central and peripheral pair") {
            let simulation = try await Simulation.start(devices: [])
            let server = try await Adapter.simulated(simulation)
            let client = try await Adapter.simulated(simulation)
            #expect(server.address != client.address)
            let local = try await server.advertise(
                name: "lamp",
                services: [
                    ServiceDefinition(
                        uuid: 0x180F,
                        characteristics: [CharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [87])]),
                    ServiceDefinition(
                        uuid: Self.ledService,
                        characteristics: [
                            CharacteristicDefinition(uuid: Self.ledState, properties: [.read, .write], value: [0])
                        ]),
                ])
            let writes = local.writes()
            var seen: Advertisement?
            for try await advertisement in await client.scan(ScanOptions(name: "lamp", duration: .seconds(10))) {
                seen = advertisement
                break
            }
            let advertisement = try #require(seen)
            #expect(advertisement.peer == server.address)
            #expect(advertisement.serviceUUIDs.contains(0x180F))
            #expect(advertisement.serviceUUIDs.contains(Self.ledService))
            let lamp = try await client.connect(to: advertisement.peer.address)
            #expect(try await lamp.read(0x2A19) == [87])
            try await lamp.write([1], to: Self.ledState)
            var iterator = writes.makeAsyncIterator()
            let write = try #require(await iterator.next())
            #expect(write.characteristic == Self.ledState)
            #expect(write.value == [1])
            #expect(write.peer.address == client.address.address)
            #expect(try await lamp.read(Self.ledState) == [1])

            let battery = try await lamp.subscribe(to: 0x2A19)
            try await local.notify([86], for: 0x2A19)
            let notification = try #require(try await battery.next(timeout: .seconds(10)))
            #expect(notification.value == [86])
            #expect(try await lamp.read(0x2A19) == [86])

            let services = try await lamp.services()
            #expect(services.map(\.uuid).contains(0x1800))
            #expect(services.map(\.uuid).contains(0x1801))
            let batteryCharacteristic = try #require(services.first { $0.uuid == 0x180F }?.characteristics.first)
            #expect(batteryCharacteristic.clientConfigurationHandle != nil, "a CCCD was added to the notify characteristic")

            let states = lamp.states()
            await local.stop()
            var last: PeripheralState?
            for await state in states { last = state }
            #expect(last == .disconnected(.remote(.remoteUserTerminatedConnection)))
            await client.close()
            await server.close()
            await simulation.stop()
        }
    }

    @Test("next(timeout:) returns nil when nothing came and loses nothing; cancel ends the subscription")
    func subscriptionTimeoutLosesNothing() async throws {
        try await withTimeout(60, "the subscription timeout") {
            let simulation = try await Simulation.start(devices: [])
            let server = try await Adapter.simulated(simulation)
            let client = try await Adapter.simulated(simulation)
            let local = try await server.advertise(
                name: "counter",
                services: [
                    ServiceDefinition(
                        uuid: 0x180F,
                        characteristics: [CharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [0])])
                ])
            let peripheral = try await client.connect(to: server.address)
            let subscription = try await peripheral.subscribe(to: 0x2A19)
            #expect(try await subscription.next(timeout: .milliseconds(50)) == nil)
            #expect(try await subscription.next(timeout: .milliseconds(50)) == nil)
            for value: UInt8 in 1...3 { try await local.notify([value], for: 0x2A19) }
            var received: [UInt8] = []
            while received.count < 3, let next = try await subscription.next(timeout: .seconds(10)) {
                received += next.value
            }
            #expect(received == [1, 2, 3])
            await subscription.cancel()
            await #expect(throws: BLEError.self) { try await subscription.next(timeout: .seconds(1)) }
            await client.close()
            await server.close()
            await simulation.stop()
        }
    }

    @Test("refusals: a characteristic that cannot notify, an unknown UUID, a second advertisement, a bad database")
    func refusals() async throws {
        try await withTimeout(60, "the refusals") {
            let simulation = try await Simulation.start(devices: [])
            let server = try await Adapter.simulated(simulation)
            let client = try await Adapter.simulated(simulation)
            let local = try await server.advertise(
                name: nil,
                services: [
                    ServiceDefinition(
                        uuid: Self.ledService,
                        characteristics: [CharacteristicDefinition(uuid: Self.ledState, properties: [.read, .write], value: [0])])
                ])
            await #expect(throws: BLEError.self) {
                _ = try await server.advertise(name: "again", services: [])
            }
            let peripheral = try await client.connect(to: server.address)
            do throws(BLEError) {
                _ = try await peripheral.subscribe(to: Self.ledState)
                Issue.record("subscribing to a characteristic without notify or indicate succeeded")
            } catch {
                #expect(error.kind == "usage")
                #expect(error.message.contains("neither Notify nor Indicate"))
            }
            do throws(BLEError) {
                _ = try await peripheral.read(0x2A37)
                Issue.record("reading a characteristic the peer does not have succeeded")
            } catch {
                #expect(error.kind == "notFound")
            }
            do throws(BLEError) {
                _ = try await local.notify([1], for: Self.ledState)
                Issue.record("notifying a characteristic without notify succeeded")
            } catch {
                #expect(error.kind == "usage")
            }
            await peripheral.disconnect()
            await local.stop()
            do throws(BLEError) {
                _ = try await server.advertise(
                    name: "bad",
                    services: [
                        ServiceDefinition(
                            uuid: 0x180F,
                            characteristics: [
                                CharacteristicDefinition(uuid: 0x2A19, properties: [.read], value: [1, 2, 3], maximumLength: 1)
                            ])
                    ])
                Issue.record("a value longer than its maximum was accepted")
            } catch {
                #expect(error.kind == "usage")
                #expect(error.message.contains("cannot be served"))
            }
            await client.close()
            await server.close()
            await simulation.stop()
        }
    }

    @Test("states(): the current state first, then the remote end with its reason")
    func statesReportTheRemoteEnd() async throws {
        try await withTimeout(60, "the states") {
            let adapter = try await Adapter.open("sim:sensortag")
            let tag = try await adapter.connect(to: PeerAddress("54:6C:0E:9A:3B:01")!)
            let states = tag.states()
            var iterator = states.makeAsyncIterator()
            #expect(await iterator.next() == .connected)
            await adapter.close()
            #expect(await iterator.next() == .disconnected(.local))
            #expect(await iterator.next() == nil)
            await #expect(throws: BLEError.self) { _ = try await adapter.connect(to: PeerAddress("54:6C:0E:9A:3B:01")!) }
        }
    }

    @Test("services() is reused across connections only under the same Database Hash")
    func servicesCachedUnderTheDatabaseHash() async throws {
        try await withTimeout(60, "the service cache") {
            let simulation = try await Simulation.start(devices: [])
            let server = try await Adapter.simulated(simulation)
            let client = try await Adapter.simulated(simulation)
            let local = try await server.advertise(
                name: "cached",
                services: [
                    ServiceDefinition(
                        uuid: 0x180F,
                        characteristics: [CharacteristicDefinition(uuid: 0x2A19, properties: [.read], value: [1])])
                ])
            let first = try await client.connect(to: server.address)
            #expect(await first.mtu == 517)
            let before = await first.session.connection.requestsSent
            let discovered = try await first.services()
            let discovery = await first.session.connection.requestsSent - before
            await first.disconnect()
            let second = try await client.connect(to: server.address)
            let start = await second.session.connection.requestsSent
            let again = try await second.services()
            #expect(again == discovered)
            // The Database Hash read and the Service Changed CCCD write, no discovery.
            #expect(await second.session.connection.requestsSent - start == 2)
            #expect(discovery > 4)
            await second.disconnect()
            await local.stop()
            await client.close()
            await server.close()
            await simulation.stop()
        }
    }
}

@Suite("BLE: connecting to an address whose type nobody gave")
struct AdapterAddressTypeTests {
    @Test("unseen: one attempt through the Filter Accept List finds a random and a public device")
    func unseenAddressesConnectWithEitherType() async throws {
        try await withTimeout(60, "connecting by address alone") {
            let adapter = try await Adapter.open("sim")
            let board = try await adapter.connect(to: BluetoothAddress("E8:7F:3A:21:9C:05")!, timeout: .seconds(10))
            #expect(board.peer.type == .random)
            let tag = try await adapter.connect(to: BluetoothAddress("54:6C:0E:9A:3B:01")!, timeout: .seconds(10))
            #expect(tag.peer.type == .public)
            #expect(try await tag.read(0x2A19) == [100])
            await adapter.close()
        }
    }

    @Test("nobody there: a connect error within the timeout")
    func anAbsentAddressFails() async throws {
        try await withTimeout(60, "connecting to nobody") {
            let adapter = try await Adapter.open("sim")
            do throws(BLEError) {
                _ = try await adapter.connect(to: BluetoothAddress("C0:FF:EE:00:00:09")!, timeout: .milliseconds(500))
                Issue.record("connected to an address nobody advertises")
            } catch {
                #expect(error.kind == "connect")
            }
            await adapter.close()
        }
    }
}

@Suite("BLE: Subscription's buffer and scans that end")
struct SubscriptionBufferAndScanEndTests {
    static func notification(_ value: UInt8) -> CharacteristicNotification {
        CharacteristicNotification(value: [value], isIndication: false, time: .zero)
    }

    @Test("a zero timeout returns nil at once, and the next value still comes")
    func zeroTimeout() async throws {
        let buffer = SubscriptionBuffer()
        for _ in 0..<50 {
            guard case .timedOut = await buffer.next(timeout: .zero) else {
                Issue.record("a zero timeout did not time out")
                return
            }
        }
        buffer.push(Self.notification(7))
        guard case .value(let value) = await buffer.next(timeout: .zero) else {
            Issue.record("a buffered value was not taken")
            return
        }
        #expect(value.value == [7])
    }

    @Test("a wait in a cancelled task ends at once")
    func alreadyCancelled() async throws {
        let buffer = SubscriptionBuffer()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await buffer.next(timeout: nil)
        }
        let outcome = try await withTimeout(10, "the cancelled wait") { await task.value }
        guard case .ended = outcome else {
            Issue.record("a cancelled wait did not end")
            return
        }
    }

    @Test("timeouts racing values lose none, in order")
    func timeoutsRacingValues() async throws {
        let buffer = SubscriptionBuffer()
        let producer = Task {
            for value in 0..<200 {
                buffer.push(Self.notification(UInt8(value)))
                if value % 7 == 0 { await Task.yield() }
            }
        }
        var received: [UInt8] = []
        try await withTimeout(30, "taking 200 values") {
            var got: [UInt8] = []
            while got.count < 200 {
                if case .value(let value) = await buffer.next(timeout: .microseconds(50)) { got += value.value }
            }
            return got
        }.forEach { received.append($0) }
        await producer.value
        #expect(received == (0..<200).map { UInt8($0) })
    }

    @Test("cancel after an overflow still runs the cancel handler once")
    func cancelAfterOverflow() async throws {
        let buffer = SubscriptionBuffer(limit: 2)
        #expect(buffer.push(Self.notification(1)))
        #expect(buffer.push(Self.notification(2)))
        #expect(!buffer.push(Self.notification(3)))
        let calls = Counter()
        let subscription = Subscription(buffer: buffer) { calls.increment() }
        await subscription.cancel()
        await subscription.cancel()
        #expect(calls.value == 1)
    }

    @Test("a scan over a replayed capture ends when the capture does")
    func replayScanEnds() async throws {
        let path = fixturePath("recorded/sim-scan.btsnoop")
        try await withTimeout(30, "the replayed scan") {
            let adapter = try await Adapter.open("replay:" + path)
            var seen = 0
            for try await _ in await adapter.scan() { seen += 1 }
            #expect(seen >= 2, "the SensorTag and the Bluefruit")
            // And a second scan starts again rather than waiting on the finished one.
            var again = 0
            for try await _ in await adapter.scan() { again += 1 }
            #expect(again == seen)
            await adapter.close()
        }
    }

    @Test("two advertise calls at once: one wins, the other is refused")
    func concurrentAdvertise() async throws {
        try await withTimeout(60, "concurrent advertising") {
            let simulation = try await Simulation.start(devices: [])
            let adapter = try await Adapter.simulated(simulation)
            @Sendable func attempt(_ name: String) async -> Bool {
                do {
                    _ = try await adapter.advertise(name: name, services: [])
                    return true
                } catch {
                    return false
                }
            }
            async let first = attempt("one")
            async let second = attempt("two")
            let results = await [first, second]
            #expect(results.filter { $0 }.count == 1)
            await adapter.close()
            await simulation.stop()
        }
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// A file of the repository's Fixtures folder.
func fixturePath(_ name: String) -> String {
    var directory = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3)
    directory.append("Fixtures")
    return (directory + [Substring(name)]).joined(separator: "/")
}

@Suite("BLE: pairing on sim")
struct PairingOnSimTests {
    @Test("a peer without pairing refuses; an immediate retry waits (repeated attempts)")
    func pairingNotSupportedAndBackOff() async throws {
        try await withTimeout(60, "pairing with the emulated SensorTag") {
            var options = AdapterOptions()
            options.bondsDirectory = "/tmp/bonds-\(UInt64.random(in: 0...UInt64.max))"
            defer { removeTree(options.bondsDirectory!) }
            let adapter = try await Adapter.open("sim:sensortag", options: options)
            let tag = try await adapter.connect(to: PeerAddress("54:6C:0E:9A:3B:01")!)
            do throws(BLEError) {
                _ = try await tag.pair()
                Issue.record("the emulated SensorTag paired")
            } catch {
                #expect(error.kind == "pairing")
                #expect(error.message.contains("Pairing Not Supported"), "\(error)")
            }
            do throws(BLEError) {
                _ = try await tag.pair()
                Issue.record("an immediate retry ran")
            } catch {
                #expect(error.message.contains("repeated attempts"), "\(error)")
            }
            #expect(await adapter.bonds().isEmpty)
            await adapter.close()
        }
    }
}
