import Bluetooth
import HCI
import Testing

@testable import L2CAP

@Suite struct LEFragmentationTests {
    /// Payload lengths: empty, one octet, a PDU of exactly 27 and 28 octets (payload 23, 24),
    /// payload of exactly the buffer and one more, and 512.
    @Test(arguments: [0, 1, 23, 24, 27, 28, 512])
    func fragmentsReassembleIdentically(payloadLength: Int) throws {
        let payload = (0..<payloadLength).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        let pdu = leFrame(cid: 4, payload)
        let packets = ACLFragmenter.fragments(of: pdu, handle: 0x0042, maximumDataLength: 27)

        #expect(packets.count == (pdu.count + 26) / 27)
        #expect(packets.count == ACLFragmenter.fragmentCount(pduLength: pdu.count, maximumDataLength: 27))
        #expect(packets.allSatisfy { $0.data.count <= 27 && !$0.data.isEmpty && $0.handle == 0x0042 })
        #expect(packets.first?.packetBoundary == .firstNonFlushable)
        #expect(packets.dropFirst().allSatisfy { $0.packetBoundary == .continuingFragment })
        #expect(packets.flatMap(\.data) == pdu)

        var reassembler = L2CAPReassembler()
        var frames: [L2CAPBasicFrame] = []
        for packet in packets {
            // Through the wire form and back, as the controller would see it.
            var writer = ByteWriter()
            try packet.write(to: &writer)
            var reader = ByteReader(writer.bytes)
            let decoded = try ACLDataPacket(parsing: &reader)
            let output = reassembler.receive(
                handle: decoded.handle, packetBoundary: decoded.packetBoundary.rawValue, data: decoded.data[...])
            #expect(output.drop == nil)
            if let frame = output.frame { frames.append(frame) }
        }
        #expect(frames.count == 1)
        #expect(frames.first?.channelID == 4)
        #expect(frames.first.map { Array($0.payload) } == payload)
    }

    @Test func aPDUThatFitsIsOnePacketSharingStorage() {
        let pdu = leFrame(cid: 4, [0x0A, 0x03, 0x00])
        let packet = ACLFragmenter.fragment(of: pdu, at: 0, handle: 1, maximumDataLength: 251)
        #expect(packet == ACLDataPacket(handle: 1, packetBoundary: .firstNonFlushable, data: pdu))
    }

    @Test(arguments: [27, 64, 251])
    func largeBuffersCutWhereTheyShould(buffer: Int) {
        let pdu = [UInt8](repeating: 0x55, count: 1000)
        let sizes = ACLFragmenter.fragments(of: pdu, handle: 1, maximumDataLength: buffer).map(\.data.count)
        #expect(sizes.dropLast().allSatisfy { $0 == buffer })
        #expect(sizes.reduce(0, +) == 1000)
        #expect(sizes.last == 1000 - buffer * (sizes.count - 1))
    }
}
