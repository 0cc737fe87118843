import BLE
import Emulator
import Synchronization
import Testing
import TestSupport

// Models written as an app would, against the public contract only (`import BLE`, nothing
// internal): issue 22.

/// The emulated CC2650 SensorTag's standard services, one of its sensors, and a service it lacks.
struct TagModel: BluetoothDevice {
    struct IRTemperature: BluetoothService {
        static let id = BluetoothUUID("F000AA00-0451-4000-B000-000000000000")!
        @Characteristic(id: BluetoothUUID("F000AA02-0451-4000-B000-000000000000")!) var configuration: UInt8?
        @Characteristic(id: BluetoothUUID("F000AA03-0451-4000-B000-000000000000")!) var period: UInt8?
        @Characteristic(id: 0x2A6E, autoRead: false) var missing: Int16?
    }

    struct Glucose: BluetoothService {
        static let id: BluetoothUUID = 0x1808
        @Characteristic(id: 0x2A18, notify: true) var measurement: [UInt8]?
    }

    @Service var battery = BatteryService()
    @Service var information = DeviceInformationService()
    @Service var temperature = IRTemperature()
    @Service(required: false) var glucose = Glucose()
    @DeviceState(\.state) var state: PeripheralState
    @DeviceState(\.mtu) var mtu: Int?
    @DeviceState(\.peer) var peer: PeerAddress?
    @DeviceAction(\.connect) var connect: ConnectAction
    @DeviceAction(\.disconnect) var disconnect: DisconnectAction

    init() {}
}

/// A model that requires a service the SensorTag lacks.
struct GlucoseMeter: BluetoothDevice {
    @Service var glucose = TagModel.Glucose()
    init() {}
}

/// As `GlucoseMeter`, with its actions.
struct GlucoseMeterWithActions: BluetoothDevice {
    @Service var glucose = TagModel.Glucose()
    @DeviceAction(\.connect) var connect: ConnectAction
    @DeviceAction(\.disconnect) var disconnect: DisconnectAction
    init() {}
}

/// The battery level read as the wrong type: every value fails to decode.
struct MistypedBattery: BluetoothDevice {
    struct Battery: BluetoothService {
        static let id: BluetoothUUID = 0x180F
        @Characteristic(id: 0x2A19, notify: true, autoRead: false) var level: UInt16?
    }
    @Service var battery = Battery()
    init() {}
}

/// The emulated counter: a 32-bit little-endian count notified every 50 ms.
struct CounterModel: BluetoothDevice {
    struct Counting: BluetoothService {
        static let id = BluetoothUUID("C0DE0001-0000-4000-8000-00805F9B34FB")!
        @Characteristic(id: BluetoothUUID("C0DE0002-0000-4000-8000-00805F9B34FB")!, notify: true) var count: UInt32?
    }
    @Service var counting = Counting()
    @DeviceState(\.state) var state: PeripheralState
    @DeviceAction(\.connect) var connect: ConnectAction
    @DeviceAction(\.disconnect) var disconnect: DisconnectAction
    init() {}
}

@Suite("BLE: device models", .serialized, .timeLimit(.minutes(2)))
struct DeviceModelTests {
    static let tag = PeerAddress(address: EmulatedSensorTag.defaultAddress, type: .public)

    @Test func anUnboundModelShowsTheEmptySnapshot() async {
        let model = TagModel()
        #expect(model.state == .disconnected(.local))
        #expect(model.mtu == nil && model.peer == nil)
        #expect(model.battery.level == nil)
        #expect(!model.battery.$level.isPresent)
        await #expect(throws: BLEError.self) { try await model.connect() }
    }

