import ATT
import Bluetooth
import GATT
import Testing

/// Drives a sans-I/O procedure with a hostile server's answers; stops at the first done/fail,
/// or when the answers run out (then `outcome` is the unanswered `send`).
struct HostileRun<P: GATTClientProcedure> {
    var sent: [ATTPDU] = []
    var outcome: GATTProcedureAction<P.Result>

    init(_ procedure: P, answers: [ATTPDU]) {
        var procedure = procedure
        var action = procedure.start()
        var answers = answers[...]
        while case .send(let request) = action, let answer = answers.popFirst() {
            sent.append(request)
            action = procedure.receive(answer)
        }
        outcome = action
    }

    var error: GATTError? {
        if case .fail(let error) = outcome { return error }
        return nil
    }

    /// The response-check reason of an `invalidResponse` failure.
    var reason: GATTError.ResponseReason? {
        if case .invalidResponse(_, let reason)? = error { return reason }
        return nil
    }
}

func groups(_ entries: [(UInt16, UInt16)], uuid: UInt16 = 0x180F) -> ATTPDU {
    .readByGroupTypeResponse(
        ReadByGroupTypeResponse(
            entries: entries.map { .init(handle: $0.0, endGroupHandle: $0.1, value: [UInt8(uuid & 0xFF), UInt8(uuid >> 8)]) }))
}

/// A characteristic declaration entry at `handle` whose value handle is `handle + 1`.
func declarations(_ handles: [UInt16]) -> ATTPDU {
    .readByTypeResponse(
        ReadByTypeResponse(
            entries: handles.map { .init(handle: $0, value: [0x02, UInt8(($0 &+ 1) & 0xFF), UInt8(($0 &+ 1) >> 8), 0x19, 0x2A]) }))
}

func information(_ handles: [UInt16]) -> ATTPDU {
    var value: [UInt8] = [0x01]
    for handle in handles { value += [UInt8(handle & 0xFF), UInt8(handle >> 8), 0x02, 0x29] }
    return try! ATTPDU(decoding: [0x05] + value)
}

func attributeNotFound(_ opcode: ATTOpcode) -> ATTPDU {
    .errorResponse(ErrorResponse(requestOpcode: opcode, handle: 0x0001, errorCode: .attributeNotFound))
}

@Suite("Robustness: hostile discovery and read/write responses (sans-I/O procedures)")
struct RobustnessProcedureTests {
    // MARK: handles that do not advance or go backwards

    @Test("primary service discovery: a group that does not advance or goes backwards fails",
        arguments: [(UInt16(0x0010), UInt16(0x0010)), (0x0010, 0x0008), (0x0010, 0x0001)])
    func servicesNotAdvancing(first: UInt16, second: UInt16) {
        let run = HostileRun(
            DiscoverAllPrimaryServices(),
            answers: [groups([(0x0001, first)]), groups([(second, second)]), attributeNotFound(.readByGroupTypeRequest)])
        guard case .handleNotAdvancing? = run.reason else {
            Issue.record("expected handleNotAdvancing, got \(run.outcome)")
            return
        }
        #expect(run.sent.count == 2)
    }

    @Test("a service group ending at 0xFFFF ends discovery: no request past the last handle")
    func serviceGroupEndingAtTheLastHandle() {
        let run = HostileRun(DiscoverAllPrimaryServices(), answers: [groups([(0x0001, 0xFFFF)])])
        guard case .done(let services) = run.outcome else {
            Issue.record("expected done, got \(run.outcome)")
            return
        }
        #expect(services.count == 1 && run.sent.count == 1)
    }

    @Test("characteristic discovery: a declaration at or below the previous one fails",
        arguments: [[UInt16(0x0005), 0x0005], [0x0008, 0x0006]])
    func characteristicsNotAdvancing(handles: [UInt16]) {
        let run = HostileRun(
            DiscoverAllCharacteristics(range: 0x0004...0x0020),
            answers: [declarations([handles[0]]), declarations([handles[1]])])
        guard case .handleNotAdvancing? = run.reason else {
            Issue.record("expected handleNotAdvancing, got \(run.outcome)")
            return
        }
    }

    @Test("descriptor discovery: handles repeating inside one response fail")
    func descriptorsRepeatingInOneResponse() {
        let run = HostileRun(
            DiscoverAllCharacteristicDescriptors(range: 0x0010...0x0020), answers: [information([0x0011, 0x0011])])
        guard case .handleNotAdvancing? = run.reason else {
            Issue.record("expected handleNotAdvancing, got \(run.outcome)")
            return
        }
    }

