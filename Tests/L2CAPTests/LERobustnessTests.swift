import Bluetooth
import HCI
import Testing

@testable import L2CAP

/// A small deterministic generator (SplitMix64), so failures reproduce.
struct LESplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct LERobustnessTests {
    /// Every answer is itself a well-formed command carrying the request's Identifier, and
    /// nothing ever answers a response.
    @discardableResult
    static func checkAnswer(to payload: ArraySlice<UInt8>, _ outcome: LESignalingResponder.Outcome) throws -> Bool {
        guard let response = outcome.response else { return false }
        let bytes = try response.encode()
        let decoded = try L2CAPSignalingPacket(bytes: bytes[...])
        _ = try decoded.command()
        #expect(decoded.identifier == payload[payload.startIndex + 1])
        #expect(!L2CAPSignalingCode(rawValue: payload[payload.startIndex]).isResponse)
        #expect(bytes.count <= LESignalingResponder.minimumSignalingMTU)
        return true
    }

    @Test func randomSignalingPayloadsNeverTrapAndAnswersAreWellFormed() throws {
        var random = LESplitMix(state: 0x5157)
        let responder = LESignalingResponder(role: .central)
        var answered = 0
        for _ in 0..<3000 {
            let length = Int.random(in: 0...40, using: &random)
            var payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            if length >= 4, Bool.random(using: &random) {
                // A plausible header: a known code and a consistent Length.
                payload[0] = [0x01, 0x06, 0x07, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A].randomElement(
                    using: &random)!
                payload[2] = UInt8(length - 4)
                payload[3] = 0
            }
            let outcome = responder.receive(payload[...])
            if try Self.checkAnswer(to: payload[...], outcome) { answered += 1 }
        }
        #expect(answered > 100, "\(answered) answers")
    }

    @Test(arguments: leSignalingVectors)
    func mutatedVectorsNeverTrap(vector: LESignalingVector) throws {
        var random = LESplitMix(state: UInt64(vector.bytes.count) &* 31 &+ UInt64(vector.identifier))
        let responder = LESignalingResponder(role: .central)
        for _ in 0..<200 {
            var payload = vector.bytes
            let index = Int.random(in: 0..<payload.count, using: &random)
            payload[index] = UInt8.random(in: 0...255, using: &random)
            if Bool.random(using: &random) { payload.removeLast(Int.random(in: 0...payload.count, using: &random)) }
            try Self.checkAnswer(to: payload[...], responder.receive(payload[...]))
        }
    }

    @Test func randomACLTrafficNeverTrapsAndEveryAnswerIsAWholeFrame() {
        var random = LESplitMix(state: 0xAC1)
        var mux = LEL2CAPMultiplexer(bufferSize: leBufferSize(count: 1000), maximumQueuedFrames: 1000)
        do { try mux.connectionOpened(handle: 1, role: .central) } catch { Issue.record("\(error)") }
        var actions: [LEL2CAPMultiplexer.Action] = []
        for _ in 0..<1500 {
            // A frame on a fixed channel, sometimes with a plausible signaling or SMP header,
            // sometimes damaged, cut into fragments with the right (mostly) boundary flags.
            let cid = [UInt16(4), 5, 6, 7].randomElement(using: &random)!
            var payload = (0..<Int.random(in: 0...30, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            if cid == 5, payload.count >= 4 {
                payload[0] = [0x01, 0x06, 0x12, 0x14, 0x16, 0x17, 0x19, 0x0A].randomElement(using: &random)!
                payload[2] = UInt8(payload.count - 4)
                payload[3] = 0
            }
            if cid == 6, !payload.isEmpty { payload[0] = [0x01, 0x0B, 0x05].randomElement(using: &random)! }
            var pdu = leFrame(cid: cid, payload)
            if Int.random(in: 0..<10, using: &random) == 0 {
                pdu[Int.random(in: 0..<pdu.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            let handle: UInt16 = Int.random(in: 0..<20, using: &random) == 0 ? 2 : 1
            var offset = 0
            while offset < pdu.count {
                let size = min(pdu.count - offset, Int.random(in: 1...27, using: &random))
                var boundary: ACLPacketBoundaryFlag = offset == 0 ? .firstFlushable : .continuingFragment
                if Int.random(in: 0..<30, using: &random) == 0 {
                    boundary = ACLPacketBoundaryFlag(rawValue: UInt8.random(in: 0...3, using: &random))
                }
                let packet = ACLDataPacket(
                    handle: handle, packetBoundary: boundary, data: Array(pdu[offset..<offset + size]))
                mux.receive(packet, into: &actions)
                offset += size
            }
        }
        // Every answer queued and sent is one whole B-frame on CID 5 or 6.
        var reassembler = L2CAPReassembler()
        var answers = 0
        var delivered = 0
        for case .deliverATT in actions { delivered += 1 }
        for case .transmit(let packet) in actions {
            answers += 1
            let output = reassembler.receive(
                handle: packet.handle, packetBoundary: packet.packetBoundary.rawValue, data: packet.data[...])
            #expect(output.drop == nil)
            if let frame = output.frame { #expect(frame.channelID == 5 || frame.channelID == 6) }
        }
        #expect(reassembler.partialFrameCount == 0)
        #expect(answers > 0 && delivered > 0, "the traffic reached every path (\(answers) answers, \(delivered) ATT)")
    }
}
