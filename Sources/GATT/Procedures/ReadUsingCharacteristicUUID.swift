import ATT
import Bluetooth

/// Read Using Characteristic UUID: Read By Type Requests for the UUID over a range (usually a
/// service's), each starting one past the last handle received, until Attribute Not Found or
/// the range is covered. Result: every (handle, value) found, in handle order. Nothing found
/// at all is the server's Attribute Not Found error, as BlueZ reports it.
///
/// A value the server cut to fit (ATT_MTU − 4 octets, or 253) is returned as received; read
/// the rest with `ReadLongCharacteristicValues` at that offset.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.8.2
public struct ReadUsingCharacteristicUUID: GATTClientProcedure {
    public typealias Result = [ReadByTypeResponse.AttributeData]

    public let uuid: BluetoothUUID
    public let range: ClosedRange<UInt16>
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle
    private var cursor: HandleCursor
    private var values: [ReadByTypeResponse.AttributeData] = []

    public init(uuid: BluetoothUUID, range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = GATTLimits.defaultMTU) {
        self.uuid = uuid
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
        case .readByTypeResponse(let response):
            for entry in response.entries {
                if let error = cursor.accept(entry.handle, through: entry.handle, opcode: pdu.opcode) {
                    return finish(.fail(error))
                }
                values.append(entry)
            }
            return next()
        case .errorResponse(let error)
        where error.requestOpcode == request && error.errorCode == .attributeNotFound && !values.isEmpty:
            return finish(.done(values))
        case .errorResponse(let error):
            return finish(.fail(errorFor(error, request: request)))
        default:
            return finish(.fail(.unexpectedResponse(request: request, received: pdu.opcode)))
        }
    }

    private mutating func next() -> GATTProcedureAction<Result> {
        guard let start = cursor.nextStart else { return finish(.done(values)) }
        phase = .waiting(.readByTypeRequest)
        return .send(
            .readByTypeRequest(
                ReadByTypeRequest(startingHandle: start, endingHandle: range.upperBound, attributeType: uuid)))
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
