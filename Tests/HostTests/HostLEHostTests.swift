import Host
import Bluetooth
import HCI
import L2CAP
import Testing
import TestSupport

/// `LEHost` against a scripted controller: initialisation, connect / cancel / failure,
/// connection complete matching, queued connects, peer parameter requests, L2CAP updates,
/// disconnection, malformed packets, scanning start and stop.
@Suite("Host: LEHost with a scripted controller")
struct HostLEHostTests {
    static let peer = BluetoothAddress("DE:AD:BE:EF:0B:F1")!
    static let other = BluetoothAddress("54:6C:0E:12:34:56")!

    static func start(_ controller: HostScriptedController, configure: (inout LEHost.Configuration) -> Void = { _ in })
        async throws -> LEHost
    {
        var configuration = LEHost.Configuration()
        // Generous: not under test, and the whole suite runs in parallel beside Bumble on 2 cores.
        configuration.commandTimeout = .seconds(30 * testTimeoutScale)
        configure(&configuration)
        return try await LEHost.start(transport: controller.hostTransport, configuration: configuration)
    }

    /// Connects to `peer` (random) and answers with a Connection Complete for `handle`.
    static func connect(_ host: LEHost, _ controller: HostScriptedController, handle: UInt16) async throws
        -> LEConnection
    {
        async let connection = host.connect(to: peer, type: .random, timeout: .seconds(5))
        _ = try await controller.next(.leCreateConnection)
        try await controller.event(
            HostScriptedController.connectionComplete(handle: handle, peer: peer, peerType: 0x01))
        return try await connection
    }

