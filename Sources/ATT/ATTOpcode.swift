/// An ATT PDU opcode: method (bits 0–5), Command Flag (bit 6), Authentication Signature Flag
/// (bit 7). Open: an opcode this module does not know keeps its value.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.3.1 and §3.4.8
public struct ATTOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    // MARK: Core 5.4 Vol 3 Part F §3.4.8, Table 3.37

    public static let errorResponse = ATTOpcode(0x01)
    public static let exchangeMTURequest = ATTOpcode(0x02)
    public static let exchangeMTUResponse = ATTOpcode(0x03)
    public static let findInformationRequest = ATTOpcode(0x04)
    public static let findInformationResponse = ATTOpcode(0x05)
    public static let findByTypeValueRequest = ATTOpcode(0x06)
    public static let findByTypeValueResponse = ATTOpcode(0x07)
    public static let readByTypeRequest = ATTOpcode(0x08)
    public static let readByTypeResponse = ATTOpcode(0x09)
    public static let readRequest = ATTOpcode(0x0A)
    public static let readResponse = ATTOpcode(0x0B)
    public static let readBlobRequest = ATTOpcode(0x0C)
    public static let readBlobResponse = ATTOpcode(0x0D)
    public static let readMultipleRequest = ATTOpcode(0x0E)
    public static let readMultipleResponse = ATTOpcode(0x0F)
    public static let readByGroupTypeRequest = ATTOpcode(0x10)
    public static let readByGroupTypeResponse = ATTOpcode(0x11)
    public static let writeRequest = ATTOpcode(0x12)
    public static let writeResponse = ATTOpcode(0x13)
    public static let prepareWriteRequest = ATTOpcode(0x16)
    public static let prepareWriteResponse = ATTOpcode(0x17)
    public static let executeWriteRequest = ATTOpcode(0x18)
    public static let executeWriteResponse = ATTOpcode(0x19)
    public static let handleValueNotification = ATTOpcode(0x1B)
    public static let handleValueIndication = ATTOpcode(0x1D)
    public static let handleValueConfirmation = ATTOpcode(0x1E)
    public static let readMultipleVariableRequest = ATTOpcode(0x20)
    public static let readMultipleVariableResponse = ATTOpcode(0x21)
    public static let multipleHandleValueNotification = ATTOpcode(0x23)
    public static let writeCommand = ATTOpcode(0x52)
    public static let signedWriteCommand = ATTOpcode(0xD2)

    /// Every opcode Core 5.4 defines, in numeric order.
    public static let allKnown: [ATTOpcode] = [
        .errorResponse, .exchangeMTURequest, .exchangeMTUResponse, .findInformationRequest,
        .findInformationResponse, .findByTypeValueRequest, .findByTypeValueResponse,
        .readByTypeRequest, .readByTypeResponse, .readRequest, .readResponse, .readBlobRequest,
        .readBlobResponse, .readMultipleRequest, .readMultipleResponse, .readByGroupTypeRequest,
        .readByGroupTypeResponse, .writeRequest, .writeResponse, .prepareWriteRequest,
        .prepareWriteResponse, .executeWriteRequest, .executeWriteResponse,
        .handleValueNotification, .handleValueIndication, .handleValueConfirmation,
        .readMultipleVariableRequest, .readMultipleVariableResponse,
        .multipleHandleValueNotification, .writeCommand, .signedWriteCommand,
    ]

    // MARK: Bit fields (§3.3.1)

    /// Bits 0–5.
    @inlinable public var method: UInt8 { rawValue & 0x3F }
    /// Bit 6: set on commands (no response; a server ignores an unsupported one).
    @inlinable public var isCommand: Bool { rawValue & 0x40 != 0 }
    /// Bit 7: the PDU ends with a 12-octet Authentication Signature.
    @inlinable public var hasAuthenticationSignature: Bool { rawValue & 0x80 != 0 }

    /// Whether Core 5.4 defines this opcode.
    public var isKnown: Bool { ATTOpcode.table[Int(rawValue)] != nil }

    // MARK: Classification (§3.3)

    /// The six PDU types of ATT.
    public enum Kind: Hashable, Sendable, CustomStringConvertible {
        case request, response, command, notification, indication, confirmation

        public var description: String {
            switch self {
            case .request: return "request"
            case .response: return "response"
            case .command: return "command"
            case .notification: return "notification"
            case .indication: return "indication"
            case .confirmation: return "confirmation"
            }
        }
    }

    /// The PDU type of a known opcode; for an unknown one, `.command` when bit 6 is set (the
    /// flag is defined for every opcode), otherwise `nil`.
    public var kind: Kind? {
        if let entry = ATTOpcode.table[Int(rawValue)] { return entry.kind }
        return isCommand ? .command : nil
    }

    /// Who sends this PDU: `true` for PDUs a server sends (responses, notifications,
    /// indications), `false` for client PDUs, `nil` for unknown opcodes.
    public var isSentByServer: Bool? {
        switch kind {
        case .response, .notification, .indication: return true
        case .request, .command, .confirmation: return isKnown ? false : nil
        case nil: return nil
        }
    }

    /// For a request, the opcode of its successful response (an Error Response may come
    /// instead); for an indication, the confirmation.
    public var responseOpcode: ATTOpcode? {
        switch self {
        case .exchangeMTURequest: return .exchangeMTUResponse
        case .findInformationRequest: return .findInformationResponse
        case .findByTypeValueRequest: return .findByTypeValueResponse
        case .readByTypeRequest: return .readByTypeResponse
        case .readRequest: return .readResponse
        case .readBlobRequest: return .readBlobResponse
        case .readMultipleRequest: return .readMultipleResponse
        case .readByGroupTypeRequest: return .readByGroupTypeResponse
        case .writeRequest: return .writeResponse
        case .prepareWriteRequest: return .prepareWriteResponse
        case .executeWriteRequest: return .executeWriteResponse
        case .readMultipleVariableRequest: return .readMultipleVariableResponse
        case .handleValueIndication: return .handleValueConfirmation
        default: return nil
        }
    }

    /// For a response (other than Error Response), the request it answers; for the
    /// confirmation, the indication.
    public var requestOpcode: ATTOpcode? {
        switch self {
        case .exchangeMTUResponse: return .exchangeMTURequest
        case .findInformationResponse: return .findInformationRequest
        case .findByTypeValueResponse: return .findByTypeValueRequest
        case .readByTypeResponse: return .readByTypeRequest
        case .readResponse: return .readRequest
        case .readBlobResponse: return .readBlobRequest
        case .readMultipleResponse: return .readMultipleRequest
        case .readByGroupTypeResponse: return .readByGroupTypeRequest
        case .writeResponse: return .writeRequest
        case .prepareWriteResponse: return .prepareWriteRequest
        case .executeWriteResponse: return .executeWriteRequest
        case .readMultipleVariableResponse: return .readMultipleVariableRequest
        case .handleValueConfirmation: return .handleValueIndication
        default: return nil
        }
    }

    // MARK: Names

    /// Wireshark's name as the oracle records print it (`READ_BY_GROUP_TYPE_REQ`),
    /// `UNKNOWN` for an opcode Core 5.4 does not define.
    public var wiresharkName: String {
        ATTOpcode.table[Int(rawValue)]?.wireshark ?? "UNKNOWN"
    }

    /// ``wiresharkName`` as a literal (written without a `String`: the JSON dump's hot path).
    public var wiresharkLiteral: StaticString {
        ATTOpcode.table[Int(rawValue)]?.wiresharkLiteral ?? "UNKNOWN"
    }

    /// The spec name (`ATT_READ_BY_GROUP_TYPE_REQ`), or `ATT opcode 0xNN` when unknown.
    public var description: String {
        if let entry = ATTOpcode.table[Int(rawValue)] { return "ATT_" + entry.wireshark }
        return "ATT opcode 0x" + hex2(rawValue)
    }

    /// The PDU's title as the spec's section heading reads (`Read By Group Type Request`),
    /// or `Unknown` for an opcode Core 5.4 does not define.
    public var title: String {
        ATTOpcode.table[Int(rawValue)]?.title ?? "Unknown"
    }

    // MARK: Unknown opcodes (§3.4.9, §3.3)

    /// What a server must do with a PDU whose opcode it does not support.
    public enum UnsupportedHandling: Hashable, Sendable {
        /// A request: answer ATT_ERROR_RSP with Request Not Supported, handle 0x0000.
        case respondRequestNotSupported(ErrorResponse)
        /// A command (Command Flag set): ignore it silently.
        case ignore
    }

    /// What the spec requires of a server that receives this opcode and does not support it:
    /// a command (bit 6 set) is ignored; anything else is answered with an Error Response
    /// (Request Not Supported, Attribute Handle In Error 0x0000).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.1.1 and §3.3.1
    public var unsupportedHandling: UnsupportedHandling {
        if isCommand { return .ignore }
        return .respondRequestNotSupported(
            ErrorResponse(requestOpcode: self, handle: 0x0000, errorCode: .requestNotSupported))
    }

    // MARK: Table

    struct Entry: Sendable {
        let wireshark: String
        let wiresharkLiteral: StaticString
        let title: String
        let kind: Kind
    }

    static let table: [Entry?] = {
        var table = [Entry?](repeating: nil, count: 256)
        func add(_ op: ATTOpcode, _ ws: StaticString, _ title: String, _ kind: Kind) {
            table[Int(op.rawValue)] = Entry(wireshark: ws.description, wiresharkLiteral: ws, title: title, kind: kind)
        }
        add(.errorResponse, "ERROR_RSP", "Error Response", .response)
        add(.exchangeMTURequest, "EXCHANGE_MTU_REQ", "Exchange MTU Request", .request)
        add(.exchangeMTUResponse, "EXCHANGE_MTU_RSP", "Exchange MTU Response", .response)
        add(.findInformationRequest, "FIND_INFORMATION_REQ", "Find Information Request", .request)
        add(.findInformationResponse, "FIND_INFORMATION_RSP", "Find Information Response", .response)
        add(.findByTypeValueRequest, "FIND_BY_TYPE_VALUE_REQ", "Find By Type Value Request", .request)
        add(.findByTypeValueResponse, "FIND_BY_TYPE_VALUE_RSP", "Find By Type Value Response", .response)
        add(.readByTypeRequest, "READ_BY_TYPE_REQ", "Read By Type Request", .request)
        add(.readByTypeResponse, "READ_BY_TYPE_RSP", "Read By Type Response", .response)
        add(.readRequest, "READ_REQ", "Read Request", .request)
        add(.readResponse, "READ_RSP", "Read Response", .response)
        add(.readBlobRequest, "READ_BLOB_REQ", "Read Blob Request", .request)
        add(.readBlobResponse, "READ_BLOB_RSP", "Read Blob Response", .response)
        add(.readMultipleRequest, "READ_MULTIPLE_REQ", "Read Multiple Request", .request)
        add(.readMultipleResponse, "READ_MULTIPLE_RSP", "Read Multiple Response", .response)
        add(.readByGroupTypeRequest, "READ_BY_GROUP_TYPE_REQ", "Read By Group Type Request", .request)
        add(.readByGroupTypeResponse, "READ_BY_GROUP_TYPE_RSP", "Read By Group Type Response", .response)
        add(.writeRequest, "WRITE_REQ", "Write Request", .request)
        add(.writeResponse, "WRITE_RSP", "Write Response", .response)
        add(.prepareWriteRequest, "PREPARE_WRITE_REQ", "Prepare Write Request", .request)
        add(.prepareWriteResponse, "PREPARE_WRITE_RSP", "Prepare Write Response", .response)
        add(.executeWriteRequest, "EXECUTE_WRITE_REQ", "Execute Write Request", .request)
        add(.executeWriteResponse, "EXECUTE_WRITE_RSP", "Execute Write Response", .response)
        add(.handleValueNotification, "HANDLE_VALUE_NTF", "Handle Value Notification", .notification)
        add(.handleValueIndication, "HANDLE_VALUE_IND", "Handle Value Indication", .indication)
        add(.handleValueConfirmation, "HANDLE_VALUE_CFM", "Handle Value Confirmation", .confirmation)
        add(.readMultipleVariableRequest, "READ_MULTIPLE_VARIABLE_REQ", "Read Multiple Variable Request", .request)
        add(.readMultipleVariableResponse, "READ_MULTIPLE_VARIABLE_RSP", "Read Multiple Variable Response", .response)
        add(.multipleHandleValueNotification, "MULTIPLE_HANDLE_VALUE_NTF", "Multiple Handle Value Notification", .notification)
        add(.writeCommand, "WRITE_CMD", "Write Command", .command)
        add(.signedWriteCommand, "SIGNED_WRITE_CMD", "Signed Write Command", .command)
        return table
    }()
}

/// Two lower-case hex digits.
@usableFromInline
func hex2(_ value: UInt8) -> String {
    let s = String(value, radix: 16)
    return s.count < 2 ? "0" + s : s
}

/// Four lower-case hex digits.
@usableFromInline
func hex4(_ value: UInt16) -> String {
    let s = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - s.count)) + s
}
