import Bluetooth

/// Any ATT PDU: one case per PDU of Core 5.4, and `.unknown` for an opcode this module does
/// not define (kept whole so it can be logged, re-encoded or answered).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.3 and §3.4
public enum ATTPDU: Hashable, Sendable {
    case errorResponse(ErrorResponse)
    case exchangeMTURequest(ExchangeMTURequest)
    case exchangeMTUResponse(ExchangeMTUResponse)
    case findInformationRequest(FindInformationRequest)
    case findInformationResponse(FindInformationResponse)
    case findByTypeValueRequest(FindByTypeValueRequest)
    case findByTypeValueResponse(FindByTypeValueResponse)
    case readByTypeRequest(ReadByTypeRequest)
    case readByTypeResponse(ReadByTypeResponse)
    case readRequest(ReadRequest)
    case readResponse(ReadResponse)
    case readBlobRequest(ReadBlobRequest)
    case readBlobResponse(ReadBlobResponse)
    case readMultipleRequest(ReadMultipleRequest)
    case readMultipleResponse(ReadMultipleResponse)
    case readByGroupTypeRequest(ReadByGroupTypeRequest)
    case readByGroupTypeResponse(ReadByGroupTypeResponse)
    case writeRequest(WriteRequest)
    case writeResponse(WriteResponse)
    case writeCommand(WriteCommand)
    case signedWriteCommand(SignedWriteCommand)
    case prepareWriteRequest(PrepareWriteRequest)
    case prepareWriteResponse(PrepareWriteResponse)
    case executeWriteRequest(ExecuteWriteRequest)
    case executeWriteResponse(ExecuteWriteResponse)
    case handleValueNotification(HandleValueNotification)
    case handleValueIndication(HandleValueIndication)
    case handleValueConfirmation(HandleValueConfirmation)
    case readMultipleVariableRequest(ReadMultipleVariableRequest)
    case readMultipleVariableResponse(ReadMultipleVariableResponse)
    case multipleHandleValueNotification(MultipleHandleValueNotification)
    /// An opcode Core 5.4 does not define, with the octets after it. See
    /// `ATTOpcode.unsupportedHandling` for what a server must do with it.
    case unknown(opcode: ATTOpcode, parameters: [UInt8])

    /// ATT_MTU on an LE link before any exchange.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §5.2.1
    public static let defaultLEMTU = 23

    // MARK: Decoding

    /// Decodes one whole received PDU. With `mtu`, a PDU longer than ATT_MTU is malformed
    /// (`exceedsMTU`). An unknown opcode gives `.unknown`, not an error.
    public init(decoding bytes: ArraySlice<UInt8>, mtu: Int? = nil) throws(ATTError) {
        try ATTPDU.checkMTU(bytes, mtu: mtu)
        var reader = ByteReader(bytes)
        try self.init(parsing: &reader)
    }

    /// Decodes one whole received PDU; see `init(decoding:mtu:)`.
    public init(decoding bytes: [UInt8], mtu: Int? = nil) throws(ATTError) {
        try self.init(decoding: bytes[...], mtu: mtu)
    }

