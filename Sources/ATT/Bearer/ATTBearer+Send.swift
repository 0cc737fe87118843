extension ATTBearer {
    /// Sends a request (any PDU whose opcode is a request) or queues it behind the outstanding
    /// one. Completes with `deliverResponse` or `failTransaction` carrying the returned ID.
    ///
    /// The PDU is encoded now, against the current ATT_MTU (which never shrinks): a PDU longer
    /// than ATT_MTU throws `pduTooLarge`. Exchange MTU goes through ``exchangeMTU(clientRxMTU:)``.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.3.2, §3.3.3
    public mutating func send(request pdu: ATTPDU) throws(ATTError) -> (id: TransactionID, actions: [Action]) {
        try checkOpen()
        guard pdu.opcode.kind == .request, pdu.opcode.isKnown, pdu.opcode != .exchangeMTURequest else {
            throw ATTError.unsupportedRequest(pdu.opcode)
        }
        let bytes = try encodeChecked(pdu)
        return try enqueueRequest(Transaction(id: makeID(), opcode: pdu.opcode, bytes: bytes), first: false)
    }

    /// Our Exchange MTU Request, offering `clientRxMTU` (which becomes our Rx MTU for the
    /// server side too). Sent once per bearer, ahead of every queued request; a second call
    /// throws `unsupportedRequest(.exchangeMTURequest)`. A `clientRxMTU` outside 23...65535
    /// throws `invalidParameters`. On the response ATT_MTU becomes min(client, server Rx MTU)
    /// (`mtuChanged`), unless an exchange already set it.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.2.1
    public mutating func exchangeMTU(clientRxMTU: Int) throws(ATTError) -> (id: TransactionID, actions: [Action]) {
        try checkOpen()
        guard !exchangeMTURequested else { throw ATTError.unsupportedRequest(.exchangeMTURequest) }
        guard clientRxMTU >= ATTBearer.defaultMTU, clientRxMTU <= Int(UInt16.max) else {
            throw ATTError.invalidParameters(
                opcode: .exchangeMTURequest, reason: "Client Rx MTU \(clientRxMTU) outside 23...65535")
        }
        let bytes = try encodeChecked(.exchangeMTURequest(ExchangeMTURequest(clientRxMTU: UInt16(clientRxMTU))))
        let result = try enqueueRequest(
            Transaction(id: makeID(), opcode: .exchangeMTURequest, bytes: bytes), first: true)
        exchangeMTURequested = true
        configuration.rxMTU = clientRxMTU
        return result
    }

    private mutating func enqueueRequest(_ transaction: Transaction, first: Bool) throws(ATTError) -> (
        id: TransactionID, actions: [Action]
    ) {
        guard outstandingRequest != nil else {
            return (transaction.id, start(request: transaction))
        }
        guard requestQueue.count < configuration.requestQueueLimit else { throw ATTError.requestInProgress }
        if first {
            requestQueue.insert(transaction, at: 0)
        } else {
            requestQueue.append(transaction)
        }
        return (transaction.id, [])
    }

    mutating func start(request: Transaction) -> [Action] {
        outstandingRequest = request
        requestsSent += 1
        return [.startTimer(.request(request.id), configuration.transactionTimeout), .send(request.bytes)]
    }

    /// Sends a command (Write Command, Signed Write Command): no response, no timer.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.3.1
    public mutating func send(command pdu: ATTPDU) throws(ATTError) -> [Action] {
        try checkOpen()
        guard pdu.opcode.kind == .command, pdu.opcode.isKnown else { throw ATTError.unsupportedRequest(pdu.opcode) }
        return [.send(try encodeChecked(pdu))]
    }

    /// Sends a Handle Value Notification or Multiple Handle Value Notification.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.7.1, §3.4.7.4
    public mutating func send(notification pdu: ATTPDU) throws(ATTError) -> [Action] {
        try checkOpen()
        guard pdu.opcode.kind == .notification else { throw ATTError.unsupportedRequest(pdu.opcode) }
        return [.send(try encodeChecked(pdu))]
    }

    /// Sends a Handle Value Indication, or queues it behind the unconfirmed one. Completes
    /// with `indicationConfirmed` or `failTransaction` carrying the returned ID.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.7.2
    public mutating func send(indication pdu: ATTPDU) throws(ATTError) -> (id: TransactionID, actions: [Action]) {
        try checkOpen()
        guard pdu.opcode == .handleValueIndication else { throw ATTError.unsupportedRequest(pdu.opcode) }
        let transaction = Transaction(id: makeID(), opcode: pdu.opcode, bytes: try encodeChecked(pdu))
        guard outstandingIndication != nil else {
            return (transaction.id, start(indication: transaction))
        }
        guard indicationQueue.count < configuration.indicationQueueLimit else { throw ATTError.requestInProgress }
        indicationQueue.append(transaction)
        return (transaction.id, [])
    }

    mutating func start(indication: Transaction) -> [Action] {
        outstandingIndication = indication
        return [.startTimer(.indication(indication.id), configuration.transactionTimeout), .send(indication.bytes)]
    }

    /// The server role's answer to the request last delivered with `deliverRequest`: the
    /// matching response, or an Error Response naming that request's opcode. Throws (and keeps
    /// the request waiting for an answer) when there is no request to answer, when `pdu` does
    /// not answer it, or when it does not fit ATT_MTU.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.3.2
    public mutating func respond(_ pdu: ATTPDU) throws(ATTError) -> [Action] {
        try checkOpen()
        guard let request = incomingRequest else {
            throw ATTError.invalidParameters(opcode: pdu.opcode, reason: "no request is waiting for an answer")
        }
        let answers: Bool
        if case .errorResponse(let error) = pdu {
            answers = error.requestOpcode == request
        } else {
            answers = request.responseOpcode == pdu.opcode
        }
        guard answers else {
            throw ATTError.invalidParameters(opcode: pdu.opcode, reason: "does not answer \(request)")
        }
        let bytes = try encodeChecked(pdu)
        incomingRequest = nil
        return [.send(bytes)]
    }

    /// The application has been handed the oldest undelivered peer indication: send its
    /// Handle Value Confirmation.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.7.3
    public mutating func indicationDelivered() -> [Action] {
        guard isOpen, unconfirmedIndications > 0 else { return [] }
        unconfirmedIndications -= 1
        return [.send([ATTOpcode.handleValueConfirmation.rawValue])]
    }

    /// A timer started with `startTimer` ran out. The outstanding transaction it guards fails
    /// with `timeout` and the bearer closes (§3.3.3). A stale timer does nothing.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.3.3
    public mutating func timerFired(_ timer: Timer) -> [Action] {
        guard isOpen else { return [] }
        let timedOut: Transaction
        switch timer {
        case .request(let id):
            guard let request = outstandingRequest, request.id == id else { return [] }
            outstandingRequest = nil
            timedOut = request
        case .indication(let id):
            guard let indication = outstandingIndication, indication.id == id else { return [] }
            outstandingIndication = nil
            timedOut = indication
        }
        let seconds = configuration.transactionTimeout.components.seconds
        let reason =
            "\(timedOut.opcode) unanswered for \(seconds) s: no more ATT PDUs on this bearer (Vol 3 Part F §3.3.3)"
        return [.failTransaction(timedOut.id, .timeout(request: timedOut.opcode))] + shutDown(reason: reason)
    }

    /// The transaction timer of the outstanding request ran out (``timerFired(_:)`` for it).
    public mutating func transactionTimedOut() -> [Action] {
        guard let request = outstandingRequest else { return [] }
        return timerFired(.request(request.id))
    }

    /// Closes the bearer (disconnect, channel failure, local close): everything pending fails
    /// with `bearerClosed(reason)` and every later send throws. Idempotent.
    public mutating func close(reason: String) -> [Action] {
        shutDown(reason: reason)
    }
}
