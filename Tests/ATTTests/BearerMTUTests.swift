import Bluetooth
import Testing

@testable import ATT

/// ATT_MTU exchange and MTU enforcement (Vol 3 Part F §3.4.2, §3.2.8).
@Suite("Bearer MTU")
struct BearerMTUTests {
    typealias F = BearerFixtures

    @Test func defaultMTUIs23() {
        #expect(ATTBearer().mtu == 23)
    }

    @Test func clientExchangeSetsTheMinimum() throws {
        var bearer = ATTBearer()
        let (id, actions) = try bearer.exchangeMTU(clientRxMTU: 517)
        #expect(actions == [.startTimer(.request(id), F.timeout), .send([0x02, 0x05, 0x02])])
        let reply = bearer.receive([0x03, 0xF7, 0x00])  // Server Rx MTU 247
        #expect(
            reply == [
                .cancelTimer(.request(id)), .mtuChanged(247),
                .deliverResponse(id, .exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: 247))),
            ])
        #expect(bearer.mtu == 247)
        #expect(bearer.rxMTU == 517)
    }

    @Test func clientExchangesOnlyOnce() throws {
        var bearer = ATTBearer()
        _ = try bearer.exchangeMTU(clientRxMTU: 100)
        #expect(throws: ATTError.unsupportedRequest(.exchangeMTURequest)) { try bearer.exchangeMTU(clientRxMTU: 100) }
        _ = bearer.receive([0x03, 0x64, 0x00])
        #expect(throws: ATTError.unsupportedRequest(.exchangeMTURequest)) { try bearer.exchangeMTU(clientRxMTU: 200) }
        #expect(bearer.mtu == 100)
    }

    @Test func exchangeGoesAheadOfQueuedRequests() throws {
        var bearer = ATTBearer()
        let (read1, _) = try bearer.send(request: F.read(1))
        _ = try bearer.send(request: F.read(2))
        let (exchange, queued) = try bearer.exchangeMTU(clientRxMTU: 64)
        #expect(queued == [])
        let afterFirst = bearer.receive([0x0B])
        #expect(afterFirst.first == .cancelTimer(.request(read1)))
        #expect(afterFirst.sentSDUs == [[0x02, 0x40, 0x00]])
        let afterExchange = bearer.receive([0x03, 0x40, 0x00])
        #expect(afterExchange.contains(.mtuChanged(64)))
        #expect(
            afterExchange.contains(
                .deliverResponse(exchange, .exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: 64)))))
        #expect(afterExchange.sentSDUs == [[0x0A, 0x02, 0x00]])
    }

    @Test(arguments: [0, 1, 22, 65536, -5])
    func clientRxMTUOutOfRangeIsRefused(mtu: Int) {
        var bearer = ATTBearer()
        #expect {
            try bearer.exchangeMTU(clientRxMTU: mtu)
        } throws: { error in
            guard case ATTError.invalidParameters(.exchangeMTURequest, _) = error else { return false }
            return true
        }
    }

    @Test(arguments: [UInt16(0), 1, 22])
    func serverRxMTUBelow23LeavesTheDefault(serverRxMTU: UInt16) throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.exchangeMTU(clientRxMTU: 517)
        let actions = bearer.receive([0x03, UInt8(serverRxMTU & 0xFF), UInt8(serverRxMTU >> 8)])
        #expect(
            actions == [
                .cancelTimer(.request(id)),
                .deliverResponse(id, .exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: serverRxMTU))),
            ])
        #expect(bearer.mtu == 23)
    }

    @Test func serverAnswersWithItsRxMTUAndAppliesTheMinimumAfterTheResponse() {
        var bearer = ATTBearer(configuration: .init(rxMTU: 100))
        let actions = bearer.receive([0x02, 0x00, 0x02])  // Client Rx MTU 512
        #expect(actions == [.send([0x03, 0x64, 0x00]), .mtuChanged(100)])
        #expect(bearer.mtu == 100)
    }

    @Test func serverTakesTheClientValueWhenSmaller() {
        var bearer = ATTBearer(configuration: .init(rxMTU: 517))
        #expect(bearer.receive([0x02, 0x30, 0x00]) == [.send([0x03, 0x05, 0x02]), .mtuChanged(48)])
        #expect(bearer.mtu == 48)
    }

    @Test func serverAnswersExchangeMTUWithoutAServerRole() {
        var bearer = ATTBearer(configuration: .init(rxMTU: 247, acceptsRequests: false))
        #expect(bearer.receive([0x02, 0xF7, 0x00]).sentSDUs == [[0x03, 0xF7, 0x00]])
        #expect(bearer.mtu == 247)
    }

    @Test(arguments: [UInt16(0), 10, 22])
    func clientRxMTUBelow23IsAnsweredAndLeavesTheDefault(clientRxMTU: UInt16) {
        var bearer = ATTBearer(configuration: .init(rxMTU: 517))
        let actions = bearer.receive([0x02, UInt8(clientRxMTU), 0x00])
        #expect(actions == [.send([0x03, 0x05, 0x02])])
        #expect(bearer.mtu == 23)
    }

    @Test func secondExchangeFromThePeerIsAnsweredButDoesNotChangeATTMTU() {
        var bearer = ATTBearer(configuration: .init(rxMTU: 100))
        _ = bearer.receive([0x02, 0x00, 0x02])
        #expect(bearer.mtu == 100)
        #expect(bearer.receive([0x02, 0x17, 0x00]) == [.send([0x03, 0x64, 0x00])])
        #expect(bearer.mtu == 100)
    }

    @Test(arguments: [(0, 23), (22, 23), (23, 23), (70_000, 65_535)])
    func configuredRxMTUIsClampedToTheValidRange(configured: Int, used: Int) {
        var bearer = ATTBearer(configuration: .init(rxMTU: configured))
        #expect(bearer.rxMTU == used)
        let actions = bearer.receive([0x02, 0xFF, 0xFF])
        #expect(actions.sentSDUs == [[0x03, UInt8(used & 0xFF), UInt8(used >> 8)]])
    }

    @Test func malformedExchangeMTURequestGetsInvalidPDU() {
        var bearer = ATTBearer()
        let actions = bearer.receive([0x02, 0x17])
        #expect(actions.sentSDUs == [[0x01, 0x02, 0x00, 0x00, 0x04]])
        #expect(bearer.mtu == 23)
    }

    // MARK: Enforcement

    @Test func overMTURequestThrowsAndIsNeverTruncated() throws {
        var bearer = ATTBearer()
        let pdu = F.write(0x0010, [UInt8](repeating: 0xAA, count: 21))  // 24 octets
        #expect(throws: ATTError.pduTooLarge(opcode: .writeRequest, length: 24, mtu: 23)) {
            try bearer.send(request: pdu)
        }
        #expect(bearer.pendingRequestCount == 0)
        // 20 octets of value fit.
        let (_, actions) = try bearer.send(request: F.write(0x0010, [UInt8](repeating: 0xAA, count: 20)))
        #expect(actions.sentSDUs.first?.count == 23)
    }

    @Test func overMTUNotificationCommandAndIndicationThrow() {
        var bearer = ATTBearer()
        let value = [UInt8](repeating: 1, count: 21)
        #expect(throws: ATTError.pduTooLarge(opcode: .handleValueNotification, length: 24, mtu: 23)) {
            try bearer.send(notification: F.notification(1, value))
        }
        #expect(throws: ATTError.pduTooLarge(opcode: .handleValueIndication, length: 24, mtu: 23)) {
            try bearer.send(indication: F.indication(1, value))
        }
        #expect(throws: ATTError.pduTooLarge(opcode: .writeCommand, length: 24, mtu: 23)) {
            try bearer.send(command: .writeCommand(WriteCommand(handle: 1, value: value)))
        }
        #expect(bearer.pendingIndicationCount == 0)
    }

    @Test func largerPDUsFitAfterTheExchange() throws {
        var bearer = ATTBearer()
        _ = try bearer.exchangeMTU(clientRxMTU: 247)
        _ = bearer.receive([0x03, 0xF7, 0x00])
        let actions = try bearer.send(notification: F.notification(1, [UInt8](repeating: 7, count: 244)))
        #expect(actions.sentSDUs.first?.count == 247)
        #expect(throws: ATTError.pduTooLarge(opcode: .handleValueNotification, length: 248, mtu: 247)) {
            try bearer.send(notification: F.notification(1, [UInt8](repeating: 7, count: 245)))
        }
    }

    @Test func receivedOverMTURequestIsAnsweredInvalidPDU() {
        var bearer = ATTBearer(configuration: .init(acceptsRequests: true))
        let sdu: [UInt8] = [0x12, 0x10, 0x00] + [UInt8](repeating: 0, count: 21)  // 24 octets
        let actions = bearer.receive(sdu)
        guard case .reportError(.malformed(.writeRequest, _, _, .exceedsMTU(24, 23)))? = actions.first else {
            Issue.record("expected an exceedsMTU report, got \(actions)")
            return
        }
        #expect(actions.sentSDUs == [[0x01, 0x12, 0x00, 0x00, 0x04]])
        #expect(!actions.contains { if case .deliverRequest = $0 { return true } else { return false } })
    }

    @Test func receivedOverMTUNotificationIsReportedAndDropped() {
        var bearer = ATTBearer()
        let actions = bearer.receive([0x1B, 0x10, 0x00] + [UInt8](repeating: 0, count: 21))
        guard case .reportError(.malformed(_, _, _, .exceedsMTU(24, 23)))? = actions.first, actions.count == 1 else {
            Issue.record("expected one exceedsMTU report, got \(actions)")
            return
        }
    }

    @Test func receivedOverMTUResponseFailsTheRequest() throws {
        var bearer = ATTBearer()
        let (id, _) = try bearer.send(request: F.read(1))
        let actions = bearer.receive([0x0B] + [UInt8](repeating: 0, count: 23))
        #expect(actions.first == .cancelTimer(.request(id)))
        guard case .failTransaction(id, .malformed(_, _, _, .exceedsMTU(24, 23)))? = actions.last else {
            Issue.record("expected an exceedsMTU failure, got \(actions)")
            return
        }
    }
}
