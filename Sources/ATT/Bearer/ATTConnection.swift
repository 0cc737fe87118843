import Bluetooth
import Synchronization

/// The async driver of one ATT bearer: runs ``ATTBearer`` over an ``ATTChannel`` and performs
/// its actions.
///
/// Per connection there is one reader task (all received SDUs, in order), one writer task
/// (every SDU we send, in the order the bearer produced them) and one server task (incoming
/// requests and commands, answered one at a time by the server handler) — never a task per
/// PDU. Timers come from an injected ``BluetoothClock``.
///
/// - Client: ``request(_:)`` (one outstanding, further ones queue), ``exchangeMTU(_:)``,
///   ``send(_:)`` for commands.
/// - Server: ``setServerHandler(_:)``, ``send(_:)`` for notifications, ``indicate(_:)``.
/// - Over an ``ATTBatchReceivingChannel`` the reader takes every SDU already received at once
///   and runs the bearer over all of them before it suspends again; the notifications they
///   carry reach a waiting consumer with one wake-up per batch, not one per PDU.
/// - Notifications and indications from the peer arrive, in order, on ``inbound``. An
///   indication is confirmed when the consumer's iterator hands it over (when `next()` returns
///   it), never before; an indication nobody consumes stays unconfirmed, and the peer's 30 s
///   timer decides.
/// - A disconnect (the channel's stream ends or throws) or ``close()`` fails every pending
///   operation at once with `ATTError.bearerClosed(reason:)`. A transaction unanswered for
///   30 s fails with `ATTError.timeout` and closes the bearer (§3.3.3).
/// - A request in flight cannot be withdrawn (ATT has no cancel): cancelling the awaiting task
///   does not end `request(_:)` early; the response, the timeout or a close does.
public actor ATTConnection {
    /// Answers one incoming request (return the response or an Error Response for that
    /// request) or takes one command (return nil). A nil or mismatched answer to a request
    /// is replaced by Error Response Unlikely Error (0x0E).
    public typealias ServerHandler = @Sendable (ATTPDU) async -> ATTPDU?

    /// Told of each violation by the peer that the connection tolerates and goes on after (a
    /// second indication before our confirmation, a response with no request outstanding, a
    /// PDU over ATT_MTU that is skipped, a malformed notification), and of those the layers
    /// above tolerate (``reportViolation(_:)``). Called on the connection's executor, in order;
    /// keep it short.
    public typealias ViolationHandler = @Sendable (ATTError) -> Void

    private var bearer: ATTBearer
    private let channel: any ATTChannel
    private let clock: any BluetoothClock
    private let logger: Logger

    private var requestWaiters: [ATTBearer.TransactionID: CheckedContinuation<Result<ATTPDU, ATTError>, Never>] = [:]
    private var indicationWaiters: [ATTBearer.TransactionID: CheckedContinuation<Result<Void, ATTError>, Never>] = [:]
    private var timers: [ATTBearer.Timer: ScheduledTimer] = [:]
    private var serverHandler: ServerHandler?
    private let violationHandler: ViolationHandler?
    /// Violations tolerated so far (see ``ViolationHandler``).
    public private(set) var violationsTolerated = 0
    private var writerFinished = false
    private var closeWaiters: [CheckedContinuation<Void, Never>] = []
    private var closedWaiters: [CheckedContinuation<String, Never>] = []

    private let outbox: AsyncStream<[UInt8]>.Continuation
    private let inboundQueue = ATTInboundQueue()
    /// While the reader runs the bearer over a batch of SDUs: the consumer is woken once, at
    /// the end of the batch.
    private var deliveringBatch = false
    private let serverInbox: AsyncStream<ATTPDU>.Continuation

    /// Starts the connection's reader, writer and server tasks over `channel`.
    ///
    /// `configuration.rxMTU` is the Rx MTU we answer a peer's Exchange MTU with; keep it within
    /// the channel's `maximumSDUSize`. `acceptsRequests` follows `serverHandler` (a server
    /// should pass its handler here, so no request arriving first is refused) and
    /// ``setServerHandler(_:)``.
    public init(
        channel: any ATTChannel,
        configuration: ATTBearer.Configuration = ATTBearer.Configuration(),
        clock: any BluetoothClock = SystemClock(),
        logger: Logger = .disabled,
        serverHandler: ServerHandler? = nil,
        violationHandler: ViolationHandler? = nil
    ) {
        var configuration = configuration
        configuration.acceptsRequests = serverHandler != nil
        self.serverHandler = serverHandler
        self.violationHandler = violationHandler
        self.bearer = ATTBearer(configuration: configuration)
        self.channel = channel
        self.clock = clock
        self.logger = logger
        let (outStream, outbox) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .unbounded)
        self.outbox = outbox
        let (serverStream, serverInbox) = AsyncStream<ATTPDU>.makeStream(bufferingPolicy: .unbounded)
        self.serverInbox = serverInbox
        Task { await self.runReader() }
        Task { await self.runWriter(outStream) }
        Task { await self.runServer(serverStream) }
    }

    // MARK: State

    /// The current ATT_MTU.
    public var mtu: Int { bearer.mtu }

    /// Whether the bearer still carries PDUs.
    public var isOpen: Bool { bearer.isOpen }

    /// Why the bearer closed; nil while open.
    public var closeReason: String? { bearer.closeReason }

    /// Requests of ours put on the wire so far, Exchange MTU included.
    public var requestsSent: Int { bearer.requestsSent }

    /// Notifications, Multiple Handle Value Notifications and indications from the peer, in
    /// arrival order; finishes when the bearer closes. One consumer. An indication is confirmed
    /// when this sequence's iterator returns it. The buffer is unbounded: nothing is dropped
    /// while the consumer is slow.
    public nonisolated var inbound: ATTInboundPDUs {
        ATTInboundPDUs(queue: inboundQueue, connection: self)
    }

    // MARK: Client

    /// Sends `pdu` (a request) and returns its response. An Error Response throws
    /// `peerError`; a wrong response `protocolError`; no answer in 30 s `timeout` (and the
    /// bearer closes); a disconnect `bearerClosed`. Waits behind an outstanding request.
    public func request(_ pdu: ATTPDU) async throws(ATTError) -> ATTPDU {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<ATTPDU, ATTError>, Never>) in
            do throws(ATTError) {
                let (id, actions) = try bearer.send(request: pdu)
                requestWaiters[id] = continuation
                perform(actions)
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try result.get()
    }

    /// Exchanges MTU as the client (once per bearer, ahead of queued requests), offering
    /// `ourRxMTU` clamped to the channel's `maximumSDUSize`; returns ATT_MTU afterwards.
    public func exchangeMTU(_ ourRxMTU: Int) async throws(ATTError) -> Int {
        var offer = ourRxMTU
        if let limit = await channel.maximumSDUSize, limit >= ATTBearer.defaultMTU {
            offer = min(offer, limit)
        }
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<ATTPDU, ATTError>, Never>) in
            do throws(ATTError) {
                let (id, actions) = try bearer.exchangeMTU(clientRxMTU: offer)
                requestWaiters[id] = continuation
                perform(actions)
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        _ = try result.get()
        return bearer.mtu
    }

    // MARK: Commands, notifications, indications

    /// Sends a command (Write Command, Signed Write Command) or a notification (Handle Value
    /// Notification, Multiple Handle Value Notification): no answer. Throws `pduTooLarge`,
    /// `unsupportedRequest` for another kind of PDU, `bearerClosed`.
    public func send(_ pdu: ATTPDU) throws(ATTError) {
        switch pdu.opcode.kind {
        case .command:
            perform(try bearer.send(command: pdu))
        case .notification:
            perform(try bearer.send(notification: pdu))
        default:
            throw ATTError.unsupportedRequest(pdu.opcode)
        }
    }

    /// Sends a Handle Value Indication and returns when the peer confirms it (one outstanding;
    /// further ones queue). Throws `timeout` after 30 s without confirmation (the bearer
    /// closes), `bearerClosed` on disconnect.
    public func indicate(_ indication: HandleValueIndication) async throws(ATTError) {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Void, ATTError>, Never>) in
            do throws(ATTError) {
                let (id, actions) = try bearer.send(indication: .handleValueIndication(indication))
                indicationWaiters[id] = continuation
                perform(actions)
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        try result.get()
    }

    // MARK: Server

    /// Installs (or, with nil, removes) the server role. Without a handler, incoming requests
    /// are answered Request Not Supported and commands are ignored.
    public func setServerHandler(_ handler: ServerHandler?) {
        serverHandler = handler
        bearer.acceptsRequests = handler != nil
    }

    /// Reports a violation by the peer that a layer above tolerated (a GATT procedure that fell
    /// back after a response over ATT_MTU): logged, counted and handed to the violation
    /// handler like the bearer's own.
    public func reportViolation(_ error: ATTError) {
        violationsTolerated += 1
        logger.warning("\(error)")
        violationHandler?(error)
    }

    // MARK: Close

    /// Closes the bearer and the channel: every pending operation fails with
    /// `bearerClosed("closed locally")`. Returns once the channel is closed.
    public func close() async {
        perform(bearer.close(reason: "closed locally"))
        guard !writerFinished else { return }
        await withCheckedContinuation { closeWaiters.append($0) }
    }

    /// Waits until the bearer closes (disconnect, timeout, protocol violation, `close()`)
    /// and returns why.
    public func waitUntilClosed() async -> String {
        if let reason = bearer.closeReason { return reason }
        return await withCheckedContinuation { closedWaiters.append($0) }
    }

    // MARK: Tasks

    private func runReader() async {
        let reason: String
        do {
            if let batched = channel as? any ATTBatchReceivingChannel {
                var sdus: [[UInt8]] = []
                while try await batched.receiveAll(into: &sdus) {
                    deliveringBatch = true
                    for sdu in sdus { perform(bearer.receive(sdu)) }
                    deliveringBatch = false
                    FIFOBuffer.clear(&sdus)
                    inboundQueue.wake()
                }
            } else {
                for try await sdu in channel.incoming {
                    perform(bearer.receive(sdu))
                }
            }
            reason = "the ATT channel closed (disconnected)"
        } catch {
            reason = "the ATT channel failed: \(error)"
        }
        perform(bearer.close(reason: reason))
    }

    private nonisolated func runWriter(_ stream: AsyncStream<[UInt8]>) async {
        for await sdu in stream {
            do {
                try await channel.send(sdu)
            } catch {
                await sendFailed(error)
                break
            }
        }
        await channel.close()
        await writerDidFinish()
    }

    private func sendFailed(_ error: any Error) {
        perform(bearer.close(reason: "sending on the ATT channel failed: \(error)"))
    }

    private func writerDidFinish() {
        writerFinished = true
        let waiters = closeWaiters
        closeWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    private func runServer(_ stream: AsyncStream<ATTPDU>) async {
        for await pdu in stream {
            let handler = serverHandler
            let answer = await handler?(pdu)
            guard pdu.opcode.kind == .request, bearer.isOpen else { continue }
            if let answer {
                do throws(ATTError) {
                    perform(try bearer.respond(answer))
                    continue
                } catch {
                    logger.warning("server answer \(answer.opcode) to \(pdu.opcode) refused: \(error)")
                }
            } else if handler != nil {
                logger.warning("server handler gave no answer to \(pdu.opcode)")
            }
            let code: ATTErrorCode = handler == nil ? .requestNotSupported : .unlikelyError
            let fallback = ATTPDU.errorResponse(ErrorResponse(requestOpcode: pdu.opcode, handle: 0, errorCode: code))
            do throws(ATTError) {
                perform(try bearer.respond(fallback))
            } catch {
                logger.error("cannot answer \(pdu.opcode): \(error)")
            }
        }
    }

    /// The consumer of `inbound` has been handed an indication.
    fileprivate func indicationHandedOver() {
        perform(bearer.indicationDelivered())
    }

    private func timerFired(_ timer: ATTBearer.Timer) {
        guard timers.removeValue(forKey: timer) != nil else { return }
        perform(bearer.timerFired(timer))
    }

    // MARK: Actions

    private func perform(_ actions: [ATTBearer.Action]) {
        var delivered = false
        defer { if delivered && !deliveringBatch { inboundQueue.wake() } }
        for action in actions {
            switch action {
            case .send(let sdu):
                outbox.yield(sdu)
            case .startTimer(let timer, let delay):
                timers[timer] = clock.schedule(after: delay) { [weak self] in
                    await self?.timerFired(timer)
                }
            case .cancelTimer(let timer):
                timers.removeValue(forKey: timer)?.cancel()
            case .deliverResponse(let id, let pdu):
                // What arrived before the response is visible to the consumer before the
                // requester resumes.
                if delivered || deliveringBatch { inboundQueue.wake() }
                requestWaiters.removeValue(forKey: id)?.resume(returning: .success(pdu))
            case .failTransaction(let id, let error):
                if let waiter = requestWaiters.removeValue(forKey: id) {
                    waiter.resume(returning: .failure(error))
                } else {
                    indicationWaiters.removeValue(forKey: id)?.resume(returning: .failure(error))
                }
            case .indicationConfirmed(let id):
                indicationWaiters.removeValue(forKey: id)?.resume(returning: .success(()))
            case .deliverNotification(let pdu), .deliverIndication(let pdu):
                inboundQueue.append(pdu)
                delivered = true
            case .deliverRequest(let pdu), .deliverCommand(let pdu):
                serverInbox.yield(pdu)
            case .mtuChanged(let mtu):
                logger.debug("ATT_MTU is now \(mtu)")
            case .reportError(let error):
                reportViolation(error)
            case .close(let reason):
                logger.info("ATT bearer closed: \(reason)")
                for timer in timers.values { timer.cancel() }
                timers = [:]
                outbox.finish()
                inboundQueue.finish()
                serverInbox.finish()
                let waiters = closedWaiters
                closedWaiters = []
                for waiter in waiters { waiter.resume(returning: reason) }
            }
        }
    }
}

