import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import L2CAP
import Testing
import TestSupport

@Suite("Emulator: our host as a peripheral, reached by a second virtual controller")
struct EmulatorPeripheralRoleTests {
    static let peripheralAddress = BluetoothAddress("00:1B:DC:E0:5A:01")!
    static let centralAddress = BluetoothAddress("00:1B:DC:E0:5A:02")!
    static let ownRandom = BluetoothAddress("C3:11:22:33:44:55")!

    static func probe(_ link: VirtualLink, _ clock: ManualClock, _ address: BluetoothAddress) async throws
        -> (VirtualController, HCIProbe)
    {
        let (controller, transport) = await VirtualController.attach(
            to: link, clock: clock, configuration: .init(address: address))
        let probe = HCIProbe(transport: transport)
        await probe.start()
        _ = try await probe.send(SetEventMaskCommand(eventMask: ControllerInitialization.leHostEventMask))
        _ = try await probe.send(LESetEventMaskCommand(leEventMask: ControllerInitialization.leHostLEEventMask))
        return (controller, probe)
    }

    static let advertisingData: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0F, 0x18]
    static let scanResponse: [UInt8] = [0x05, 0x09] + Array("Ours".utf8)

    static func advertise(_ probe: HCIProbe) async throws {
        let commands: [HCICommandPacket] = [
            try HCICommandPacket(LESetRandomAddressCommand(randomAddress: ownRandom)),
            try HCICommandPacket(
                LESetAdvertisingParametersCommand(
                    advertisingIntervalMin: 0xA0, advertisingIntervalMax: 0xA0, ownAddressType: .random)),
            try HCICommandPacket(LESetAdvertisingDataCommand(advertisingData: advertisingData)),
            try HCICommandPacket(LESetScanResponseDataCommand(scanResponseData: scanResponse)),
            try HCICommandPacket(LESetAdvertisingEnableCommand(advertisingEnable: true)),
        ]
        for command in commands {
            guard case .commandComplete(let complete) = try await probe.sendPacket(command).answer else {
                Issue.record("\(command.opcode) not completed")
                continue
            }
            #expect(complete.status == .success, "\(command.opcode)")
        }
    }

    @Test func advertisingIsScannedConnectedAndCarriesACLBothWays() async throws {
        let clock = ManualClock()
        let link = VirtualLink()
        let (_, peripheral) = try await Self.probe(link, clock, Self.peripheralAddress)
        let (centralController, central) = try await Self.probe(link, clock, Self.centralAddress)
        try await Self.advertise(peripheral)

        _ = try await central.send(
            LESetScanParametersCommand(
                leScanType: .active, leScanInterval: 0x10, leScanWindow: 0x10, ownAddressType: .public,
                scanningFilterPolicy: .acceptAll))
        _ = try await central.send(LESetScanEnableCommand(leScanEnable: true, filterDuplicates: true))
        await clock.advance(by: .milliseconds(100))
        let reports = advertisingReports(try await central.drain())
        #expect(reports.map(\.eventType) == [.advInd, .scanRsp])
        #expect(reports.allSatisfy { $0.address == Self.ownRandom && $0.addressType == .random })
        #expect(reports.map(\.data) == [Self.advertisingData, Self.scanResponse])
        _ = try await central.send(LESetScanEnableCommand(leScanEnable: false))

        _ = try await central.send(
            LECreateConnectionCommand(
                leScanInterval: 0x10, leScanWindow: 0x10, peerAddressType: .random, peerAddress: Self.ownRandom,
                connectionParameters: LEConnectionParameters(
                    connectionIntervalMin: 24, connectionIntervalMax: 40, supervisionTimeout: 400)))
        await clock.advance(by: .milliseconds(100))
        guard case .leMeta(.connectionComplete(let atCentral)) = try await central.nextEvent(),
            case .leMeta(.connectionComplete(let atPeripheral)) = try await peripheral.nextEvent()
        else {
            Issue.record("no connection")
            return
        }
        #expect(atCentral.role == .central && atCentral.peerAddress == Self.ownRandom)
        #expect(atPeripheral.role == .peripheral && atPeripheral.peerAddress == Self.centralAddress)
        #expect(atPeripheral.peerAddressType == .public)
        #expect(link.peripherals.isEmpty, "advertising stops when a central connects")

        // 40 octets each way, fragmented to 27 by each controller.
        let payload = (0..<40).map { UInt8($0) }
        let frame = L2CAPBasicFrame(channelID: 4, payload: payload[...]).encode()
        for (from, to, handle, peerHandle) in [
            (central, peripheral, atCentral.connectionHandle, atPeripheral.connectionHandle),
            (peripheral, central, atPeripheral.connectionHandle, atCentral.connectionHandle),
        ] {
            try await from.sendACL(
                ACLDataPacket(handle: handle, packetBoundary: .firstNonFlushable, data: Array(frame[..<27])))
            try await from.sendACL(
                ACLDataPacket(handle: handle, packetBoundary: .continuingFragment, data: Array(frame[27...])))
            var received: [ACLDataPacket] = []
            while received.flatMap(\.data).count < frame.count {
                if let data = acl(try await to.next()) { received.append(data) }
            }
            #expect(received.map(\.data.count) == [27, 17])
            #expect(received.allSatisfy { $0.handle == peerHandle })
            #expect(received.flatMap(\.data) == frame)
        }

        // The central disconnects: the peripheral's host hears the central's reason.
        _ = try await central.send(DisconnectCommand(connectionHandle: atCentral.connectionHandle))
        let events = try await peripheral.drain().compactMap(event)
        #expect(
            events.contains(
                .disconnectionComplete(
                    DisconnectionCompleteEvent(
                        status: .success, connectionHandle: atPeripheral.connectionHandle,
                        reason: .remoteUserTerminatedConnection))))
        #expect(await centralController.connectionHandles.isEmpty)
        peripheral.transport.close()
        central.transport.close()
    }

    @Test func advertisingParametersAreCheckedAndLockedWhileAdvertising() async throws {
        let clock = ManualClock()
        let (_, probe) = try await Self.probe(VirtualLink(), clock, Self.peripheralAddress)
        // Random own address without one set: refused at enable.
        _ = try await probe.send(
            LESetAdvertisingParametersCommand(
                advertisingIntervalMin: 0xA0, advertisingIntervalMax: 0xA0, ownAddressType: .random))
        guard
            case .commandComplete(let noAddress) = try await probe.send(
                LESetAdvertisingEnableCommand(advertisingEnable: true)
            ).answer
        else { return }
        #expect(noAddress.status == .invalidHCICommandParameters)
        guard
            case .commandComplete(let badInterval) = try await probe.send(
                LESetAdvertisingParametersCommand(advertisingIntervalMin: 0x10, advertisingIntervalMax: 0x10)
            ).answer
        else { return }
        #expect(badInterval.status == .invalidHCICommandParameters)
        _ = try await probe.send(
            LESetAdvertisingParametersCommand(advertisingIntervalMin: 0xA0, advertisingIntervalMax: 0xA0))
        _ = try await probe.send(LESetAdvertisingEnableCommand(advertisingEnable: true))
        guard
            case .commandComplete(let locked) = try await probe.send(
                LESetAdvertisingParametersCommand(advertisingIntervalMin: 0xB0, advertisingIntervalMax: 0xB0)
            ).answer
        else { return }
        #expect(locked.status == .commandDisallowed)
        probe.transport.close()
    }

    @Test func ourGATTServerIsDiscoveredAndUsedByOurClientAcrossTheLink() async throws {
        let clock = ManualClock()
        let link = VirtualLink()
        let (_, peripheralTransport) = await VirtualController.attach(
            to: link, clock: clock, configuration: .init(address: Self.peripheralAddress))
        let (_, centralTransport) = await VirtualController.attach(
            to: link, clock: clock, configuration: .init(address: Self.centralAddress))
        let server = try await SimulatedHost.start(peripheralTransport)
        let client = try await SimulatedHost.start(centralTransport)

        // Battery service with a notifying level: our GATT server on our peripheral host.
        let database = try AttributeDatabase(services: [
            StandardServices.genericAccess(deviceName: "Ours"),
            ServiceDefinition(
                uuid: .bit16(0x180F),
                characteristics: [
                    CharacteristicDefinition(
                        uuid: .bit16(0x2A19), properties: [.read, .notify], value: [87], maximumLength: 1,
                        isFixedLength: true, descriptors: [.clientConfiguration()])
                ]),
        ])
        let gattServer = GATTServerHost(server: GATTServer(database: database))
        _ = try await server.driver.send(
            LESetAdvertisingParametersCommand(advertisingIntervalMin: 0xA0, advertisingIntervalMax: 0xA0))
        _ = try await server.driver.send(LESetAdvertisingDataCommand(advertisingData: Self.advertisingData))
        _ = try await server.driver.send(LESetAdvertisingEnableCommand(advertisingEnable: true))

        let connecting = Task { try await server.accept(from: Self.centralAddress) }
        let (_, clientChannel) = try await client.connect(
            Self.peripheralAddress, type: .public, advance: { await clock.advance(by: .milliseconds(100)) })
        let (_, serverChannel) = try await connecting.value
        let serverConnection = ATTConnection(
            channel: serverChannel, configuration: ATTBearer.Configuration(rxMTU: 23),
            serverHandler: { _ in nil })
        await gattServer.attach(serverConnection)

        let connection = ATTConnection(channel: clientChannel)
        let gattClient = GATTClient(connection: connection)
        let discovered = try await withTimeout { try await gattClient.discoverDatabase() }
        #expect(discovered.services.map(\.uuid) == [.bit16(0x1800), .bit16(0x180F)])
        let level = try discovered.characteristic(uuid: .bit16(0x2A19))
        #expect(try await gattClient.read(handle: level.valueHandle) == [87])
        try await gattClient.configure(level, .notifications)
        try await gattServer.updateValue([86], handle: level.valueHandle)
        #expect(try await nextNotification(connection, handle: level.valueHandle) == [86])

        await connection.close()
        await serverConnection.close()
        await client.close()
        await server.close()
    }
}
