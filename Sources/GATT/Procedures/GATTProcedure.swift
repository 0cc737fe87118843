import ATT
import Bluetooth

/// What a GATT client procedure asks its driver to do next.
public enum GATTProcedureAction<Result: Hashable & Sendable>: Hashable, Sendable {
    /// Send this request, then feed the server's answer to `receive(_:)`.
    case send(ATTPDU)
    /// The procedure finished with this result.
    case done(Result)
    /// The procedure failed; nothing more is sent.
    case fail(GATTError)
}

/// A GATT client procedure (Core 5.4 Vol 3 Part G §4) as a sans-I/O state machine over ATT
/// PDUs: `start()` gives the first request; each answer from the server goes to `receive(_:)`,
/// which gives the next request, the result or the failure. One request is outstanding at a
/// time, as ATT requires. Only answers to the procedure's requests are fed in (the bearer
/// routes notifications and indications elsewhere); anything else fails the procedure.
///
/// Every procedure terminates: discovery requests move their starting handle strictly
/// forward, reads and writes are bounded by the 512-octet attribute value limit.
public protocol GATTClientProcedure: Sendable {
    associatedtype Result: Hashable & Sendable
    /// The first action: a request to send, or an immediate failure for unusable parameters.
    mutating func start() -> GATTProcedureAction<Result>
    /// Feeds the server's answer to the outstanding request.
    mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result>
    /// The bearer's ATT_MTU changed while the procedure ran (it only grows: Vol 3 Part F
    /// §3.4.2); answers are checked and requests sized against the new value from now on.
    mutating func updateMTU(_ mtu: Int)
}

extension GATTClientProcedure {
    /// Procedures that do not depend on ATT_MTU ignore it.
    public mutating func updateMTU(_ mtu: Int) {}
}

/// Limits every procedure shares.
public enum GATTLimits {
    /// The longest attribute value (Vol 3 Part F §3.2.9).
    public static let maximumAttributeValueLength = 512
    /// ATT_MTU on LE before and without an exchange (Vol 3 Part G §5.2.1).
    public static let defaultMTU = 23
}

// MARK: Shared checks

/// Where a procedure stands; every procedure keeps one.
enum ProcedurePhase: Hashable, Sendable {
    case idle
    /// A request with this opcode is outstanding.
    case waiting(ATTOpcode)
    case finished
}

extension GATTProcedureAction {
    /// `fail` for an answer received in `phase` when none was expected.
    static func misuse(_ phase: ProcedurePhase) -> GATTProcedureAction {
        switch phase {
        case .idle: return .fail(.procedureState("receive(_:) called before start()"))
        case .finished: return .fail(.procedureState("the procedure has already ended"))
        case .waiting: return .fail(.procedureState("no answer expected"))
        }
    }
}

/// The checks every answer goes through before its own: it must fit ATT_MTU.
func checkLength(_ pdu: ATTPDU, mtu: Int) -> GATTError? {
    let length = pdu.encodedLength
    guard length <= mtu else {
        return .invalidResponse(opcode: pdu.opcode, reason: .exceedsMTU(length: length, mtu: mtu))
    }
    return nil
}

/// The error for an ATT_ERROR_RSP: `peerError` when it answers `request`, otherwise
/// `unexpectedResponse`. (The error's handle is not checked: BlueZ does not, and servers
/// name other handles than the request's; see the vectors' README, quirk 2.)
func errorFor(_ response: ErrorResponse, request: ATTOpcode) -> GATTError {
    guard response.requestOpcode == request else {
        return .unexpectedResponse(request: request, received: response.requestOpcode)
    }
    return .peerError(request: request, handle: response.handle, code: response.errorCode)
}

/// Checks that an ATT_MTU is usable (at least the LE minimum, 23).
func checkMTU(_ mtu: Int) -> GATTError? {
    guard mtu >= GATTLimits.defaultMTU else {
        return .invalidParameter("ATT_MTU \(mtu) is below the minimum \(GATTLimits.defaultMTU)")
    }
    return nil
}

/// Tracks the handles a discovery has covered: entries must lie in the requested range and
/// move strictly forward.
struct HandleCursor: Hashable, Sendable {
    let range: ClosedRange<UInt16>
    /// The last handle covered so far, `nil` before the first entry.
    private(set) var last: UInt16?

    init(range: ClosedRange<UInt16>) { self.range = range }

    /// The next request's starting handle, or `nil` when the range is exhausted (the last
    /// covered handle reached its end, or 0xFFFF).
    var nextStart: UInt16? {
        guard let last else { return range.lowerBound }
        guard last < range.upperBound else { return nil }
        return last + 1
    }

    /// Accepts an entry starting at `handle` (which must be in range and above `last`)
    /// whose group or definition ends at `end` (≥ `handle`).
    mutating func accept(_ handle: UInt16, through end: UInt16, opcode: ATTOpcode) -> GATTError? {
        guard range.contains(handle) else {
            return .invalidResponse(opcode: opcode, reason: .handleOutOfRange(handle, range: range))
        }
        if let last, handle <= last {
            return .invalidResponse(opcode: opcode, reason: .handleNotAdvancing(handle, previous: last))
        }
        last = max(handle, end)
        return nil
    }
}

/// Checks a discovery range: the start must be non-zero.
func checkRange(_ range: ClosedRange<UInt16>) -> GATTError? {
    guard range.lowerBound != 0 else { return .invalidParameter("a handle range cannot start at 0x0000") }
    return nil
}
