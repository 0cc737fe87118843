import ATT
import Bluetooth
import Testing

@testable import GATT

/// One request and the exact answer the server must give (nil: no answer).
struct ServerCase: Sendable, CustomTestStringConvertible {
    var name: String
    var request: String
    var response: String?
    var mtu: Int = 23

    var testDescription: String { name }
}

/// Byte-level request → response tables against `ServerFixture` (ATT_MTU 23 unless said).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.3, §3.4.4
@Suite("GATT server: request tables")
struct ServerRequestTableTests {
    static let u1 = ServerFixture.u1LE
    static let u2 = ServerFixture.u2LE
    static let long = Hex.encode(ServerFixture.longValue).lowercased()

    static let discovery: [ServerCase] = [
        // Find Information: 16-bit format, five entries fill MTU 23 (2 + 5 × 4 = 22).
        ServerCase(
            name: "FindInformation 16-bit packed", request: "04 0100 ffff",
            response: "05 01 0100 0028 0200 0328 0300 002a 0400 0028 0500 0328"),
        // Stops before the first 128-bit type.
        ServerCase(name: "FindInformation stops at 128-bit", request: "04 0900 0c00", response: "05 01 0900 0328"),
        // 128-bit format: one entry per response at MTU 23, stops at the next 16-bit type.
        ServerCase(name: "FindInformation 128-bit", request: "04 0a00 0c00", response: "05 02 0a00 \(u2)"),
        ServerCase(
            name: "FindInformation 128-bit at MTU 40 stops at 16-bit", request: "04 0a00 0c00",
            response: "05 02 0a00 \(u2)",
            mtu: 40),
        ServerCase(name: "FindInformation after the last", request: "04 1400 ffff", response: "01 04 1400 0a"),
        ServerCase(name: "FindInformation start 0", request: "04 0000 ffff", response: "01 04 0000 01"),
        ServerCase(name: "FindInformation start > end", request: "04 0500 0400", response: "01 04 0500 01"),
        ServerCase(name: "FindInformation single", request: "04 0c00 0c00", response: "05 01 0c00 0129"),
        // Find By Type Value: services by UUID, with their group end.
        ServerCase(name: "FindByTypeValue GAP", request: "06 0100 ffff 0028 0018", response: "07 0100 0300"),
        ServerCase(name: "FindByTypeValue 180A", request: "06 0100 ffff 0028 0a18", response: "07 1000 1300"),
        ServerCase(name: "FindByTypeValue 128-bit", request: "06 0100 ffff 0028 \(u1)", response: "07 0800 0c00"),
        ServerCase(name: "FindByTypeValue secondary", request: "06 0100 ffff 0128 0f18", response: "07 0d00 0f00"),
        ServerCase(name: "FindByTypeValue none", request: "06 0100 ffff 0028 1218", response: "01 06 0100 0a"),
        ServerCase(name: "FindByTypeValue out of range", request: "06 0200 0f00 0028 0a18", response: "01 06 0200 0a"),
        // A non-grouping attribute: the group end is its own handle.
        ServerCase(
            name: "FindByTypeValue non-grouping", request: "06 0100 ffff 0229 0000", response: "07 0700 0700 0b00 0b00"),
        ServerCase(name: "FindByTypeValue start 0", request: "06 0000 ffff 0028 0018", response: "01 06 0000 01"),
        // Read By Group Type: equal-length entries; the 128-bit service is alone.
        ServerCase(
            name: "ReadByGroupType 16-bit", request: "10 0100 ffff 0028",
            response: "11 06 0100 0300 0018 0400 0700 0118"),
        ServerCase(name: "ReadByGroupType 128-bit", request: "10 0800 ffff 0028", response: "11 14 0800 0c00 \(u1)"),
        ServerCase(
            name: "ReadByGroupType after 128-bit", request: "10 0d00 ffff 0028", response: "11 06 1000 1300 0a18"),
        ServerCase(name: "ReadByGroupType secondary", request: "10 0100 ffff 0128", response: "11 06 0d00 0f00 0f18"),
        // The group type as a 128-bit UUID (0x2800 on the Bluetooth Base UUID) is the same type.
        ServerCase(
            name: "ReadByGroupType 128-bit group type", request: "10 0100 ffff fb349b5f800000800010000000280000",
            response: "11 06 0100 0300 0018 0400 0700 0118"),
        ServerCase(name: "ReadByGroupType unsupported", request: "10 0100 ffff 0328", response: "01 10 0100 10"),
        ServerCase(name: "ReadByGroupType none", request: "10 1400 ffff 0028", response: "01 10 1400 0a"),
        // Read By Type: equal lengths, stop at the 19-octet declaration.
        ServerCase(
            name: "ReadByType declarations", request: "08 0100 ffff 0328",
            response: "09 07 0200 020300002a 0500 200600052a"),
        ServerCase(
            name: "ReadByType 128-bit declaration", request: "08 0900 ffff 0328", response: "09 15 0900 1a0a00 \(u2)"),
        ServerCase(
            name: "ReadByType after", request: "08 0a00 ffff 0328", response: "09 07 0e00 120f00192a 1200 021300292a"),
        ServerCase(name: "ReadByType include", request: "08 0100 ffff 0228", response: "09 08 1100 0d000f000f18"),
        ServerCase(name: "ReadByType CCCDs", request: "08 0100 ffff 0229", response: "09 04 0700 0000 0b00 0000"),
        ServerCase(name: "ReadByType 128-bit type", request: "08 0100 ffff \(u2)", response: "09 07 0a00 68656c6c6f"),
        // Values cut to ATT_MTU − 4.
        ServerCase(
            name: "ReadByType long value truncated", request: "08 0100 ffff 292a",
            response: "09 15 1300 \(String(long.prefix(38)))"),
        ServerCase(
            name: "ReadByType long value at MTU 40", request: "08 0100 ffff 292a", response: "09 20 1300 \(long)",
            mtu: 40),
        // The first match is not readable: its error, with its handle.
        ServerCase(name: "ReadByType not permitted", request: "08 0100 ffff 052a", response: "01 08 0600 02"),
        ServerCase(name: "ReadByType none", request: "08 0100 ffff 372a", response: "01 08 0100 0a"),
        ServerCase(name: "ReadByType start > end", request: "08 0300 0200 0328", response: "01 08 0300 01"),
    ]

