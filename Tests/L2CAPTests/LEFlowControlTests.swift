import Bluetooth
import HCI
import Testing

@testable import L2CAP

@Suite struct LEACLBufferSizeTests {
    @Test func leValuesAreUsedWhenNonZero() throws {
        let size = try ACLBufferSize(
            leACLDataPacketLength: 251, totalNumLEACLDataPackets: 8, aclDataPacketLength: 1021,
            totalNumACLDataPackets: 4)
        #expect(size.packetLength == 251)
        #expect(size.packetCount == 8)
        #expect(!size.isShared)
        #expect(!ACLBufferSize.needsSharedBufferSize(leACLDataPacketLength: 251, totalNumLEACLDataPackets: 8))
    }

    @Test(arguments: [(UInt16(0), UInt8(0)), (UInt16(27), UInt8(0)), (UInt16(0), UInt8(5))])
    func zeroLEValuesFallBackToReadBufferSize(length: UInt16, count: UInt8) throws {
        #expect(ACLBufferSize.needsSharedBufferSize(leACLDataPacketLength: length, totalNumLEACLDataPackets: count))
        let size = try ACLBufferSize(
            leACLDataPacketLength: length, totalNumLEACLDataPackets: count, aclDataPacketLength: 1021,
            totalNumACLDataPackets: 6)
        #expect(size == (try ACLBufferSize(packetLength: 1021, packetCount: 6, isShared: true)))
    }

    @Test func zeroLEValuesWithoutFallbackThrow() {
        #expect(throws: L2CAPError.self) {
            try ACLBufferSize(
                leACLDataPacketLength: 0, totalNumLEACLDataPackets: 0, aclDataPacketLength: nil,
                totalNumACLDataPackets: nil)
        }
    }

    @Test(arguments: [(0, 1), (26, 4), (27, 0), (65_536, 1)])
    func unusableValuesThrow(length: Int, count: Int) {
        #expect(throws: L2CAPError.self) { try ACLBufferSize(packetLength: length, packetCount: count) }
    }

    @Test func sharedBuffersTooSmallForLEThrow() {
        #expect(throws: L2CAPError.self) {
            try ACLBufferSize(
                leACLDataPacketLength: 0, totalNumLEACLDataPackets: 0, aclDataPacketLength: 20,
                totalNumACLDataPackets: 4)
        }
    }
}

@Suite struct LEACLFlowControlTests {
    static func pdu(_ marker: UInt8, payload: Int = 3) -> [UInt8] {
        leFrame(cid: 4, [marker] + [UInt8](repeating: marker, count: payload - 1))
    }

    static func drain(_ flow: inout ACLFlowControl) -> [ACLDataPacket] {
        var packets: [ACLDataPacket] = []
        flow.dequeueAll(into: &packets)
        return packets
    }

