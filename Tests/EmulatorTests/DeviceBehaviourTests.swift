import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import L2CAP
import Testing
import TestSupport

/// Our whole user-space host connected to one emulated device over the virtual controller,
/// the emulator's time on a manual clock.
struct ConnectedDevice {
    let simulation: Simulation
    let host: SimulatedHost
    let clock: ManualClock
    let handle: UInt16
    let connection: ATTConnection
    let client: GATTClient
    let database: GATTDatabase

    static func connect(_ device: Simulation.Device) async throws -> ConnectedDevice {
        let clock = ManualClock()
        let simulation = try await Simulation.start(devices: [device], clock: clock)
        let host = try await SimulatedHost.start(simulation)
        return try await connect(simulation, host, clock, device)
    }

    static func connect(
        _ simulation: Simulation, _ host: SimulatedHost, _ clock: ManualClock, _ device: Simulation.Device
    )
        async throws -> ConnectedDevice
    {
        let address = device == .sensortag ? EmulatedSensorTag.defaultAddress : EmulatedBluefruit.defaultAddress
        let (handle, channel) = try await host.connect(
            address, type: device == .sensortag ? .public : .random,
            advance: { await clock.advance(by: .milliseconds(100)) })
        let connection = ATTConnection(channel: channel)
        let client = GATTClient(connection: connection)
        let database = try await withTimeout { try await client.discoverDatabase() }
        return ConnectedDevice(
            simulation: simulation, host: host, clock: clock, handle: handle, connection: connection, client: client,
            database: database)
    }

    func valueHandle(_ uuid: BluetoothUUID) throws -> UInt16 { try database.characteristic(uuid: uuid).valueHandle }

    func close() async {
        await connection.close()
        await host.close()
        await simulation.stop()
    }
}

@Suite("Emulator: SensorTag and Bluefruit behaviour through our host")
struct EmulatorDeviceBehaviourTests {
    @Test func sensorTagIsDiscoveredWholeAtMTU23() async throws {
        let tag = try await ConnectedDevice.connect(.sensortag)
        #expect(tag.database.services.count == 14)
        #expect(tag.database.characteristics.count == 40)
        #expect(tag.database.characteristics.reduce(0) { $0 + $1.descriptors.count } == 38)
        #expect(await tag.connection.mtu == 23)
        #expect(try await tag.client.read(handle: tag.valueHandle(.bit16(0x2A29))) == Array("Texas Instruments".utf8))
        await tag.close()
    }

