import ATT
import Bluetooth

/// Read Multiple Characteristic Values: one Read Multiple Request for two or more handles,
/// answered by the values concatenated (the client must know every length but the last's; the
/// answer is cut at ATT_MTU − 1 octets). Result: the Set Of Values as received.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.8.4
public struct ReadMultipleCharacteristicValues: GATTClientProcedure {
    public typealias Result = [UInt8]

    public let handles: [UInt16]
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle

    public init(handles: [UInt16], mtu: Int = GATTLimits.defaultMTU) {
        self.handles = handles
        self.mtu = mtu
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard phase == .idle else { return .misuse(phase) }
        phase = .finished
        if let error = checkMTU(mtu) ?? checkHandles(handles, mtu: mtu) { return .fail(error) }
        phase = .waiting(.readMultipleRequest)
        return .send(.readMultipleRequest(ReadMultipleRequest(handles: handles)))
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        guard case .waiting(let request) = phase else { return .misuse(phase) }
        phase = .finished
        if let error = checkLength(pdu, mtu: mtu) { return .fail(error) }
        switch pdu {
        case .readMultipleResponse(let response): return .done(response.values)
        case .errorResponse(let error): return .fail(errorFor(error, request: request))
        default: return .fail(.unexpectedResponse(request: request, received: pdu.opcode))
        }
    }
}

/// Read Multiple Variable Length Characteristic Values: one Read Multiple Variable Request for
/// two or more handles, answered by length-prefixed values (the last may be cut at ATT_MTU).
/// Result: one entry per value returned, with its full length and the octets received.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.8.5
public struct ReadMultipleVariableLengthCharacteristicValues: GATTClientProcedure {
    public typealias Result = [ReadMultipleVariableResponse.LengthValue]

    public let handles: [UInt16]
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure.
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle

    public init(handles: [UInt16], mtu: Int = GATTLimits.defaultMTU) {
        self.handles = handles
        self.mtu = mtu
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard phase == .idle else { return .misuse(phase) }
        phase = .finished
        if let error = checkMTU(mtu) ?? checkHandles(handles, mtu: mtu) { return .fail(error) }
        phase = .waiting(.readMultipleVariableRequest)
        return .send(.readMultipleVariableRequest(ReadMultipleVariableRequest(handles: handles)))
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        guard case .waiting(let request) = phase else { return .misuse(phase) }
        phase = .finished
        if let error = checkLength(pdu, mtu: mtu) { return .fail(error) }
        switch pdu {
        case .readMultipleVariableResponse(let response):
            guard response.entries.count <= handles.count else {
                return .fail(
                    .invalidResponse(
                        opcode: pdu.opcode,
                        reason: .tooManyValues(count: response.entries.count, requested: handles.count)))
            }
            return .done(response.entries)
        case .errorResponse(let error): return .fail(errorFor(error, request: request))
        default: return .fail(.unexpectedResponse(request: request, received: pdu.opcode))
        }
    }
}

/// Two or more handles, and a request that fits ATT_MTU (1 + 2 × count octets).
func checkHandles(_ handles: [UInt16], mtu: Int) -> GATTError? {
    guard handles.count >= 2 else { return .invalidParameter("Read Multiple needs at least two handles") }
    let length = 1 + 2 * handles.count
    guard length <= mtu else { return .invalidParameter("\(handles.count) handles do not fit ATT_MTU \(mtu)") }
    return nil
}