    @Test func connectingBindsReadsAndFollowsTheStandardServices() async throws {
        let simulation = try await Simulation.start(devices: [.sensortag])
        let adapter = try await Adapter.simulated(simulation)
        let model = try await adapter.connect(to: Self.tag, as: TagModel.self)
        #expect(model.state == .connected)
        #expect(model.peer == Self.tag)
        #expect((model.mtu ?? 0) >= 23)
        // autoRead values, typed.
        #expect(model.battery.level == 100)
        #expect(model.information.manufacturerName == "Texas Instruments")
        #expect(model.information.modelNumber == "CC2650 SensorTag")
        #expect(model.information.pnpID == PnPID(vendorIDSource: 1, vendorID: 0x000D, productID: 0, productVersion: 0x0110))
        #expect(model.information.systemID?.organizationallyUniqueIdentifier == 0x546C0E)
        #expect(model.temperature.configuration == 0, "sensor off")
        // An absent characteristic, an absent optional service: not present, named in the error.
        #expect(!model.temperature.$missing.isPresent && model.temperature.missing == nil)
        #expect(!model.glucose.$measurement.isPresent)
        do {
            _ = try await model.glucose.$measurement.read()
            Issue.record("read of an absent characteristic succeeded")
        } catch {
            #expect(error.message.contains("Glucose") && error.message.contains("1808"), "\(error.message)")
        }
        // Writes and reads typed.
        try await model.temperature.$configuration.write(1)
        #expect(try await model.temperature.$configuration.read() == 1)
        #expect(model.temperature.configuration == 1)
        // Notifications, typed and in order; a copy of the model sees the same values.
        let copy = model
        let levels = model.battery.$level.values()
        let (changed, changes) = AsyncStream.makeStream(of: UInt8.self)
        model.battery.$level.onChange { level in changes.yield(level) }
        for level: UInt8 in [90, 80, 70] { await simulation.sensorTag!.setBatteryLevel(level) }
        var received: [UInt8] = []
        for await level in levels {
            received.append(level)
            if received.count == 3 { break }
        }
        #expect(received == [90, 80, 70])
        #expect(copy.battery.level == 70)
        // Ending the link ends the values and the binding; connecting again binds the same model.
        let after = model.battery.$level.values()
        await model.disconnect()
        #expect(model.state == .disconnected(.local))
        var ended = true
        for await _ in after { ended = false }
        #expect(ended, "the values end with the link")
        #expect(!model.battery.$level.isPresent)
        try await model.connect()
        #expect(model.state == .connected && model.battery.$level.isPresent)
        #expect(try await model.battery.$level.read() == 70)
        var actions: [UInt8] = []
        for await level in changed {
            actions.append(level)
            if actions.count == 3 { break }
        }
        #expect(actions == [90, 80, 70], "onChange in order")
        await adapter.close()
        await simulation.stop()
    }

    @Test func aRequiredServiceMissingFailsTheConnectAndEndsTheLink() async throws {
        let simulation = try await Simulation.start(devices: [.sensortag])
        let adapter = try await Adapter.simulated(simulation)
        do {
            _ = try await adapter.connect(to: Self.tag, as: GlucoseMeter.self)
            Issue.record("connected a model whose required service is absent")
        } catch {
            #expect(error.kind == "notFound")
            #expect(error.message.contains("has no Glucose service (1808), which GlucoseMeter requires"), "\(error.message)")
        }
        // The link was ended: a second connect works.
        let model = try await adapter.connect(to: Self.tag, as: TagModel.self)
        #expect(model.battery.level == 100)
        await adapter.close()
        await simulation.stop()
    }

    @Test func valuesThatDoNotDecodeAreSkippedAndCounted() async throws {
        let simulation = try await Simulation.start(devices: [.sensortag])
        let adapter = try await Adapter.simulated(simulation)
        let model = try await adapter.connect(to: Self.tag, as: MistypedBattery.self)
        await #expect(throws: BLEError.self) { _ = try await model.battery.$level.read() }
        await simulation.sensorTag!.setBatteryLevel(50)
        #expect(await waitFor(10) { model.battery.$level.decodeFailures == 1 })
        #expect(model.battery.level == nil)
        await adapter.close()
        await simulation.stop()
    }

