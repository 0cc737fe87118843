import ATT
import Bluetooth

/// Find Included Services: Read By Type Requests for «Include» over a service's handles, each
/// starting one past the last include declaration received, until Attribute Not Found or the
/// range is covered. An include declaration carries the included service's UUID only when it
/// is 16-bit; for each one without, the 128-bit UUID is read (Read Request) from the included
/// service's declaration before the search continues, as the spec describes and BlueZ does.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.5.1
public struct FindIncludedServices: GATTClientProcedure {
    public typealias Result = [IncludedService]

    public let range: ClosedRange<UInt16>
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle
    private var cursor: HandleCursor
    private var includes: [IncludedService] = []
    /// Indices into `includes` whose UUID is still to be read.
    private var unresolved: [Int] = []

    public init(range: ClosedRange<UInt16>, mtu: Int = GATTLimits.defaultMTU) {
        self.range = range
        self.mtu = mtu
        cursor = HandleCursor(range: range)
    }

    /// The includes of `service`.
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
        switch (request, pdu) {
        case (.readByTypeRequest, .readByTypeResponse(let response)):
            for entry in response.entries {
                if let error = cursor.accept(entry.handle, through: entry.handle, opcode: pdu.opcode) {
                    return finish(.fail(error))
                }
                let declaration: IncludeDeclaration
                do {
                    declaration = try IncludeDeclaration(decoding: entry.value, handle: entry.handle)
                } catch {
                    return finish(.fail(error))
                }
                if declaration.uuid == nil { unresolved.append(includes.count) }
                includes.append(
                    IncludedService(
                        handle: entry.handle, startHandle: declaration.includedServiceHandle,
                        endHandle: declaration.endGroupHandle, uuid: declaration.uuid))
            }
            return next()
        case (.readByTypeRequest, .errorResponse(let error))
        where error.requestOpcode == request && error.errorCode == .attributeNotFound:
            return finish(.done(includes))
        case (.readRequest, .readResponse(let response)):
            let index = unresolved.removeFirst()
            guard response.value.count == 16, let uuid = BluetoothUUID(littleEndian: response.value) else {
                return finish(
                    .fail(
                        .invalidAttributeValue(
                            type: GATTUUID.primaryService, handle: includes[index].startHandle,
                            reason: .invalidLength(response.value.count, allowed: [16]))))
            }
            includes[index].uuid = uuid
            return next()
        case (_, .errorResponse(let error)):
            return finish(.fail(errorFor(error, request: request)))
        default:
            return finish(.fail(.unexpectedResponse(request: request, received: pdu.opcode)))
        }
    }

    /// Reads the next unresolved UUID, else continues the search.
    private mutating func next() -> GATTProcedureAction<Result> {
        if let index = unresolved.first {
            phase = .waiting(.readRequest)
            return .send(.readRequest(ReadRequest(handle: includes[index].startHandle)))
        }
        guard let start = cursor.nextStart else { return finish(.done(includes)) }
        phase = .waiting(.readByTypeRequest)
        return .send(
            .readByTypeRequest(
                ReadByTypeRequest(
                    startingHandle: start, endingHandle: range.upperBound, attributeType: GATTUUID.include)))
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
