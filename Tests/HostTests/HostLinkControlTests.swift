import Host
import Bluetooth
import Emulator
import HCI
import L2CAP
import Testing
import TestSupport

/// Issue 24, link control: LE Set PHY, LE Read PHY, LE Set Data Length and Read RSSI on the
/// virtual controller (with their events), a controller that refuses them or never answers
/// (the request fails, the credit comes back, the link goes on), and the policy for a peer's
/// parameter requests over L2CAP and the link layer.
@Suite("Host: link control")
struct HostLinkControlTests {
    static let sensorTag = BluetoothAddress("54:6C:0E:9A:3B:01")!

    /// Our host over a simulation with the SensorTag, connected to it.
    static func connected(
        configuration controller: VirtualController.Configuration = .init(),
        host configure: (inout LEHost.Configuration) -> Void = { _ in }
    ) async throws -> (Simulation, LEHost, LEConnection) {
        let simulation = try await Simulation.start(devices: [.sensortag], configuration: controller)
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = .seconds(30 * testTimeoutScale)
        configure(&configuration)
        let host = try await LEHost.start(transport: simulation.hostTransport, configuration: configuration)
        let connection = try await host.connect(to: sensorTag, type: .public, timeout: .seconds(30))
        return (simulation, host, connection)
    }

    @Test func setPHYReportsTheUpdateAndReadPHYAgrees() async throws {
        let (simulation, host, connection) = try await Self.connected()
        #expect(connection.phy == (.le1M, .le1M))
        var events = connection.linkEvents.makeAsyncIterator()
        let phy = try await host.setPHY(connection, tx: .le2M, rx: .le2M)
        #expect(phy == (.le2M, .le2M))
        #expect(connection.phy == (.le2M, .le2M))
        #expect(await events.next() == .phyUpdated(tx: .le2M, rx: .le2M))
        #expect(try await host.readPHY(connection) == (.le2M, .le2M))
        // Coded TX only, no preference for RX: RX stays LE 2M.
        #expect(try await host.setPHY(connection, tx: .leCoded, rx: []) == (.leCoded, .le2M))
        // The same again: the controller still answers (unchanged), no link event.
        #expect(try await host.setPHY(connection, tx: .leCoded, rx: []) == (.leCoded, .le2M))
        #expect(await events.next() == .phyUpdated(tx: .leCoded, rx: .le2M))
        await host.close()
        await simulation.stop()
    }

