import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import L2CAP
import Synchronization
import Testing

@Suite("Emulator: virtual controller scanning, connections and ACL")
struct EmulatorControllerLinkTests {
    static func scanParameters(_ type: LEScanType) -> LESetScanParametersCommand {
        LESetScanParametersCommand(
            leScanType: type, leScanInterval: 0x10, leScanWindow: 0x10, ownAddressType: .public,
            scanningFilterPolicy: .acceptAll)
    }

    static let createSensorTag = LECreateConnectionCommand(
        leScanInterval: 0x10, leScanWindow: 0x10, peerAddressType: .public,
        peerAddress: EmulatedSensorTag.defaultAddress,
        connectionParameters: LEConnectionParameters(
            connectionIntervalMin: 24, connectionIntervalMax: 40, supervisionTimeout: 400))

    @Test func activeScanReportsAdvertisingThenScanResponse() async throws {
        let (simulation, probe, clock) = try await makeController()
        _ = try await probe.send(Self.scanParameters(.active))
        _ = try await probe.send(LESetScanEnableCommand(leScanEnable: true, filterDuplicates: true))
        await clock.advance(by: .milliseconds(100))
        let reports = advertisingReports(try await probe.drain())
        #expect(reports.count == 4)
        let tag = reports.filter { $0.address == EmulatedSensorTag.defaultAddress }
        #expect(tag.map(\.eventType) == [.advInd, .scanRsp])
        #expect(tag.first?.addressType == .public)
        #expect(tag.first?.advertisingData.summary.name == nil, "the SensorTag's name is only in its scan response")
        #expect(tag.last?.advertisingData.summary.name == "CC2650 SensorTag")
        let bluefruit = reports.filter { $0.address == EmulatedBluefruit.defaultAddress }
        #expect(bluefruit.map(\.eventType) == [.advInd, .scanRsp])
        #expect(bluefruit.first?.addressType == .random)
        #expect(bluefruit.last?.advertisingData.summary.name == "Adafruit Bluefruit LE")
        await simulation.stop()
    }

    @Test func passiveScanHasNoScanResponses() async throws {
        let (simulation, probe, clock) = try await makeController()
        _ = try await probe.send(Self.scanParameters(.passive))
        _ = try await probe.send(LESetScanEnableCommand(leScanEnable: true, filterDuplicates: false))
        await clock.advance(by: .milliseconds(300))
        let reports = advertisingReports(try await probe.drain())
        #expect(reports.count == 6, "three advertising events of two devices")
        #expect(reports.allSatisfy { $0.eventType == .advInd })
        await simulation.stop()
    }

