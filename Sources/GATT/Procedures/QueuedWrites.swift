import ATT
import Bluetooth

/// The Prepare/Execute Write exchange shared by Write Long Characteristic Values and Reliable
/// Writes: each part is queued with a Prepare Write Request whose response must echo it; then
/// one Execute Write Request (flags 0x01) writes them all. An error, a differing echo or a
/// wrong PDU cancels the queue (Execute Write Request, flags 0x00 — required for Reliable
/// Writes, and what BlueZ does for Write Long too) and the exchange fails with that first
/// problem once the cancel is answered.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.9.4 and §4.9.5; Vol 3, Part F, §3.4.6
struct QueuedWriteExchange: Hashable, Sendable {
    let parts: [PrepareWriteRequest]
    let mtu: Int
    private(set) var phase = ProcedurePhase.idle
    private var next = 0
    private var failure: GATTError?

    init(parts: [PrepareWriteRequest], mtu: Int) {
        self.parts = parts
        self.mtu = mtu
    }

    /// `.send` with the first part, or `.fail` for an empty queue.
    mutating func start() -> GATTProcedureAction<Int> {
        guard phase == .idle else { return .misuse(phase) }
        guard !parts.isEmpty else { return finish(.fail(.invalidParameter("nothing to write"))) }
        return prepareNext()
    }

    /// Result: the octets written (sum of the parts' values).
    mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Int> {
        guard case .waiting(let request) = phase else { return .misuse(phase) }
        if let error = checkLength(pdu, mtu: mtu) {
            return request == .prepareWriteRequest ? cancel(error) : finish(.fail(failure ?? error))
        }
        switch (request, pdu) {
        case (.prepareWriteRequest, .prepareWriteResponse(let response)):
            let pending = parts[next]
            guard response.handle == pending.handle, response.offset == pending.offset, response.value == pending.value
            else {
                return cancel(
                    .invalidResponse(
                        opcode: pdu.opcode, reason: .echoMismatch(handle: response.handle, offset: response.offset)))
            }
            next += 1
            guard next < parts.count else { return execute(.writeAll) }
            return prepareNext()
        case (.prepareWriteRequest, .errorResponse(let error)):
            return cancel(errorFor(error, request: request))
        case (.executeWriteRequest, .executeWriteResponse):
            if let failure { return finish(.fail(failure)) }
            return finish(.done(parts.reduce(0) { $0 + $1.value.count }))
        case (.executeWriteRequest, .errorResponse(let error)):
            // The first failure (the one that made us cancel) is the one to report.
            return finish(.fail(failure ?? errorFor(error, request: request)))
        default:
            let error = GATTError.unexpectedResponse(request: request, received: pdu.opcode)
            return request == .prepareWriteRequest ? cancel(error) : finish(.fail(failure ?? error))
        }
    }

    private mutating func prepareNext() -> GATTProcedureAction<Int> {
        phase = .waiting(.prepareWriteRequest)
        return .send(.prepareWriteRequest(parts[next]))
    }

    private mutating func execute(_ flags: ExecuteWriteRequest.Flags) -> GATTProcedureAction<Int> {
        phase = .waiting(.executeWriteRequest)
        return .send(.executeWriteRequest(ExecuteWriteRequest(flags: flags)))
    }

    private mutating func cancel(_ error: GATTError) -> GATTProcedureAction<Int> {
        failure = error
        return execute(.cancelAll)
    }

    private mutating func finish(_ action: GATTProcedureAction<Int>) -> GATTProcedureAction<Int> {
        phase = .finished
        return action
    }

    /// `value` written at `offset` of `handle` in parts of ATT_MTU − 5 octets (one empty part
    /// for an empty value).
    static func parts(handle: UInt16, value: [UInt8], offset: UInt16, mtu: Int) -> [PrepareWriteRequest] {
        let size = mtu - 5
        var out: [PrepareWriteRequest] = []
        var start = 0
        repeat {
            let end = min(value.count, start + size)
            out.append(
                PrepareWriteRequest(handle: handle, offset: offset + UInt16(start), value: Array(value[start..<end])))
            start = end
        } while start < value.count
        return out
    }
}
