import Bluetooth
import Testing

@testable import HCI

/// State-machine action tests of HCI command flow control (Core Spec 5.4, Vol 4, Part E, §4.4).
@Suite("Controller command flow")
struct TransportCommandFlowTests {
    static let reset = try! HCICommandPacket(opcode: HCIOpcode(rawValue: 0x0C03))
    static let readBDAddr = try! HCICommandPacket(opcode: HCIOpcode(rawValue: 0x1009))
    static let leRand = try! HCICommandPacket(opcode: HCIOpcode(rawValue: 0x2018))
    static let leCreateConnection = try! HCICommandPacket(
        opcode: HCIOpcode(rawValue: 0x200D), parameters: [UInt8](repeating: 0, count: 25))

    static func complete(_ opcode: UInt16, credits: UInt8 = 1, _ returns: [UInt8] = [0x00]) -> [UInt8] {
        [0x0E, UInt8(3 + returns.count), credits, UInt8(opcode & 0xFF), UInt8(opcode >> 8)] + returns
    }

    static func status(_ opcode: UInt16, status: UInt8 = 0x00, credits: UInt8 = 1) -> [UInt8] {
        [0x0F, 0x04, status, credits, UInt8(opcode & 0xFF), UInt8(opcode >> 8)]
    }

    static func completeEvent(_ bytes: [UInt8]) -> CommandCompleteEvent {
        var reader = ByteReader(bytes[2...])
        return try! CommandCompleteEvent(parsing: &reader)
    }

