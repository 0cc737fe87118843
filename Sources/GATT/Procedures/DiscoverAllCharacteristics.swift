import ATT
import Bluetooth

/// Discover All Characteristics of a Service: Read By Type Requests for «Characteristic» over
/// the service's handles, each starting one past the last declaration handle received, until
/// Attribute Not Found or the range is covered.
///
/// Each declaration must lie in the range, after the previous characteristic's value handle;
/// its value must decode strictly (5 or 19 octets) and its value handle must follow it inside
/// the range. Each result's `endHandle` is the handle before the next declaration, the last
/// one's the range end, so descriptor discovery knows where to look.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.6.1
public struct DiscoverAllCharacteristics: GATTClientProcedure {
    public typealias Result = [Characteristic]

    public let range: ClosedRange<UInt16>
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle
    private var characteristics: [Characteristic] = []
    /// The last declaration handle received: the next request starts after it.
    private var lastDeclaration: UInt16?

    /// The characteristics between `range.lowerBound` and `range.upperBound` (a service's
    /// handles; the declaration itself may be included, the server skips it).
    public init(range: ClosedRange<UInt16>, mtu: Int = GATTLimits.defaultMTU) {
        self.range = range
        self.mtu = mtu
    }

    /// The characteristics of `service`.
    public init(service: Service, mtu: Int = GATTLimits.defaultMTU) {
        self.init(range: service.handleRange, mtu: mtu)
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard phase == .idle else { return .misuse(phase) }
        if let error = checkRange(range) ?? checkMTU(mtu) { return finish(.fail(error)) }
        return next()
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        guard case .waiting(let request) = phase else { return .misuse(phase) }
        if let error = checkLength(pdu, mtu: mtu) { return finish(.fail(error)) }
        switch pdu {
        case .readByTypeResponse(let response):
            for entry in response.entries {
                if let error = accept(entry, opcode: pdu.opcode) { return finish(.fail(error)) }
            }
            return next()
        case .errorResponse(let error) where error.requestOpcode == request && error.errorCode == .attributeNotFound:
            return finish(.done(result))
        case .errorResponse(let error):
            return finish(.fail(errorFor(error, request: request)))
        default:
            return finish(.fail(.unexpectedResponse(request: request, received: pdu.opcode)))
        }
    }

    private mutating func accept(_ entry: ReadByTypeResponse.AttributeData, opcode: ATTOpcode) -> GATTError? {
        do {
            characteristics.append(
                try Characteristic.declared(by: entry, in: range, after: characteristics.last?.valueHandle, opcode: opcode))
            lastDeclaration = entry.handle
            return nil
        } catch {
            return error
        }
    }

    /// The characteristics with their end handles filled in.
    private var result: [Characteristic] {
        var out = characteristics
        for index in out.indices {
            out[index].endHandle = index + 1 < out.count ? out[index + 1].declarationHandle - 1 : range.upperBound
        }
        return out
    }

    private mutating func next() -> GATTProcedureAction<Result> {
        let start: UInt16
        if let lastDeclaration, let lastValue = characteristics.last?.valueHandle {
            // Nothing can follow a value handle at the range end.
            guard lastValue < range.upperBound else { return finish(.done(result)) }
            start = lastDeclaration + 1
        } else {
            start = range.lowerBound
        }
        phase = .waiting(.readByTypeRequest)
        return .send(
            .readByTypeRequest(
                ReadByTypeRequest(
                    startingHandle: start, endingHandle: range.upperBound, attributeType: GATTUUID.characteristic)))
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
