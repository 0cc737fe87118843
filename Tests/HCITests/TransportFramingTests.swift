import Bluetooth
import Testing
@testable import HCI

@Suite("Transport H4 stream splitting and datagrams")
struct TransportFramingTests {
    /// Real packets: HCI_Reset, its Command Complete, an ACL fragment (ATT Read Request), an ISO
    /// header with RFU length bits set, an SCO packet, and an empty-bodied event.
    static let packets: [(HCIPacketType, [UInt8])] = [
        (.command, [0x03, 0x0C, 0x00]),
        (.event, [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]),
        (.acl, [0x40, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00]),
        (.iso, [0x01, 0x20, 0x02, 0xC0, 0xAA, 0xBB]),
        (.sco, [0x01, 0x00, 0x02, 0x11, 0x22]),
        (.event, [0xFF, 0x00]),
    ]

    static var stream: [UInt8] { packets.flatMap { [$0.0.rawValue] + $0.1 } }

    static func same(_ a: [(HCIPacketType, [UInt8])], _ b: [(HCIPacketType, [UInt8])]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    @Test func wholeStreamAtOnce() throws {
        var splitter = H4StreamSplitter()
        let out = try splitter.split(Self.stream)
        #expect(Self.same(out, Self.packets))
        #expect(splitter.pendingCount == 0)
    }

    @Test(arguments: [1, 2, 3, 5, 7, 64])
    func anyChunking(chunkSize: Int) throws {
        var splitter = H4StreamSplitter()
        var out: [(HCIPacketType, [UInt8])] = []
        let stream = Self.stream
        var index = 0
        while index < stream.count {
            let end = min(index + chunkSize, stream.count)
            out += try splitter.split(stream[index..<end])
            index = end
        }
        #expect(Self.same(out, Self.packets))
        #expect(splitter.pendingCount == 0)
    }

    @Test func everyStrictPrefixOfAPacketWaits() throws {
        for (type, body) in Self.packets {
            let packet = [type.rawValue] + body
            for length in 0..<packet.count {
                var splitter = H4StreamSplitter()
                #expect(try splitter.split(packet[..<length]).isEmpty, "prefix \(length) of \(type)")
                #expect(splitter.pendingCount == length)
            }
        }
    }

    @Test func largestACLPacket() throws {
        var splitter = H4StreamSplitter()
        let body = [UInt8](repeating: 0x5A, count: 65535)
        let packet: [UInt8] = [0x02, 0x01, 0x00, 0xFF, 0xFF] + body
        let out = try splitter.split(packet)
        #expect(out.count == 1)
        #expect(out.first?.1.count == 4 + 65535)
    }

    @Test(arguments: [UInt8(0x00), 0x06, 0x80, 0xFF])
    func unknownIndicatorFailsTheStream(indicator: UInt8) {
        var splitter = H4StreamSplitter()
        splitter.append([0x04, 0x0E, 0x00, indicator, 0x01])
        // The packet before the bad indicator is delivered first, then the error.
        let first = try? splitter.nextPacket()
        #expect(first?.type == .event)
        #expect(first?.bytes == [0x0E, 0x00])
        #expect(throws: HCIError.unknownPacketType(indicator)) {
            _ = try splitter.nextPacket()
        }
    }

    // MARK: - Datagrams (the kernel user channel)

    @Test func wholeDatagrams() throws {
        for (type, body) in Self.packets {
            let parsed = try FileDescriptorTransport.parseDatagram([type.rawValue] + body)
            #expect(parsed.type == type)
            #expect(parsed.bytes == body)
        }
    }

    @Test func everyStrictPrefixOfADatagramIsMalformed() {
        for (type, body) in Self.packets {
            let datagram = [type.rawValue] + body
            for length in 0..<datagram.count {
                #expect(throws: HCIError.self, "prefix \(length) of \(type)") {
                    _ = try FileDescriptorTransport.parseDatagram(Array(datagram[..<length]))
                }
            }
        }
    }

    @Test(arguments: [
        ([UInt8](), HCIError.malformed(context: "HCI datagram", reason: .truncated(needed: 1, available: 0), offset: 0)),
        ([0x07, 0x00], .unknownPacketType(0x07)),
        ([0x04, 0x0E], .malformed(context: "HCI Event datagram", reason: .truncated(needed: 2, available: 1), offset: 1)),
        ([0x04, 0x0E, 0x04, 0x01, 0x03], .malformed(context: "HCI Event datagram", reason: .truncated(needed: 4, available: 2), offset: 3)),
        ([0x04, 0x0E, 0x01, 0x01, 0x03], .malformed(context: "HCI Event datagram", reason: .trailingBytes(count: 1), offset: 4)),
        ([0x02, 0x40, 0x00, 0x01, 0x00], .malformed(context: "ACL Data datagram", reason: .truncated(needed: 1, available: 0), offset: 5)),
    ])
    func malformedDatagrams(datagram: [UInt8], expected: HCIError) {
        #expect(throws: expected) { _ = try FileDescriptorTransport.parseDatagram(datagram) }
    }
}
