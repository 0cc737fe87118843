import ATT
import Bluetooth

/// Read Long Characteristic Values: the value in parts of ATT_MTU − 1 octets. From offset 0
/// the first part is read with a Read Request (as BlueZ does; a server answers it like a Read
/// Blob Request at offset 0, and a short value needs no second request), the following parts
/// with Read Blob Requests at the offset reached. A part shorter than ATT_MTU − 1 octets ends
/// the value; so does Attribute Not Long answering a Read Blob Request after a full first part
/// (the value was exactly ATT_MTU − 1 octets and the server will not read it by offset).
///
/// A part longer than ATT_MTU − 1, or a value growing past 512 octets, fails the procedure.
/// Also serves Read Long Characteristic Descriptors (§4.12.2).
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.8.3
public struct ReadLongCharacteristicValues: GATTClientProcedure {
    public typealias Result = [UInt8]

    public let handle: UInt16
    /// Where the read starts in the value.
    public let offset: UInt16
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var phase = ProcedurePhase.idle
    private var value: [UInt8] = []

    public init(handle: UInt16, offset: UInt16 = 0, mtu: Int = GATTLimits.defaultMTU) {
        self.handle = handle
        self.offset = offset
        self.mtu = mtu
    }

    private var partLength: Int { mtu - 1 }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard phase == .idle else { return .misuse(phase) }
        if let error = checkMTU(mtu) { return finish(.fail(error)) }
        guard Int(offset) <= GATTLimits.maximumAttributeValueLength else {
            return finish(.fail(.invalidParameter("offset \(offset) is past the longest attribute value")))
        }
        if offset == 0 {
            phase = .waiting(.readRequest)
            return .send(.readRequest(ReadRequest(handle: handle)))
        }
        return readBlob()
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        guard case .waiting(let request) = phase else { return .misuse(phase) }
        if let error = checkLength(pdu, mtu: mtu) { return finish(.fail(error)) }
        switch (request, pdu) {
        case (.readRequest, .readResponse(let response)):
            return append(response.value, opcode: pdu.opcode)
        case (.readBlobRequest, .readBlobResponse(let response)):
            return append(response.value, opcode: pdu.opcode)
        case (.readBlobRequest, .errorResponse(let error))
        where error.requestOpcode == request && error.errorCode == .attributeNotLong && !value.isEmpty:
            return finish(.done(value))
        case (_, .errorResponse(let error)):
            return finish(.fail(errorFor(error, request: request)))
        default:
            return finish(.fail(.unexpectedResponse(request: request, received: pdu.opcode)))
        }
    }

    private mutating func append(_ part: [UInt8], opcode: ATTOpcode) -> GATTProcedureAction<Result> {
        value += part
        let total = Int(offset) + value.count
        guard total <= GATTLimits.maximumAttributeValueLength else {
            return finish(
                .fail(
                    .invalidResponse(
                        opcode: opcode,
                        reason: .valueTooLong(length: total, maximum: GATTLimits.maximumAttributeValueLength))))
        }
        guard part.count == partLength, total < GATTLimits.maximumAttributeValueLength else {
            return finish(.done(value))
        }
        return readBlob()
    }

    private mutating func readBlob() -> GATTProcedureAction<Result> {
        phase = .waiting(.readBlobRequest)
        let at = UInt16(Int(offset) + value.count)  // ≤ 512, checked in append
        return .send(.readBlobRequest(ReadBlobRequest(handle: handle, offset: at)))
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