    /// Parses the whole rest of `reader` as one PDU.
    public init(parsing reader: inout ByteReader) throws(ATTError) {
        guard let byte = try? reader.peekUInt8() else {
            throw ATTError.malformed(opcode: ATTOpcode(0), field: "Opcode", offset: reader.offset, reason: .empty)
        }
        // Literal opcodes (checked against the named constants by the tests) make a jump table.
        switch byte {
        case 0x01: self = .errorResponse(try ErrorResponse(parsing: &reader))
        case 0x02: self = .exchangeMTURequest(try ExchangeMTURequest(parsing: &reader))
        case 0x03: self = .exchangeMTUResponse(try ExchangeMTUResponse(parsing: &reader))
        case 0x04: self = .findInformationRequest(try FindInformationRequest(parsing: &reader))
        case 0x05: self = .findInformationResponse(try FindInformationResponse(parsing: &reader))
        case 0x06: self = .findByTypeValueRequest(try FindByTypeValueRequest(parsing: &reader))
        case 0x07: self = .findByTypeValueResponse(try FindByTypeValueResponse(parsing: &reader))
        case 0x08: self = .readByTypeRequest(try ReadByTypeRequest(parsing: &reader))
        case 0x09: self = .readByTypeResponse(try ReadByTypeResponse(parsing: &reader))
        case 0x0A: self = .readRequest(try ReadRequest(parsing: &reader))
        case 0x0B: self = .readResponse(try ReadResponse(parsing: &reader))
        case 0x0C: self = .readBlobRequest(try ReadBlobRequest(parsing: &reader))
        case 0x0D: self = .readBlobResponse(try ReadBlobResponse(parsing: &reader))
        case 0x0E: self = .readMultipleRequest(try ReadMultipleRequest(parsing: &reader))
        case 0x0F: self = .readMultipleResponse(try ReadMultipleResponse(parsing: &reader))
        case 0x10: self = .readByGroupTypeRequest(try ReadByGroupTypeRequest(parsing: &reader))
        case 0x11: self = .readByGroupTypeResponse(try ReadByGroupTypeResponse(parsing: &reader))
        case 0x12: self = .writeRequest(try WriteRequest(parsing: &reader))
        case 0x13: self = .writeResponse(try WriteResponse(parsing: &reader))
        case 0x52: self = .writeCommand(try WriteCommand(parsing: &reader))
        case 0xD2: self = .signedWriteCommand(try SignedWriteCommand(parsing: &reader))
        case 0x16: self = .prepareWriteRequest(try PrepareWriteRequest(parsing: &reader))
        case 0x17: self = .prepareWriteResponse(try PrepareWriteResponse(parsing: &reader))
        case 0x18: self = .executeWriteRequest(try ExecuteWriteRequest(parsing: &reader))
        case 0x19: self = .executeWriteResponse(try ExecuteWriteResponse(parsing: &reader))
        case 0x1B: self = .handleValueNotification(try HandleValueNotification(parsing: &reader))
        case 0x1D: self = .handleValueIndication(try HandleValueIndication(parsing: &reader))
        case 0x1E: self = .handleValueConfirmation(try HandleValueConfirmation(parsing: &reader))
        case 0x20: self = .readMultipleVariableRequest(try ReadMultipleVariableRequest(parsing: &reader))
        case 0x21: self = .readMultipleVariableResponse(try ReadMultipleVariableResponse(parsing: &reader))
        case 0x23: self = .multipleHandleValueNotification(try MultipleHandleValueNotification(parsing: &reader))
        default:
            _ = try? reader.readUInt8()
            self = .unknown(opcode: ATTOpcode(byte), parameters: Array(reader.readRemaining()))
        }
    }

    /// Throws `exceedsMTU` when `bytes` is longer than `mtu`.
    static func checkMTU(_ bytes: ArraySlice<UInt8>, mtu: Int?) throws(ATTError) {
        guard let mtu, bytes.count > mtu else { return }
        let opcode = ATTOpcode(bytes.first ?? 0)
        throw ATTError.malformed(opcode: opcode, field: "PDU", offset: mtu,
                                 reason: .exceedsMTU(length: bytes.count, mtu: mtu))
    }

    // MARK: Encoding

