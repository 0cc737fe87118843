import ATT
import Bluetooth
import GATT
import Testing

@Suite("Robustness: hostile client against our GATT server")
struct RobustnessServerTests {
    func prepare(_ handle: UInt16, offset: UInt16, _ value: [UInt8]) -> ATTPDU {
        .prepareWriteRequest(PrepareWriteRequest(handle: handle, offset: offset, value: value))
    }

    func errorCode(_ pdu: ATTPDU?) -> ATTErrorCode? {
        if case .errorResponse(let error)? = pdu { return error.errorCode }
        return nil
    }

    @Test("a Prepare Write flood: the queue stops at its limit with Prepare Queue Full, memory stays bounded")
    func prepareWriteFlood() throws {
        var server = try PeerDatabase.server(configuration: GATTServer.Configuration(preparedWriteLimit: 16))
        let client = server.connect(mtu: 23)
        var full = 0
        for index in 0..<10_000 {
            let answer = server.respond(to: prepare(0x000A, offset: UInt16(index % 300), [UInt8(index & 0xFF)]), from: client)
            if errorCode(answer) == .prepareQueueFull { full += 1 }
            #expect(server.preparedWriteCount(of: client) <= 16)
        }
        #expect(full == 10_000 - 16, "every request past the limit is refused")
        // Cancelling empties the queue; the attribute is untouched.
        let cancel = server.respond(to: .executeWriteRequest(ExecuteWriteRequest(flags: .cancelAll)), from: client)
        #expect(cancel == .executeWriteResponse(ExecuteWriteResponse()))
        #expect(server.preparedWriteCount(of: client) == 0)
        #expect(server.database.attribute(at: 0x000A)?.value == PeerDatabase.longValue)
    }

    @Test("per-attribute octets are bounded even below the request limit")
    func prepareWriteOctetFlood() throws {
        var server = try PeerDatabase.server(
            configuration: GATTServer.Configuration(preparedWriteLimit: 1000, preparedOctetsPerAttribute: 100))
        let client = server.connect(mtu: 23)
        var accepted = 0
        for index in 0..<100 {
            let answer = server.respond(to: prepare(0x000A, offset: UInt16(index * 18), Array(repeating: 1, count: 18)), from: client)
            if case .prepareWriteResponse? = answer { accepted += 1 }
        }
        #expect(accepted == 100 / 18, "\(accepted) prepared")
    }

    @Test("out-of-range offsets: Invalid Offset at execute, nothing written",
        arguments: [UInt16(301), 512, 0xFFFF])
    func outOfRangeOffsets(offset: UInt16) throws {
        var server = try PeerDatabase.server()
        let client = server.connect(mtu: 23)
        let prepared = server.respond(to: prepare(0x000A, offset: offset, [1, 2, 3]), from: client)
        switch prepared {
        case .prepareWriteResponse?:
            let execute = server.respond(to: .executeWriteRequest(ExecuteWriteRequest(flags: .writeAll)), from: client)
            #expect(
                [ATTErrorCode.invalidOffset, .invalidAttributeValueLength].contains(errorCode(execute)),
                "execute answered \(String(describing: execute))")
        case .errorResponse(let error)?:
            #expect([ATTErrorCode.invalidOffset, .invalidAttributeValueLength].contains(error.errorCode))
        default:
            Issue.record("unexpected answer \(String(describing: prepared))")
        }
        #expect(server.database.attribute(at: 0x000A)?.value == PeerDatabase.longValue)
        #expect(server.preparedWriteCount(of: client) == 0, "the queue is cleared after execute")
    }

    @Test("read blob past the end: Invalid Offset; read blob at the end: empty")
    func readBlobOffsets() throws {
        var server = try PeerDatabase.server()
        let client = server.connect(mtu: 23)
        #expect(errorCode(server.respond(to: .readBlobRequest(ReadBlobRequest(handle: 0x000A, offset: 301)), from: client)) == .invalidOffset)
        #expect(server.respond(to: .readBlobRequest(ReadBlobRequest(handle: 0x000A, offset: 300)), from: client)
            == .readBlobResponse(ReadBlobResponse(value: [])))
    }

    @Test("prepared writes to attributes the client may not write are refused and never executed")
    func preparedWritesRespectPermissions() throws {
        var server = try PeerDatabase.server()
        let client = server.connect(mtu: 23, security: .none)
        let encrypted = server.respond(to: prepare(0x000E, offset: 0, [9, 9]), from: client)
        let executed = server.respond(to: .executeWriteRequest(ExecuteWriteRequest(flags: .writeAll)), from: client)
        #expect(errorCode(encrypted) != nil || errorCode(executed) != nil, "an encrypted attribute was written on a plain link")
        #expect(server.database.attribute(at: 0x000E)?.value == Array("secret".utf8))
    }

    /// Found by the `gatt-server` fuzz target: `GATTServer.respond(to:from:)` echoed a Prepare
    /// Write Request longer than the client's ATT_MTU in a response just as long. Fixed: the
    /// server answers Invalid PDU itself (and the bearer refuses such a request first anyway —
    /// checked below).
    @Test("fuzz regression: an over-MTU Prepare Write Request")
    func overMTUPrepareWrite() async throws {
        var server = try PeerDatabase.server()
        let client = server.connect(mtu: 23)
        let request = prepare(0x000A, offset: 0, Array(repeating: 0x16, count: 40))
        let answer = server.respond(to: request, from: client)
        #expect((answer?.encodedLength ?? 0) <= 23)
        guard case .errorResponse(let refusal)? = answer else {
            Issue.record("expected Invalid PDU, got \(String(describing: answer))")
            return
        }
        #expect(refusal.errorCode == .invalidPDU)
        // Through the bearer: refused with Invalid PDU.
        var bearer = ATTBearer(configuration: ATTBearer.Configuration(acceptsRequests: true))
        let actions = bearer.receive(request.encoded)
        let sent = actions.compactMap { action -> [UInt8]? in if case .send(let sdu) = action { return sdu } else { return nil } }
        #expect(sent == [ATTPDU.errorResponse(ErrorResponse(requestOpcode: .prepareWriteRequest, handle: 0, errorCode: .invalidPDU)).encoded])
        #expect(!actions.contains { if case .deliverRequest = $0 { return true } else { return false } })
    }
}