    static let reads: [ServerCase] = [
        ServerCase(name: "Read", request: "0a 0300", response: "0b 537276"),
        ServerCase(name: "Read long value cut", request: "0a 1300", response: "0b \(String(long.prefix(44)))"),
        ServerCase(name: "Read declaration", request: "0a 1100", response: "0b 0d000f000f18"),
        ServerCase(name: "Read not permitted", request: "0a 0600", response: "01 0a 0600 02"),
        ServerCase(name: "Read invalid handle", request: "0a 9900", response: "01 0a 9900 01"),
        ServerCase(name: "Read handle 0", request: "0a 0000", response: "01 0a 0000 01"),
        ServerCase(name: "Read CCCD", request: "0a 0b00", response: "0b 0000"),
        ServerCase(name: "ReadBlob", request: "0c 1300 1600", response: "0d 4d4e4f5051525354"),
        ServerCase(name: "ReadBlob from 0", request: "0c 1300 0000", response: "0d \(String(long.prefix(44)))"),
        ServerCase(name: "ReadBlob at the end", request: "0c 1300 1e00", response: "0d"),
        ServerCase(name: "ReadBlob past the end", request: "0c 1300 1f00", response: "01 0c 1300 07"),
        ServerCase(name: "ReadBlob short value", request: "0c 0300 0100", response: "0d 7276"),
        ServerCase(name: "ReadBlob not permitted before offset", request: "0c 0600 ff00", response: "01 0c 0600 02"),
        ServerCase(name: "ReadBlob invalid handle", request: "0c 9900 0000", response: "01 0c 9900 01"),
        ServerCase(name: "ReadMultiple", request: "0e 0300 0f00", response: "0f 537276 64"),
        ServerCase(
            name: "ReadMultiple cut at MTU − 1", request: "0e 1300 0300", response: "0f \(String(long.prefix(44)))"),
        ServerCase(name: "ReadMultiple invalid handle", request: "0e 0300 9900", response: "01 0e 9900 01"),
        ServerCase(name: "ReadMultiple not permitted", request: "0e 0300 0600", response: "01 0e 0600 02"),
        ServerCase(name: "ReadMultiple one handle", request: "0e 0300", response: "01 0e 0300 04"),
        ServerCase(name: "ReadMultipleVariable", request: "20 0300 0f00", response: "21 0300 537276 0100 64"),
        // Length is the whole value's; the cut value ends the list.
        ServerCase(
            name: "ReadMultipleVariable cut", request: "20 1300 0300",
            response: "21 1e00 \(String(long.prefix(40)))"),
        ServerCase(
            name: "ReadMultipleVariable three values", request: "20 0a00 0300 0f00",
            response: "21 0500 68656c6c6f 0300 537276 0100 64"),
        ServerCase(name: "ReadMultipleVariable invalid", request: "20 0300 9900", response: "01 20 9900 01"),
        // Unknown request: Request Not Supported; unknown command: ignored.
        ServerCase(name: "Unknown request", request: "3f 0102", response: "01 3f 0000 06"),
        ServerCase(name: "Unknown command", request: "7f 0102", response: nil),
        // Responses sent to a server are not answered.
        ServerCase(name: "Stray response", request: "0b 00", response: nil),
    ]

