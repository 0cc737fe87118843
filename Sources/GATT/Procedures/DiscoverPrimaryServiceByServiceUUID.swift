import ATT
import Bluetooth

/// Discover Primary Service by Service UUID: Find By Type Value Requests for «Primary Service»
/// with the UUID as the value, each starting one past the last Group End Handle received,
/// until Attribute Not Found or the range is covered.
///
/// The UUID is sent in the width it is given (`.bit16`: 2 octets; `.bit128`: 16 octets, even
/// for a UUID inside the Base UUID; `.bit32`: as 128 bits, ATT having no 32-bit form). Servers
/// compare the stored octets, so give SIG UUIDs in their 16-bit form.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.4.2
public struct DiscoverPrimaryServiceByServiceUUID: GATTClientProcedure {
    public typealias Result = [Service]

    public let uuid: BluetoothUUID
    public let range: ClosedRange<UInt16>
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle
    private var cursor: HandleCursor
    private var services: [Service] = []

    public init(uuid: BluetoothUUID, range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = GATTLimits.defaultMTU) {
        self.uuid = uuid
        self.range = range
        self.mtu = mtu
        cursor = HandleCursor(range: range)
    }

    /// The Attribute Value of the request: the UUID's octets, little-endian.
    var uuidValue: [UInt8] {
        switch uuid {
        case .bit16(let value): return [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
        case .bit32, .bit128: return BluetoothUUID.bit128(uuid.uuid128).littleEndianBytes
        }
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
        case .findByTypeValueResponse(let response):
            for entry in response.entries {
                let start = entry.foundAttributeHandle
                let end = entry.groupEndHandle
                guard start != 0, start <= end else {
                    return finish(
                        .fail(
                            .invalidAttributeValue(
                                type: GATTUUID.primaryService, handle: start,
                                reason: .invalidRange(start: start, end: end))))
                }
                if let error = cursor.accept(start, through: end, opcode: pdu.opcode) { return finish(.fail(error)) }
                services.append(Service(uuid: uuid, startHandle: start, endHandle: end, isPrimary: true))
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
        phase = .waiting(.findByTypeValueRequest)
        return .send(
            .findByTypeValueRequest(
                FindByTypeValueRequest(
                    startingHandle: start, endingHandle: range.upperBound, attributeType: 0x2800,
                    attributeValue: uuidValue)))
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
