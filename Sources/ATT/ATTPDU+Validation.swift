/// What a server must answer to a request that decodes but breaks a rule of its section.
///
/// The decoder only rejects what cannot be parsed; a request with handle 0x0000, a range whose
/// start is above its end, or a reserved flag value decodes, and `validate()` names the
/// Error Response the spec requires, so the server answers with the right code and handle.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.1–§3.4.6 (each request's error rules)
extension ATTPDU {
    /// The Error Response a server must send instead of performing this request, or `nil` when
    /// the request is well-formed at the protocol level (the attribute database may still
    /// refuse it) or when this PDU is not a request (commands are never answered; a server
    /// ignores a command it cannot perform).
    public func validate() -> ErrorResponse? {
        func invalidHandle(_ handle: UInt16) -> ErrorResponse {
            ErrorResponse(requestOpcode: opcode, handle: handle, errorCode: .invalidHandle)
        }
        /// §3.4.3.1, §3.4.3.3, §3.4.4.1, §3.4.4.9: Starting Handle 0x0000 or greater than
        /// Ending Handle → Invalid Handle, Attribute Handle In Error = Starting Handle.
        func range(_ start: UInt16, _ end: UInt16) -> ErrorResponse? {
            start == 0 || start > end ? invalidHandle(start) : nil
        }
        /// §3.4.4.7, §3.4.4.11: two or more handles (Set Of Handles is 4 octets or more);
        /// each must be a valid handle.
        func handleSet(_ handles: [UInt16]) -> ErrorResponse? {
            if let zero = handles.first(where: { $0 == 0 }) { return invalidHandle(zero) }
            guard handles.count >= 2 else {
                return ErrorResponse(requestOpcode: opcode, handle: handles.first ?? 0, errorCode: .invalidPDU)
            }
            return nil
        }
        switch self {
        case .findInformationRequest(let r): return range(r.startingHandle, r.endingHandle)
        case .findByTypeValueRequest(let r): return range(r.startingHandle, r.endingHandle)
        case .readByTypeRequest(let r): return range(r.startingHandle, r.endingHandle)
        case .readByGroupTypeRequest(let r): return range(r.startingHandle, r.endingHandle)
        case .readRequest(let r): return r.handle == 0 ? invalidHandle(0) : nil
        case .readBlobRequest(let r): return r.handle == 0 ? invalidHandle(0) : nil
        case .writeRequest(let r): return r.handle == 0 ? invalidHandle(0) : nil
        case .prepareWriteRequest(let r): return r.handle == 0 ? invalidHandle(0) : nil
        case .readMultipleRequest(let r): return handleSet(r.handles)
        case .readMultipleVariableRequest(let r): return handleSet(r.handles)
        case .executeWriteRequest(let r):
            // Flags values other than 0x00 and 0x01 are reserved: the request is not a valid
            // ATT_EXECUTE_WRITE_REQ, answered Invalid PDU (the queue is left untouched).
            return r.flags.isDefined ? nil : ErrorResponse(requestOpcode: opcode, handle: 0, errorCode: .invalidPDU)
        case .unknown(let opcode, _):
            if case .respondRequestNotSupported(let response) = opcode.unsupportedHandling { return response }
            return nil
        case .exchangeMTURequest:
            // A Client Rx MTU below 23 is not an error: ATT_MTU stays 23 (§3.4.2.2).
            return nil
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
             .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse,
             .readByGroupTypeResponse, .writeResponse, .writeCommand, .signedWriteCommand,
             .prepareWriteResponse, .executeWriteResponse, .handleValueNotification,
             .handleValueIndication, .handleValueConfirmation, .readMultipleVariableResponse,
             .multipleHandleValueNotification:
            return nil
        }
    }

    /// What a server must answer to received bytes that did not decode (`ATTError.malformed`,
    /// over-MTU included): Invalid PDU with handle 0x0000 for a request; `nil` (ignore) for a
    /// command, or for a PDU a server never receives (responses, notifications, indications),
    /// which the bearer reports instead.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.1.1 (Invalid PDU), §3.3.1 (commands)
    public static func errorResponse(forUndecodable bytes: ArraySlice<UInt8>) -> ErrorResponse? {
        guard let byte = bytes.first else { return nil }
        let opcode = ATTOpcode(byte)
        guard !opcode.isCommand else { return nil }
        switch opcode.kind {
        case .request:
            return ErrorResponse(requestOpcode: opcode, handle: 0, errorCode: .invalidPDU)
        case nil:
            // Unknown opcodes always decode (`.unknown`); kept for completeness.
            return ErrorResponse(requestOpcode: opcode, handle: 0, errorCode: .requestNotSupported)
        case .response, .command, .notification, .indication, .confirmation:
            return nil
        }
    }
}
