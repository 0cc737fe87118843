import ATT
import Bluetooth

/// Write Long Characteristic Values: the value queued in parts of ATT_MTU − 5 octets with
/// Prepare Write Requests at increasing offsets, then written with Execute Write Request
/// (flags 0x01). Each Prepare Write Response must echo its request; a differing echo or an
/// error cancels the queue (Execute Write Request, flags 0x00, as BlueZ does) and the
/// procedure then fails with that first problem. Result: the number of octets written.
/// Also serves Write Long Characteristic Descriptors (§4.12.4).
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.9.4
public struct WriteLongCharacteristicValues: GATTClientProcedure {
    public typealias Result = Int

    public let handle: UInt16
    public let value: [UInt8]
    /// Where the value goes in the attribute.
    public let offset: UInt16
    public let mtu: Int
    private var phase = ProcedurePhase.idle
    /// Octets of `value` queued and echoed so far.
    private var sent = 0
    /// The part outstanding.
    private var pending: PrepareWriteRequest?
    /// The failure to report once the cancelling Execute Write is answered.
    private var failure: GATTError?

    public init(handle: UInt16, value: [UInt8], offset: UInt16 = 0, mtu: Int = GATTLimits.defaultMTU) {
        self.handle = handle
        self.value = value
        self.offset = offset
        self.mtu = mtu
    }

    private var partLength: Int { mtu - 5 }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard phase == .idle else { return .misuse(phase) }
        if let error = checkMTU(mtu) { return finish(.fail(error)) }
        let maximum = GATTLimits.maximumAttributeValueLength - Int(offset)
        guard maximum >= 0, value.count <= maximum else {
            return finish(.fail(.valueTooLong(length: value.count, maximum: max(0, maximum))))
        }
        return prepareNext()
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        guard case .waiting(let request) = phase else { return .misuse(phase) }
        if let error = checkLength(pdu, mtu: mtu) { return cancel(error) }
        switch (request, pdu) {
        case (.prepareWriteRequest, .prepareWriteResponse(let response)):
            guard let pending,
                response.handle == pending.handle, response.offset == pending.offset, response.value == pending.value
            else {
                return cancel(.invalidResponse(
                    opcode: pdu.opcode, reason: .echoMismatch(handle: response.handle, offset: response.offset)))
            }
            sent += pending.value.count
            self.pending = nil
            guard sent < value.count else { return execute(.writeAll) }
            return prepareNext()
        case (.prepareWriteRequest, .errorResponse(let error)):
            return cancel(errorFor(error, request: request))
        case (.executeWriteRequest, .executeWriteResponse):
            if let failure { return finish(.fail(failure)) }
            return finish(.done(value.count))
        case (.executeWriteRequest, .errorResponse(let error)):
            // The first failure (the one that made us cancel) is the one to report.
            return finish(.fail(failure ?? errorFor(error, request: request)))
        default:
            let error = GATTError.unexpectedResponse(request: request, received: pdu.opcode)
            return request == .prepareWriteRequest ? cancel(error) : finish(.fail(failure ?? error))
        }
    }

    private mutating func prepareNext() -> GATTProcedureAction<Result> {
        let end = min(value.count, sent + partLength)
        let part = PrepareWriteRequest(handle: handle, offset: offset + UInt16(sent), value: Array(value[sent..<end]))
        pending = part
        phase = .waiting(.prepareWriteRequest)
        return .send(.prepareWriteRequest(part))
    }

    private mutating func execute(_ flags: ExecuteWriteRequest.Flags) -> GATTProcedureAction<Result> {
        phase = .waiting(.executeWriteRequest)
        return .send(.executeWriteRequest(ExecuteWriteRequest(flags: flags)))
    }

    /// Cancels the prepared writes; the procedure fails with `error` once that is answered.
    private mutating func cancel(_ error: GATTError) -> GATTProcedureAction<Result> {
        failure = error
        return execute(.cancelAll)
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