    @Test func aRetrievedModelKeepsItsValuesComingAcrossReconnects() async throws {
        let simulation = try await Simulation.start(devices: [.counter])
        let adapter = try await Adapter.simulated(simulation)
        let counter = simulation.counters[0]
        let model = await adapter.retrieve(CounterModel.self, peer: PeerAddress(address: counter.address, type: .random))
        let counts = model.counting.$count.values()
        // Its connect waits (no timeout) until the device is connected and the model bound.
        try await model.connect()
        #expect(model.state == .connected && model.counting.$count.isPresent)
        #expect(model.counting.count != nil, "read on connecting")
        var received: [UInt32] = []
        var iterator = counts.makeAsyncIterator()
        while received.count < 10, let value = await iterator.next() { received.append(value) }
        #expect(model.state == .connected)
        // The peripheral ends the link; the model reconnects with no app code, values keep coming.
        await counter.peripheral.disconnect()
        let before = received.last ?? 0
        while received.count < 30, let value = await iterator.next() { received.append(value) }
        #expect(received.count == 30, "the stream spans the reconnect")
        #expect(zip(received, received.dropFirst()).allSatisfy { $0 < $1 }, "in order, no duplicates")
        #expect((received.last ?? 0) > before + 5)
        #expect(model.state == .connected)
        // Disconnect ends management: the values' stream ends too (it spans reconnects, not that).
        await model.disconnect()
        while await iterator.next() != nil {}
        #expect(model.state == .disconnected(.local))
        await adapter.close()
        await simulation.stop()
    }

    @Test func twoRetrievedModelsOfOnePeerLetGoOneAtATime() async throws {
        let simulation = try await Simulation.start(devices: [.counter])
        let adapter = try await Adapter.simulated(simulation)
        let peer = PeerAddress(address: simulation.counters[0].address, type: .random)
        let first = await adapter.retrieve(CounterModel.self, peer: peer)
        let second = await adapter.retrieve(CounterModel.self, peer: peer)
        let firstValues = first.counting.$count.values()
        let secondValues = second.counting.$count.values()
        try await first.connect()
        try await second.connect()
        #expect(await adapter.managedDevices.count == 1, "one managed device for the peer")
        // The first lets go: its values end, the second's keep coming on the same link.
        await first.disconnect()
        #expect(first.state == .disconnected(.local) && !first.counting.$count.isPresent)
        var iterator = firstValues.makeAsyncIterator()
        while await iterator.next() != nil {}
        var received: [UInt32] = []
        var secondIterator = secondValues.makeAsyncIterator()
        while received.count < 5, let value = await secondIterator.next() { received.append(value) }
        #expect(received.count == 5 && second.state == .connected)
        #expect(await adapter.managedDevices.count == 1)
        // The last one's disconnect ends the management and the link.
        await second.disconnect()
        while await secondIterator.next() != nil {}
        #expect(second.state == .disconnected(.local))
        #expect(await adapter.managedDevices.isEmpty)
        await adapter.close()
        await simulation.stop()
    }

    @Test func aRetrievedModelWhoseRequiredServiceIsMissingFailsItsConnect() async throws {
        let simulation = try await Simulation.start(devices: [.sensortag])
        let adapter = try await Adapter.simulated(simulation)
        let model = await adapter.retrieve(GlucoseMeterWithActions.self, peer: Self.tag)
        do {
            try await model.connect()
            Issue.record("connected a model whose required service is absent")
        } catch {
            #expect(error.message.contains("which GlucoseMeterWithActions requires"), "\(error.message)")
        }
        await model.disconnect()
        await adapter.close()
        await simulation.stop()
    }

    @Test func nearbyDevicesListsMatchingDevicesAndDropsTheUnheard() async throws {
        let simulation = try await Simulation.start(devices: [.counter, .sensortag], copies: [.counter: 3])
        let adapter = try await Adapter.simulated(simulation)
        // No criteria: the model's required service, as advertised (the SensorTag's is not).
        let lists = adapter.nearbyDevices(CounterModel.self, by: [], leavingAfter: .milliseconds(1500))
        var iterator = lists.makeAsyncIterator()
        var list: [Advertisement] = []
        while list.count < 3, let next = try await iterator.next() { list = next }
        #expect(Set(list.map(\.peer.address)) == Set(simulation.counters.map(\.address)))
        // A connected counter stops advertising: it leaves the list after the window.
        let first = simulation.counters[0]
        let model = try await adapter.connect(to: list.first { $0.peer.address == first.address }!, as: CounterModel.self)
        while list.contains(where: { $0.peer.address == first.address }), let next = try await iterator.next() { list = next }
        #expect(!list.contains { $0.peer.address == first.address })
        // By name, ORed with a service nobody advertises.
        let named = adapter.nearbyDevices(TagModel.self, by: .name("CC2650 SensorTag"), .advertisedService(0x1808))
        var namedIterator = named.makeAsyncIterator()
        let tags = try await namedIterator.next()
        #expect(tags?.map(\.peer.address) == [EmulatedSensorTag.defaultAddress])
        await model.disconnect()
        await adapter.close()
        await simulation.stop()
    }