    static let writes: [ServerCase] = [
        ServerCase(name: "Write", request: "12 0a00 7879", response: "13"),
        ServerCase(name: "Write read-only", request: "12 0300 414243", response: "01 12 0300 03"),
        ServerCase(name: "Write declaration", request: "12 0200 00", response: "01 12 0200 03"),
        ServerCase(name: "Write invalid handle", request: "12 9900 00", response: "01 12 9900 01"),
        ServerCase(name: "Write handle 0", request: "12 0000 00", response: "01 12 0000 01"),
        ServerCase(
            name: "Write too long", request: "12 0a00 \(String(repeating: "aa", count: 17))", response: "01 12 0a00 0d"),
        ServerCase(name: "Write at maximum", request: "12 0a00 \(String(repeating: "aa", count: 16))", response: "13"),
        ServerCase(name: "Write CCCD notify", request: "12 0b00 0100", response: "13"),
        ServerCase(name: "Write CCCD wrong length", request: "12 0b00 010000", response: "01 12 0b00 0d"),
        ServerCase(name: "Write CCCD short", request: "12 0b00 01", response: "01 12 0b00 0d"),
        ServerCase(name: "Write CCCD indicate unsupported", request: "12 0b00 0200", response: "01 12 0b00 fd"),
        ServerCase(name: "Write CCCD reserved bit", request: "12 0b00 0400", response: "01 12 0b00 fd"),
        ServerCase(name: "Write Service Changed CCCD", request: "12 0700 0200", response: "13"),
        ServerCase(name: "Write Command", request: "52 0a00 7a", response: nil),
        ServerCase(name: "Write Command refused silently", request: "52 0300 7a", response: nil),
        ServerCase(name: "Prepare", request: "16 0a00 0000 4142", response: "17 0a00 0000 4142"),
        ServerCase(name: "Prepare read-only", request: "16 0300 0000 41", response: "01 16 0300 03"),
        ServerCase(name: "Prepare invalid handle", request: "16 9900 0000 41", response: "01 16 9900 01"),
        ServerCase(name: "Execute empty queue", request: "18 01", response: "19"),
        ServerCase(name: "Execute cancel", request: "18 00", response: "19"),
        ServerCase(name: "Execute reserved flags", request: "18 02", response: "01 18 0000 04"),
    ]

    static func run(_ entry: ServerCase) throws {
        var server = try ServerFixture.server()
        let client = server.connect(mtu: entry.mtu)
        #expect(server.answer(entry.request, from: client) == serverExpected(entry.response))
    }

