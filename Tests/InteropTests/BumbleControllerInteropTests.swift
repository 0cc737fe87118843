import Bluetooth
import GATTClientCLI
import HCI
import Testing
import TestSupport

/// Our controller driver (command flow control and the LE host initialisation sequence)
/// against Bumble's controller over H4/TCP. Skipped where python3 cannot import bumble.
@Suite(
    "Interop: controller driver against Bumble",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct BumbleControllerInteropTests {
    @Test func initialisationSequenceCompletes() async throws {
        let peer = try await BumblePeer.start()
        defer { peer.stop() }
        let driver = HCIControllerDriver(transport: try await peer.uri.openRawTransport(), commandTimeout: .seconds(10 * testTimeoutScale))
        await driver.start()

        let info = try await driver.initialize()
        #expect(info.address == BluetoothAddress("F0:F1:F2:F3:F4:F5"))
        #expect(info.version.hciVersion == .v5_0)
        // bumble_peer.py's exposed controller: 27-octet buffers, 8 of them (--acl-buffers).
        #expect(info.aclBuffers == ControllerInfo.ACLBuffers(packetLength: 27, packetCount: 8, shared: false))
        #expect(info.lmpFeatures.contains(bit: LMPFeatures.leSupportedController))
        #expect(info.supportedCommands != nil)
        #expect(info.leFeatures?.contains(.leEncryption) == true)
        await driver.close()
    }

    @Test func unknownCommandFailsFastInsteadOfTimingOut() async throws {
        let peer = try await BumblePeer.start()
        defer { peer.stop() }
        let driver = HCIControllerDriver(transport: try await peer.uri.openRawTransport(), commandTimeout: .seconds(10 * testTimeoutScale))
        await driver.start()
        let vendor = try HCICommandPacket(opcode: HCIOpcode(ogf: 0x3F, ocf: 0x0042), parameters: [0x01, 0x02])
        let outcome = await driver.execute(vendor)
        guard case .complete(let event) = outcome else {
            Issue.record("expected Command Complete, got \(outcome)")
            return
        }
        #expect(event.status == HCIStatus(rawValue: 0x01))
        // The controller keeps working afterwards.
        _ = try await driver.send(ResetCommand())
        await driver.close()
    }

    /// What one scan saw of a device: advertising PDUs and scan responses, decoded by our
    /// event and AD codecs.
    struct Sighting: Sendable {
        var advertisingNames: Set<String> = []
        var advertisements = 0
        var scanResponseNames: Set<String> = []
        var serviceUUIDs: Set<BluetoothUUID> = []
    }

    /// Runs an active scan through the driver and decodes every LE Meta event on `inbound` with
    /// our codecs until both peripherals were seen with their scan responses.
    static func scan(extended: Bool) async throws -> (sensorTag: Sighting, bluefruit: Sighting) {
        let peer = try await BumblePeer.start(devices: ["sensortag", "bluefruit"])
        defer { peer.stop() }
        let sensorTag = try #require(peer.devices["sensortag"])
        let bluefruit = try #require(peer.devices["bluefruit"])
        let driver = HCIControllerDriver(transport: try await peer.uri.openRawTransport(), commandTimeout: .seconds(10 * testTimeoutScale))
        await driver.start()
        _ = try await driver.initialize()
        if extended {
            let phy = LEExtendedScanPHYParameters(scanType: .active, scanInterval: 0x10, scanWindow: 0x10)
            _ = try await driver.send(LESetExtendedScanParametersCommand(le1M: phy))
            _ = try await driver.send(LESetExtendedScanEnableCommand(enable: true))
        } else {
            _ = try await driver.send(
                LESetScanParametersCommand(leScanType: .active, leScanInterval: 0x10, leScanWindow: 0x10))
            _ = try await driver.send(LESetScanEnableCommand(leScanEnable: true))
        }

        let inbound = driver.inbound
        let sightings = try await withTimeout(10) { () -> [BluetoothAddress: Sighting] in
            var sightings: [BluetoothAddress: Sighting] = [:]
            func note(_ address: BluetoothAddress, scanResponse: Bool, data: [UInt8]) {
                let summary = AdvertisingDataSummary(AdvertisingData(data))
                var sighting = sightings[address] ?? Sighting()
                if scanResponse {
                    if let name = summary.name { sighting.scanResponseNames.insert(name) }
                } else {
                    sighting.advertisements += 1
                    if let name = summary.name { sighting.advertisingNames.insert(name) }
                }
                sighting.serviceUUIDs.formUnion(summary.serviceUUIDs)
                sightings[address] = sighting
            }
            for await packet in inbound where packet.type == .event {
                guard case .leMeta(let meta) = try HCIEvent(bytes: packet.bytes) else { continue }
                switch meta {
                case .advertisingReport(let event):
                    #expect(!extended, "legacy reports after extended scan commands")
                    for report in event.reports {
                        note(report.address, scanResponse: report.eventType == .scanRsp, data: report.data)
                    }
                case .extendedAdvertisingReport(let event):
                    #expect(extended, "extended reports after legacy scan commands")
                    for report in event.reports {
                        #expect(report.eventType.isLegacy)
                        note(report.address, scanResponse: report.eventType.isScanResponse, data: report.data)
                    }
                default:
                    continue
                }
                if [sensorTag, bluefruit].allSatisfy({ !(sightings[$0]?.scanResponseNames.isEmpty ?? true) }) { break }
            }
            return sightings
        }
        if extended {
            _ = try await driver.send(LESetExtendedScanEnableCommand(enable: false))
        } else {
            _ = try await driver.send(LESetScanEnableCommand(leScanEnable: false))
        }
        await driver.close()
        return (sightings[sensorTag] ?? Sighting(), sightings[bluefruit] ?? Sighting())
    }

    @Test(arguments: [false, true])
    func activeScanDecodesBothPeripherals(extended: Bool) async throws {
        let (sensorTag, bluefruit) = try await Self.scan(extended: extended)
        // The CC2650 puts its name only in the scan response.
        #expect(sensorTag.advertisements > 0)
        #expect(sensorTag.advertisingNames.isEmpty)
        #expect(sensorTag.scanResponseNames == ["CC2650 SensorTag"])
        #expect(sensorTag.serviceUUIDs.contains(BluetoothUUID.bit16(0xAA80)))
        // The Bluefruit advertises the Nordic UART service UUID.
        #expect(bluefruit.scanResponseNames == ["Adafruit Bluefruit LE"])
        #expect(bluefruit.serviceUUIDs.contains(BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!))
    }
}

/// Connection control through our driver: LE Create Connection (Command Status, then LE
/// Connection Complete on `inbound`), Disconnect (Disconnection Complete), and the refusals a
/// real controller gives, all decoded with our event codecs.
@Suite(
    "Interop: connection control against Bumble",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct BumbleConnectionInteropTests {
    static let parameters = LEConnectionParameters(
        connectionIntervalMin: 24, connectionIntervalMax: 40, supervisionTimeout: 400)

    /// The next event on `inbound` that `match` accepts (decoded by our `HCIEvent`), bounded.
    static func nextEvent<T: Sendable>(
        _ inbound: AsyncStream<HCITransportPacket>, _ match: @escaping @Sendable (HCIEvent) -> T?
    ) async throws -> T {
        try await withTimeout(5) { () -> T in
            for await packet in inbound where packet.type == .event {
                if let found = match(try HCIEvent(bytes: packet.bytes)) { return found }
            }
            throw HCIError.transportClosed("inbound ended")
        }
    }

    @Test func connectThenDisconnect() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"])
        defer { peer.stop() }
        let sensorTag = try #require(peer.devices["sensortag"])
        let driver = HCIControllerDriver(transport: try await peer.uri.openRawTransport(), commandTimeout: .seconds(10 * testTimeoutScale))
        _ = try await driver.initialize()
        let inbound = driver.inbound

        let create = LECreateConnectionCommand(
            leScanInterval: 0x10, leScanWindow: 0x10, peerAddressType: .public, peerAddress: sensorTag,
            connectionParameters: Self.parameters)
        _ = try await driver.sendAccepted(create)
        let complete = try await Self.nextEvent(inbound) { event -> LEConnectionCompleteEvent? in
            if case .leMeta(.connectionComplete(let complete)) = event { return complete }
            return nil
        }
        #expect(complete.status == .success)
        #expect(complete.peerAddress == sensorTag)
        #expect(complete.peerAddressType == .public)

        _ = try await driver.sendAccepted(DisconnectCommand(connectionHandle: complete.connectionHandle))
        let disconnection = try await Self.nextEvent(inbound) { event -> DisconnectionCompleteEvent? in
            if case .disconnectionComplete(let disconnection) = event { return disconnection }
            return nil
        }
        #expect(disconnection.connectionHandle == complete.connectionHandle)
        #expect(disconnection.status == .success)
        await driver.close()
    }

    @Test func cancellingAPendingConnection() async throws {
        let peer = try await BumblePeer.start()
        defer { peer.stop() }
        let driver = HCIControllerDriver(transport: try await peer.uri.openRawTransport(), commandTimeout: .seconds(10 * testTimeoutScale))
        _ = try await driver.initialize()
        let inbound = driver.inbound

        // Nothing pending: Command Disallowed.
        await #expect(
            throws: HCIError.commandFailed(opcode: LECreateConnectionCancelCommand.opcode, status: .commandDisallowed)
        ) {
            _ = try await driver.send(LECreateConnectionCancelCommand())
        }
        // A connection to a device nobody advertises, then cancelled.
        let nobody = try #require(BluetoothAddress("C1:EE:DD:CC:BB:AA"))
        _ = try await driver.sendAccepted(
            LECreateConnectionCommand(
                leScanInterval: 0x10, leScanWindow: 0x10, peerAddressType: .random, peerAddress: nobody,
                connectionParameters: Self.parameters))
        _ = try await driver.send(LECreateConnectionCancelCommand())
        let complete = try await Self.nextEvent(inbound) { event -> LEConnectionCompleteEvent? in
            if case .leMeta(.connectionComplete(let complete)) = event { return complete }
            return nil
        }
        #expect(complete.status == .unknownConnectionIdentifier)
        await driver.close()
    }

    @Test func disconnectingAnUnknownHandleIsRefused() async throws {
        let peer = try await BumblePeer.start()
        defer { peer.stop() }
        let driver = HCIControllerDriver(transport: try await peer.uri.openRawTransport(), commandTimeout: .seconds(10 * testTimeoutScale))
        _ = try await driver.initialize()
        await #expect(
            throws: HCIError.commandFailed(opcode: DisconnectCommand.opcode, status: .unknownConnectionIdentifier)
        ) {
            _ = try await driver.sendAccepted(DisconnectCommand(connectionHandle: 0x0040))
        }
        await driver.close()
    }
}