    @Test(arguments: [
        (SensorTag.Sensor.ir, UInt8(30)), (.humidity, 10), (.barometer, 10), (.optical, 10), (.movement, 10),
    ])
    func periodsBelowTheMinimumAreRefusedWith0x80(_ sensor: SensorTag.Sensor, _ minimum: UInt8) async throws {
        let tag = try await ConnectedDevice.connect(.sensortag)
        let period = try tag.valueHandle(sensor.period!)
        do {
            _ = try await tag.client.write(handle: period, value: [minimum - 1])
            Issue.record("period \(minimum - 1) accepted")
        } catch {
            #expect(error == .peerError(request: .writeRequest, handle: period, code: ATTErrorCode(rawValue: 0x80)))
        }
        #expect(try await tag.client.read(handle: period) == [sensor == .optical ? 80 : 100])
        // As a queued write too.
        let prepare = ATTPDU.prepareWriteRequest(PrepareWriteRequest(handle: period, offset: 0, value: [minimum - 1]))
        await #expect(
            throws: ATTError.peerError(
                request: .prepareWriteRequest, handle: period, code: ATTErrorCode(rawValue: 0x80))
        ) {
            _ = try await tag.connection.request(prepare)
        }
        _ = try await tag.client.write(handle: period, value: [minimum])
        #expect(try await tag.client.read(handle: period) == [minimum])
        await tag.close()
    }

    @Test func firstSampleArrivesOnePeriodAfterEnabling() async throws {
        let tag = try await ConnectedDevice.connect(.sensortag)
        let data = try tag.database.characteristic(uuid: SensorTag.Sensor.ir.data)
        try await tag.client.configure(data, .notifications)
        _ = try await tag.client.write(handle: tag.valueHandle(SensorTag.Sensor.ir.configuration!), value: [0x01])
        #expect(try await tag.client.read(handle: data.valueHandle) == [0, 0, 0, 0])
        await tag.clock.advance(by: .milliseconds(990))
        #expect(try await tag.client.read(handle: data.valueHandle) == [0, 0, 0, 0], "no sample before one period")
        await tag.clock.advance(by: .milliseconds(10))
        let first = try await nextNotification(tag.connection, handle: data.valueHandle)
        #expect(first.count == 4)
        let reading = try #require(SensorTag.decode(.ir, first))
        guard case .ir(let object, let ambient) = reading else { return }
        #expect((15...40).contains(object) && (15...40).contains(ambient))
        // One sample per period from then on.
        await tag.clock.advance(by: .seconds(1))
        let second = try await nextNotification(tag.connection, handle: data.valueHandle)
        #expect(second.count == 4)
        #expect(try await tag.client.read(handle: data.valueHandle) == second)
        // Switched off: data back to zeros, no more samples.
        _ = try await tag.client.write(handle: tag.valueHandle(SensorTag.Sensor.ir.configuration!), value: [0x00])
        await tag.clock.advance(by: .seconds(3))
        #expect(try await tag.client.read(handle: data.valueHandle) == [0, 0, 0, 0])
        await tag.close()
    }

    @Test func movementUsesItsConfiguredRangeAndPeriod() async throws {
        let tag = try await ConnectedDevice.connect(.sensortag)
        let movement = SensorTag.Sensor.movement
        let data = try tag.database.characteristic(uuid: movement.data)
        try await tag.client.configure(data, .notifications)
        _ = try await tag.client.write(handle: tag.valueHandle(movement.period!), value: [10])
        _ = try await tag.client.write(
            handle: tag.valueHandle(movement.configuration!), value: movement.enableValue(accelerometerRange: .g4))
        await tag.clock.advance(by: .milliseconds(100))
        let sample = try await nextNotification(tag.connection, handle: data.valueHandle)
        let reading = try #require(SensorTag.decode(.movement, sample, accelerometerRange: .g4))
        guard case .movement(_, let accel, _) = reading else { return }
        #expect(abs(accel.z - 1.0) < 0.05, "lying still, face up: 1 G on z")
        await tag.close()
    }

    @Test func disconnectingResetsEverySensor() async throws {
        var tag = try await ConnectedDevice.connect(.sensortag)
        let ir = SensorTag.Sensor.ir
        _ = try await tag.client.write(handle: tag.valueHandle(ir.period!), value: [50])
        _ = try await tag.client.write(handle: tag.valueHandle(ir.configuration!), value: [0x01])
        await tag.clock.advance(by: .milliseconds(500))
        #expect(try await tag.client.read(handle: tag.valueHandle(ir.data)) != [0, 0, 0, 0])
        #expect(await tag.simulation.sensorTag?.isEnabled(.ir) == true)
        try await tag.host.disconnect(tag.handle)
        await tag.connection.close()
        tag = try await ConnectedDevice.connect(tag.simulation, tag.host, tag.clock, .sensortag)
        #expect(await tag.simulation.sensorTag?.isEnabled(.ir) == false)
        #expect(try await tag.client.read(handle: tag.valueHandle(ir.configuration!)) == [0x00])
        #expect(try await tag.client.read(handle: tag.valueHandle(ir.period!)) == [100])
        #expect(try await tag.client.read(handle: tag.valueHandle(ir.data)) == [0, 0, 0, 0])
        await tag.close()
    }

    @Test func keyPressesAreNotified() async throws {
        let tag = try await ConnectedDevice.connect(.sensortag)
        let keys = try tag.database.characteristic(uuid: .bit16(0xFFE1))
        try await tag.client.configure(keys, .notifications)
        let device = try #require(tag.simulation.sensorTag)
        await device.press(user: true)
        #expect(try await nextNotification(tag.connection, handle: keys.valueHandle) == [0x01])
        await device.press(power: true, reed: true)
        #expect(try await nextNotification(tag.connection, handle: keys.valueHandle) == [0x06])
        await device.press()
        #expect(try await nextNotification(tag.connection, handle: keys.valueHandle) == [0x00])
        await tag.close()
    }

    @Test func disconnectRequestOnCCC3EndsTheConnection() async throws {
        let tag = try await ConnectedDevice.connect(.sensortag)
        _ = try await tag.client.write(handle: tag.valueHandle(SensorTag.uuid(0xCCC3)), value: [0x01])
        await tag.clock.advance(by: .milliseconds(10))
        let connection = tag.connection
        _ = try await withTimeout { await connection.waitUntilClosed() }
        let disconnections = await tag.host.disconnections
        #expect(disconnections.map(\.reason) == [.remoteUserTerminatedConnection])
        await tag.close()
    }

    @Test func sensorTagAsksForItsPreferredParametersOneSecondAfterConnecting() async throws {
        let tag = try await ConnectedDevice.connect(.sensortag)
        let parameters = try tag.database.characteristic(uuid: SensorTag.uuid(0xCCC1))
        // Connected at 30 ms (24 × 1.25 ms): outside the tag's 100–200 ms.
        #expect(try await tag.client.read(handle: parameters.valueHandle) == [24, 0, 0, 0, 0x90, 0x01])
        try await tag.client.configure(parameters, .notifications)
        await tag.clock.advance(by: .seconds(1))
        // Our host accepts the L2CAP request and updates the connection; CCC1 follows.
        let updated = try await nextNotification(tag.connection, handle: parameters.valueHandle)
        #expect(updated == [0x50, 0x00, 0x00, 0x00, 0xE8, 0x03])
        await tag.close()
    }

    @Test func connectionControlRequestsTheWrittenParameters() async throws {
        let tag = try await ConnectedDevice.connect(.sensortag)
        let parameters = try tag.database.characteristic(uuid: SensorTag.uuid(0xCCC1))
        try await tag.client.configure(parameters, .notifications)
        // CCC2: 50–60 ms, latency 2, 6 s.
        _ = try await tag.client.write(
            handle: tag.valueHandle(SensorTag.uuid(0xCCC2)), value: [40, 0, 48, 0, 2, 0, 0x58, 0x02])
        let updated = try await nextNotification(tag.connection, handle: parameters.valueHandle)
        #expect(updated == [40, 0, 2, 0, 0x58, 0x02])
        await tag.close()
    }

    @Test func ioSelfTestReportsEveryComponentPassing() async throws {
        let tag = try await ConnectedDevice.connect(.sensortag)
        let data = try tag.valueHandle(SensorTag.uuid(0xAA65))
        let configuration = try tag.valueHandle(SensorTag.uuid(0xAA66))
        _ = try await tag.client.write(handle: configuration, value: [0x02])
        #expect(try await tag.client.read(handle: data) == [0x7F])
        _ = try await tag.client.write(handle: configuration, value: [0x01])
        _ = try await tag.client.write(handle: data, value: [0x03])
        #expect(try await tag.client.read(handle: data) == [0x03], "remote mode: red and green LEDs on")
        await tag.close()
    }

    @Test func bluefruitEchoesWhatIsWrittenToRX() async throws {
        let board = try await ConnectedDevice.connect(.bluefruit)
        let tx = try board.database.characteristic(uuid: NordicUART.tx)
        let rx = try board.valueHandle(NordicUART.rx)
        try await board.client.configure(tx, .notifications)
        _ = try await board.client.write(handle: rx, value: Array("hello".utf8))
        #expect(try await nextNotification(board.connection, handle: tx.valueHandle) == Array("hello".utf8))
        try await board.client.writeWithoutResponse(handle: rx, value: Array("F".utf8))
        #expect(try await nextNotification(board.connection, handle: tx.valueHandle) == Array("F".utf8))
        await board.close()
    }

    @Test func bluefruitSplitsTextToMTUMinus3() async throws {
        let board = try await ConnectedDevice.connect(.bluefruit)
        let tx = try board.database.characteristic(uuid: NordicUART.tx)
        try await board.client.configure(tx, .notifications)
        let text = Array("The quick brown fox jumps over the lazy dog!!".utf8)
        let device = try #require(board.simulation.bluefruit)
        await device.send(text)
        var chunks: [[UInt8]] = []
        while chunks.flatMap({ $0 }).count < text.count {
            chunks.append(try await nextNotification(board.connection, handle: tx.valueHandle))
        }
        #expect(chunks.map(\.count) == [20, 20, 5])
        #expect(chunks.flatMap { $0 } == text)
        await board.close()
    }
}