    /// The opcode.
    public var opcode: ATTOpcode {
        switch self {
        case .errorResponse: return ErrorResponse.opcode
        case .exchangeMTURequest: return ExchangeMTURequest.opcode
        case .exchangeMTUResponse: return ExchangeMTUResponse.opcode
        case .findInformationRequest: return FindInformationRequest.opcode
        case .findInformationResponse: return FindInformationResponse.opcode
        case .findByTypeValueRequest: return FindByTypeValueRequest.opcode
        case .findByTypeValueResponse: return FindByTypeValueResponse.opcode
        case .readByTypeRequest: return ReadByTypeRequest.opcode
        case .readByTypeResponse: return ReadByTypeResponse.opcode
        case .readRequest: return ReadRequest.opcode
        case .readResponse: return ReadResponse.opcode
        case .readBlobRequest: return ReadBlobRequest.opcode
        case .readBlobResponse: return ReadBlobResponse.opcode
        case .readMultipleRequest: return ReadMultipleRequest.opcode
        case .readMultipleResponse: return ReadMultipleResponse.opcode
        case .readByGroupTypeRequest: return ReadByGroupTypeRequest.opcode
        case .readByGroupTypeResponse: return ReadByGroupTypeResponse.opcode
        case .writeRequest: return WriteRequest.opcode
        case .writeResponse: return WriteResponse.opcode
        case .writeCommand: return WriteCommand.opcode
        case .signedWriteCommand: return SignedWriteCommand.opcode
        case .prepareWriteRequest: return PrepareWriteRequest.opcode
        case .prepareWriteResponse: return PrepareWriteResponse.opcode
        case .executeWriteRequest: return ExecuteWriteRequest.opcode
        case .executeWriteResponse: return ExecuteWriteResponse.opcode
        case .handleValueNotification: return HandleValueNotification.opcode
        case .handleValueIndication: return HandleValueIndication.opcode
        case .handleValueConfirmation: return HandleValueConfirmation.opcode
        case .readMultipleVariableRequest: return ReadMultipleVariableRequest.opcode
        case .readMultipleVariableResponse: return ReadMultipleVariableResponse.opcode
        case .multipleHandleValueNotification: return MultipleHandleValueNotification.opcode
        case .unknown(let opcode, _): return opcode
        }
    }

    /// The PDU as its `ATTPDUCodable` value, `nil` for `.unknown`.
    public var body: (any ATTPDUCodable)? {
        switch self {
        case .errorResponse(let pdu): return pdu
        case .exchangeMTURequest(let pdu): return pdu
        case .exchangeMTUResponse(let pdu): return pdu
        case .findInformationRequest(let pdu): return pdu
        case .findInformationResponse(let pdu): return pdu
        case .findByTypeValueRequest(let pdu): return pdu
        case .findByTypeValueResponse(let pdu): return pdu
        case .readByTypeRequest(let pdu): return pdu
        case .readByTypeResponse(let pdu): return pdu
        case .readRequest(let pdu): return pdu
        case .readResponse(let pdu): return pdu
        case .readBlobRequest(let pdu): return pdu
        case .readBlobResponse(let pdu): return pdu
        case .readMultipleRequest(let pdu): return pdu
        case .readMultipleResponse(let pdu): return pdu
        case .readByGroupTypeRequest(let pdu): return pdu
        case .readByGroupTypeResponse(let pdu): return pdu
        case .writeRequest(let pdu): return pdu
        case .writeResponse(let pdu): return pdu
        case .writeCommand(let pdu): return pdu
        case .signedWriteCommand(let pdu): return pdu
        case .prepareWriteRequest(let pdu): return pdu
        case .prepareWriteResponse(let pdu): return pdu
        case .executeWriteRequest(let pdu): return pdu
        case .executeWriteResponse(let pdu): return pdu
        case .handleValueNotification(let pdu): return pdu
        case .handleValueIndication(let pdu): return pdu
        case .handleValueConfirmation(let pdu): return pdu
        case .readMultipleVariableRequest(let pdu): return pdu
        case .readMultipleVariableResponse(let pdu): return pdu
        case .multipleHandleValueNotification(let pdu): return pdu
        case .unknown: return nil
        }
    }

