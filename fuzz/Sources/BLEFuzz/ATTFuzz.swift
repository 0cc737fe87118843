import ATT
import Bluetooth

/// Targets over ATT: the PDU codec and the bearer state machine.
enum ATTFuzz {
    /// Every ATT PDU decode: typed error, or decode→encode→decode equal (and the encoding is as
    /// long as `encodedLength` says).
    static func pdu(_ bytes: [UInt8]) {
        guard let pdu = try? ATTPDU(decoding: bytes) else { return }
        _ = "\(pdu)"
        let encoded = pdu.encoded
        require(encoded.count == pdu.encodedLength, "\(pdu.opcode): encodedLength \(pdu.encodedLength) ≠ \(encoded.count)")
        let again = try? ATTPDU(decoding: encoded)
        require(again == pdu, "ATT re-decode differs: \(pdu) vs \(String(describing: again))")
    }

    /// ATT bearer fed an arbitrary sequence of peer SDUs and local calls: one completion per
    /// transaction, SDUs we send ≤ ATT_MTU, `close` once, nothing pending after close, ATT_MTU
    /// within 23…rxMTU and never shrinking.
    static func bearer(_ bytes: [UInt8], server: Bool) {
        var input = FuzzInput(bytes)
        let rxMTU = 23 + Int(input.byte()) * 2
        var bearer = ATTBearer(
            configuration: ATTBearer.Configuration(
                rxMTU: rxMTU, requestQueueLimit: 4, indicationQueueLimit: 4, acceptsRequests: server))
        var open: Set<ATTBearer.TransactionID> = []
        var timers: [ATTBearer.Timer] = []
        var pendingRequests: [ATTPDU] = []
        var closes = 0
        var lastMTU = bearer.mtu
        var steps = 0

        func perform(_ actions: [ATTBearer.Action], _ bearer: ATTBearer) {
            for action in actions {
                switch action {
                case .send(let sdu):
                    require(sdu.count <= bearer.mtu, "sent \(sdu.count) octets over ATT_MTU \(bearer.mtu)")
                case .startTimer(let timer, _): timers.append(timer)
                case .cancelTimer: break
                case .deliverResponse(let id, _), .failTransaction(let id, _), .indicationConfirmed(let id):
                    require(open.remove(id) != nil, "completion for \(id), which is not open")
                case .deliverRequest(let pdu): pendingRequests.append(pdu)
                case .deliverNotification, .deliverIndication, .deliverCommand, .reportError: break
                case .mtuChanged(let mtu):
                    // Our Rx MTU is the configured one, or what our own Exchange MTU Request offered.
                    require(mtu >= lastMTU && mtu >= 23 && mtu <= max(bearer.rxMTU, 23), "ATT_MTU went \(lastMTU) → \(mtu)")
                    lastMTU = mtu
                case .close:
                    closes += 1
                    require(closes == 1, "close action twice")
                }
            }
        }

        while !input.isEmpty && steps < 400 {
            steps += 1
            let op = input.byte()
            switch op % 10 {
            case 0, 1, 2, 3:  // an SDU from the peer
                perform(bearer.receive(input.chunk()), bearer)
            case 4:  // one of our requests
                let handle = input.uint16()
                let pdu: ATTPDU = op & 0x10 == 0
                    ? .readRequest(ReadRequest(handle: handle))
                    : .writeRequest(WriteRequest(handle: handle, value: input.chunk()))
                if let (id, actions) = try? bearer.send(request: pdu) {
                    open.insert(id)
                    perform(actions, bearer)
                }
            case 5:
                if let (id, actions) = try? bearer.exchangeMTU(clientRxMTU: 23 + Int(input.uint16() % 600)) {
                    open.insert(id)
                    perform(actions, bearer)
                }
            case 6:  // server role: notify or indicate
                let value = input.chunk()
                if op & 0x10 == 0 {
                    if let actions = try? bearer.send(notification: .handleValueNotification(HandleValueNotification(handle: 3, value: value))) {
                        perform(actions, bearer)
                    }
                } else if let (id, actions) = try? bearer.send(indication: .handleValueIndication(HandleValueIndication(handle: 3, value: value))) {
                    open.insert(id)
                    perform(actions, bearer)
                }
            case 7:  // answer the oldest delivered request: correctly, or with fuzz octets
                guard !pendingRequests.isEmpty else { continue }
                let request = pendingRequests.removeFirst()
                let answer: ATTPDU
                if op & 0x10 == 0, let fuzzed = try? ATTPDU(decoding: input.chunk()) {
                    answer = fuzzed
                } else {
                    answer = .errorResponse(ErrorResponse(requestOpcode: request.opcode, handle: 0, errorCode: .requestNotSupported))
                }
                if let actions = try? bearer.respond(answer) { perform(actions, bearer) }
            case 8:  // a timer runs out
                guard !timers.isEmpty else { continue }
                let timer = timers.remove(at: Int(input.byte()) % timers.count)
                perform(bearer.timerFired(timer), bearer)
            default:
                if op & 0xF0 == 0xF0 {
                    perform(bearer.close(reason: "fuzz"), bearer)
                } else {
                    perform(bearer.indicationDelivered(), bearer)
                }
            }
            if !bearer.isOpen {
                require(open.isEmpty, "\(open.count) transactions left open after close")
                require(bearer.pendingRequestCount == 0 && bearer.pendingIndicationCount == 0, "pending work after close")
            }
            require(bearer.pendingRequestCount <= 5 && bearer.pendingIndicationCount <= 5, "queues past their limits")
        }
        perform(bearer.close(reason: "end of input"), bearer)
        require(open.isEmpty, "\(open.count) transactions never completed after close")
        require(closes <= 1, "close action \(closes) times")
    }
}