    @Test func initialisationEnablesTheEventsTheHostNeeds() async throws {
        let controller = HostScriptedController()
        async let started = Self.start(controller)
        let eventMask = try await controller.next(.setEventMask)
        let leEventMask = try await controller.next(.leSetEventMask)
        let host = try await started
        let mask = eventMask.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        #expect(mask & (1 << 61) != 0)  // LE Meta
        #expect(mask & (1 << 4) != 0)  // Disconnection Complete
        let le = leEventMask.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        // Connection Complete, Advertising Report, Connection Update Complete, Remote Connection
        // Parameter Request, Enhanced Connection Complete v1, Directed and Extended Advertising
        // Reports, Enhanced Connection Complete v2.
        for bit: UInt64 in [0, 1, 2, 5, 9, 10, 12, 40] { #expect(le & (1 << bit) != 0, "LE event mask bit \(bit)") }
        #expect(host.info.aclBuffers.packetLength == 27)
        #expect(host.info.aclBuffers.packetCount == 4)
        #expect(!host.usesExtendedCommands)
        await host.close()
    }

    @Test func connectTimeoutSendsCancelAndWaitsForTheCancelledCompletion() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        let attempt = Task { try await host.connect(to: Self.peer, type: .random, timeout: .milliseconds(100)) }
        let create = try await controller.next(.leCreateConnection)
        #expect(create[5] == 0x01)  // Peer_Address_Type random
        #expect(Array(create[6..<12]) == Self.peer.littleEndianBytes)
        _ = try await controller.next(.leCreateConnectionCancel)
        // The cancelled attempt completes with Unknown Connection Identifier.
        try await controller.event(
            HostScriptedController.connectionComplete(status: 0x02, handle: 0, peer: .zero, peerType: 0))
        await #expect(throws: LEHostError.connectTimeout(address: Self.peer, timeout: .milliseconds(100))) {
            _ = try await attempt.value
        }
        #expect(await host.activeConnections.isEmpty)
        await host.close()
    }

    @Test func theWaitForTheCancelledCompletionIsBounded() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller) { $0.cancelTimeout = .milliseconds(100) }
        await #expect(throws: LEHostError.timeout("the cancelled LE Connection Complete for \(Self.peer)")) {
            _ = try await host.connect(to: Self.peer, type: .random, timeout: .milliseconds(50))
        }
        await host.close()
    }

    @Test func cancellingTheConnectingTaskCancelsTheAttempt() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        let attempt = Task { try await host.connect(to: Self.peer, type: .random, timeout: .seconds(30)) }
        _ = try await controller.next(.leCreateConnection)
        attempt.cancel()
        _ = try await controller.next(.leCreateConnectionCancel)
        try await controller.event(
            HostScriptedController.connectionComplete(status: 0x02, handle: 0, peer: .zero, peerType: 0))
        let result = await attempt.result
        #expect(throws: LEHostError.connectCancelled(address: Self.peer)) { try result.get() }
        await host.close()
    }

    @Test func aFailedCompletionIsReported() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        let attempt = Task { try await host.connect(to: Self.peer, type: .random, timeout: .seconds(5)) }
        _ = try await controller.next(.leCreateConnection)
        try await controller.event(
            HostScriptedController.connectionComplete(status: 0x3E, handle: 0, peer: .zero, peerType: 0))
        await #expect(throws: LEHostError.connectionFailed(address: Self.peer, status: HCIStatus(rawValue: 0x3E))) {
            _ = try await attempt.value
        }
        await host.close()
    }

    @Test func extendedInitiatingMatchesEnhancedConnectionCompleteV2() async throws {
        let controller = HostScriptedController(extended: true)
        let host = try await Self.start(controller)
        #expect(host.usesExtendedCommands)
        async let attempt = host.connect(to: Self.other, type: .public, timeout: .seconds(5))
        let create = try await controller.next(.leExtendedCreateConnectionV1)
        #expect(create[2] == 0x00)  // Peer_Address_Type public
        #expect(create[9] == 0x01)  // Initiating_PHYs: LE 1M
        // A completion for another peer (a stray peripheral-role link) is not ours: dropped.
        try await controller.event(
            HostScriptedController.enhancedConnectionCompleteV2(handle: 0x0070, peer: Self.peer, peerType: 0x01))
        let stray = try await controller.next(.disconnect)
        #expect(stray == [0x70, 0x00, 0x13])
        try await controller.event(
            HostScriptedController.enhancedConnectionCompleteV2(
                handle: 0x0041, peer: Self.other, peerType: 0x00, interval: 24))
        let connection = try await attempt
        #expect(connection.handle == 0x0041)
        #expect(connection.peerAddress == Self.other)
        #expect(connection.peerAddressType == .public)
        #expect(connection.parameters.interval == 24)
        #expect(host.statistics.unexpectedConnections == 1)
        await host.close()
    }

    @Test func connectsQueueBehindThePendingOne() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        async let first = host.connect(to: Self.peer, type: .random, timeout: .seconds(5))
        _ = try await controller.next(.leCreateConnection)
        async let second = host.connect(to: Self.other, type: .public, timeout: .seconds(5))
        // (That the second waits for the first is pinned down without timing in HostCoreTests.)
        try await controller.event(
            HostScriptedController.connectionComplete(handle: 1, peer: Self.peer, peerType: 0x01))
        let secondCreate = try await controller.next(.leCreateConnection)
        #expect(Array(secondCreate[6..<12]) == Self.other.littleEndianBytes)
        try await controller.event(
            HostScriptedController.connectionComplete(handle: 2, peer: Self.other, peerType: 0x00))
        let (a, b) = try await (first, second)
        #expect([a.handle, b.handle] == [1, 2])
        #expect(await host.activeConnections.count == 2)
        await host.close()
    }

    @Test func dataReachesTheRightChannelAndADisconnectionFailsIt() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        let connection = try await Self.connect(host, controller, handle: 0x0040)
        // ATT Handle Value Notification on the ATT fixed channel.
        try await controller.acl(HostScriptedController.aclFrame(handle: 0x0040, cid: 4, [0x1B, 0x03, 0x00, 0x2A]))
        let incoming = connection.channel.incoming
        let first = try await withTimeout(5) { () -> [UInt8]? in
            var iterator = incoming.makeAsyncIterator()
            return try await iterator.next()
        }
        #expect(first == [0x1B, 0x03, 0x00, 0x2A])
        try await controller.event(HostScriptedController.disconnectionComplete(handle: 0x0040, reason: 0x08))
        let reason = try await withTimeout(5) { () -> HCIStatus? in
            var reasons = connection.disconnected.makeAsyncIterator()
            return await reasons.next()
        }
        #expect(reason == .connectionTimeout)
        #expect(connection.channel.closedError == .disconnected(handle: 0x0040, reason: .connectionTimeout))
        #expect(throws: L2CAPError.disconnected(handle: 0x0040, reason: .connectionTimeout)) {
            try connection.channel.sendNow([0x0A, 0x03, 0x00])
        }
        #expect(await host.activeConnections.isEmpty)
        await host.close()
    }

    @Test func remoteParameterRequestsAreRepliedWithinTheSpecRangesElseRefused() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        _ = try await Self.connect(host, controller, handle: 0x0040)
        try await controller.event(
            HostScriptedController.remoteParameterRequest(handle: 0x0040, min: 24, max: 40, latency: 0, timeout: 400))
        let reply = try await controller.next(.leRemoteConnectionParameterRequestReply)
        #expect(reply == [0x40, 0x00, 24, 0, 40, 0, 0, 0, 0x90, 0x01, 0, 0, 0, 0])
        try await controller.event(
            HostScriptedController.remoteParameterRequest(handle: 0x0040, min: 3200, max: 3200, latency: 0, timeout: 10)
        )
        let refusal = try await controller.next(.leRemoteConnectionParameterRequestNegativeReply)
        #expect(refusal == [0x40, 0x00, 0x3B])  // Unacceptable Connection Parameters
        #expect(host.statistics.acceptedParameterRequests == 1)
        #expect(host.statistics.refusedParameterRequests == 1)
        await host.close()
    }

    @Test func anL2CAPParameterUpdateRequestBecomesLEConnectionUpdate() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        let connection = try await Self.connect(host, controller, handle: 0x0040)
        // LE signaling: Connection Parameter Update Request, identifier 7: 50–70 ms, latency 0, 5 s.
        try await controller.acl(
            HostScriptedController.aclFrame(
                handle: 0x0040, cid: 5, [0x12, 0x07, 0x08, 0x00, 40, 0, 56, 0, 0, 0, 0xF4, 0x01]))
        let update = try await controller.next(.leConnectionUpdate)
        #expect(Array(update[0..<10]) == [0x40, 0x00, 40, 0, 56, 0, 0, 0, 0xF4, 0x01])
        try await controller.event(
            HostScriptedController.connectionUpdateComplete(handle: 0x0040, interval: 56, latency: 0, timeout: 500))
        let applied = try await withTimeout(5) { () -> LEConnection.Parameters? in
            var updates = connection.parameterUpdates.makeAsyncIterator()
            return await updates.next()
        }
        #expect(applied == LEConnection.Parameters(interval: 56, peripheralLatency: 0, supervisionTimeout: 500))
        await host.close()
    }

    /// Issue 21: a controller that cannot initiate while it scans (Command Disallowed): the scan
    /// pauses for the attempt, the connection is made, the scan resumes — its stream never ends.
    @Test func scanningPausesForAConnectionTheControllerCannotMakeWhileScanning() async throws {
        let controller = HostScriptedController(refusingCreateConnectionWhileScanning: true)
        let host = try await Self.start(controller)
        let scan = host.scan()
        let consumer = Task { () -> Int in
            var events = 0
            do {
                for try await _ in scan {
                    events += 1
                    break  // the report after the resume
                }
            } catch {}
            return events
        }
        _ = try await controller.next(.leSetScanEnable)
        let peer = BluetoothAddress("00:11:22:33:44:55")!
        async let connected = host.connect(to: peer, type: .public, timeout: .seconds(5))
        _ = try await controller.next(.leCreateConnection)
        let paused = try await controller.next(.leSetScanEnable)
        #expect(paused.first == 0x00, "scanning disabled for the attempt")
        _ = try await controller.next(.leCreateConnection)
        try await controller.event(HostScriptedController.connectionComplete(handle: 0x0040, peer: peer, peerType: 0x00))
        let connection = try await connected
        #expect(connection.handle == 0x0040)
        let resumed = try await controller.next(.leSetScanEnable)
        #expect(resumed.first == 0x01, "scanning enabled again after the attempt")
        #expect(host.statistics.scanPauses == 1)
        // An advertising report after the resume still reaches the scan.
        try await controller.event([0x3E, 12, 0x02, 0x01, 0x00, 0x00] + peer.littleEndianBytes + [0x00, 0xC5])
        let events = try await withTimeout(30) { await consumer.value }
        #expect(events == 1)
        await host.close()
    }

    /// Issue 20, item 4: what the controller reports of a link — parameter updates, LE Data Length
    /// Change, LE PHY Update Complete — reaches the connection's `linkEvents`, in order; a failed
    /// PHY update and another handle's events do not.
    @Test func linkEventsReportParametersDataLengthAndPHY() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        let connection = try await Self.connect(host, controller, handle: 0x0040)
        // LE Data Length Change: TX 251 octets / 2120 µs, RX 251 / 2120.
        try await controller.event([0x3E, 11, 0x07] + HostScriptedController.le16(0x0040) + [0xFB, 0x00, 0x48, 0x08, 0xFB, 0x00, 0x48, 0x08])
        // LE PHY Update Complete for another handle, then a failed one, then 2M both ways.
        try await controller.event([0x3E, 6, 0x0C, 0x00] + HostScriptedController.le16(0x0041) + [0x02, 0x02])
        try await controller.event([0x3E, 6, 0x0C, 0x1A] + HostScriptedController.le16(0x0040) + [0x02, 0x02])
        try await controller.event([0x3E, 6, 0x0C, 0x00] + HostScriptedController.le16(0x0040) + [0x02, 0x03])
        try await controller.event(
            HostScriptedController.connectionUpdateComplete(handle: 0x0040, interval: 24, latency: 4, timeout: 600))
        let events = try await withTimeout(5) { () -> [LEConnection.LinkEvent] in
            var iterator = connection.linkEvents.makeAsyncIterator()
            var events: [LEConnection.LinkEvent] = []
            while events.count < 3, let event = await iterator.next() { events.append(event) }
            return events
        }
        #expect(
            events == [
                .dataLengthChanged(maxTXOctets: 251, maxTXTime: 2120, maxRXOctets: 251, maxRXTime: 2120),
                .phyUpdated(tx: .le2M, rx: .leCoded),
                .parametersUpdated(LEConnection.Parameters(interval: 24, peripheralLatency: 4, supervisionTimeout: 600)),
            ])
        await host.close()
    }

    @Test func hostInitiatedUpdateAndDisconnectWaitForTheirEvents() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller) { $0.disconnectTimeout = .milliseconds(200) }
        let connection = try await Self.connect(host, controller, handle: 0x0040)
        async let updated = host.updateParameters(
            connection,
            LEConnectionParameters(connectionIntervalMin: 6, connectionIntervalMax: 12, supervisionTimeout: 100))
        _ = try await controller.next(.leConnectionUpdate)
        try await controller.event(
            HostScriptedController.connectionUpdateComplete(handle: 0x0040, interval: 12, latency: 0, timeout: 100))
        #expect(
            try await updated == LEConnection.Parameters(interval: 12, peripheralLatency: 0, supervisionTimeout: 100))

        // A Disconnection Complete that never comes: bounded.
        await #expect(throws: LEHostError.timeout("Disconnection Complete for handle 0x40")) {
            try await host.disconnect(connection)
        }
        async let reason = host.disconnect(connection, reason: .remoteUserTerminatedConnection)
        let disconnect = try await controller.next(.disconnect)
        #expect(disconnect == [0x40, 0x00, 0x13])
        try await controller.event(HostScriptedController.disconnectionComplete(handle: 0x0040, reason: 0x16))
        #expect(try await reason == .connectionTerminatedByLocalHost)
        await host.close()
    }

    @Test func malformedPacketsAreCountedAndDoNotStopTheHost() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        let connection = try await Self.connect(host, controller, handle: 0x0040)
        try await controller.acl([0x40, 0x20, 0x09, 0x00, 0x01])  // Data_Total_Length past the end
        try await controller.event([0x05, 0x02, 0x00])  // Disconnection Complete cut short
        try await controller.acl(HostScriptedController.aclFrame(handle: 0x0040, cid: 4, [0x1B, 0x03, 0x00, 0x01]))
        let incoming = connection.channel.incoming
        let pdu = try await withTimeout(5) { () -> [UInt8]? in
            var iterator = incoming.makeAsyncIterator()
            return try await iterator.next()
        }
        #expect(pdu == [0x1B, 0x03, 0x00, 0x01])
        #expect(host.statistics.malformedACLPackets == 1)
        #expect(host.statistics.malformedEvents == 1)
        #expect(connection.isConnected)
        await host.close()
    }

    @Test func scanningStartsWithTheStreamAndStopsWhenItEnds() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        let scanning = Task { () -> DiscoveredDevice? in
            for try await event in host.scan(
                LEScanParameters(active: false, filterDuplicates: true, interval: 0x20, window: 0x10))
            {
                if case .discovered(let device) = event { return device }
            }
            return nil
        }
        let parameters = try await controller.next(.leSetScanParameters)
        #expect(parameters == [0x00, 0x20, 0x00, 0x10, 0x00, 0x00, 0x00])
        #expect(try await controller.next(.leSetScanEnable) == [0x01, 0x01])
        // ADV_IND from the peer: flags + a shortened name.
        try await controller.event(
            [0x3E, 20, 0x02, 0x01, 0x00, 0x01] + Self.peer.littleEndianBytes + [8, 0x02, 0x01, 0x06, 0x04, 0x08]
                + Array("UAR".utf8) + [0xC4])
        let device = try await withTimeout(5) { try await scanning.value }
        #expect(device?.name == "UAR")
        #expect(device?.rssi == -60)
        #expect(try await controller.next(.leSetScanEnable) == [0x00, 0x00])
        // A second scan may start once the first stopped; one at a time.
        await host.close()
        await #expect(throws: LEHostError.self) {
            for try await _ in host.scan() {}
        }
    }

    @Test func closingFailsWhatWaits() async throws {
        let controller = HostScriptedController()
        let host = try await Self.start(controller)
        let attempt = Task { try await host.connect(to: Self.peer, type: .random, timeout: .seconds(30)) }
        _ = try await controller.next(.leCreateConnection)
        controller.close()
        await #expect(throws: LEHostError.self) { _ = try await attempt.value }
        await #expect(throws: LEHostError.self) {
            _ = try await host.connect(to: Self.peer, type: .random, timeout: .seconds(1))
        }
    }
}
