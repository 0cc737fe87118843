import Bluetooth
import Testing

@testable import ATT

/// Notifications, indications and confirmations in both directions.
@Suite("Bearer notifications and indications")
struct BearerValueTests {
    typealias F = BearerFixtures

    @Test func notificationBurstIsDeliveredInOrder() {
        var bearer = ATTBearer()
        var delivered: [ATTPDU] = []
        delivered.reserveCapacity(10_000)
        for index in 0..<10_000 {
            let value = [UInt8(index & 0xFF), UInt8(index >> 8)]
            for action in bearer.receive([0x1B, 0x25, 0x00] + value) {
                guard case .deliverNotification(let pdu) = action else {
                    Issue.record("unexpected \(action)")
                    return
                }
                delivered.append(pdu)
            }
        }
        #expect(delivered.count == 10_000)
        let expected: [ATTPDU] = (0..<10_000).map { (index: Int) -> ATTPDU in
            F.notification(0x25, [UInt8(index & 0xFF), UInt8(index >> 8)])
        }
        #expect(delivered == expected)
    }

    @Test func multipleHandleValueNotificationIsDelivered() {
        var bearer = ATTBearer()
        let actions = bearer.receive([0x23, 0x10, 0x00, 0x01, 0x00, 0xAA, 0x12, 0x00, 0x02, 0x00, 0xBB, 0xCC])
        #expect(
            actions == [
                .deliverNotification(
                    .multipleHandleValueNotification(
                        MultipleHandleValueNotification(entries: [
                            .init(handle: 0x10, value: [0xAA]), .init(handle: 0x12, value: [0xBB, 0xCC]),
                        ])))
            ])
    }

    @Test func indicationIsConfirmedOnlyAfterHandOff() {
        var bearer = ATTBearer()
        #expect(bearer.receive([0x1D, 0x30, 0x00, 0x01]) == [.deliverIndication(F.indication(0x30, [1]))])
        // Nothing was sent: no confirmation before the application has it.
        #expect(bearer.indicationDelivered() == [.send([0x1E])])
        #expect(bearer.indicationDelivered() == [])
    }

    /// Issue 14: a second indication before our confirmation of the first is tolerated (both
    /// delivered, each confirmed in turn) and reported, so the tool can warn or fail.
    @Test func aSecondIndicationBeforeOurConfirmationIsDeliveredAndReported() {
        var bearer = ATTBearer()
        #expect(bearer.receive([0x1D, 0x30, 0x00, 0x01]) == [.deliverIndication(F.indication(0x30, [1]))])
        let second = bearer.receive([0x1D, 0x30, 0x00, 0x02])
        #expect(second.count == 2)
        guard case .reportError(.protocolError(let message))? = second.first else {
            Issue.record("no report: \(second)")
            return
        }
        #expect(message.contains("§3.4.7.2"))
        #expect(second.last == .deliverIndication(F.indication(0x30, [2])))
        #expect(bearer.indicationDelivered() == [.send([0x1E])])
        #expect(bearer.indicationDelivered() == [.send([0x1E])])
        // Confirmed: the next indication is in order again.
        #expect(bearer.receive([0x1D, 0x30, 0x00, 0x03]) == [.deliverIndication(F.indication(0x30, [3]))])
    }

    @Test func notificationsAndIndicationsKeepArrivalOrder() {
        var bearer = ATTBearer()
        var actions: [ATTBearer.Action] = []
        actions += bearer.receive([0x1B, 0x01, 0x00, 0x01])
        actions += bearer.receive([0x1D, 0x02, 0x00, 0x02])
        actions += bearer.receive([0x1B, 0x03, 0x00, 0x03])
        #expect(
            actions == [
                .deliverNotification(F.notification(1, [1])), .deliverIndication(F.indication(2, [2])),
                .deliverNotification(F.notification(3, [3])),
            ])
        #expect(actions.sentSDUs.isEmpty)
    }

    @Test func malformedIndicationIsNotConfirmed() {
        var bearer = ATTBearer()
        let actions = bearer.receive([0x1D, 0x00, 0x00, 0x01])  // handle 0x0000
        guard case .reportError(.malformed(.handleValueIndication, _, _, _))? = actions.first else {
            Issue.record("expected a malformed report, got \(actions)")
            return
        }
        #expect(bearer.indicationDelivered() == [])
    }

    @Test func ourIndicationStartsItsTimerAndIsConfirmed() throws {
        var bearer = ATTBearer()
        let (id, actions) = try bearer.send(indication: F.indication(0x30, [1]))
        #expect(actions == [.startTimer(.indication(id), F.timeout), .send([0x1D, 0x30, 0x00, 0x01])])
        #expect(bearer.receive([0x1E]) == [.cancelTimer(.indication(id)), .indicationConfirmed(id)])
    }

    @Test func secondIndicationWaitsForTheFirstConfirmation() throws {
        var bearer = ATTBearer()
        let (first, _) = try bearer.send(indication: F.indication(0x30, [1]))
        let (second, queued) = try bearer.send(indication: F.indication(0x30, [2]))
        #expect(queued == [])
        // Notifications are not held back by an unconfirmed indication.
        #expect(try bearer.send(notification: F.notification(0x31, [9])) == [.send([0x1B, 0x31, 0x00, 0x09])])
        #expect(
            bearer.receive([0x1E]) == [
                .cancelTimer(.indication(first)), .indicationConfirmed(first),
                .startTimer(.indication(second), F.timeout), .send([0x1D, 0x30, 0x00, 0x02]),
            ])
        #expect(bearer.receive([0x1E]) == [.cancelTimer(.indication(second)), .indicationConfirmed(second)])
    }

    @Test func indicationQueueIsBounded() throws {
        var bearer = ATTBearer(configuration: .init(indicationQueueLimit: 1))
        _ = try bearer.send(indication: F.indication(1, [1]))
        _ = try bearer.send(indication: F.indication(1, [2]))
        #expect(throws: ATTError.requestInProgress) { try bearer.send(indication: F.indication(1, [3])) }
    }

    @Test func indicationAndRequestAreIndependentTransactions() throws {
        var bearer = ATTBearer()
        let (request, requestActions) = try bearer.send(request: F.read(1))
        let (indication, indicationActions) = try bearer.send(indication: F.indication(2, [0]))
        #expect(requestActions.sentSDUs.count == 1 && indicationActions.sentSDUs.count == 1)
        #expect(bearer.receive([0x1E]).contains(.indicationConfirmed(indication)))
        #expect(bearer.receive([0x0B]).contains(.deliverResponse(request, F.readResponse([]))))
    }

    @Test func unconfirmedIndicationTimesOutAndClosesTheBearer() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(indication: F.indication(0x30, [1]))
        let actions = bearer.timerFired(.indication(id))
        #expect(actions.first == .failTransaction(id, .timeout(request: .handleValueIndication)))
        #expect(!bearer.isOpen)
    }

    @Test func confirmationWithoutIndicationIsReported() {
        var bearer = ATTBearer()
        let actions = bearer.receive([0x1E])
        guard case .reportError(let error)? = actions.first, actions.count == 1 else {
            Issue.record("expected one report, got \(actions)")
            return
        }
        #expect(error.isProtocolError)
        #expect(bearer.isOpen)
    }

    @Test func malformedConfirmationDoesNotConfirm() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(indication: F.indication(0x30, [1]))
        let actions = bearer.receive([0x1E, 0x00])
        guard case .reportError? = actions.first else {
            Issue.record("expected a report, got \(actions)")
            return
        }
        #expect(bearer.pendingIndicationCount == 1)
        #expect(bearer.receive([0x1E]).contains(.indicationConfirmed(id)))
    }

    @Test(arguments: [F.read(1), F.readResponse([]), F.indication(1, [1])])
    func sendNotificationRefusesOtherPDUs(pdu: ATTPDU) {
        var bearer = ATTBearer()
        #expect(throws: ATTError.unsupportedRequest(pdu.opcode)) { try bearer.send(notification: pdu) }
        #expect(throws: ATTError.unsupportedRequest(pdu.opcode)) { try bearer.send(command: pdu) }
    }
}
