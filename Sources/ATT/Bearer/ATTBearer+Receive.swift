extension ATTBearer {
    /// One SDU from the peer (one ATT PDU). Never throws: what the peer got wrong becomes an
    /// Error Response, a failed transaction, a `reportError` or a closed bearer.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.3, §3.4.9
    public mutating func receive(_ sdu: [UInt8]) -> [Action] {
        guard isOpen else { return [] }
        guard let first = sdu.first else {
            return [.reportError(.malformed(opcode: ATTOpcode(0), field: "Opcode", offset: 0, reason: .empty))]
        }
        let opcode = ATTOpcode(first)
        switch opcode.kind {
        case .request:
            return receiveRequest(opcode, sdu)
        case nil:
            // An opcode Core 5.4 does not define, Command Flag clear: an unsupported request.
            return receiveRequest(opcode, sdu)
        case .command:
            return receiveCommand(opcode, sdu)
        case .response:
            return receiveResponse(opcode, sdu)
        case .notification:
            switch decode(sdu) {
            case .success(let pdu): return [.deliverNotification(pdu)]
            case .failure(let error): return [.reportError(error)]
            }
        case .indication:
            switch decode(sdu) {
            case .success(let pdu):
                // §3.4.7.2 / §3.3.2: a server sends no further indication until it has our
                // confirmation. Tolerated (each is delivered, and confirmed in turn), reported.
                let overlapping = unconfirmedIndications > 0
                unconfirmedIndications += 1
                guard overlapping else { return [.deliverIndication(pdu)] }
                return [
                    .reportError(
                        .protocolError(
                            "Handle Value Indication received while our confirmation of the previous one is "
                                + "still due (Vol 3 Part F §3.4.7.2: one indication at a time)")),
                    .deliverIndication(pdu),
                ]
            case .failure(let error):
                // Not confirmed: the application never gets it.
                return [.reportError(error)]
            }
        case .confirmation:
            return receiveConfirmation(sdu)
        }
    }

    /// Decodes `sdu` within ATT_MTU; a longer one is malformed (`exceedsMTU`).
    private func decode(_ sdu: [UInt8]) -> Result<ATTPDU, ATTError> {
        do throws(ATTError) {
            return .success(try ATTPDU(decoding: sdu, mtu: mtu))
        } catch {
            return .failure(error)
        }
    }

    // MARK: Server role

    private mutating func receiveRequest(_ opcode: ATTOpcode, _ sdu: [UInt8]) -> [Action] {
        if let pending = incomingRequest {
            // §3.3.2: a client sends no other request until it has the response.
            return shutDown(
                reason: "peer sent \(opcode) before \(pending) was answered (Vol 3 Part F §3.3.2)")
        }
        guard opcode.isKnown else {
            return [.send(errorResponseBytes(opcode, handle: 0, .requestNotSupported))]
        }
        let pdu: ATTPDU
        switch decode(sdu) {
        case .success(let decoded):
            pdu = decoded
        case .failure(let error):
            return [.reportError(error), .send(errorResponseBytes(opcode, handle: 0, .invalidPDU))]
        }
        if case .exchangeMTURequest(let request) = pdu {
            // No exchange on an Enhanced ATT bearer (its MTU is the L2CAP channel's).
            if isEnhanced { return [.send(errorResponseBytes(opcode, handle: 0, .requestNotSupported))] }
            return answerExchangeMTU(request)
        }
        guard configuration.acceptsRequests else {
            return [.send(errorResponseBytes(opcode, handle: 0, .requestNotSupported))]
        }
        // Protocol-level checks (a zero handle, an inverted range, reserved flags) are answered
        // here: the server role only sees well-formed requests.
        if let refusal = pdu.validate() {
            return [.send(refusal.encoded)]
        }
        incomingRequest = opcode
        return [.deliverRequest(pdu)]
    }

    /// §3.4.2.2: answer with our Rx MTU, then apply ATT_MTU (after the response is sent).
    private mutating func answerExchangeMTU(_ request: ExchangeMTURequest) -> [Action] {
        let serverRxMTU = UInt16(clamping: configuration.rxMTU)
        let response = ATTPDU.exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: serverRxMTU))
        // Three octets: always within the minimum ATT_MTU of 23.
        var actions: [Action] = [.send(response.encoded)]
        actions += applyExchange(clientRxMTU: request.clientRxMTU, serverRxMTU: serverRxMTU)
        return actions
    }

    private func errorResponseBytes(_ opcode: ATTOpcode, handle: UInt16, _ code: ATTErrorCode) -> [UInt8] {
        ErrorResponse(requestOpcode: opcode, handle: handle, errorCode: code).encoded
    }

    private mutating func receiveCommand(_ opcode: ATTOpcode, _ sdu: [UInt8]) -> [Action] {
        // §3.3.1 / §3.4.9: a command the server does not support is ignored.
        guard opcode.isKnown, configuration.acceptsRequests else { return [] }
        switch decode(sdu) {
        case .success(let pdu): return [.deliverCommand(pdu)]
        case .failure(let error): return [.reportError(error)]
        }
    }

    // MARK: Client role

    private mutating func receiveResponse(_ opcode: ATTOpcode, _ sdu: [UInt8]) -> [Action] {
        guard let request = outstandingRequest else {
            return [.reportError(.protocolError("\(opcode) received with no request outstanding"))]
        }
        let outcome: Result<ATTPDU, ATTError>
        switch decode(sdu) {
        case .failure(let error):
            // The peer answered, badly: the transaction is over.
            outcome = .failure(error)
        case .success(.errorResponse(let error)):
            if error.requestOpcode == request.opcode {
                outcome = .failure(
                    .peerError(request: error.requestOpcode, handle: error.handle, code: error.errorCode))
            } else {
                outcome = .failure(
                    .protocolError("Error Response for \(error.requestOpcode) while \(request.opcode) is outstanding"))
            }
        case .success(let pdu):
            if opcode.requestOpcode == request.opcode {
                outcome = .success(pdu)
            } else {
                outcome = .failure(.protocolError("\(opcode) received while \(request.opcode) is outstanding"))
            }
        }
        outstandingRequest = nil
        var actions: [Action] = [.cancelTimer(.request(request.id))]
        switch outcome {
        case .success(let pdu):
            if case .exchangeMTUResponse(let response) = pdu {
                actions += applyExchange(
                    clientRxMTU: UInt16(clamping: configuration.rxMTU), serverRxMTU: response.serverRxMTU)
            }
            actions.append(.deliverResponse(request.id, pdu))
        case .failure(let error):
            actions.append(.failTransaction(request.id, error))
        }
        if !requestQueue.isEmpty {
            actions += start(request: requestQueue.removeFirst())
        }
        return actions
    }

    private mutating func receiveConfirmation(_ sdu: [UInt8]) -> [Action] {
        guard let indication = outstandingIndication else {
            return [.reportError(.protocolError("Handle Value Confirmation with no indication outstanding"))]
        }
        if case .failure(let error) = decode(sdu) {
            // A malformed confirmation does not confirm.
            return [.reportError(error)]
        }
        outstandingIndication = nil
        var actions: [Action] = [.cancelTimer(.indication(indication.id)), .indicationConfirmed(indication.id)]
        if !indicationQueue.isEmpty {
            actions += start(indication: indicationQueue.removeFirst())
        }
        return actions
    }
}
