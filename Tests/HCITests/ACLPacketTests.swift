import Bluetooth
import Testing

@testable import HCI

private func bytes(_ text: String) -> [UInt8] { Hex.decode(text)! }

@Suite("ACL data packets and whole HCI packets")
struct ACLPacketTests {
    @Test(arguments: [
        // LE first fragment on handle 0x0EDC (smartpen capture handle): L2CAP header + ATT Read Request.
        ("dc2e 0700 0300 0400 0a0100", ACLDataPacket(handle: 0x0EDC, packetBoundary: .firstFlushable, data: bytes("030004000a0100"))),
        ("0210 0200 aabb", ACLDataPacket(handle: 0x0002, packetBoundary: .continuingFragment, data: bytes("aabb"))),
        ("4000 0000", ACLDataPacket(handle: 0x0040, packetBoundary: .firstNonFlushable, data: [])),
        ("ff7e 0100 01", ACLDataPacket(handle: 0x0EFF, packetBoundary: .complete, broadcast: .brEdrBroadcast, data: [1])),
    ])
    func decodeAndReencode(_ hex: String, _ packet: ACLDataPacket) throws {
        let wire = bytes(hex)
        var reader = ByteReader(wire)
        let decoded = try ACLDataPacket(parsing: &reader)
        #expect(decoded == packet)
        #expect(reader.isAtEnd)
        var writer = ByteWriter()
        try packet.write(to: &writer)
        #expect(writer.bytes == wire)
        #expect(packet.encodedLength == wire.count)
        let h4 = [UInt8(2)] + wire
        #expect(try HCIPacket(h4: h4) == .acl(packet))
        #expect(try HCIPacket.acl(packet).h4Encoded() == h4)
    }

    @Test func truncationSweep() {
        let wire = bytes("dc2e 0700 0300 0400 0a0100")
        for count in 0..<wire.count {
            var reader = ByteReader(Array(wire[..<count]))
            #expect(throws: HCIError.self) { try ACLDataPacket(parsing: &reader) }
        }
    }

    @Test(arguments: [
        ("dc2e 0800 0300 0400 0a0100", HCIError.malformed(context: "HCI ACL data packet", reason: .truncated(needed: 8, available: 7), offset: 2)),
        ("dc2e 0600 0300 0400 0a0100", .malformed(context: "HCI ACL data packet", reason: .trailingBytes(count: 1), offset: 2)),
        ("ff2f 0000", .malformed(context: "HCI ACL data packet", reason: .invalidValue(field: "Handle", value: 0x0FFF), offset: 0)),
        ("dc2e 07", .malformed(context: "HCI ACL data packet", reason: .truncated(needed: 2, available: 1), offset: 2)),
    ])
    func malformed(_ hex: String, _ error: HCIError) {
        var reader = ByteReader(bytes(hex))
        #expect(throws: error) { try ACLDataPacket(parsing: &reader) }
    }

    @Test func encodeRejectsBadHandle() {
        var writer = ByteWriter()
        #expect(throws: HCIError.self) { try ACLDataPacket(handle: 0x0F00, packetBoundary: .firstFlushable, data: []).write(to: &writer) }
    }

    @Test(arguments: [
        ("01 030c00", HCIPacket.command(opcode: HCIOpcode(rawValue: 0x0C03), parameters: [])),
        ("01 0b2007 01100010000000", .command(opcode: HCIOpcode(rawValue: 0x200B), parameters: bytes("01100010000000"))),
        ("04 0e0401030c00", .event(.commandComplete(CommandCompleteEvent(numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0x0C03), returnParameters: [0])))),
        ("03 0100 03 aabbcc", .sco(bytes("010003aabbcc"))),
        ("05 0120 0200 abcd", .iso(bytes("01200200abcd"))),
    ])
    func wholePackets(_ hex: String, _ packet: HCIPacket) throws {
        let wire = bytes(hex)
        let decoded = try HCIPacket(h4: wire)
        #expect(decoded == packet)
        #expect(decoded.packetType.rawValue == wire[0])
        #expect(try packet.h4Encoded() == wire)
        #expect(!packet.description.isEmpty)
        var reader = ByteReader(Array(wire.dropFirst()))
        #expect(try HCIPacket(type: packet.packetType, parsing: &reader) == packet)
    }

    /// Offsets count from the H4 indicator.
    @Test(arguments: [
        ("", HCIError.malformed(context: "H4 packet", reason: .truncated(needed: 1, available: 0), offset: 0)),
        ("00 0102", .unknownPacketType(0)),
        ("06 0102", .unknownPacketType(6)),
        ("01 030c01", .malformed(context: "HCI command packet", reason: .truncated(needed: 1, available: 0), offset: 3)),
        ("01 030c00 00", .malformed(context: "HCI command packet", reason: .trailingBytes(count: 1), offset: 3)),
        ("03 0100 04 aabbcc", .malformed(context: "HCI SCO data packet", reason: .truncated(needed: 4, available: 3), offset: 3)),
        ("05 0120 0300 abcd", .malformed(context: "HCI ISO data packet", reason: .truncated(needed: 3, available: 2), offset: 3)),
    ])
    func malformedPackets(_ hex: String, _ error: HCIError) {
        #expect(throws: error) { try HCIPacket(h4: bytes(hex)) }
    }

    @Test func descriptions() throws {
        #expect(try HCIPacket(h4: bytes("01 030c00")).description.hasPrefix("Command: "))
        #expect(try HCIPacket(h4: bytes("02 dc2e 0200 aabb")).description == "ACL Data: handle 3804 start dlen 2 aabb")
    }
}
