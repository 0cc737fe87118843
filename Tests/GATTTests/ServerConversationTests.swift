import ATT
import Bluetooth
import Testing

@testable import GATT

/// Readable server conversations (STYLE.md 15) replayed against `ServerFixture` at ATT_MTU
/// 23: `<` is what the client sends, `>` what our server must answer, byte for byte. Each
/// follows a GATT procedure of Core 5.4 Vol 3 Part G §4 as a client runs it against a server
/// (cf. the PTS server groups GAD/SR, GAR/SR, GAW/SR).
@Suite("GATT server: conversations")
struct ServerConversationTests {
    static let u1 = ServerFixture.u1LE
    static let u2 = ServerFixture.u2LE

    static let discovery = """
        # §4.4.1 Discover All Primary Services
        < 10 0100 ffff 0028
        > 11 06 0100 0300 0018 0400 0700 0118     # GAP 0x0001-0x0003, GATT 0x0004-0x0007
        < 10 0800 ffff 0028
        > 11 14 0800 0c00 \(u1)                   # the 128-bit service alone
        < 10 0d00 ffff 0028
        > 11 06 1000 1300 0a18                    # 0x000D is secondary: skipped
        < 10 1400 ffff 0028
        > 01 10 1400 0a                           # Attribute Not Found: done
        # §4.4.2 Discover Primary Service by Service UUID (0x180A)
        < 06 0100 ffff 0028 0a18
        > 07 1000 1300
        < 06 1400 ffff 0028 0a18
        > 01 06 1400 0a
        # §4.5.1 Find Included Services of 0x0010-0x0013
        < 08 1000 1300 0228
        > 09 08 1100 0d00 0f00 0f18               # includes Battery 0x000D-0x000F
        < 08 1200 1300 0228
        > 01 08 1200 0a
        # §4.6.1 Discover All Characteristics of 0x0008-0x000C
        < 08 0800 0c00 0328
        > 09 15 0900 1a 0a00 \(u2)                 # read, write, notify; value 0x000A
        < 08 0a00 0c00 0328
        > 01 08 0a00 0a
        # §4.6.2 Discover Characteristics by UUID (0x2A29) over the whole server
        < 08 0100 ffff 0328
        > 09 07 0200 02 0300 002a 0500 20 0600 052a
        < 08 0600 ffff 0328
        > 09 15 0900 1a 0a00 \(u2)
        < 08 0a00 ffff 0328
        > 09 07 0e00 12 0f00 192a 1200 02 1300 292a
        < 08 1300 ffff 0328
        > 01 08 1300 0a
        # §4.7.1 Discover All Characteristic Descriptors of 0x000A (0x000B-0x000C)
        < 04 0b00 0c00
        > 05 01 0b00 0229 0c00 0129               # CCCD, User Description
        """

    static let reads = """
        # §4.8.1 Read Characteristic Value
        < 0a 0a00
        > 0b 68656c6c6f                           # "hello"
        # §4.8.3 Read Long Characteristic Values (30 octets at ATT_MTU 23)
        < 0a 1300
        > 0b 30313233343536373839 4142434445464748494a4b4c
        < 0c 1300 1600
        > 0d 4d4e4f5051525354
        # §4.8.2 Read Using Characteristic UUID (Battery Level, in the secondary service)
        < 08 0100 ffff 192a
        > 09 03 0f00 64
        # §4.8.4 Read Multiple Characteristic Values
        < 0e 0f00 0300
        > 0f 64 537276
        # §4.12.1 Read Characteristic Descriptor (User Description)
        < 0a 0c00
        > 0b 64657363                             # "desc"
        # Refusals: not permitted, invalid handle
        < 0a 0600
        > 01 0a 0600 02
        < 0a f000
        > 01 0a f000 01
        """

    static let writes = """
        # §4.9.4 Write Long Characteristic Values, 16 octets in two parts
        < 16 0a00 0000 000102030405060708090a0b
        > 17 0a00 0000 000102030405060708090a0b
        < 16 0a00 0c00 0c0d0e0f
        > 17 0a00 0c00 0c0d0e0f
        < 18 01
        > 19
        < 0a 0a00
        > 0b 000102030405060708090a0b0c0d0e0f
        # §4.9.1 Write Without Response: no answer
        < 52 0a00 aabb
        < 0a 0a00
        > 0b aabb
        # §4.9.3 Write Characteristic Value, then §4.12.3 a descriptor (notifications on)
        < 12 0a00 7879
        > 13
        < 12 0b00 0100
        > 13
        < 0a 0b00
        > 0b 0100
        # §4.9.5 Reliable Writes cancelled
        < 16 0a00 0000 ff
        > 17 0a00 0000 ff
        < 18 00
        > 19
        < 0a 0a00
        > 0b 7879
        """

    /// Replays `text`: every `<` PDU goes to the server; what it answers must be the next `>`
    /// PDU, and nothing else may be expected.
    static func replay(_ text: String) throws {
        let trace = try ATTTrace(parsing: text)
        var server = try ServerFixture.server()
        let client = server.connect()
        var index = 0
        while index < trace.entries.count {
            let entry = trace.entries[index]
            #expect(entry.direction == .peerToHost, "line \(entry.line): the server spoke unasked")
            index += 1
            let answer = server.respond(to: try ATTPDU(decoding: entry.bytes, mtu: 23), from: client)
            if index < trace.entries.count, trace.entries[index].direction == .hostToPeer {
                let expected = trace.entries[index]
                let bytes = try #require(answer, "line \(expected.line): no answer").encode(mtu: 23)
                #expect(Hex.encode(bytes) == Hex.encode(expected.bytes), "line \(expected.line)")
                index += 1
            } else {
                #expect(answer == nil, "line \(entry.line): unexpected answer \(String(describing: answer))")
            }
        }
    }

    @Test("discovery (GAD/SR)") func discoveryConversation() throws { try Self.replay(Self.discovery) }
    @Test("reads (GAR/SR)") func readConversation() throws { try Self.replay(Self.reads) }
    @Test("writes (GAW/SR)") func writeConversation() throws { try Self.replay(Self.writes) }
}