    @Test func duplicateFilteringReportsEachDeviceOncePerScan() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [.sensortag])
        _ = try await probe.send(Self.scanParameters(.active))
        _ = try await probe.send(LESetScanEnableCommand(leScanEnable: true, filterDuplicates: true))
        await clock.advance(by: .milliseconds(500))
        #expect(advertisingReports(try await probe.drain()).count == 2)
        // Disabling and enabling again starts a new scan: reported again.
        _ = try await probe.send(LESetScanEnableCommand(leScanEnable: false))
        _ = try await probe.send(LESetScanEnableCommand(leScanEnable: true, filterDuplicates: true))
        await clock.advance(by: .milliseconds(100))
        #expect(advertisingReports(try await probe.drain()).count == 2)
        await simulation.stop()
    }

    @Test func maskedAdvertisingReportsAreNotSent() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [.sensortag])
        // LE Connection Complete only: the Advertising Report subevent (bit 1) masked.
        _ = try await probe.send(LESetEventMaskCommand(leEventMask: HCIEventMask(rawValue: 0x01)))
        _ = try await probe.send(LESetScanEnableCommand(leScanEnable: true))
        await clock.advance(by: .milliseconds(300))
        #expect(advertisingReports(try await probe.drain()).isEmpty)
        await simulation.stop()
    }

    @Test func scanParametersCannotChangeWhileScanning() async throws {
        let (simulation, probe, _) = try await makeController()
        _ = try await probe.send(LESetScanEnableCommand(leScanEnable: true))
        guard case .commandComplete(let complete) = try await probe.send(Self.scanParameters(.active)).answer else {
            Issue.record("no Command Complete")
            return
        }
        #expect(complete.status == .commandDisallowed)
        await simulation.stop()
    }

    @Test func createConnectionCompletesAtTheNextConnectableAdvertisement() async throws {
        let (simulation, probe, clock) = try await makeController()
        guard case .commandStatus(let status) = try await probe.send(Self.createSensorTag).answer else {
            Issue.record("no Command Status")
            return
        }
        #expect(status.status == .success)
        // Pending until the device advertises: nothing yet.
        #expect(try await probe.drain().compactMap(event).isEmpty)
        await clock.advance(by: .milliseconds(100))
        let events = try await probe.drain().compactMap(event)
        guard case .leMeta(.connectionComplete(let complete)) = events.first else {
            Issue.record("no LE Connection Complete: \(events)")
            return
        }
        #expect(complete.status == .success)
        #expect(complete.role == .central)
        #expect(complete.peerAddress == EmulatedSensorTag.defaultAddress)
        #expect(complete.peerAddressType == .public)
        #expect(complete.connectionInterval == 24)
        #expect(complete.supervisionTimeout == 400)
        #expect(await simulation.controller.connectionHandles == [complete.connectionHandle])

        guard
            case .commandComplete(let rssi) = try await probe.send(ReadRSSICommand(handle: complete.connectionHandle))
                .answer
        else { return }
        #expect(try rssi.decodeReturn(for: ReadRSSICommand.self).rssi == -55)

        // A second create to the same device: the connection already exists.
        guard case .commandStatus(let again) = try await probe.send(Self.createSensorTag).answer else { return }
        #expect(again.status == .connectionAlreadyExists)

        // Connection update, then disconnect.
        let update = LEConnectionUpdateCommand(
            connectionHandle: complete.connectionHandle,
            connectionParameters: LEConnectionParameters(
                connectionIntervalMin: 80, connectionIntervalMax: 160, maxLatency: 0, supervisionTimeout: 1000))
        guard case .commandStatus(let updateStatus) = try await probe.send(update).answer else { return }
        #expect(updateStatus.status == .success)
        let updated = try await probe.nextEvent()
        #expect(
            updated
                == .leMeta(
                    .connectionUpdateComplete(
                        LEConnectionUpdateCompleteEvent(
                            status: .success, connectionHandle: complete.connectionHandle, connectionInterval: 80,
                            peripheralLatency: 0, supervisionTimeout: 1000))))
        guard
            case .commandStatus(let disconnectStatus) = try await probe.send(
                DisconnectCommand(connectionHandle: complete.connectionHandle)
            ).answer
        else { return }
        #expect(disconnectStatus.status == .success)
        #expect(
            try await probe.nextEvent()
                == .disconnectionComplete(
                    DisconnectionCompleteEvent(
                        status: .success, connectionHandle: complete.connectionHandle,
                        reason: .connectionTerminatedByLocalHost)))
        guard
            case .commandStatus(let unknown) = try await probe.send(
                DisconnectCommand(connectionHandle: complete.connectionHandle)
            ).answer
        else { return }
        #expect(unknown.status == .unknownConnectionIdentifier)
        await simulation.stop()
    }

    @Test func createConnectionToAnAbsentDeviceStaysPendingUntilCancelled() async throws {
        let (simulation, probe, clock) = try await makeController()
        var command = Self.createSensorTag
        command.peerAddress = BluetoothAddress("54:6C:0E:00:00:99")!
        _ = try await probe.send(command)
        await clock.advance(by: .seconds(2))
        #expect(try await probe.drain().compactMap(event).isEmpty)
        // A second create while initiating is disallowed.
        guard case .commandStatus(let busy) = try await probe.send(command).answer else { return }
        #expect(busy.status == .commandDisallowed)
        let (answer, _) = try await probe.send(LECreateConnectionCancelCommand())
        guard case .commandComplete(let cancelled) = answer else { return }
        #expect(cancelled.status == .success)
        guard case .leMeta(.connectionComplete(let complete)) = try await probe.nextEvent() else {
            Issue.record("no LE Connection Complete after the cancel")
            return
        }
        #expect(complete.status == .unknownConnectionIdentifier)
        // Nothing to cancel any more.
        guard case .commandComplete(let nothing) = try await probe.send(LECreateConnectionCancelCommand()).answer
        else { return }
        #expect(nothing.status == .commandDisallowed)
        await simulation.stop()
    }

    @Test func aclIsFlowControlledAndFragmentedTo27Octets() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [.sensortag])
        _ = try await probe.send(Self.createSensorTag)
        await clock.advance(by: .milliseconds(100))
        guard case .leMeta(.connectionComplete(let complete)) = try await probe.nextEvent() else {
            Issue.record("not connected")
            return
        }
        let handle = complete.connectionHandle
        // Read By Group Type Request (primary services, 0x0001–0xFFFF), split over two ACL
        // packets by the host: 4-octet L2CAP header + 7 octets of ATT.
        let att: [UInt8] = [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]
        let frame = L2CAPBasicFrame(channelID: 4, payload: att[...]).encode()
        try await probe.sendACL(
            ACLDataPacket(handle: handle, packetBoundary: .firstNonFlushable, data: Array(frame[..<6])))
        try await probe.sendACL(
            ACLDataPacket(handle: handle, packetBoundary: .continuingFragment, data: Array(frame[6...])))

        // Two Number Of Completed Packets, then the response in ≤ 27-octet fragments.
        var completed = 0
        var fragments: [ACLDataPacket] = []
        while true {
            let packet = try await probe.next()
            if let e = event(packet), case .numberOfCompletedPackets(let nocp) = e {
                #expect(nocp.entries == [.init(connectionHandle: handle, numCompletedPackets: 1)])
                completed += 1
            } else if let data = acl(packet) {
                fragments.append(data)
                let bytes = fragments.flatMap(\.data)
                if bytes.count >= 4, bytes.count == 4 + (Int(bytes[0]) | Int(bytes[1]) << 8) { break }
            }
        }
        #expect(completed == 2)
        #expect(fragments.allSatisfy { $0.data.count <= 27 && $0.handle == handle })
        #expect(fragments.first?.packetBoundary == .firstFlushable)
        let response = fragments.flatMap(\.data)
        #expect(response[2] == 0x04 && response[3] == 0x00, "ATT channel")
        #expect(response[4] == 0x11, "Read By Group Type Response")
        #expect(response.count - 4 <= 23, "the SensorTag's ATT_MTU is 23")
        await simulation.stop()
    }

    @Test func longFramesToTheHostAreFragmentedTo27Octets() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [])
        let echo = EchoPeripheral()
        simulation.link.add(echo)
        var create = Self.createSensorTag
        create.peerAddress = echo.address
        create.peerAddressType = .random
        _ = try await probe.send(create)
        await clock.advance(by: .milliseconds(100))
        guard case .leMeta(.connectionComplete(let complete)) = try await probe.nextEvent() else { return }
        let payload = (0..<100).map { UInt8($0) }
        let frame = L2CAPBasicFrame(channelID: 0x0040, payload: payload[...]).encode()
        var offset = 0
        while offset < frame.count {
            let end = min(offset + 27, frame.count)
            try await probe.sendACL(
                ACLDataPacket(
                    handle: complete.connectionHandle,
                    packetBoundary: offset == 0 ? .firstNonFlushable : .continuingFragment,
                    data: Array(frame[offset..<end])))
            offset = end
        }
        var fragments: [ACLDataPacket] = []
        var completed = 0
        while fragments.flatMap(\.data).count < frame.count {
            let packet = try await probe.next()
            if let data = acl(packet) { fragments.append(data) }
            if let e = event(packet), case .numberOfCompletedPackets(let nocp) = e {
                completed += nocp.entries.reduce(0) { $0 + Int($1.numCompletedPackets) }
            }
        }
        #expect(completed == 4, "one completed packet per host ACL packet")
        #expect(fragments.map(\.data.count) == [27, 27, 27, 23])
        #expect(
            fragments.map(\.packetBoundary) == [
                .firstFlushable, .continuingFragment, .continuingFragment, .continuingFragment,
            ])
        #expect(fragments.flatMap(\.data) == frame)
        await simulation.stop()
    }

    @Test func aclOverTheBufferLengthIsRefusedWithDataBufferOverflow() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [.sensortag])
        _ = try await probe.send(Self.createSensorTag)
        await clock.advance(by: .milliseconds(100))
        guard case .leMeta(.connectionComplete(let complete)) = try await probe.nextEvent() else { return }
        try await probe.sendACL(
            ACLDataPacket(
                handle: complete.connectionHandle, packetBoundary: .firstNonFlushable,
                data: [UInt8](repeating: 0, count: 28)))
        let events = try await probe.drain().compactMap(event)
        #expect(events.contains { if case .dataBufferOverflow = $0 { true } else { false } })
        await simulation.stop()
    }

    @Test func resetDropsConnectionsAndStopsScanning() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [.sensortag])
        _ = try await probe.send(Self.createSensorTag)
        await clock.advance(by: .milliseconds(100))
        _ = try await probe.drain()
        _ = try await probe.send(LESetScanEnableCommand(leScanEnable: true))
        _ = try await probe.send(ResetCommand())
        #expect(await simulation.controller.connectionHandles.isEmpty)
        #expect(await simulation.controller.isScanning == false)
        await clock.advance(by: .milliseconds(300))
        #expect(advertisingReports(try await probe.drain()).isEmpty)
        await simulation.stop()
    }
}

/// A peripheral that sends every L2CAP frame back on the same channel.
final class EchoPeripheral: VirtualPeripheral {
    let address = BluetoothAddress("C0:FF:EE:00:00:01")!
    let addressType = AddressType.random
    let advertisingData: [UInt8] = [0x02, 0x01, 0x06]
    let scanResponseData: [UInt8] = []
    let isConnectable = true
    private let link = Mutex<VirtualLinkConnection?>(nil)

    func connected(_ link: VirtualLinkConnection) async { self.link.withLock { $0 = link } }
    func received(_ frame: L2CAPBasicFrame) async {
        guard let link = link.withLock({ $0 }) else { return }
        await link.send(channelID: frame.channelID, payload: Array(frame.payload))
    }
    func disconnected(reason: HCIStatus) async { link.withLock { $0 = nil } }
}
