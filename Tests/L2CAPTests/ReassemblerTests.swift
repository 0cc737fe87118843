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