    @Test("discovery requests", arguments: discovery)
    func discoveryTable(_ entry: ServerCase) throws { try Self.run(entry) }

    @Test("read requests", arguments: reads)
    func readTable(_ entry: ServerCase) throws { try Self.run(entry) }

    @Test("write requests", arguments: writes)
    func writeTable(_ entry: ServerCase) throws { try Self.run(entry) }

    @Test("every answer fits ATT_MTU and decodes", arguments: [23, 24, 30, 40, 64, 185, 517])
    func answersFitMTU(_ mtu: Int) throws {
        let requests = (Self.discovery + Self.reads).map(\.request)
        var server = try ServerFixture.server()
        let client = server.connect(mtu: mtu)
        for request in requests {
            guard let answer = server.respond(to: serverPDU(request), from: client) else { continue }
            let bytes = try answer.encode(mtu: mtu)
            #expect(try ATTPDU(decoding: bytes, mtu: mtu) == answer)
        }
    }
}

/// MTU packing of list responses over a database of seven 16-bit services.
@Suite("GATT server: MTU packing")
struct ServerPackingTests {
    static func server() throws -> GATTServer {
        GATTServer(database: try AttributeDatabase(services: (0..<7).map { _ in ServiceDefinition(uuid: 0x180F) }))
    }

    @Test("Read By Group Type: (ATT_MTU − 2) / 6 entries")
    func groupType() throws {
        var server = try Self.server()
        let client = server.connect()
        #expect(
            server.answer("10 0100 ffff 0028", from: client) == "1106" + "010001000f18" + "020002000f18"
                + "030003000f18")
        #expect(
            server.answer("10 0400 ffff 0028", from: client) == "1106" + "040004000f18" + "050005000f18"
                + "060006000f18")
        #expect(server.answer("10 0700 ffff 0028", from: client) == "1106" + "070007000f18")
        #expect(server.answer("10 0800 ffff 0028", from: client) == "011008000a")
        server.setMTU(44, for: client)
        #expect(server.answer("10 0100 ffff 0028", from: client)?.count == 2 * (2 + 6 * 7))
    }

    @Test("Find By Type Value: (ATT_MTU − 1) / 4 entries")
    func findByTypeValue() throws {
        var server = try Self.server()
        let client = server.connect()
        #expect(
            server.answer("06 0100 ffff 0028 0f18", from: client)
                == "07" + "01000100" + "02000200" + "03000300" + "04000400" + "05000500")
        #expect(server.answer("06 0600 ffff 0028 0f18", from: client) == "07" + "06000600" + "07000700")
    }

    @Test("Find Information: (ATT_MTU − 2) / 4 entries")
    func findInformation() throws {
        var server = try Self.server()
        let client = server.connect()
        #expect(server.answer("04 0100 ffff", from: client) == "0501" + (1...5).map { "0\($0)000028" }.joined())
        #expect(server.answer("04 0600 ffff", from: client) == "0501" + "06000028" + "07000028")
    }

    @Test("Read By Type: the 253-octet cap on one value at a large ATT_MTU")
    func readByTypeCap() throws {
        let long = [UInt8](repeating: 0xAB, count: 300)
        var server = GATTServer(
            database: try AttributeDatabase(services: [
                ServiceDefinition(
                    uuid: 0x1800,
                    characteristics: [CharacteristicDefinition(uuid: 0x2A00, properties: [.read], value: long)])
            ]))
        let client = server.connect(mtu: 517)
        let reply = server.respond(to: serverPDU("08 0100 ffff 002a"), from: client)
        let answer = try #require(reply)
        #expect(
            answer
                == .readByTypeResponse(ReadByTypeResponse(entries: [.init(handle: 3, value: Array(long.prefix(253)))])))
        #expect(try answer.encode(mtu: 517).count == 2 + 2 + 253)
        // Read Blob reads the rest.
        #expect(
            server.respond(to: serverPDU("0c 0300 fd00"), from: client)
                == .readBlobResponse(ReadBlobResponse(value: Array(long[253...]))))
    }
}
