import ATT
import Bluetooth

/// Discover All Primary Services: Read By Group Type Requests for «Primary Service» over the
/// range, each starting one past the last End Group Handle received, until Attribute Not Found
/// or the range is covered (a response reaching the end needs no further request).
///
/// Each entry must start inside the range and after the previous group; its value must be a
/// 16- or 128-bit UUID. Result: the services, primary, without includes or characteristics.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.4.1
public struct DiscoverAllPrimaryServices: GATTClientProcedure {
    public typealias Result = [Service]

    public let range: ClosedRange<UInt16>
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle
    private var cursor: HandleCursor
    private var services: [Service] = []

    /// `range` is 0x0001...0xFFFF for the whole server; a sub-range rediscovers part of it.
    public init(range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = GATTLimits.defaultMTU) {
        self.range = range
        self.mtu = mtu
        cursor = HandleCursor(range: range)
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
        case .readByGroupTypeResponse(let response):
            for entry in response.entries {
                if let error = cursor.accept(entry.handle, through: entry.endGroupHandle, opcode: pdu.opcode) {
                    return finish(.fail(error))
                }
                do {
                    let declaration = try ServiceDeclaration(decoding: entry.value, handle: entry.handle)
                    services.append(
                        Service(
                            uuid: declaration.uuid, startHandle: entry.handle, endHandle: entry.endGroupHandle,
                            isPrimary: true))
                } catch {
                    return finish(.fail(error))
                }
            }
            return next()
        case .errorResponse(let error) where error.requestOpcode == request && error.errorCode == .attributeNotFound:
            return finish(.done(services))
        case .errorResponse(let error):
            return finish(.fail(errorFor(error, request: request)))
        default:
            return finish(.fail(.unexpectedResponse(request: request, received: pdu.opcode)))
        }
    }

    private mutating func next() -> GATTProcedureAction<Result> {
        guard let start = cursor.nextStart else { return finish(.done(services)) }
        phase = .waiting(.readByGroupTypeRequest)
        return .send(
            .readByGroupTypeRequest(
                ReadByGroupTypeRequest(
                    startingHandle: start, endingHandle: range.upperBound, attributeGroupType: GATTUUID.primaryService))
        )
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