    /// Octets `write(to:)` produces.
    public var encodedLength: Int {
        switch self {
        case .errorResponse(let pdu): return pdu.encodedLength
        case .exchangeMTURequest(let pdu): return pdu.encodedLength
        case .exchangeMTUResponse(let pdu): return pdu.encodedLength
        case .findInformationRequest(let pdu): return pdu.encodedLength
        case .findInformationResponse(let pdu): return pdu.encodedLength
        case .findByTypeValueRequest(let pdu): return pdu.encodedLength
        case .findByTypeValueResponse(let pdu): return pdu.encodedLength
        case .readByTypeRequest(let pdu): return pdu.encodedLength
        case .readByTypeResponse(let pdu): return pdu.encodedLength
        case .readRequest(let pdu): return pdu.encodedLength
        case .readResponse(let pdu): return pdu.encodedLength
        case .readBlobRequest(let pdu): return pdu.encodedLength
        case .readBlobResponse(let pdu): return pdu.encodedLength
        case .readMultipleRequest(let pdu): return pdu.encodedLength
        case .readMultipleResponse(let pdu): return pdu.encodedLength
        case .readByGroupTypeRequest(let pdu): return pdu.encodedLength
        case .readByGroupTypeResponse(let pdu): return pdu.encodedLength
        case .writeRequest(let pdu): return pdu.encodedLength
        case .writeResponse(let pdu): return pdu.encodedLength
        case .writeCommand(let pdu): return pdu.encodedLength
        case .signedWriteCommand(let pdu): return pdu.encodedLength
        case .prepareWriteRequest(let pdu): return pdu.encodedLength
        case .prepareWriteResponse(let pdu): return pdu.encodedLength
        case .executeWriteRequest(let pdu): return pdu.encodedLength
        case .executeWriteResponse(let pdu): return pdu.encodedLength
        case .handleValueNotification(let pdu): return pdu.encodedLength
        case .handleValueIndication(let pdu): return pdu.encodedLength
        case .handleValueConfirmation(let pdu): return pdu.encodedLength
        case .readMultipleVariableRequest(let pdu): return pdu.encodedLength
        case .readMultipleVariableResponse(let pdu): return pdu.encodedLength
        case .multipleHandleValueNotification(let pdu): return pdu.encodedLength
        case .unknown(_, let parameters): return 1 + parameters.count
        }
    }

    /// Appends the PDU as stored; `encode(mtu:)` checks it first.
    public func write(to writer: inout ByteWriter) {
        switch self {
        case .errorResponse(let pdu): pdu.write(to: &writer)
        case .exchangeMTURequest(let pdu): pdu.write(to: &writer)
        case .exchangeMTUResponse(let pdu): pdu.write(to: &writer)
        case .findInformationRequest(let pdu): pdu.write(to: &writer)
        case .findInformationResponse(let pdu): pdu.write(to: &writer)
        case .findByTypeValueRequest(let pdu): pdu.write(to: &writer)
        case .findByTypeValueResponse(let pdu): pdu.write(to: &writer)
        case .readByTypeRequest(let pdu): pdu.write(to: &writer)
        case .readByTypeResponse(let pdu): pdu.write(to: &writer)
        case .readRequest(let pdu): pdu.write(to: &writer)
        case .readResponse(let pdu): pdu.write(to: &writer)
        case .readBlobRequest(let pdu): pdu.write(to: &writer)
        case .readBlobResponse(let pdu): pdu.write(to: &writer)
        case .readMultipleRequest(let pdu): pdu.write(to: &writer)
        case .readMultipleResponse(let pdu): pdu.write(to: &writer)
        case .readByGroupTypeRequest(let pdu): pdu.write(to: &writer)
        case .readByGroupTypeResponse(let pdu): pdu.write(to: &writer)
        case .writeRequest(let pdu): pdu.write(to: &writer)
        case .writeResponse(let pdu): pdu.write(to: &writer)
        case .writeCommand(let pdu): pdu.write(to: &writer)
        case .signedWriteCommand(let pdu): pdu.write(to: &writer)
        case .prepareWriteRequest(let pdu): pdu.write(to: &writer)
        case .prepareWriteResponse(let pdu): pdu.write(to: &writer)
        case .executeWriteRequest(let pdu): pdu.write(to: &writer)
        case .executeWriteResponse(let pdu): pdu.write(to: &writer)
        case .handleValueNotification(let pdu): pdu.write(to: &writer)
        case .handleValueIndication(let pdu): pdu.write(to: &writer)
        case .handleValueConfirmation(let pdu): pdu.write(to: &writer)
        case .readMultipleVariableRequest(let pdu): pdu.write(to: &writer)
        case .readMultipleVariableResponse(let pdu): pdu.write(to: &writer)
        case .multipleHandleValueNotification(let pdu): pdu.write(to: &writer)
        case .unknown(let opcode, let parameters):
            writer.writeUInt8(opcode.rawValue)
            writer.writeBytes(parameters)
        }
    }

