import TestSupport
import Bluetooth
import HCI
import Testing
import Security

@testable import L2CAP

@Suite struct LEConnectionDispatchTests {
    @Test func attFramesGoUpward() {
        var connection = LEL2CAPConnection(handle: 0x40, role: .central)
        let actions = connection.receive(leIncoming(handle: 0x40, cid: 4, [0x1B, 0x21, 0x00, 0x55]))
        #expect(actions == [.deliverATT([0x1B, 0x21, 0x00, 0x55])])
    }

    @Test func fragmentedATTFramesAreReassembled() {
        var connection = LEL2CAPConnection(handle: 0x40, role: .central)
        let payload = [0x0B] + (1...99).map { UInt8($0) }
        let pdu = leFrame(cid: 4, payload)
        var actions: [LEL2CAPConnection.Action] = []
        connection.receive(
            ACLDataPacket(handle: 0x40, packetBoundary: .firstFlushable, data: Array(pdu[..<27])), into: &actions)
        #expect(actions.isEmpty)
        #expect(connection.hasPartialFrame)
        connection.receive(
            ACLDataPacket(handle: 0x40, packetBoundary: .continuingFragment, data: Array(pdu[27..<54])), into: &actions)
        connection.receive(
            ACLDataPacket(handle: 0x40, packetBoundary: .continuingFragment, data: Array(pdu[54...])), into: &actions)
        #expect(actions == [.deliverATT(payload)])
        #expect(!connection.hasPartialFrame)
    }

    @Test func signalingRequestsAreAnsweredOnCID5() {
        var connection = LEL2CAPConnection(handle: 1, role: .central)
        let actions = connection.receive(leIncoming(handle: 1, cid: 5, leBytes("12 03 08 00 18 00 28 00 00 00 f4 01")))
        #expect(
            actions == [
                .send(L2CAPBasicFrame(channelID: 5, payload: leBytes("13 03 02 00 00 00")[...])),
                .updateConnectionParameters(
                    .init(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500)),
            ])
        let reject = connection.receive(leIncoming(handle: 1, cid: 5, leBytes("06 05 04 00 40 00 41 00")))
        #expect(
            reject.first == .send(L2CAPBasicFrame(channelID: 5, payload: leBytes("01 05 06 00 02 00 40 00 41 00")[...]))
        )
    }

    @Test func pairingIsRefusedOnCID6ByTheSecurityManager() {
        var connection = LEL2CAPConnection(handle: 1, role: .central, securityManager: SecurityManagerResponder())
        let actions = connection.receive(leIncoming(handle: 1, cid: 6, leBytes("0b 01")))
        #expect(
            actions == [
                .send(L2CAPBasicFrame(channelID: 6, payload: leBytes("05 05")[...])),
                .report(.securityManager("answered \(SecurityManagerCode.securityRequest) with Pairing Failed 0x05")),
            ])
        let stray = connection.receive(leIncoming(handle: 1, cid: 6, leBytes("05 08")))
        #expect(stray == [.report(.securityManager("ignored SMP \(SecurityManagerCode.pairingFailed)"))])
    }

    @Test func withoutASecurityManagerSMPIsDroppedAndReported() {
        var connection = LEL2CAPConnection(handle: 1, role: .central)
        let actions = connection.receive(leIncoming(handle: 1, cid: 6, leBytes("0b 01")))
        #expect(actions == [.report(.unsupportedChannel(cid: 6, length: 2))])
    }

    @Test(arguments: [UInt16(0x0000), 0x0001, 0x0003, 0x0007, 0x003F, 0x0040, 0xFFFF])
    func otherChannelsAreDroppedAndReported(cid: UInt16) {
        var connection = LEL2CAPConnection(handle: 1, role: .central)
        let actions = connection.receive(leIncoming(handle: 1, cid: cid, [1, 2, 3]))
        #expect(actions == [.report(.unsupportedChannel(cid: cid, length: 3))])
    }

    @Test func brokenFragmentSequencesAndStrayHandlesAreReported() {
        var connection = LEL2CAPConnection(handle: 1, role: .central)
        let orphan = connection.receive(ACLDataPacket(handle: 1, packetBoundary: .continuingFragment, data: [1, 2]))
        #expect(orphan == [.report(.reassemblyDrop(.continuationWithoutStart))])
        let stray = connection.receive(leIncoming(handle: 2, cid: 4, [0x1B]))
        #expect(stray == [.report(.otherHandle(2))])
        let pdu = leFrame(cid: 4, [0x1B, 0x01, 0x00, 0x02])
        _ = connection.receive(ACLDataPacket(handle: 1, packetBoundary: .firstFlushable, data: Array(pdu[..<5])))
        let hadPartial = connection.reset()
        let hadPartialAgain = connection.reset()
        #expect(hadPartial)
        #expect(!hadPartialAgain)
    }

    @Test func framesOverTheConfiguredLimitAreDropped() {
        var connection = LEL2CAPConnection(handle: 1, role: .central, maximumFrameLength: 517)
        let big = leFrame(cid: 4, [UInt8](repeating: 0, count: 518))
        let actions = connection.receive(
            ACLDataPacket(handle: 1, packetBoundary: .firstFlushable, data: Array(big[..<27])))
        #expect(actions == [.report(.reassemblyDrop(.tooLong(length: 518, limit: 517)))])
    }
}