    @Test func autoConnectYieldsEachMatchingDeviceConnected() async throws {
        let simulation = try await Simulation.start(devices: [.counter, .bluefruit], copies: [.counter: 3])
        let adapter = try await Adapter.simulated(simulation)
        var models: [CounterModel] = []
        for try await model in adapter.autoConnect(CounterModel.self) {
            #expect(model.state == .connected)
            models.append(model)
            if models.count == 3 { break }
        }
        // Each is bound and notifying.
        for model in models {
            var values = model.counting.$count.values().makeAsyncIterator()
            let value = await values.next()
            #expect(value != nil)
        }
        for model in models { await model.disconnect() }
        await adapter.close()
        await simulation.stop()
    }

    func waitFor(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
        for _ in 0..<Int(seconds * 20) {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }
}

/// A heart-rate monitor model: the standard services only.
struct HeartRateMonitor: BluetoothDevice {
    @Service var heartRate = HeartRateService()
    @Service var battery = BatteryService()
    @Service var information = DeviceInformationService()
    init() {}
}

@Suite("BLE: standard models on the emulated heart-rate monitor", .serialized, .timeLimit(.minutes(2)))
struct HeartRateModelTests {
    @Test func measurementsAreTypedAndInOrderAndTheControlPointResets() async throws {
        let simulation = try await Simulation.start(devices: [.heartrate])
        let adapter = try await Adapter.simulated(simulation)
        let monitor = simulation.heartRateMonitor!
        let model = try await adapter.connect(
            to: PeerAddress(address: monitor.address, type: .random), as: HeartRateMonitor.self)
        #expect(model.heartRate.bodySensorLocation == .chest)
        #expect(model.battery.level == 87)
        #expect(model.information.modelNumber == "HRM-1" && model.information.manufacturerName == "SwiftBLEHost")
        // Notify only (not readable): not read on connecting, subscribed.
        #expect(model.heartRate.$measurement.isPresent && model.heartRate.$controlPoint.isPresent)
        // The monitor's sequence, from its first measurement (notifications were enabled on connecting).
        var received: [HeartRateMeasurement] = []
        for await measurement in model.heartRate.$measurement.values() {
            received.append(measurement)
            if received.count == 12 { break }
        }
        // Where in the sequence the stream began (a value may have come before it was asked for).
        let first = (0..<400).first { index in
            (0..<received.count).allSatisfy { offset in
                var expected = EmulatedHeartRateMonitor.measurement(index + offset, energy: 0)
                expected.energyExpended = received[offset].energyExpended
                return received[offset] == expected
            }
        }
        #expect(first != nil, "the monitor's sequence, in order: \(received)")
        for (offset, measurement) in received.enumerated() where measurement.energyExpended != nil {
            #expect(measurement.energyExpended == (first ?? 0) + offset + 1, "energy counts every measurement")
        }
        #expect(received.filter { $0.energyExpended != nil }.count >= 1, "every tenth carries the energy expended")
        // Reset Energy Expended; anything else is refused with the service's own error.
        try await model.heartRate.$controlPoint.write(HeartRateService.resetEnergyExpended)
        #expect(monitor.resets == 1)
        do {
            try await model.heartRate.$controlPoint.write(0x02)
            Issue.record("the control point took 0x02")
        } catch {
            #expect(error.attError?.rawValue == 0x80, "\(error)")
        }
        await adapter.close()
        await simulation.stop()
    }
}
