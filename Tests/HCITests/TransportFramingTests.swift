import Bluetooth
import Testing

@testable import HCI

@Suite("Transport datagram framing")
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
        (
            [UInt8](),
            HCIError.malformed(context: "HCI datagram", reason: .truncated(needed: 1, available: 0), offset: 0)
        ),
        ([0x07, 0x00], .unknownPacketType(0x07)),
        (
            [0x04, 0x0E],
            .malformed(context: "HCI Event datagram", reason: .truncated(needed: 2, available: 1), offset: 1)
        ),
        (
            [0x04, 0x0E, 0x04, 0x01, 0x03],
            .malformed(context: "HCI Event datagram", reason: .truncated(needed: 4, available: 2), offset: 3)
        ),
        (
            [0x04, 0x0E, 0x01, 0x01, 0x03],
            .malformed(context: "HCI Event datagram", reason: .trailingBytes(count: 1), offset: 4)
        ),
        (
            [0x02, 0x40, 0x00, 0x01, 0x00],
            .malformed(context: "ACL Data datagram", reason: .truncated(needed: 1, available: 0), offset: 5)
        ),
    ])
    func malformedDatagrams(datagram: [UInt8], expected: HCIError) {
        #expect(throws: expected) { _ = try FileDescriptorTransport.parseDatagram(datagram) }
    }
}