@Suite struct LEMultiplexerTests {
    static func multiplexer(credits: Int = 4, queue: Int = 8) throws -> LEL2CAPMultiplexer {
        var mux = LEL2CAPMultiplexer(
            bufferSize: leBufferSize(count: credits), maximumQueuedFrames: queue, securityManager: SecurityManagerResponder())
        try mux.connectionOpened(handle: 0x40, role: .central)
        try mux.connectionOpened(handle: 0x41, role: .peripheral)
        return mux
    }

    @Test func attSendsAreFramedFragmentedAndTransmitted() throws {
        var mux = try Self.multiplexer()
        var actions: [LEL2CAPMultiplexer.Action] = []
        let sdu = [0x12, 0x21, 0x00] + [UInt8](repeating: 0xAB, count: 30)  // Write Request, 33 octets
        try mux.sendATT(sdu, handle: 0x40, into: &actions)
        let pdu = leFrame(cid: 4, sdu)
        #expect(
            actions == [
                .transmit(ACLDataPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: Array(pdu[..<27]))),
                .transmit(ACLDataPacket(handle: 0x40, packetBoundary: .continuingFragment, data: Array(pdu[27...]))),
            ])
    }

    @Test func responsesGoThroughFlowControl() throws {
        var mux = try Self.multiplexer(credits: 1)
        var actions: [LEL2CAPMultiplexer.Action] = []
        try mux.sendATT([0x0A, 0x03, 0x00], handle: 0x40, into: &actions)
        actions.removeAll()
        mux.receive(leIncoming(handle: 0x40, cid: 6, leBytes("01 03 00 09 10 03 03")), into: &actions)
        #expect(
            actions == [
                .report(
                    handle: 0x40,
                    .securityManager("answered \(SecurityManagerCode.pairingRequest) with Pairing Failed 0x05"))
            ])
        actions.removeAll()
        mux.receive(.numberOfCompletedPackets(leCompleted((0x40, 1))), into: &actions)
        #expect(
            actions == [
                .transmit(
                    ACLDataPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: leBytes("02 00 06 00 05 05")))
            ])
    }

    @Test func parameterUpdatesAreAcceptedOnlyAsCentral() throws {
        var mux = try Self.multiplexer()
        var actions: [LEL2CAPMultiplexer.Action] = []
        let request = leBytes("12 03 08 00 18 00 28 00 00 00 f4 01")
        mux.receive(leIncoming(handle: 0x40, cid: 5, request), into: &actions)
        #expect(
            actions == [
                .updateConnectionParameters(
                    handle: 0x40, .init(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500)),
                .transmit(
                    ACLDataPacket(
                        handle: 0x40, packetBoundary: .firstNonFlushable,
                        data: leFrame(cid: 5, leBytes("13 03 02 00 00 00")))),
            ])
        actions.removeAll()
        mux.receive(leIncoming(handle: 0x41, cid: 5, request), into: &actions)
        #expect(
            actions.contains(
                .transmit(
                    ACLDataPacket(
                        handle: 0x41, packetBoundary: .firstNonFlushable,
                        data: leFrame(cid: 5, leBytes("01 03 02 00 00 00"))))))
        #expect(!actions.contains { if case .updateConnectionParameters = $0 { true } else { false } })
    }

    @Test func disconnectionFreesCreditsForOthersAndReportsTheDrop() throws {
        var mux = try Self.multiplexer(credits: 2)
        var actions: [LEL2CAPMultiplexer.Action] = []
        for marker: UInt8 in 1...3 { try mux.sendATT([0x52, marker, 0x00, 0x01], handle: 0x40, into: &actions) }
        try mux.sendATT([0x52, 0x09, 0x00, 0x01], handle: 0x41, into: &actions)
        #expect(actions.count == 2)
        actions.removeAll()
        let event = DisconnectionCompleteEvent(
            status: .success, connectionHandle: 0x40, reason: HCIStatus(rawValue: 0x08))
        mux.receive(.disconnectionComplete(event), into: &actions)
        #expect(
            actions == [
                .connectionClosed(
                    handle: 0x40, reason: HCIStatus(rawValue: 0x08),
                    removal: .init(
                        handle: 0x40, returnedCredits: 2, droppedFrames: 1, droppedOctets: 8, partiallySent: false)),
                .transmit(
                    ACLDataPacket(
                        handle: 0x41, packetBoundary: .firstNonFlushable,
                        data: leFrame(cid: 4, [0x52, 0x09, 0x00, 0x01]))),
            ])
        #expect(!mux.isOpen(handle: 0x40))
        actions.removeAll()
        mux.receive(leIncoming(handle: 0x40, cid: 4, [0x1B]), into: &actions)
        #expect(actions == [.report(handle: 0x40, .unknownConnection)])
        #expect(throws: L2CAPError.unknownConnection(handle: 0x40)) {
            try mux.sendATT([0x0A, 0x01, 0x00], handle: 0x40, into: &actions)
        }
    }

    @Test func failedDisconnectionAndOtherEventsChangeNothing() throws {
        var mux = try Self.multiplexer()
        var actions: [LEL2CAPMultiplexer.Action] = []
        let failed = DisconnectionCompleteEvent(
            status: HCIStatus(rawValue: 0x0C), connectionHandle: 0x40, reason: HCIStatus(rawValue: 0x13))
        mux.receive(.disconnectionComplete(failed), into: &actions)
        mux.receive(.hardwareError(HardwareErrorEvent(hardwareCode: 1)), into: &actions)
        #expect(actions.isEmpty)
        #expect(mux.isOpen(handle: 0x40))
    }

    @Test func bogusCompletionsAreReported() throws {
        var mux = try Self.multiplexer()
        var actions: [LEL2CAPMultiplexer.Action] = []
        mux.completed(leCompleted((0x99, 2)), into: &actions)
        #expect(actions == [.ignoredCompletions([.init(handle: 0x99, count: 2, reason: .unknownHandle)])])
        #expect(mux.flowControl.availableCredits == 4)
    }

    @Test func misuseIsRefused() throws {
        var mux = try Self.multiplexer(queue: 1)
        var actions: [LEL2CAPMultiplexer.Action] = []
        #expect(throws: L2CAPError.connectionExists(handle: 0x40)) {
            try mux.connectionOpened(handle: 0x40, role: .central)
        }
        #expect(throws: L2CAPError.self) { try mux.connectionOpened(handle: 0x0F00, role: .central) }
        #expect(throws: L2CAPError.self) { try mux.sendATT([], handle: 0x40, into: &actions) }
        #expect(throws: L2CAPError.self) {
            try mux.sendATT([UInt8](repeating: 0, count: 65_536), handle: 0x40, into: &actions)
        }
        #expect(mux.openHandles == [0x40, 0x41])
    }
}
