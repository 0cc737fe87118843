import ATT
import Bluetooth

/// Discover All Characteristic Descriptors: Find Information Requests over the handles after a
/// characteristic's value, each starting one past the last handle received, until Attribute
/// Not Found or the range is covered (a response reaching the end needs no further request).
///
/// A declaration (service, include or characteristic) among the answers ends the definition:
/// the procedure stops there and leaves it out. A range running to the next characteristic
/// declaration can cross a service boundary (a characteristic found by a search over the whole
/// server does not know its service's end); this keeps the next service out of its descriptors.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.7.1
public struct DiscoverAllCharacteristicDescriptors: GATTClientProcedure {
    public typealias Result = [Descriptor]

    public let range: ClosedRange<UInt16>
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle
    private var cursor: HandleCursor
    private var descriptors: [Descriptor] = []

    /// The descriptors in `range` (value handle + 1 through the characteristic's end).
    public init(range: ClosedRange<UInt16>, mtu: Int = GATTLimits.defaultMTU) {
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
        case .findInformationResponse(let response):
            for entry in response.entries {
                if let error = cursor.accept(entry.handle, through: entry.handle, opcode: pdu.opcode) {
                    return finish(.fail(error))
                }
                if Self.declarationTypes.contains(entry.uuid) { return finish(.done(descriptors)) }
                descriptors.append(Descriptor(handle: entry.handle, uuid: entry.uuid))
            }
            return next()
        case .errorResponse(let error) where error.requestOpcode == request && error.errorCode == .attributeNotFound:
            return finish(.done(descriptors))
        case .errorResponse(let error):
            return finish(.fail(errorFor(error, request: request)))
        default:
            return finish(.fail(.unexpectedResponse(request: request, received: pdu.opcode)))
        }
    }

    /// Attribute types that start a new definition.
    static let declarationTypes: Set<BluetoothUUID> = [
        GATTUUID.primaryService, GATTUUID.secondaryService, GATTUUID.include, GATTUUID.characteristic,
    ]

    private mutating func next() -> GATTProcedureAction<Result> {
        guard let start = cursor.nextStart else { return finish(.done(descriptors)) }
        phase = .waiting(.findInformationRequest)
        return .send(
            .findInformationRequest(FindInformationRequest(startingHandle: start, endingHandle: range.upperBound)))
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
