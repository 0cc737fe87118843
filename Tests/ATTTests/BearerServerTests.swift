import Bluetooth
import Testing

@testable import ATT

/// State-machine action tests of the server side: dispatch, Request Not Supported, unknown
/// opcodes, answers, the sequential rule.
@Suite("Bearer server state machine")
struct BearerServerTests {
    typealias F = BearerFixtures

    @Test func requestWithoutServerRoleIsAnsweredRequestNotSupported() {
        var bearer = ATTBearer()
        #expect(bearer.receive([0x0A, 0x03, 0x00]) == [.send([0x01, 0x0A, 0x00, 0x00, 0x06])])
        #expect(bearer.receive([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]) == [.send([0x01, 0x10, 0x00, 0x00, 0x06])])
    }

    @Test(arguments: [UInt8(0x3F), 0x14, 0x1F, 0x22, 0x30, 0x3A])
    func unknownRequestOpcodeIsAnsweredRequestNotSupported(opcode: UInt8) {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        #expect(bearer.receive([opcode, 0x01, 0x02]) == [.send([0x01, opcode, 0x00, 0x00, 0x06])])
        #expect(bearer.isOpen)
    }

    @Test(arguments: [UInt8(0x7F), 0x40, 0x53, 0xC0, 0xFF])
    func unknownCommandIsIgnored(opcode: UInt8) {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        #expect(bearer.receive([opcode, 0x01, 0x02]) == [])
        #expect(bearer.isOpen)
    }

    @Test func commandWithoutServerRoleIsIgnored() {
        var bearer = ATTBearer()
        #expect(bearer.receive([0x52, 0x10, 0x00, 0x01]) == [])
    }

    @Test func commandGoesToTheServerRole() {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        #expect(
            bearer.receive([0x52, 0x10, 0x00, 0x01]) == [
                .deliverCommand(.writeCommand(WriteCommand(handle: 0x10, value: [1])))
            ])
    }

    @Test func requestGoesToTheServerRoleAndItsAnswerIsSent() throws {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        #expect(bearer.receive([0x0A, 0x03, 0x00]) == [.deliverRequest(F.read(3))])
        #expect(try bearer.respond(F.readResponse([0x53, 0x54])) == [.send([0x0B, 0x53, 0x54])])
        // Answered: nothing left to answer.
        #expect(throws: ATTError.self) { try bearer.respond(F.readResponse([])) }
    }

    @Test func errorResponseAnswersTheRequest() throws {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        _ = bearer.receive([0x0A, 0x03, 0x00])
        #expect(
            try bearer.respond(F.errorResponse(.readRequest, 3, .readNotPermitted)) == [
                .send([0x01, 0x0A, 0x03, 0x00, 0x02])
            ])
    }

    @Test func mismatchedAnswerIsRefusedAndTheRequestStillWaits() throws {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        _ = bearer.receive([0x0A, 0x03, 0x00])
        #expect(throws: ATTError.self) { try bearer.respond(.writeResponse(WriteResponse())) }
        #expect(throws: ATTError.self) { try bearer.respond(F.errorResponse(.writeRequest, 3, .invalidHandle)) }
        #expect(try bearer.respond(F.readResponse([1])) == [.send([0x0B, 0x01])])
    }

    @Test func overMTUAnswerIsRefusedAndTheRequestStillWaits() throws {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        _ = bearer.receive([0x0A, 0x03, 0x00])
        #expect(throws: ATTError.pduTooLarge(opcode: .readResponse, length: 24, mtu: 23)) {
            try bearer.respond(F.readResponse([UInt8](repeating: 0, count: 23)))
        }
        #expect(try bearer.respond(F.readResponse([UInt8](repeating: 0, count: 22))).sentSDUs.first?.count == 23)
    }

    @Test func respondWithoutRequestThrows() {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        #expect(throws: ATTError.self) { try bearer.respond(F.readResponse([])) }
    }

    @Test func requestBeforeThePreviousIsAnsweredClosesTheBearer() {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        _ = bearer.receive([0x0A, 0x03, 0x00])
        let actions = bearer.receive([0x0A, 0x05, 0x00])
        guard case .close(let reason)? = actions.last else {
            Issue.record("expected close, got \(actions)")
            return
        }
        #expect(reason.contains("§3.3.2"))
        #expect(!bearer.isOpen)
    }

    @Test func malformedRequestIsAnsweredInvalidPDU() {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        let actions = bearer.receive([0x0A, 0x03])  // Read Request, handle truncated
        guard case .reportError(.malformed(.readRequest, _, _, _))? = actions.first else {
            Issue.record("expected a malformed report, got \(actions)")
            return
        }
        #expect(actions.sentSDUs == [[0x01, 0x0A, 0x00, 0x00, 0x04]])
        // Answered: the next request is accepted.
        #expect(bearer.receive([0x0A, 0x03, 0x00]) == [.deliverRequest(F.read(3))])
    }

    @Test(arguments: [
        ([UInt8]([0x04, 0x00, 0x00, 0xFF, 0xFF]), [UInt8]([0x01, 0x04, 0x00, 0x00, 0x01])),  // Find Information, 0x0000
        ([0x08, 0x10, 0x00, 0x05, 0x00, 0x03, 0x28], [0x01, 0x08, 0x10, 0x00, 0x01]),  // Read By Type, start > end
        ([0x0A, 0x00, 0x00], [0x01, 0x0A, 0x00, 0x00, 0x01]),  // Read Request, handle 0x0000
        ([0x18, 0x05], [0x01, 0x18, 0x00, 0x00, 0x04]),  // Execute Write, reserved flags
    ])
    func invalidRequestsAreAnsweredByTheBearer(request: [UInt8], answer: [UInt8]) {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        #expect(bearer.receive(request) == [.send(answer)])
        // Answered: the next request is delivered.
        #expect(bearer.receive([0x0A, 0x03, 0x00]) == [.deliverRequest(F.read(3))])
    }

    @Test func serverAndClientRolesRunAtOnce() throws {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        let (id, _) = try bearer.send(request: F.read(0x20))
        // The peer's own request arrives while ours is outstanding.
        #expect(bearer.receive([0x0A, 0x03, 0x00]) == [.deliverRequest(F.read(3))])
        #expect(
            bearer.receive([0x0B, 0x09]) == [.cancelTimer(.request(id)), .deliverResponse(id, F.readResponse([9]))])
        #expect(try bearer.respond(F.readResponse([1])) == [.send([0x0B, 0x01])])
    }
}