/// A channel whose reader can take every SDU already received at once (the user-space L2CAP
/// ATT channel): ``ATTConnection`` then runs its bearer over a whole batch per wake-up.
public protocol ATTBatchReceivingChannel: ATTChannel {
    /// Moves every received SDU not yet taken, in order, to the end of `sdus`, suspending only
    /// while none is buffered. Returns false once the channel has finished (as `incoming`
    /// finishes); throws what `incoming` would throw. One reader: use this or `incoming`.
    func receiveAll(into sdus: inout [[UInt8]]) async throws -> Bool
}

/// The unbounded FIFO behind ``ATTConnection/inbound``: the reader appends under a lock and
/// wakes the consumer once per batch; the consumer takes one PDU per `next()` and suspends only
/// when none is buffered. Cancelling the waiting consumer ends it (as for an `AsyncStream`).
final class ATTInboundQueue: Sendable {
    private struct State {
        var buffer = FIFOBuffer<ATTPDU>()
        var waiters: [CheckedContinuation<Void, Never>] = []
        var isFinished = false

        mutating func takeWaiters() -> [CheckedContinuation<Void, Never>] {
            guard !waiters.isEmpty else { return [] }
            let taken = waiters
            waiters = []
            return taken
        }
    }

    private let state = Mutex(State())

