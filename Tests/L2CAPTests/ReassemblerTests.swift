import Testing
import Bluetooth
@testable import L2CAP

@Suite struct L2CAPReassemblerTests {
    /// An ATT Read Response of 30 octets on CID 4, as one L2CAP frame.
    static let frame: [UInt8] = L2CAPBasicFrame(channelID: 4, payload: ArraySlice([0x0B] + (1...29).map { UInt8($0) })).encode()

    @Test func wholeFrameInOneFragmentIsNotCopied() throws {
        var reassembler = L2CAPReassembler()
        let output = reassembler.receive(handle: 0x40, packetBoundary: 0b10, data: Self.frame[...])
        let frame = try #require(output.frame)
        #expect(frame.channelID == 4)
        #expect(Array(frame.payload) == Array(Self.frame[4...]))
        #expect(output.drop == nil)
        #expect(reassembler.partialFrameCount == 0)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 27, 33])
    func fragmentsAtEverySplit(firstLength: Int) throws {
        var reassembler = L2CAPReassembler()
        var rest = Self.frame[...]
        var boundary: UInt8 = 0b00
        var result: L2CAPBasicFrame?
        var size = firstLength
        while !rest.isEmpty {
            let chunk = rest.prefix(size)
            rest = rest.dropFirst(chunk.count)
            let output = reassembler.receive(handle: 1, packetBoundary: boundary, data: chunk)
            #expect(output.drop == nil)
            if let frame = output.frame { result = frame; #expect(rest.isEmpty) }
            boundary = 0b01
            size = 7
        }
        #expect(try #require(result).payload.elementsEqual(Self.frame[4...]))
        #expect(reassembler.partialFrameCount == 0)
    }

    @Test func interleavedHandlesStaySeparate() throws {
        var reassembler = L2CAPReassembler()
        let other = L2CAPBasicFrame(channelID: 5, payload: [0x12, 0x01, 0x02, 0x03]).encode()
        do { let r = reassembler.receive(handle: 1, packetBoundary: 0b10, data: Self.frame[..<10]); #expect(r.frame == nil) }
        do { let r = reassembler.receive(handle: 2, packetBoundary: 0b10, data: other[..<3]); #expect(r.frame == nil) }
        let a = reassembler.receive(handle: 1, packetBoundary: 0b01, data: Self.frame[10...])
        let b = reassembler.receive(handle: 2, packetBoundary: 0b01, data: other[3...])
        #expect(a.frame?.channelID == 4)
        #expect(b.frame?.channelID == 5)
        #expect(Array(try #require(b.frame).payload) == [0x12, 0x01, 0x02, 0x03])
    }

    /// Eight handles with frames in flight at once, fed in turn and completed in an order that
    /// takes partial frames out from the front, the middle and the end of what is held; each
    /// frame comes back whole and only on its own handle.
    @Test func manyHandlesCompleteInAnyOrder() throws {
        var reassembler = L2CAPReassembler()
        let handles: [UInt16] = [0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47]
        func frame(_ handle: UInt16) -> [UInt8] {
            L2CAPBasicFrame(channelID: 4, payload: ArraySlice((0..<40).map { UInt8(truncatingIfNeeded: Int(handle) &* 7 &+ $0) })).encode()
        }
        for handle in handles {
            let output = reassembler.receive(handle: handle, packetBoundary: 0b10, data: frame(handle)[..<6])
            #expect(output.frame == nil && output.drop == nil)
        }
        #expect(reassembler.partialFrameCount == 8)
        // A middle piece for every handle, then the ends in a scrambled order.
        for handle in handles.reversed() {
            let output = reassembler.receive(handle: handle, packetBoundary: 0b01, data: frame(handle)[6..<20])
            #expect(output.frame == nil && output.drop == nil)
        }
        for (done, handle) in [0x43, 0x40, 0x47, 0x45, 0x41, 0x46, 0x42, 0x44].map(UInt16.init).enumerated() {
            let output = reassembler.receive(handle: handle, packetBoundary: 0b01, data: frame(handle)[20...])
            #expect(output.drop == nil)
            #expect(Array(try #require(output.frame).payload) == Array(frame(handle)[4...]))
            #expect(reassembler.partialFrameCount == 7 - done)
            // The handle is free again: a continuation on it now has no start.
            #expect(reassembler.receive(handle: handle, packetBoundary: 0b01, data: [0]).drop?.reason == .continuationWithoutStart)
        }
    }

    @Test func brokenSequencesAreDroppedAndReported() {
        var reassembler = L2CAPReassembler()
        let orphan = reassembler.receive(handle: 7, packetBoundary: 0b01, data: [1, 2])
        #expect(orphan.drop == .init(handle: 7, reason: .continuationWithoutStart))
        _ = reassembler.receive(handle: 7, packetBoundary: 0b10, data: Self.frame[..<10])
        let restart = reassembler.receive(handle: 7, packetBoundary: 0b10, data: Self.frame[...])
        #expect(restart.drop == .init(handle: 7, reason: .interruptedByNewStart(received: 10, expected: 34)))
        #expect(restart.frame != nil, "the new frame still decodes")
        _ = reassembler.receive(handle: 7, packetBoundary: 0b10, data: Self.frame[..<10])
        let overrun = reassembler.receive(handle: 7, packetBoundary: 0b01, data: Self.frame[10...] + [0xFF])
        #expect(overrun.drop == .init(handle: 7, reason: .overrun(received: 31, expected: 30)))
        #expect(overrun.frame == nil)
        #expect(reassembler.partialFrameCount == 0)
        do { let r = reassembler.receive(handle: 7, packetBoundary: 0b11, data: Self.frame[...]); #expect(r.drop?.reason == .invalidBoundaryFlag(3)) }
        let long = reassembler.receive(handle: 7, packetBoundary: 0b10, data: Self.frame[...] + [0])
        #expect(long.drop?.reason == .overrun(received: 31, expected: 30))
    }

    @Test func boundsHold() {
        var reassembler = L2CAPReassembler(maximumLength: 16, maximumPartialFrames: 2)
        do { let r = reassembler.receive(handle: 1, packetBoundary: 0b10, data: Self.frame[..<8]); #expect(r.drop?.reason == .tooLong(length: 30, limit: 16)) }
        // A header split across fragments is checked once complete.
        _ = reassembler.receive(handle: 1, packetBoundary: 0b10, data: Self.frame[..<2])
        do { let r = reassembler.receive(handle: 1, packetBoundary: 0b01, data: Self.frame[2..<6]); #expect(r.drop?.reason == .tooLong(length: 30, limit: 16)) }
        let small = L2CAPBasicFrame(channelID: 4, payload: ArraySlice(repeating: 0, count: 10)).encode()
        _ = reassembler.receive(handle: 1, packetBoundary: 0b10, data: small[..<5])
        _ = reassembler.receive(handle: 2, packetBoundary: 0b10, data: small[..<5])
        do { let r = reassembler.receive(handle: 3, packetBoundary: 0b10, data: small[..<5]); #expect(r.drop?.reason == .tooManyPartialFrames(limit: 2)) }
        let first = reassembler.reset(handle: 1)
        let second = reassembler.reset(handle: 1)
        #expect(first && !second)
    }
}

@Suite struct CreditBasedChannelTrackerTests {
    /// L2CAP_CREDIT_BASED_CONNECTION_REQ, identifier 7: SPSM 0x0027, MTU 64, MPS 23, credits 10, Source_CIDs 0x0040 0x0041.
    static let request: [UInt8] = [0x17, 0x07, 0x0C, 0x00, 0x27, 0x00, 0x40, 0x00, 0x17, 0x00, 0x0A, 0x00, 0x40, 0x00, 0x41, 0x00]
    /// L2CAP_CREDIT_BASED_CONNECTION_RSP, identifier 7: result 0, Destination_CIDs 0x0080, 0x0000 (second refused).
    static let response: [UInt8] = [0x18, 0x07, 0x0C, 0x00, 0x40, 0x00, 0x17, 0x00, 0x0A, 0x00, 0x04, 0x00, 0x80, 0x00, 0x00, 0x00]

    @Test func learnsEATTChannelsFromSignaling() {
        var tracker = CreditBasedChannelTracker()
        tracker.signaling(Self.request[...], handle: 1, direction: .outgoing)
        #expect(!tracker.carriesATT(handle: 1, direction: .incoming, cid: 0x40), "not before the response")
        tracker.signaling(Self.response[...], handle: 1, direction: .incoming)
        #expect(tracker.carriesATT(handle: 1, direction: .incoming, cid: 0x40))
        #expect(tracker.carriesATT(handle: 1, direction: .outgoing, cid: 0x80))
        #expect(!tracker.carriesATT(handle: 1, direction: .incoming, cid: 0x41), "refused channel")
        #expect(!tracker.carriesATT(handle: 2, direction: .incoming, cid: 0x40), "other connection")
        tracker.reset(handle: 1)
        #expect(!tracker.carriesATT(handle: 1, direction: .incoming, cid: 0x40))
    }

    @Test func ignoresOtherSPSMsAndUnmatchedResponses() {
        var tracker = CreditBasedChannelTracker()
        var other = Self.request
        other[4] = 0x80  // SPSM 0x0080
        tracker.signaling(other[...], handle: 1, direction: .outgoing)
        tracker.signaling(Self.response[...], handle: 1, direction: .incoming)
        #expect(!tracker.carriesATT(handle: 1, direction: .incoming, cid: 0x40))
        tracker.signaling(Self.response[...], handle: 1, direction: .incoming)
        #expect(!tracker.carriesATT(handle: 1, direction: .outgoing, cid: 0x80))
        // A truncated command stops parsing without trapping.
        tracker.signaling(Self.request.prefix(9), handle: 1, direction: .outgoing)
    }

    @Test func reassemblesSDUsFromKFrames() {
        var tracker = CreditBasedChannelTracker()
        let sdu: [UInt8] = Array(0..<40)
        let first: [UInt8] = [40, 0] + sdu[0..<21]
        #expect(tracker.kFrame(first[...], handle: 1, direction: .incoming, cid: 0x40) == .incomplete)
        #expect(tracker.kFrame(sdu[21...], handle: 1, direction: .incoming, cid: 0x40) == .sdu(sdu))
        #expect(tracker.kFrame([3, 0, 0x0A, 0x03, 0x00], handle: 1, direction: .incoming, cid: 0x40) == .sdu([0x0A, 0x03, 0x00]))
        #expect(tracker.kFrame([2, 0, 1, 2, 3], handle: 1, direction: .incoming, cid: 0x40)
            == .dropped("K-frame carries 3 octets, SDU Length says 2"))
        _ = tracker.kFrame([4, 0, 1], handle: 1, direction: .incoming, cid: 0x40)
        #expect(tracker.kFrame([2, 3, 4, 5], handle: 1, direction: .incoming, cid: 0x40)
            == .dropped("K-frames carry 5 octets, SDU Length says 4"))
        #expect(tracker.kFrame([7], handle: 1, direction: .incoming, cid: 0x40) == .dropped("K-frame of 1 octet(s) cannot start an SDU"))
    }
}