    @Test func setDataLengthWaitsForTheChangeAndRSSIIsRead() async throws {
        let (simulation, host, connection) = try await Self.connected()
        #expect(connection.dataLength == .initial)
        try await host.setDataLength(connection, octets: 251)
        // The change is in place when the call returns.
        #expect(connection.dataLength == LEConnection.DataLength(maxTXOctets: 251, maxTXTime: 2120, maxRXOctets: 251, maxRXTime: 2120))
        #expect(try await host.readRSSI(connection) == simulation.sensorTag!.rssi)
        await #expect(throws: LEHostError.invalidArgument("data length 300 octets, 2120 µs: 27…251 octets, 328…17040 µs")) {
            try await host.setDataLength(connection, octets: 300, time: 2120)
        }
        #expect(LEHostCore.dataLengthTime(forOctets: 27) == 328)
        #expect(LEHostCore.dataLengthTime(forOctets: 251) == 2120)
        await host.close()
        await simulation.stop()
    }

    /// Bumble's controller never answers LE Set PHY: the command flow fails it with a timeout
    /// (and gives its credit back, HCICommandFlow); the request fails, the link stays, the next
    /// command goes. (End to end against Bumble's controller: BumbleLinkControlInteropTests.)
    @Test func anUnansweredSetPHYFailsTheRequestAndTheLinkGoesOn() throws {
        var h = HostCoreTests.Harness()
        try HostCoreTests.connect(&h, handle: 0x0040)
        let setPHY = h.request(.setPHY(handle: 0x0040, tx: .le2M, rx: .le2M, options: .noPreference))
        let (token, packet) = h.outstanding.removeFirst()
        #expect(packet.opcode == .leSetPHY)
        h.take(h.core.commandFinished(token, .failed(.commandTimeout(opcode: .leSetPHY)), now: h.now))
        #expect(h.drain() == [.complete(setPHY, .failed(.hci(.commandTimeout(opcode: .leSetPHY))))])
        #expect(h.core.linkCount == 1)
        #expect(h.core.nextDeadline == nil, "nothing waits for a PHY update")
        _ = h.request(.readRSSI(handle: 0x0040))
        #expect(h.pending == [.readRSSI])
    }

    /// LE Set Data Length that changes nothing: no LE Data Length Change comes, and the request
    /// ends after a short wait rather than failing.
    @Test func aDataLengthThatChangesNothingEndsAfterTheWait() throws {
        var h = HostCoreTests.Harness()
        try HostCoreTests.connect(&h, handle: 0x0040)
        let id = h.request(.setDataLength(handle: 0x0040, octets: 27, time: 328))
        let (token, packet) = h.outstanding.removeFirst()
        #expect(packet.opcode == .leSetDataLength)
        let complete = CommandCompleteEvent(numHCICommandPackets: 1, opcode: .leSetDataLength, returnParameters: [0x00, 0x40, 0x00])
        h.take(h.core.commandFinished(token, .complete(complete), now: h.now))
        #expect(h.drain().isEmpty)
        #expect(h.core.nextDeadline == LEHostCore.dataLengthChangeWait)
        h.advance(to: LEHostCore.dataLengthChangeWait)
        #expect(h.drain() == [.complete(id, .done)])
    }

    /// A controller that does not know the commands (the scripted one answers Unknown HCI Command).
    @Test func aControllerWithoutTheCommandsRefusesThemAndTheLinkGoesOn() async throws {
        let controller = HostScriptedController()
        let host = try await HostLEHostTests.start(controller)
        let connection = try await HostLEHostTests.connect(host, controller, handle: 0x0040)
        await #expect(throws: LEHostError.hci(.commandFailed(opcode: .leSetDataLength, status: .unknownHCICommand))) {
            try await host.setDataLength(connection, octets: 251)
        }
        await #expect(throws: LEHostError.hci(.commandFailed(opcode: .readRSSI, status: .unknownHCICommand))) {
            _ = try await host.readRSSI(connection)
        }
        await #expect(throws: LEHostError.hci(.commandFailed(opcode: .leSetPHY, status: .unknownHCICommand))) {
            _ = try await host.setPHY(connection, tx: .le2M, rx: .le2M)
        }
        #expect(connection.isConnected)
        await host.close()
    }

    @Test func setPHYWaitsForItsUpdateCompleteAndFailsWithItsStatus() async throws {
        let controller = HostScriptedController()
        let host = try await HostLEHostTests.start(controller)
        let connection = try await HostLEHostTests.connect(host, controller, handle: 0x0040)
        // The scripted controller refuses LE Set PHY; a real one accepts with Command Status, then
        // reports the update: here the peer's refusal (Unsupported Remote Feature).
        let answered = HostScriptedController(answering: [.leSetPHY: .commandStatus])
        let host2 = try await HostLEHostTests.start(answered)
        let connection2 = try await HostLEHostTests.connect(host2, answered, handle: 0x0041)
        let refused = Task { try await host2.setPHY(connection2, tx: .le2M, rx: .le2M) }
        let sent = try await answered.next(.leSetPHY)
        #expect(sent == [0x41, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00])
        try await answered.event([0x3E, 6, 0x0C, 0x1A] + HostScriptedController.le16(0x0041) + [0x01, 0x01])
        await #expect(throws: LEHostError.hci(.commandFailed(opcode: .leSetPHY, status: .unsupportedRemoteFeature))) {
            _ = try await refused.value
        }
        #expect(connection.isConnected && connection2.isConnected)
        await host.close()
        await host2.close()
    }

    // MARK: - Disconnecting

    /// What we sent last reaches the peer: HCI_Disconnect waits until the controller has
    /// completed the link's ACL data (Number Of Completed Packets), bounded by
    /// `disconnectFlushTimeout` when the completion never comes.
    @Test func disconnectWaitsForTheLinksDataToBeCompleted() async throws {
        let controller = HostScriptedController(withholdingCompletions: true)
        let host = try await HostLEHostTests.start(controller) { $0.disconnectFlushTimeout = .seconds(30 * testTimeoutScale) }
        let connection = try await HostLEHostTests.connect(host, controller, handle: 0x0040)
        let written = Task { try await controller.nextACL(cid: 4) }
        try await connection.channel.send([0x52, 0x03, 0x00, 0x01])  // Write Command
        #expect(try await written.value == [0x52, 0x03, 0x00, 0x01])
        #expect(host.l2cap.unsentData(handle: 0x0040) == 1)
        let disconnected = Task { try await host.disconnect(connection) }
        // Held while the controller holds the packet.
        try await Task.sleep(for: .milliseconds(200))
        #expect(controller.count(.disconnect) == 0)
        try await controller.event([0x13, 5, 0x01] + HostScriptedController.le16(0x0040) + [0x01, 0x00])
        _ = try await controller.next(.disconnect)
        try await controller.event(HostScriptedController.disconnectionComplete(handle: 0x0040, reason: 0x16))
        #expect(try await disconnected.value == .connectionTerminatedByLocalHost)
        await host.close()
    }

    @Test func disconnectGoesAfterItsBoundWhenNothingIsCompleted() async throws {
        let controller = HostScriptedController(withholdingCompletions: true)
        let host = try await HostLEHostTests.start(controller) { $0.disconnectFlushTimeout = .milliseconds(300) }
        let connection = try await HostLEHostTests.connect(host, controller, handle: 0x0040)
        let written = Task { try await controller.nextACL(cid: 4) }
        try await connection.channel.send([0x52, 0x03, 0x00, 0x01])
        _ = try await written.value
        let started = ContinuousClock.now
        let disconnected = Task { try await host.disconnect(connection) }
        _ = try await controller.next(.disconnect)
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        try await controller.event(HostScriptedController.disconnectionComplete(handle: 0x0040, reason: 0x16))
        _ = try await disconnected.value
        await host.close()
    }

    // MARK: - Peer parameter requests

    @Test func aRefusingPolicyRejectsL2CAPAndLinkLayerRequests() async throws {
        let controller = HostScriptedController()
        let host = try await HostLEHostTests.start(controller) { $0.parameterRequests = .refuseAll }
        _ = try await HostLEHostTests.connect(host, controller, handle: 0x0040)
        try await controller.event(
            HostScriptedController.remoteParameterRequest(handle: 0x0040, min: 24, max: 40, latency: 0, timeout: 400))
        let refusal = try await controller.next(.leRemoteConnectionParameterRequestNegativeReply)
        #expect(refusal == [0x40, 0x00, 0x3B])
        #expect(host.statistics.refusedParameterRequests == 1)
        // L2CAP Connection Parameter Update Request, identifier 7: answered Rejected (0x0001).
        let responses = Task { try await controller.nextACL(cid: 5) }
        try await controller.acl(
            HostScriptedController.aclFrame(handle: 0x0040, cid: 5, [0x12, 0x07, 0x08, 0x00, 40, 0, 56, 0, 0, 0, 0xF4, 0x01]))
        #expect(try await responses.value == [0x13, 0x07, 0x02, 0x00, 0x01, 0x00])
        #expect(controller.count(.leConnectionUpdate) == 0)
        await host.close()
    }

    @Test func aPolicyNarrowsTheIntervalToItsRangeOrRefuses() async throws {
        let policy = ConnectionParameterRequestPolicy(intervals: 24...40, maximumLatency: 4)
        let controller = HostScriptedController()
        let host = try await HostLEHostTests.start(controller) { $0.parameterRequests = policy }
        _ = try await HostLEHostTests.connect(host, controller, handle: 0x0040)
        // 7.5–100 ms asked: 30–50 ms applied.
        try await controller.acl(
            HostScriptedController.aclFrame(handle: 0x0040, cid: 5, [0x12, 0x08, 0x08, 0x00, 6, 0, 80, 0, 0, 0, 0xF4, 0x01]))
        let update = try await controller.next(.leConnectionUpdate)
        #expect(Array(update[0..<10]) == [0x40, 0x00, 24, 0, 40, 0, 0, 0, 0xF4, 0x01])
        // The link layer's request above the range, then with a latency over the limit: refused.
        try await controller.event(
            HostScriptedController.remoteParameterRequest(handle: 0x0040, min: 80, max: 160, latency: 0, timeout: 600))
        _ = try await controller.next(.leRemoteConnectionParameterRequestNegativeReply)
        try await controller.event(
            HostScriptedController.remoteParameterRequest(handle: 0x0040, min: 24, max: 40, latency: 10, timeout: 600))
        _ = try await controller.next(.leRemoteConnectionParameterRequestNegativeReply)
        #expect(host.statistics.refusedParameterRequests == 2)
        #expect(
            policy.decide(ConnectionParameterUpdateRequest(intervalMin: 6, intervalMax: 12, peripheralLatency: 0, timeoutMultiplier: 100))
                == .failure(.init(reason: "interval 7.5–15 ms outside 30–50 ms")))
        await host.close()
    }
}