    @Test func creditsExhaustedQueuesAndCompletionsReleaseInOrder() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 2))
        try flow.addConnection(handle: 0x40)
        for marker: UInt8 in 1...4 { try flow.enqueue(pdu: Self.pdu(marker), handle: 0x40) }

        let first = Self.drain(&flow)
        #expect(first.map(\.data) == [Self.pdu(1), Self.pdu(2)])
        #expect(flow.availableCredits == 0)
        #expect(flow.packetsInFlight(handle: 0x40) == 2)
        #expect(flow.queuedFrames(handle: 0x40) == 2)
        #expect(flow.dequeue() == nil, "no credit, nothing goes")
        #expect(!flow.canSend)

        let completion = flow.completed(leCompleted((0x40, 1)))
        #expect(completion == .init(returnedCredits: 1, ignored: []))
        #expect(Self.drain(&flow).map(\.data) == [Self.pdu(3)])
        _ = flow.completed(leCompleted((0x40, 2)))
        #expect(Self.drain(&flow).map(\.data) == [Self.pdu(4)])
        _ = flow.completed(leCompleted((0x40, 1)))
        #expect(flow.availableCredits == 2)
        #expect(flow.packetsInFlight(handle: 0x40) == 0)
    }

    @Test func aFragmentedPDUTakesOneCreditPerFragment() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 2))
        try flow.addConnection(handle: 1)
        let pdu = Self.pdu(9, payload: 60)  // 64 octets: 27 + 27 + 10
        try flow.enqueue(pdu: pdu, handle: 1)
        let sent = Self.drain(&flow)
        #expect(sent.map(\.packetBoundary) == [.firstNonFlushable, .continuingFragment])
        #expect(sent.map(\.data.count) == [27, 27])
        #expect(flow.queuedFrames(handle: 1) == 1, "the partly sent PDU stays at the head")
        _ = flow.completed(leCompleted((1, 2)))
        let rest = Self.drain(&flow)
        #expect(rest.map(\.packetBoundary) == [.continuingFragment])
        #expect((sent + rest).flatMap(\.data) == pdu)
        #expect(flow.queuedFrames(handle: 1) == 0)
    }

    @Test func disconnectionReturnsCreditsAndDropsTheQueue() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 3))
        try flow.addConnection(handle: 1)
        try flow.addConnection(handle: 2)
        try flow.enqueue(pdu: Self.pdu(1, payload: 40), handle: 1)  // 44 octets: 2 fragments
        try flow.enqueue(pdu: Self.pdu(2), handle: 1)
        try flow.enqueue(pdu: Self.pdu(3), handle: 1)
        #expect(flow.dequeue()?.handle == 1)
        #expect(flow.dequeue()?.handle == 1)
        #expect(flow.dequeue()?.handle == 1)
        #expect(flow.availableCredits == 0)
        try flow.enqueue(pdu: Self.pdu(7), handle: 2)
        #expect(flow.dequeue() == nil)

        let removal = flow.removeConnection(handle: 1)
        #expect(
            removal == .init(handle: 1, returnedCredits: 3, droppedFrames: 1, droppedOctets: 7, partiallySent: false))
        #expect(flow.availableCredits == 3)
        #expect(!flow.isTracking(handle: 1))
        #expect(flow.removeConnection(handle: 1) == nil)
        #expect(Self.drain(&flow).map(\.data) == [Self.pdu(7)], "the other connection gets the freed credits")
        _ = flow.completed(leCompleted((1, 3)))
        #expect(flow.availableCredits == 2, "completions for the gone handle are ignored")
    }

    @Test func disconnectionMidPDUReportsAPartialSend() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 1))
        try flow.addConnection(handle: 5)
        try flow.enqueue(pdu: Self.pdu(1, payload: 50), handle: 5)  // 54 octets
        #expect(flow.dequeue()?.data.count == 27)
        let removal = flow.removeConnection(handle: 5)
        #expect(
            removal == .init(handle: 5, returnedCredits: 1, droppedFrames: 1, droppedOctets: 27, partiallySent: true))
    }

    @Test func roundRobinAlternatesPacketByPacket() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 20))
        try flow.addConnection(handle: 0xA)
        try flow.addConnection(handle: 0xB)
        for marker: UInt8 in 1...3 { try flow.enqueue(pdu: Self.pdu(marker), handle: 0xA) }
        try flow.enqueue(pdu: Self.pdu(0x10, payload: 50), handle: 0xB)  // 2 fragments
        try flow.enqueue(pdu: Self.pdu(0x11), handle: 0xB)
        let sent = Self.drain(&flow)
        #expect(sent.map(\.handle) == [0xA, 0xB, 0xA, 0xB, 0xA, 0xB])
        #expect(
            sent.filter { $0.handle == 0xB }.map(\.packetBoundary) == [
                .firstNonFlushable, .continuingFragment, .firstNonFlushable,
            ])
        #expect(sent.filter { $0.handle == 0xA }.map(\.data) == [Self.pdu(1), Self.pdu(2), Self.pdu(3)])
    }

    @Test func roundRobinSharesScarceCredits() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 1))
        for handle: UInt16 in 1...3 { try flow.addConnection(handle: handle) }
        for handle: UInt16 in 1...3 {
            for marker: UInt8 in 1...2 { try flow.enqueue(pdu: Self.pdu(marker), handle: handle) }
        }
        var order: [UInt16] = []
        while let packet = flow.dequeue() {
            order.append(packet.handle)
            _ = flow.completed(leCompleted((packet.handle, 1)))
        }
        #expect(order == [1, 2, 3, 1, 2, 3])
    }

    @Test func roundRobinSurvivesRemovingTheNextConnection() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 10))
        for handle: UInt16 in 1...3 { try flow.addConnection(handle: handle) }
        for handle: UInt16 in 1...3 {
            for marker: UInt8 in 1...2 { try flow.enqueue(pdu: Self.pdu(marker), handle: handle) }
        }
        #expect(flow.dequeue()?.handle == 1)
        _ = flow.removeConnection(handle: 2)
        #expect(Self.drain(&flow).map(\.handle) == [3, 1, 3])
    }

    @Test func bogusCompletionsAreIgnored() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 4))
        try flow.addConnection(handle: 1)
        try flow.addConnection(handle: 2)
        for marker: UInt8 in 1...2 { try flow.enqueue(pdu: Self.pdu(marker), handle: 1) }
        try flow.enqueue(pdu: Self.pdu(3), handle: 2)
        #expect(Self.drain(&flow).count == 3)
        #expect(flow.availableCredits == 1)

        let completion = flow.completed(leCompleted((0x0EFF, 9), (1, 5), (2, 0), (2, 1)))
        #expect(completion.returnedCredits == 3)
        #expect(
            completion.ignored == [
                .init(handle: 0x0EFF, count: 9, reason: .unknownHandle),
                .init(handle: 1, count: 3, reason: .moreThanInFlight),
            ])
        #expect(flow.availableCredits == 4, "never more than the controller's buffers")
        let again = flow.completed(leCompleted((1, 1), (2, 1)))
        #expect(again.returnedCredits == 0)
        #expect(flow.availableCredits == 4)
    }

    @Test func aFullQueueRefusesWithATypedError() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 1), maximumQueuedFrames: 2)
        try flow.addConnection(handle: 3)
        try flow.enqueue(pdu: Self.pdu(1), handle: 3)
        try flow.enqueue(pdu: Self.pdu(2), handle: 3)
        #expect(throws: L2CAPError.queueFull(handle: 3, limit: 2)) { try flow.enqueue(pdu: Self.pdu(3), handle: 3) }
        #expect(flow.dequeue() != nil)
        try flow.enqueue(pdu: Self.pdu(3), handle: 3)
        #expect(flow.queuedFrames(handle: 3) == 2)
    }

    @Test func misuseIsRefused() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 1))
        #expect(throws: L2CAPError.unknownConnection(handle: 9)) { try flow.enqueue(pdu: Self.pdu(1), handle: 9) }
        try flow.addConnection(handle: 9)
        #expect(throws: L2CAPError.connectionExists(handle: 9)) { try flow.addConnection(handle: 9) }
        #expect(throws: L2CAPError.self) { try flow.enqueue(pdu: [], handle: 9) }
    }

    @Test func longQueuesCompactWithoutLosingOrder() throws {
        var flow = ACLFlowControl(bufferSize: leBufferSize(count: 1), maximumQueuedFrames: 64)
        try flow.addConnection(handle: 1)
        var expected: [[UInt8]] = []
        var sent: [[UInt8]] = []
        for round in 0..<5 {
            for i in 0..<40 {
                let pdu = Self.pdu(UInt8(truncatingIfNeeded: round * 40 + i))
                try flow.enqueue(pdu: pdu, handle: 1)
                expected.append(pdu)
            }
            for _ in 0..<40 {
                guard let packet = flow.dequeue() else {
                    Issue.record("a credit and a queued PDU, yet nothing to send")
                    return
                }
                sent.append(packet.data)
                _ = flow.completed(leCompleted((1, 1)))
            }
        }
        #expect(sent == expected)
    }
}
