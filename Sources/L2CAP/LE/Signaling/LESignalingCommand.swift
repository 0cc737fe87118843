import Bluetooth

/// Every command the LE signaling channel carries, typed.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4 (Table 4.2, the LE-U column)
public enum LESignalingCommand: Hashable, Sendable {
    case commandReject(CommandReject)
    case disconnectionRequest(DisconnectionRequest)
    case disconnectionResponse(DisconnectionResponse)
    case connectionParameterUpdateRequest(ConnectionParameterUpdateRequest)
    case connectionParameterUpdateResponse(ConnectionParameterUpdateResponse)
    case leCreditBasedConnectionRequest(LECreditBasedConnectionRequest)
    case leCreditBasedConnectionResponse(LECreditBasedConnectionResponse)
    case flowControlCreditIndication(FlowControlCreditIndication)
    case creditBasedConnectionRequest(CreditBasedConnectionRequest)
    case creditBasedConnectionResponse(CreditBasedConnectionResponse)
    case creditBasedReconfigureRequest(CreditBasedReconfigureRequest)
    case creditBasedReconfigureResponse(CreditBasedReconfigureResponse)

    /// Decodes the Data field of a command with `code`. Throws `.malformed` with an
    /// `invalidValue(field: "Code")` reason for a code LE does not use, and the body's error
    /// for a Data field that does not fit.
    public init(code: L2CAPSignalingCode, data: ArraySlice<UInt8>) throws(L2CAPError) {
        var reader = ByteReader(data)
        switch code {
        case .commandReject: self = .commandReject(try CommandReject(parsing: &reader))
        case .disconnectionRequest: self = .disconnectionRequest(try DisconnectionRequest(parsing: &reader))
        case .disconnectionResponse: self = .disconnectionResponse(try DisconnectionResponse(parsing: &reader))
        case .connectionParameterUpdateRequest:
            self = .connectionParameterUpdateRequest(try ConnectionParameterUpdateRequest(parsing: &reader))
        case .connectionParameterUpdateResponse:
            self = .connectionParameterUpdateResponse(try ConnectionParameterUpdateResponse(parsing: &reader))
        case .leCreditBasedConnectionRequest:
            self = .leCreditBasedConnectionRequest(try LECreditBasedConnectionRequest(parsing: &reader))
        case .leCreditBasedConnectionResponse:
            self = .leCreditBasedConnectionResponse(try LECreditBasedConnectionResponse(parsing: &reader))
        case .flowControlCreditIndication:
            self = .flowControlCreditIndication(try FlowControlCreditIndication(parsing: &reader))
        case .creditBasedConnectionRequest:
            self = .creditBasedConnectionRequest(try CreditBasedConnectionRequest(parsing: &reader))
        case .creditBasedConnectionResponse:
            self = .creditBasedConnectionResponse(try CreditBasedConnectionResponse(parsing: &reader))
        case .creditBasedReconfigureRequest:
            self = .creditBasedReconfigureRequest(try CreditBasedReconfigureRequest(parsing: &reader))
        case .creditBasedReconfigureResponse:
            self = .creditBasedReconfigureResponse(try CreditBasedReconfigureResponse(parsing: &reader))
        default:
            throw L2CAPError.malformed(
                context: L2CAPSignalingPacket.context, reason: .invalidValue(field: "Code", value: Int(code.rawValue)),
                offset: 0)
        }
    }

    private var body: any L2CAPSignalingCommandBody {
        switch self {
        case .commandReject(let body): return body
        case .disconnectionRequest(let body): return body
        case .disconnectionResponse(let body): return body
        case .connectionParameterUpdateRequest(let body): return body
        case .connectionParameterUpdateResponse(let body): return body
        case .leCreditBasedConnectionRequest(let body): return body
        case .leCreditBasedConnectionResponse(let body): return body
        case .flowControlCreditIndication(let body): return body
        case .creditBasedConnectionRequest(let body): return body
        case .creditBasedConnectionResponse(let body): return body
        case .creditBasedReconfigureRequest(let body): return body
        case .creditBasedReconfigureResponse(let body): return body
        }
    }

    public var code: L2CAPSignalingCode { type(of: body).code }

    /// Octets of the Data field.
    public var encodedLength: Int { body.encodedLength }

    /// Writes the Data field (no header).
    public func write(to writer: inout ByteWriter) throws(L2CAPError) {
        try body.write(to: &writer)
    }
}
