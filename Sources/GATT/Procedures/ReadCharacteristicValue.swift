import ATT
import Bluetooth

/// Read Characteristic Value: one Read Request, answered by a Read Response carrying the value
/// (at most ATT_MTU − 1 octets; a longer value needs `ReadLongCharacteristicValues`). Also
/// serves Read Characteristic Descriptors (§4.12.1), which is the same exchange.
///
/// The handle is sent as given (a server answers Invalid Handle for 0x0000).
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.8.1
public struct ReadCharacteristicValue: GATTClientProcedure {
    public typealias Result = [UInt8]

    public let handle: UInt16
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle

    public init(handle: UInt16, mtu: Int = GATTLimits.defaultMTU) {
        self.handle = handle
        self.mtu = mtu
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard phase == .idle else { return .misuse(phase) }
        if let error = checkMTU(mtu) { return finish(.fail(error)) }
        phase = .waiting(.readRequest)
        return .send(.readRequest(ReadRequest(handle: handle)))
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        guard case .waiting(let request) = phase else { return .misuse(phase) }
        if let error = checkLength(pdu, mtu: mtu) { return finish(.fail(error)) }
        switch pdu {
        case .readResponse(let response):
            return finish(.done(response.value))
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