    /// Buffers a PDU (dropped once finished); the consumer sees it at its next `next()` or when
    /// woken.
    func append(_ pdu: ATTPDU) {
        state.withLock { state in
            if !state.isFinished { state.buffer.append(pdu) }
        }
    }

    /// Wakes a consumer waiting for a PDU.
    func wake() {
        let waiters = state.withLock { state in state.takeWaiters() }
        for waiter in waiters { waiter.resume() }
    }

    /// Ends the sequence after the PDUs already buffered.
    func finish() {
        let waiters = state.withLock { state in
            state.isFinished = true
            return state.takeWaiters()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The next PDU; nil once finished and drained (or when the waiting task is cancelled).
    func next() async -> ATTPDU? {
        while true {
            let (pdu, finished) = state.withLock { state -> (ATTPDU?, Bool) in
                if let pdu = state.buffer.popFirst() { return (pdu, false) }
                return (nil, state.isFinished)
            }
            if let pdu { return pdu }
            if finished { return nil }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.buffer.isEmpty || state.isFinished { return true }
                        if Task.isCancelled {
                            state.isFinished = true
                            return true
                        }
                        state.waiters.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                finish()
            }
        }
    }
}

/// The notifications and indications of one ``ATTConnection``, in arrival order. Iterating
/// hands each element over; an indication is confirmed to the peer at that moment.
public struct ATTInboundPDUs: AsyncSequence, Sendable {
    public typealias Element = ATTPDU
    public typealias Failure = Never

    let queue: ATTInboundQueue
    let connection: ATTConnection

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(queue: queue, connection: connection)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let queue: ATTInboundQueue
        let connection: ATTConnection

        public mutating func next() async -> ATTPDU? {
            guard let pdu = await queue.next() else { return nil }
            if pdu.opcode == .handleValueIndication {
                await connection.indicationHandedOver()
            }
            return pdu
        }
    }
}
