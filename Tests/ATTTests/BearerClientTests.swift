import Bluetooth
import Testing

@testable import ATT

/// State-machine action tests of the client side of the bearer: requests, responses,
/// timeouts, close.
@Suite("Bearer client state machine")
struct BearerClientTests {
    typealias F = BearerFixtures
    typealias ID = ATTBearer.TransactionID

    @Test func firstRequestStartsItsTimerAndSends() throws {
        var bearer = ATTBearer()
        let (id, actions) = try bearer.send(request: F.read(0x0003))
        #expect(actions == [.startTimer(.request(id), F.timeout), .send([0x0A, 0x03, 0x00])])
        #expect(bearer.pendingRequestCount == 1)
    }

    @Test func secondRequestWaitsForTheFirstResponse() throws {
        var bearer = ATTBearer()
        let (first, _) = try bearer.send(request: F.read(0x0003))
        let (second, queued) = try bearer.send(request: F.read(0x0005))
        #expect(queued == [])
        #expect(bearer.pendingRequestCount == 2)

        let actions = bearer.receive([0x0B, 0x41, 0x42])
        #expect(
            actions == [
                .cancelTimer(.request(first)),
                .deliverResponse(first, F.readResponse([0x41, 0x42])),
                .startTimer(.request(second), F.timeout),
                .send([0x0A, 0x05, 0x00]),
            ])
        #expect(
            bearer.receive([0x0B]) == [.cancelTimer(.request(second)), .deliverResponse(second, F.readResponse([]))])
        #expect(bearer.pendingRequestCount == 0)
    }

    @Test func requestsAreSentInFIFOOrder() throws {
        var bearer = ATTBearer()
        var ids: [ID] = []
        for handle in UInt16(1)...5 {
            ids.append(try bearer.send(request: F.read(handle)).id)
        }
        var sent: [[UInt8]] = [[0x0A, 0x01, 0x00]]
        var delivered: [ID] = []
        for _ in 1...5 {
            let actions = bearer.receive([0x0B, 0x00])
            sent += actions.sentSDUs
            for case .deliverResponse(let id, _) in actions { delivered.append(id) }
        }
        let expected: [[UInt8]] = (UInt8(1)...5).map { (handle: UInt8) -> [UInt8] in [0x0A, handle, 0x00] }
        #expect(sent == expected)
        #expect(delivered == ids)
    }

    @Test func fullRequestQueueRefuses() throws {
        var bearer = ATTBearer(configuration: .init(requestQueueLimit: 2))
        _ = try bearer.send(request: F.read(1))
        _ = try bearer.send(request: F.read(2))
        _ = try bearer.send(request: F.read(3))
        #expect(throws: ATTError.requestInProgress) { try bearer.send(request: F.read(4)) }
        #expect(bearer.pendingRequestCount == 3)
    }

    @Test(arguments: [
        F.notification(1, [0]), .writeCommand(WriteCommand(handle: 1, value: [])), F.readResponse([]),
        .exchangeMTURequest(ExchangeMTURequest(clientRxMTU: 100)), .unknown(opcode: ATTOpcode(0x3E), parameters: []),
    ])
    func sendRequestRefusesOtherPDUs(pdu: ATTPDU) {
        var bearer = ATTBearer()
        #expect(throws: ATTError.unsupportedRequest(pdu.opcode)) { try bearer.send(request: pdu) }
    }

    @Test func responseOfTheWrongKindFailsTheRequest() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(request: F.read(0x0003))
        let actions = bearer.receive([0x13])  // Write Response
        #expect(actions.count == 2)
        #expect(actions.first == .cancelTimer(.request(id)))
        #expect(actions.last?.failure?.isProtocolError == true)
        #expect(bearer.isOpen)
        #expect(bearer.pendingRequestCount == 0)
    }

    @Test func unsolicitedResponseIsReportedAndDropped() throws {
        var bearer = ATTBearer()
        let actions = bearer.receive([0x0B, 0x01])
        #expect(actions.count == 1)
        guard case .reportError(let error) = actions[0] else {
            Issue.record("expected reportError, got \(actions)")
            return
        }
        #expect(error.isProtocolError)
        #expect(bearer.isOpen)
        // The bearer still works afterwards.
        let (id, _) = try bearer.send(request: F.read(1))
        #expect(bearer.receive([0x0B]).contains(.deliverResponse(id, F.readResponse([]))))
    }

    @Test func errorResponseForTheOutstandingRequestFailsItWithThePeerError() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(request: F.read(0x0021))
        let actions = bearer.receive([0x01, 0x0A, 0x21, 0x00, 0x02])
        #expect(
            actions == [
                .cancelTimer(.request(id)),
                .failTransaction(id, .peerError(request: .readRequest, handle: 0x0021, code: .readNotPermitted)),
            ])
    }

    @Test func errorResponseNamingAnotherRequestIsAProtocolError() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(request: F.read(0x0021))
        let actions = bearer.receive([0x01, 0x12, 0x21, 0x00, 0x03])  // for a Write Request
        #expect(actions.first == .cancelTimer(.request(id)))
        #expect(actions.last?.failure?.isProtocolError == true)
    }

    @Test func vendorErrorCodesSurviveIntact() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(request: F.write(0x0030, [1]))
        let actions = bearer.receive([0x01, 0x12, 0x30, 0x00, 0x85])
        #expect(
            actions.last
                == .failTransaction(id, .peerError(request: .writeRequest, handle: 0x0030, code: ATTErrorCode(0x85))))
    }

    @Test func malformedResponseFailsTheRequest() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(
            request: .readByGroupTypeRequest(
                ReadByGroupTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeGroupType: .bit16(0x2800))))
        // Length 6 but a 5-octet entry.
        let actions = bearer.receive([0x11, 0x06, 0x01, 0x00, 0x07, 0x00, 0x00])
        guard case .failTransaction(id, .malformed(let opcode, _, _, _))? = actions.last else {
            Issue.record("expected a malformed failure, got \(actions)")
            return
        }
        #expect(opcode == .readByGroupTypeResponse)
    }

    @Test func timeoutFailsTheRequestAndClosesTheBearer() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(request: F.read(3))
        let (queued, _) = try bearer.send(request: F.read(4))
        let actions = bearer.timerFired(.request(id))
        #expect(actions.first == .failTransaction(id, .timeout(request: .readRequest)))
        #expect(actions.contains { $0.failure?.isBearerClosed == true && $0 == .failTransaction(queued, $0.failure!) })
        guard case .close(let reason)? = actions.last else {
            Issue.record("expected close, got \(actions)")
            return
        }
        #expect(reason.contains("§3.3.3"))
        #expect(!bearer.isOpen)

        // §3.3.3: nothing more on this bearer.
        #expect(throws: ATTError.bearerClosed(reason: reason)) { try bearer.send(request: F.read(5)) }
        #expect(throws: ATTError.bearerClosed(reason: reason)) { try bearer.send(notification: F.notification(5, [1])) }
        #expect(throws: ATTError.bearerClosed(reason: reason)) { try bearer.send(indication: F.indication(5, [1])) }
        #expect(throws: ATTError.bearerClosed(reason: reason)) {
            try bearer.send(command: .writeCommand(WriteCommand(handle: 5, value: [1])))
        }
        // A late response is dropped silently.
        #expect(bearer.receive([0x0B, 0x00]) == [])
        #expect(bearer.close(reason: "again") == [])
    }

    @Test func transactionTimedOutIsTheTimerOfTheOutstandingRequest() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(request: F.read(3))
        #expect(bearer.transactionTimedOut().first == .failTransaction(id, .timeout(request: .readRequest)))
        #expect(!bearer.isOpen)
    }

    @Test func staleTimerIsIgnored() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(request: F.read(3))
        _ = bearer.receive([0x0B])
        #expect(bearer.timerFired(.request(id)) == [])
        #expect(bearer.timerFired(.indication(id)) == [])
        #expect(bearer.isOpen)
    }

    @Test func closeFailsEverythingPendingAtOnce() throws {
        var bearer = ATTBearer()
        let (r1, _) = try bearer.send(request: F.read(1))
        let (r2, _) = try bearer.send(request: F.read(2))
        let (i1, _) = try bearer.send(indication: F.indication(3, [1]))
        let (i2, _) = try bearer.send(indication: F.indication(3, [2]))
        let error = ATTError.bearerClosed(reason: "disconnected")
        let actions = bearer.close(reason: "disconnected")
        #expect(
            actions == [
                .cancelTimer(.request(r1)), .failTransaction(r1, error), .failTransaction(r2, error),
                .cancelTimer(.indication(i1)), .failTransaction(i1, error), .failTransaction(i2, error),
                .close(reason: "disconnected"),
            ])
        #expect(bearer.closeReason == "disconnected")
        #expect(bearer.pendingRequestCount == 0 && bearer.pendingIndicationCount == 0)
        #expect(bearer.close(reason: "twice") == [])
    }

    @Test func emptySDUIsReported() {
        var bearer = ATTBearer()
        let actions = bearer.receive([])
        guard case .reportError(.malformed(_, _, _, .empty))? = actions.first else {
            Issue.record("expected an empty-PDU report, got \(actions)")
            return
        }
        #expect(bearer.isOpen)
    }
}