    /// Throws `invalidParameters` when the PDU cannot be encoded faithfully.
    public func checkEncodable() throws(ATTError) {
        try body?.checkEncodable()
    }

    /// The PDU's octets; throws `pduTooLarge` when longer than `mtu` (never truncates).
    public func encode(mtu: Int) throws(ATTError) -> [UInt8] {
        try checkEncodable()
        let length = encodedLength
        guard length <= mtu else { throw ATTError.pduTooLarge(opcode: opcode, length: length, mtu: mtu) }
        var writer = ByteWriter(capacity: length)
        write(to: &writer)
        return writer.bytes
    }

    /// The PDU's octets without an MTU check (for tests, captures and logs).
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: encodedLength)
        write(to: &writer)
        return writer.bytes
    }
}

// MARK: Wrapping

extension ATTPDUCodable {
    /// This PDU as an `ATTPDU` case.
    public var pdu: ATTPDU {
        switch self {
        case let pdu as ErrorResponse: return .errorResponse(pdu)
        case let pdu as ExchangeMTURequest: return .exchangeMTURequest(pdu)
        case let pdu as ExchangeMTUResponse: return .exchangeMTUResponse(pdu)
        case let pdu as FindInformationRequest: return .findInformationRequest(pdu)
        case let pdu as FindInformationResponse: return .findInformationResponse(pdu)
        case let pdu as FindByTypeValueRequest: return .findByTypeValueRequest(pdu)
        case let pdu as FindByTypeValueResponse: return .findByTypeValueResponse(pdu)
        case let pdu as ReadByTypeRequest: return .readByTypeRequest(pdu)
        case let pdu as ReadByTypeResponse: return .readByTypeResponse(pdu)
        case let pdu as ReadRequest: return .readRequest(pdu)
        case let pdu as ReadResponse: return .readResponse(pdu)
        case let pdu as ReadBlobRequest: return .readBlobRequest(pdu)
        case let pdu as ReadBlobResponse: return .readBlobResponse(pdu)
        case let pdu as ReadMultipleRequest: return .readMultipleRequest(pdu)
        case let pdu as ReadMultipleResponse: return .readMultipleResponse(pdu)
        case let pdu as ReadByGroupTypeRequest: return .readByGroupTypeRequest(pdu)
        case let pdu as ReadByGroupTypeResponse: return .readByGroupTypeResponse(pdu)
        case let pdu as WriteRequest: return .writeRequest(pdu)
        case let pdu as WriteResponse: return .writeResponse(pdu)
        case let pdu as WriteCommand: return .writeCommand(pdu)
        case let pdu as SignedWriteCommand: return .signedWriteCommand(pdu)
        case let pdu as PrepareWriteRequest: return .prepareWriteRequest(pdu)
        case let pdu as PrepareWriteResponse: return .prepareWriteResponse(pdu)
        case let pdu as ExecuteWriteRequest: return .executeWriteRequest(pdu)
        case let pdu as ExecuteWriteResponse: return .executeWriteResponse(pdu)
        case let pdu as HandleValueNotification: return .handleValueNotification(pdu)
        case let pdu as HandleValueIndication: return .handleValueIndication(pdu)
        case let pdu as HandleValueConfirmation: return .handleValueConfirmation(pdu)
        case let pdu as ReadMultipleVariableRequest: return .readMultipleVariableRequest(pdu)
        case let pdu as ReadMultipleVariableResponse: return .readMultipleVariableResponse(pdu)
        case let pdu as MultipleHandleValueNotification: return .multipleHandleValueNotification(pdu)
        default:
            // Only the PDU types of this module conform; an outside conformance is carried
            // as its encoded bytes.
            let bytes = encoded
            return .unknown(opcode: Self.opcode, parameters: Array(bytes.dropFirst()))
        }
    }
}
