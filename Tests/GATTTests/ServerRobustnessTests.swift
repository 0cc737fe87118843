import ATT
import Bluetooth
import Testing

@testable import GATT
import TestSupport

/// Untrusted input never traps: random requests get a matching response or an Error
/// Response that fits ATT_MTU; every prefix of a description fails cleanly.
@Suite("GATT server: robustness", .cpuBound)
struct ServerRobustnessTests {
    /// xorshift64*: deterministic, seeded per run.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func handle() -> UInt16 { below(4) == 0 ? UInt16(truncatingIfNeeded: next()) : UInt16(below(0x16)) }
        mutating func bytes(_ max: Int) -> [UInt8] {
            (0..<below(max + 1)).map { _ in UInt8(truncatingIfNeeded: next()) }
        }
    }

    static func randomRequest(_ random: inout Random, mtu: Int) -> ATTPDU {
        let types: [BluetoothUUID] = [0x2800, 0x2801, 0x2802, 0x2803, 0x2902, 0x2A29, ServerFixture.u2, 0x1234]
        let type = types[random.below(types.count)]
        switch random.below(14) {
        case 0:
            return .findInformationRequest(
                FindInformationRequest(startingHandle: random.handle(), endingHandle: random.handle()))
        case 1:
            return .findByTypeValueRequest(
                FindByTypeValueRequest(
                    startingHandle: random.handle(), endingHandle: random.handle(), attributeType: 0x2800,
                    attributeValue: random.bytes(mtu - 7)))
        case 2:
            return .readByTypeRequest(
                ReadByTypeRequest(startingHandle: random.handle(), endingHandle: random.handle(), attributeType: type))
        case 3:
            return .readByGroupTypeRequest(
                ReadByGroupTypeRequest(
                    startingHandle: random.handle(), endingHandle: random.handle(), attributeGroupType: type))
        case 4: return .readRequest(ReadRequest(handle: random.handle()))
        case 5: return .readBlobRequest(ReadBlobRequest(handle: random.handle(), offset: UInt16(random.below(40))))
        case 6:
            return .readMultipleRequest(
                ReadMultipleRequest(handles: (0..<random.below(6)).map { _ in random.handle() }))
        case 7:
            return .readMultipleVariableRequest(
                ReadMultipleVariableRequest(handles: (0..<random.below(6)).map { _ in random.handle() }))
        case 8: return .writeRequest(WriteRequest(handle: random.handle(), value: random.bytes(mtu - 3)))
        case 9:
            return .prepareWriteRequest(
                PrepareWriteRequest(
                    handle: random.handle(), offset: UInt16(random.below(40)), value: random.bytes(mtu - 5)))
        case 10:
            return .executeWriteRequest(
                ExecuteWriteRequest(flags: ExecuteWriteRequest.Flags(rawValue: UInt8(random.below(3)))))
        case 11: return .writeCommand(WriteCommand(handle: random.handle(), value: random.bytes(mtu - 3)))
        case 12:
            return .signedWriteCommand(
                SignedWriteCommand(
                    handle: random.handle(), value: random.bytes(mtu - 15),
                    signCounter: UInt32(truncatingIfNeeded: random.next()),
                    mac: random.next()))
        default:
            // Any opcode octet with random parameters, as the decoder sees it (an unknown opcode
            // decodes as `.unknown`; a known one as its PDU when the parameters fit).
            let bytes = [UInt8(truncatingIfNeeded: random.next())] + random.bytes(6)
            return (try? ATTPDU(decoding: bytes)) ?? .readRequest(ReadRequest(handle: random.handle()))
        }
    }

    @Test("random requests: a matching response or an Error Response, within ATT_MTU", arguments: [23, 48, 185, 517])
    func randomRequests(_ mtu: Int) throws {
        var random = Random(state: 0x9E37_79B9_7F4A_7C15 ^ UInt64(mtu))
        var server = try ServerFixture.server(configuration: GATTServer.Configuration(preparedWriteLimit: 8))
        let clients = [server.connect(mtu: mtu), server.connect(mtu: mtu, security: .authenticated)]
        for _ in 0..<3000 {
            let request = Self.randomRequest(&random, mtu: mtu)
            let client = clients[random.below(2)]
            let answer = server.respond(to: request, from: client)
            switch request.opcode.kind {
            case .request,
                nil where !request.opcode.isCommand:
                let pdu = try #require(answer, "\(request)")
                if case .errorResponse(let error) = pdu {
                    #expect(error.requestOpcode == request.opcode)
                } else {
                    #expect(pdu.opcode == request.opcode.responseOpcode, "\(request) → \(pdu)")
                }
                let bytes = try pdu.encode(mtu: mtu)
                #expect(try ATTPDU(decoding: bytes, mtu: mtu) == pdu)
            default:
                #expect(answer == nil)
            }
            _ = server.takeEvents()
        }
        #expect(server.preparedWriteCount(of: clients[0]) <= 8)
    }

    @Test("every strict prefix of a description is refused with an error, never a trap")
    func descriptionPrefixes() {
        let bytes = Array(ServerLoaderTests.sample.utf8)
        for length in 0..<bytes.count {
            #expect(throws: DatabaseDescriptionError.self) {
                _ = try DatabaseDescription.database(json: Array(bytes[..<length]))
            }
        }
        #expect(throws: Never.self) { _ = try DatabaseDescription.database(json: bytes) }
    }

    @Test("the event list is bounded")
    func boundedEvents() throws {
        var server = try ServerFixture.server(configuration: GATTServer.Configuration(eventLimit: 4))
        let client = server.connect()
        for value in 0..<10 as Range<UInt8> {
            _ = server.respond(to: .writeRequest(WriteRequest(handle: 0x0A, value: [value])), from: client)
        }
        #expect(server.takeEvents() == (6..<10).map { .valueWritten(client, handle: 0x0A, value: [UInt8($0)]) })
    }
}