    @Test("a server repeating the same answer forever cannot keep discovery going")
    func repeatingAnswerTerminates() {
        let answer = declarations([0x0005])
        let run = HostileRun(
            DiscoverAllCharacteristics(range: 0x0001...0xFFFF), answers: Array(repeating: answer, count: 1000))
        #expect(run.sent.count == 2, "the second identical answer fails the procedure")
        #expect(run.error != nil)
    }

    // MARK: entries outside the requested range

    @Test("entries outside the requested range fail",
        arguments: [UInt16(0x0003), 0x0021, 0xFFFF])
    func entriesOutsideRange(handle: UInt16) {
        let characteristics = HostileRun(DiscoverAllCharacteristics(range: 0x0004...0x0020), answers: [declarations([handle])])
        guard case .handleOutOfRange? = characteristics.reason else {
            Issue.record("characteristics: expected handleOutOfRange, got \(characteristics.outcome)")
            return
        }
        let descriptors = HostileRun(
            DiscoverAllCharacteristicDescriptors(range: 0x0004...0x0020), answers: [information([handle])])
        guard case .handleOutOfRange? = descriptors.reason else {
            Issue.record("descriptors: expected handleOutOfRange, got \(descriptors.outcome)")
            return
        }
    }

    // MARK: over-MTU responses

    @Test("a response longer than ATT_MTU fails with exceedsMTU", arguments: [23, 100])
    func overMTU(mtu: Int) {
        let read = HostileRun(
            ReadCharacteristicValue(handle: 0x0003, mtu: mtu),
            answers: [.readResponse(ReadResponse(value: Array(repeating: 0x41, count: mtu)))])
        guard case .exceedsMTU? = read.reason else {
            Issue.record("read: expected exceedsMTU, got \(read.outcome)")
            return
        }
        let many = (0..<(mtu / 4 + 1)).map { UInt16(1 + $0 * 2) }
        let services = HostileRun(
            DiscoverAllPrimaryServices(mtu: mtu), answers: [groups(many.map { ($0, $0 + 1) })])
        guard case .exceedsMTU? = services.reason else {
            Issue.record("services: expected exceedsMTU, got \(services.outcome)")
            return
        }
    }

    // MARK: wrong opcode, a response about another handle

    @Test("a response of the wrong kind fails the procedure with unexpectedResponse")
    func wrongOpcode() {
        let run = HostileRun(ReadCharacteristicValue(handle: 0x0003), answers: [.writeResponse(WriteResponse())])
        guard case .unexpectedResponse(let request, let received)? = run.error else {
            Issue.record("expected unexpectedResponse, got \(run.outcome)")
            return
        }
        #expect(request == .readRequest && received == .writeResponse)
        let error = HostileRun(
            ReadCharacteristicValue(handle: 0x0003),
            answers: [.errorResponse(ErrorResponse(requestOpcode: .writeRequest, handle: 3, errorCode: .readNotPermitted))])
        guard case .unexpectedResponse? = error.error else {
            Issue.record("an Error Response for another request: expected unexpectedResponse, got \(error.outcome)")
            return
        }
    }

    @Test("a Prepare Write echo for a different handle, offset or value fails the long write",
        arguments: [(UInt16(0x0004), UInt16(0)), (0x0003, 1)])
    func prepareWriteEchoForAnotherHandle(handle: UInt16, offset: UInt16) {
        let value = Array(repeating: UInt8(0x55), count: 40)
        let run = HostileRun(
            WriteLongCharacteristicValues(handle: 0x0003, value: value),
            answers: [.prepareWriteResponse(PrepareWriteResponse(handle: handle, offset: offset, value: Array(value.prefix(18))))])
        // The procedure cancels the queue (Execute Write, cancel) or fails at once: never goes on.
        switch run.outcome {
        case .fail: break
        case .send(.executeWriteRequest(let execute)):
            #expect(execute.flags == .cancelAll)
        default: Issue.record("expected a failure or a cancel, got \(run.outcome)")
        }
    }

    @Test("read long: a server that always answers a full blob stops at the 512-octet limit")
    func readLongBounded() {
        let blob = ATTPDU.readBlobResponse(ReadBlobResponse(value: Array(repeating: 0x42, count: 22)))
        let run = HostileRun(
            ReadLongCharacteristicValues(handle: 0x0003),
            answers: [.readResponse(ReadResponse(value: Array(repeating: 0x41, count: 22)))] + Array(repeating: blob, count: 100))
        #expect(run.sent.count <= 512 / 22 + 2, "\(run.sent.count) requests")
        if case .send = run.outcome { Issue.record("still reading after \(run.sent.count) requests") }
    }
}
