import Bluetooth
import Testing

@testable import HCI

@Suite struct H4FramerTests {
    static let packets: [(HCIPacketType, [UInt8])] = [
        (.command, [0x03, 0x0C, 0x00]),
        (.event, [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
        (.acl, [0x40, 0x20, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x13]),
        (.sco, [0x01, 0x00, 0x02, 0xAA, 0xBB]),
        (.iso, [0x02, 0x00, 0x01, 0x00, 0x55]),
        // ISO_Data_Load_Length's two RFU bits are ignored.
        (.iso, [0x02, 0x00, 0x02, 0xC0, 0x55, 0x66]),
        (.event, [0x3E, 0x00]),
        (.command, [0x01, 0x20, 0xFF] + [UInt8](repeating: 0x11, count: 255)),
    ]

    static var stream: [UInt8] { packets.flatMap { H4.frame(type: $0.0, packet: $0.1) } }

    static func drain(_ framer: inout H4Framer) throws -> [(HCIPacketType, [UInt8])] {
        var out: [(HCIPacketType, [UInt8])] = []
        while let packet = try framer.nextPacket() { out.append(packet) }
        return out
    }

    static func expectPackets(_ got: [(HCIPacketType, [UInt8])], _ expected: [(HCIPacketType, [UInt8])]) {
        #expect(got.map(\.0) == expected.map(\.0))
        #expect(got.map(\.1) == expected.map(\.1))
    }

    @Test func encoderPrefixesTheIndicator() {
        #expect(H4.frame(type: .command, packet: [0x03, 0x0C, 0x00]) == [0x01, 0x03, 0x0C, 0x00])
        #expect(H4.frame(type: .iso, packet: [UInt8]()) == [0x05])
        #expect(H4.maximumPacketLength(of: .acl) == 65_539 && H4.maximumPacketLength(of: .iso) == 16_387)
    }

    @Test func wholePacketsOneAtATime() throws {
        var framer = H4Framer()
        for (type, packet) in Self.packets {
            framer.append(H4.frame(type: type, packet: packet))
            let got = try #require(try framer.nextPacket())
            #expect(got.0 == type && got.1 == packet)
            #expect(try framer.nextPacket() == nil)
            #expect(framer.bufferedCount == 0)
        }
    }

    @Test func severalPacketsInOneChunk() throws {
        var framer = H4Framer()
        framer.append(Self.stream)
        Self.expectPackets(try Self.drain(&framer), Self.packets)
        #expect(framer.bufferedCount == 0)
    }

    @Test func byteByByte() throws {
        var framer = H4Framer()
        var got: [(HCIPacketType, [UInt8])] = []
        for byte in Self.stream {
            framer.append(CollectionOfOne(byte))
            got += try Self.drain(&framer)
        }
        Self.expectPackets(got, Self.packets)
    }

    /// Every split of the stream into two reads, and chunks of every size up to 17.
    @Test func arbitraryChunking() throws {
        let stream = Self.stream
        for cut in 0...stream.count {
            var framer = H4Framer()
            framer.append(stream[..<cut])
            var got = try Self.drain(&framer)
            framer.append(stream[cut...])
            got += try Self.drain(&framer)
            Self.expectPackets(got, Self.packets)
        }
        for size in 1...17 {
            var framer = H4Framer()
            var got: [(HCIPacketType, [UInt8])] = []
            var index = 0
            while index < stream.count {
                framer.append(stream[index..<Swift.min(index + size, stream.count)])
                got += try Self.drain(&framer)
                index += size
            }
            Self.expectPackets(got, Self.packets)
            #expect(framer.bufferedCount == 0)
        }
    }

    @Test func incompletePacketWaits() throws {
        var framer = H4Framer()
        #expect(try framer.nextPacket() == nil)
        framer.append([0x02, 0x40, 0x00, 0x04])  // ACL header missing one length octet
        #expect(try framer.nextPacket() == nil)
        framer.append([0x00, 0xAA, 0xBB, 0xCC])
        #expect(try framer.nextPacket() == nil)
        #expect(framer.bufferedCount == 8)
        framer.append([0xDD, 0x04])
        let packet = try #require(try framer.nextPacket())
        #expect(packet.0 == .acl && packet.1 == [0x40, 0x00, 0x04, 0x00, 0xAA, 0xBB, 0xCC, 0xDD])
        #expect(framer.bufferedCount == 1)
        #expect(try framer.nextPacket() == nil)
    }

    @Test func largestACLPacket() throws {
        let payload = (0..<65_535).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let packet: [UInt8] = [0x01, 0x00, 0xFF, 0xFF] + payload
        var framer = H4Framer()
        let framed = H4.frame(type: .acl, packet: packet) + H4.frame(type: .event, packet: [0x13, 0x00])
        var got: [(HCIPacketType, [UInt8])] = []
        var index = 0
        while index < framed.count {
            framer.append(framed[index..<Swift.min(index + 1000, framed.count)])
            got += try Self.drain(&framer)
            index += 1000
        }
        #expect(got.count == 2)
        #expect(got.first?.0 == .acl && got.first?.1 == packet)
        #expect(got.last?.0 == .event && got.last?.1 == [0x13, 0x00])
    }

    @Test(arguments: [UInt8(0x00), 0x06, 0x07, 0xFF])
    func unknownIndicatorMakesTheStreamUnusable(indicator: UInt8) throws {
        var framer = H4Framer()
        framer.append(H4.frame(type: .command, packet: [0x03, 0x0C, 0x00]) + [indicator, 0x01, 0x02])
        #expect(try framer.nextPacket()?.0 == .command)
        #expect(throws: HCIError.unknownPacketType(indicator)) { try framer.nextPacket() }
        #expect(framer.isFailed)
        // Still failed: the packet boundary is lost, more bytes cannot help.
        framer.append(H4.frame(type: .event, packet: [0x0E, 0x00]))
        #expect(throws: HCIError.unknownPacketType(indicator)) { try framer.nextPacket() }
        framer.reset()
        framer.append(H4.frame(type: .event, packet: [0x0E, 0x00]))
        #expect(try framer.nextPacket()?.1 == [0x0E, 0x00])
    }

    @Test func consumedBytesAreCompacted() throws {
        var framer = H4Framer()
        // A partial packet always pending: the consumed prefix must not accumulate.
        framer.append([0x04, 0x0E])
        for _ in 0..<10_000 {
            framer.append([0x00, 0x04, 0x0E])
            #expect(try framer.nextPacket()?.1 == [0x0E, 0x00])
            #expect(framer.storageCount <= 5)
        }
        #expect(framer.bufferedCount == 2)
    }
}