    @Test func oneCommandAtATimeUntilTheControllerGrantsMore() {
        var flow = HCICommandFlow()
        let (first, a1) = flow.submit(Self.reset, now: .zero)
        #expect(a1 == [.send(Self.reset)])
        let (second, a2) = flow.submit(Self.readBDAddr, now: .zero)
        #expect(a2.isEmpty, "after power-on the host may have one command outstanding")
        #expect(flow.queuedCount == 1)

        let answer = Self.complete(0x0C03)
        let a3 = flow.receiveEvent(answer, now: .milliseconds(1))
        #expect(a3 == [.finish(first, .complete(Self.completeEvent(answer))), .send(Self.readBDAddr)])
        let bdAddr = Self.complete(0x1009, [0x00, 1, 2, 3, 4, 5, 6])
        #expect(
            flow.receiveEvent(bdAddr, now: .milliseconds(2)) == [.finish(second, .complete(Self.completeEvent(bdAddr)))]
        )
        #expect(flow.credits == 1)
        #expect(flow.nextDeadline == nil)
    }

    @Test func creditsAreAnAbsoluteCountNotAnIncrement() {
        var flow = HCICommandFlow()
        _ = flow.submit(Self.reset, now: .zero)
        // The controller now accepts three at once.
        _ = flow.receiveEvent(Self.complete(0x0C03, credits: 3), now: .zero)
        #expect(flow.credits == 3)
        #expect(flow.submit(Self.readBDAddr, now: .zero).1 == [.send(Self.readBDAddr)])
        #expect(flow.submit(Self.leRand, now: .zero).1 == [.send(Self.leRand)])
        #expect(flow.credits == 1)
        // A later answer granting 1 sets the count to 1, it does not add.
        _ = flow.receiveEvent(Self.complete(0x1009, credits: 1, [0x00, 1, 2, 3, 4, 5, 6]), now: .zero)
        #expect(flow.credits == 1)
    }

    @Test func aSecondCommandWithTheSameOpcodeWaitsAndKeepsOrder() {
        var flow = HCICommandFlow()
        _ = flow.submit(Self.reset, now: .zero)
        _ = flow.receiveEvent(Self.complete(0x0C03, credits: 5), now: .zero)
        let (firstRand, a1) = flow.submit(Self.leRand, now: .zero)
        #expect(a1 == [.send(Self.leRand)])
        let (secondRand, a2) = flow.submit(Self.leRand, now: .zero)
        let (_, a3) = flow.submit(Self.readBDAddr, now: .zero)
        #expect(a2.isEmpty)
        #expect(a3.isEmpty, "commands go out in submission order")
        let rand = Self.complete(0x2018, credits: 5, [0x00, 1, 2, 3, 4, 5, 6, 7, 8])
        let actions = flow.receiveEvent(rand, now: .zero)
        #expect(
            actions == [
                .finish(firstRand, .complete(Self.completeEvent(rand))), .send(Self.leRand), .send(Self.readBDAddr),
            ])
        #expect(flow.receiveEvent(rand, now: .zero) == [.finish(secondRand, .complete(Self.completeEvent(rand)))])
    }

    @Test func commandStatusAcceptsOrRefuses() {
        var flow = HCICommandFlow()
        let (create, _) = flow.submit(Self.leCreateConnection, now: .zero)
        let accepted = flow.receiveEvent(Self.status(0x200D), now: .zero)
        #expect(
            accepted == [
                .finish(
                    create,
                    .accepted(
                        CommandStatusEvent(
                            status: .success, numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0x200D))))
            ])

        let (again, _) = flow.submit(Self.leCreateConnection, now: .zero)
        // 0x0C: Command Disallowed.
        let refused = flow.receiveEvent(Self.status(0x200D, status: 0x0C), now: .zero)
        #expect(
            refused == [
                .finish(
                    again,
                    .failed(.commandFailed(opcode: HCIOpcode(rawValue: 0x200D), status: HCIStatus(rawValue: 0x0C))))
            ])
    }

    @Test func nopCompleteOnlyGrantsCredits() {
        var flow = HCICommandFlow()
        _ = flow.submit(Self.leCreateConnection, now: .zero)
        // Accepted, but no credits left: the next command waits for a NOP.
        _ = flow.receiveEvent(Self.status(0x200D, credits: 0), now: .zero)
        let (_, waiting) = flow.submit(Self.reset, now: .zero)
        #expect(waiting.isEmpty)
        #expect(flow.receiveEvent([0x0E, 0x03, 0x01, 0x00, 0x00], now: .zero) == [.send(Self.reset)])
    }

    @Test func eventsThatAreNotCommandFlowAreDelivered() {
        var flow = HCICommandFlow()
        let leMeta: [UInt8] = [0x3E, 0x03, 0x02, 0x00, 0x00]
        let disconnection: [UInt8] = [0x05, 0x04, 0x00, 0x40, 0x00, 0x13]
        #expect(flow.receiveEvent(leMeta, now: .zero) == [.deliver(leMeta)])
        #expect(flow.receiveEvent(disconnection, now: .zero) == [.deliver(disconnection)])
        // An answer for an opcode nobody waits for is delivered too (after a timeout, say),
        // and its credits still count.
        let stray = Self.complete(0x1009, credits: 4, [0x00, 1, 2, 3, 4, 5, 6])
        #expect(flow.receiveEvent(stray, now: .zero) == [.deliver(stray)])
        #expect(flow.credits == 4)
    }

    @Test(arguments: [
        ([UInt8]([0x0E, 0x02, 0x01, 0x03]), "HCI_Command_Complete"),
        ([0x0F, 0x03, 0x00, 0x01, 0x0D], "HCI_Command_Status"),
        ([0x0F, 0x05, 0x00, 0x01, 0x0D, 0x20, 0xAA], "HCI_Command_Status"),
        ([0x0E, 0x09, 0x01, 0x03, 0x0C, 0x00], "HCI event header"),
    ])
    func malformedCommandFlowEventsAreDiscarded(event: [UInt8], context: String) {
        var flow = HCICommandFlow()
        let (_, _) = flow.submit(Self.reset, now: .zero)
        let actions = flow.receiveEvent(event, now: .zero)
        guard case .discard(let bytes, .malformed(let errorContext, _, _))? = actions.first, actions.count == 1 else {
            Issue.record("expected one discard, got \(actions)")
            return
        }
        #expect(bytes == event)
        #expect(errorContext == context)
        #expect(flow.outstandingOpcodes == [HCIOpcode(rawValue: 0x0C03)])
    }

    @Test func anUnansweredCommandTimesOutAndFreesTheController() {
        var flow = HCICommandFlow(commandTimeout: .seconds(2))
        let (reset, _) = flow.submit(Self.reset, now: .seconds(10))
        let (bdAddr, _) = flow.submit(Self.readBDAddr, now: .seconds(10))
        #expect(flow.nextDeadline == .seconds(12))
        #expect(flow.expire(now: .milliseconds(11_999)).isEmpty)
        let actions = flow.expire(now: .seconds(12))
        #expect(
            actions == [
                .finish(reset, .failed(.commandTimeout(opcode: HCIOpcode(rawValue: 0x0C03)))), .send(Self.readBDAddr),
            ])
        #expect(flow.nextDeadline == .seconds(14))
        #expect(
            flow.expire(now: .seconds(15)) == [
                .finish(bdAddr, .failed(.commandTimeout(opcode: HCIOpcode(rawValue: 0x1009))))
            ])
        #expect(flow.nextDeadline == nil)
        #expect(flow.outstandingOpcodes.isEmpty)
    }

    @Test func zeroCreditsWithoutANOPAreBounded() {
        var flow = HCICommandFlow(commandTimeout: .seconds(2))
        _ = flow.submit(Self.leCreateConnection, now: .zero)
        _ = flow.receiveEvent(Self.status(0x200D, credits: 0), now: .seconds(1))
        let (_, waiting) = flow.submit(Self.reset, now: .seconds(1))
        #expect(waiting.isEmpty)
        #expect(flow.nextDeadline == .seconds(3))
        #expect(flow.expire(now: .seconds(3)) == [.send(Self.reset)])
        #expect(flow.nextDeadline == .seconds(5))
    }

    @Test func closingFailsEverythingPendingAndLaterSubmissions() {
        var flow = HCICommandFlow()
        let (sent, _) = flow.submit(Self.reset, now: .zero)
        let (queued, _) = flow.submit(Self.readBDAddr, now: .zero)
        let closed = HCIError.transportClosed("unplugged")
        #expect(flow.close(reason: "unplugged") == [.finish(sent, .failed(closed)), .finish(queued, .failed(closed))])
        #expect(flow.close(reason: "again").isEmpty)
        let (late, actions) = flow.submit(Self.leRand, now: .zero)
        #expect(actions == [.finish(late, .failed(closed))])
        #expect(flow.receiveEvent(Self.complete(0x0C03), now: .zero).isEmpty)
        #expect(flow.expire(now: .seconds(100)).isEmpty)
        #expect(flow.nextDeadline == nil)
    }
}
