import ATT
import Bluetooth

/// Write Characteristic Value: one Write Request, acknowledged by a Write Response. The value
/// must fit one request (ATT_MTU − 3 octets); longer values need
/// `WriteLongCharacteristicValues`. Also serves Write Characteristic Descriptors (§4.12.3).
/// Result: the number of octets written.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.9.3
public struct WriteCharacteristicValue: GATTClientProcedure {
    public typealias Result = Int

    public let handle: UInt16
    public let value: [UInt8]
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle

    public init(handle: UInt16, value: [UInt8], mtu: Int = GATTLimits.defaultMTU) {
        self.handle = handle
        self.value = value
        self.mtu = mtu
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard phase == .idle else { return .misuse(phase) }
        if let error = checkMTU(mtu) { return finish(.fail(error)) }
        let maximum = min(mtu - 3, GATTLimits.maximumAttributeValueLength)
        guard value.count <= maximum else { return finish(.fail(.valueTooLong(length: value.count, maximum: maximum))) }
        phase = .waiting(.writeRequest)
        return .send(.writeRequest(WriteRequest(handle: handle, value: value)))
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        guard case .waiting(let request) = phase else { return .misuse(phase) }
        if let error = checkLength(pdu, mtu: mtu) { return finish(.fail(error)) }
        switch pdu {
        case .writeResponse:
            return finish(.done(value.count))
        case .errorResponse(let error):
            return finish(.fail(errorFor(error, request: request)))
        default:
            return finish(.fail(.unexpectedResponse(request: request, received: pdu.opcode)))
        }
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
