import Bluetooth
import Synchronization

/// Runs `HCICommandFlow` over an `HCITransport`: the one place where commands, events and
/// time meet I/O for a controller.
///
/// One reader task drains the transport, feeding events to the flow and passing everything
/// else (LE Meta and other events, ACL data) on in arrival order: to `inbound`, or, once
/// ``route(_:)`` has set a handler, to the handler, called in the reader task itself (no hop
/// per packet). Commands wait for their outcome (``execute(_:)``) or report it to a callback
/// (``submit(_:then:)``); a timer sleeps until the flow's next deadline (re-armed when it
/// changes, never per packet). When the transport closes, every pending command fails with
/// `HCIError.transportClosed` and `inbound` finishes (the handler gets `.ended`).
public actor HCIControllerDriver {
    /// What the reader hands a routed handler.
    public enum Inbound: Sendable {
        /// An event that is not command flow (code, length, parameters) or ACL/SCO/ISO data.
        case packet(HCITransportPacket)
        /// The transport closed; nothing follows.
        case ended(String)
    }

    /// Controller-to-host packets that are not command flow: events (code, length, parameters)
    /// and ACL/SCO/ISO data, in arrival order, until a handler is routed (``route(_:)``).
    public nonisolated let inbound: AsyncStream<HCITransportPacket>
    /// The routed handler, read by the reader task per packet. Boxed in a class: a closure kept
    /// in the generic `Mutex` itself gains a reabstraction thunk at every `withLock` (read and
    /// written back), a chain that grows per packet.
    private final class Route: Sendable {
        let handler: @Sendable (Inbound) -> Void
        init(_ handler: @escaping @Sendable (Inbound) -> Void) { self.handler = handler }
    }
    private let router = Mutex<Route?>(nil)
    /// Commands submitted with a callback, in submission order (one consumer task).
    private let submissions: AsyncStream<(HCICommandPacket, @Sendable (HCICommandFlow.Outcome) -> Void)>
    private let submissionsContinuation:
        AsyncStream<(HCICommandPacket, @Sendable (HCICommandFlow.Outcome) -> Void)>.Continuation
    private var submissionTask: Task<Void, Never>?
    /// Callbacks of submitted commands, by ticket.
    private var callbacks: [HCICommandTicket: @Sendable (HCICommandFlow.Outcome) -> Void] = [:]

    private let transport: any HCITransport
    private let logger: Logger
    private let clock: any BluetoothClock
    private let inboundContinuation: AsyncStream<HCITransportPacket>.Continuation

    private var flow: HCICommandFlow
    private var waiters: [HCICommandTicket: CheckedContinuation<HCICommandFlow.Outcome, Never>] = [:]
    /// Outcomes that arrived before their waiter registered (a submit answered at once).
    private var early: [HCICommandTicket: HCICommandFlow.Outcome] = [:]
    /// Commands to write, in order; written by one drain loop at a time.
    private var outbox: [HCICommandPacket] = []
    private var draining = false
    private var readerTask: Task<Void, Never>?
    private var timer: ScheduledTimer?
    private var armedDeadline: Duration?
    private var closedReason: String?

    /// `clock` times the command timeout (tests pass a ``ManualClock``).
    public init(
        transport: any HCITransport, commandTimeout: Duration = .seconds(2), clock: any BluetoothClock = SystemClock(),
        logger: Logger = .disabled
    ) {
        self.transport = transport
        self.logger = logger
        self.clock = clock
        self.flow = HCICommandFlow(commandTimeout: commandTimeout)
        (inbound, inboundContinuation) = AsyncStream.makeStream(of: HCITransportPacket.self)
        (submissions, submissionsContinuation) = AsyncStream.makeStream(
            of: (HCICommandPacket, @Sendable (HCICommandFlow.Outcome) -> Void).self)
    }

    /// From now on, packets that are not command flow go to `handler`, called in the reader
    /// task in arrival order (and `.ended` once the transport closes), instead of `inbound`.
    /// The handler must not block: it runs before the next packet is read.
    public nonisolated func route(_ handler: @escaping @Sendable (Inbound) -> Void) {
        let route = Route(handler)
        router.withLock { $0 = route }
    }

    /// Starts reading from the transport (idempotent; the first command starts it too).
    /// `inbound` buffers without bound, so its consumer should keep reading.
    public func start() {
        startSubmissions()
        guard readerTask == nil else { return }
        let packets = transport.packets
        readerTask = Task { [weak self] in
            do {
                for try await packet in packets {
                    guard let self else { return }
                    // Command flow goes through the actor; everything else straight to the
                    // routed handler, in this task, so no packet waits for a hop.
                    if packet.type == .event, let code = packet.bytes.first,
                        code == CommandCompleteEvent.eventCode.rawValue || code == CommandStatusEvent.eventCode.rawValue
                    {
                        await self.received(packet)
                    } else if let route = self.router.withLock({ $0 }) {
                        route.handler(.packet(packet))
                    } else {
                        await self.received(packet)
                    }
                }
                await self?.transportEnded("the transport's packet stream ended")
            } catch {
                await self?.transportEnded(Self.reason(error))
            }
        }
    }

    /// Closes the transport; pending commands fail with `HCIError.transportClosed`.
    public func close(reason: String = "closed by the host") {
        transport.close(reason: reason)
        transportEnded(reason)
    }

    // MARK: - Commands

    /// Sends `packet` (subject to flow control) and waits for its outcome; bounded by the
    /// command timeout once sent.
    public func execute(_ packet: HCICommandPacket) async -> HCICommandFlow.Outcome {
        start()
        let (ticket, actions) = flow.submit(packet, now: now)
        perform(actions)
        if let outcome = early.removeValue(forKey: ticket) { return outcome }
        return await withCheckedContinuation { continuation in
            waiters[ticket] = continuation
        }
    }

    /// Sends `packet` (subject to flow control, after every command submitted before it) and
    /// reports its outcome to `then`, called on this actor: an outcome that comes with an event
    /// is reported before the next packet from the controller is handled.
    public nonisolated func submit(
        _ packet: HCICommandPacket, then: @escaping @Sendable (HCICommandFlow.Outcome) -> Void
    ) {
        if case .terminated = submissionsContinuation.yield((packet, then)) {
            then(.failed(.transportClosed("the controller driver is closed")))
        }
    }

    private func startSubmissions() {
        guard submissionTask == nil else { return }
        let submissions = submissions
        submissionTask = Task { [weak self] in
            for await (packet, then) in submissions {
                guard let self else {
                    then(.failed(.transportClosed("the controller driver is gone")))
                    continue
                }
                await self.submitted(packet, then)
            }
        }
    }

    private func submitted(_ packet: HCICommandPacket, _ then: @escaping @Sendable (HCICommandFlow.Outcome) -> Void) {
        let (ticket, actions) = flow.submit(packet, now: now)
        callbacks[ticket] = then
        perform(actions)
    }

    /// Sends a command answered by Command Complete and returns its typed return parameters.
    /// Throws `.commandFailed` for a failure status, `.commandTimeout`, `.transportClosed`.
    public func send<C: HCICommand>(_ command: C) async throws(HCIError) -> C.ReturnParameters {
        let outcome = await execute(try HCICommandPacket(command))
        return try ControllerInitialization.decode(outcome, C.self)
    }

    /// Sends a command answered by Command Status (its own event follows on `inbound`).
    public func sendAccepted<C: HCICommand>(_ command: C) async throws(HCIError) -> CommandStatusEvent {
        switch await execute(try HCICommandPacket(command)) {
        case .accepted(let status): return status
        case .failed(let error): throw error
        case .complete(let event):
            // Some controllers refuse a Command-Status command with a Command Complete.
            if let status = event.status, status != .success {
                throw .commandFailed(opcode: event.opcode, status: status)
            }
            throw .malformed(
                context: "HCI_Command_Complete for \(C.opcode)",
                reason: .invalidValue(field: "Command_Opcode", value: Int(event.opcode.rawValue)), offset: 1)
        }
    }

    /// Sends an ACL data packet to the controller. Host-to-controller ACL flow control (buffer
    /// credits, fragmentation) is the caller's: L2CAP's, which knows the buffer sizes from
    /// `ControllerInfo.aclBuffers` and the Number Of Completed Packets events on `inbound`.
    public func sendACL(_ packet: ACLDataPacket) async throws(HCIError) {
        if let closedReason { throw .transportClosed(closedReason) }
        var writer = ByteWriter(capacity: packet.encodedLength)
        try packet.write(to: &writer)
        try await transport.send(.acl, writer.bytes)
    }

    /// Runs the LE host initialisation sequence (`ControllerInitialization`).
    public func initialize(_ sequence: ControllerInitialization = ControllerInitialization()) async throws(HCIError)
        -> ControllerInfo
    {
        var sequence = sequence
        var step = sequence.start()
        while true {
            switch step {
            case .send(let packet):
                let outcome = await execute(packet)
                step = sequence.receive(outcome)
            case .finished(let info):
                logger.info(
                    "controller \(info.address), HCI \(info.version.hciVersion), LE ACL buffers \(info.aclBuffers.packetCount) x \(info.aclBuffers.packetLength)"
                )
                return info
            case .failed(let error):
                throw error
            }
        }
    }

    // MARK: - Internals

    private var now: Duration { clock.now }

    private func received(_ packet: HCITransportPacket) {
        switch packet.type {
        case .event:
            perform(flow.receiveEvent(packet.bytes, now: now))
        default:
            deliver(packet)
        }
    }

    private func deliver(_ packet: HCITransportPacket) {
        if let route = router.withLock({ $0 }) {
            route.handler(.packet(packet))
        } else {
            inboundContinuation.yield(packet)
        }
    }

    private func transportEnded(_ reason: String) {
        let first = closedReason == nil
        if first { closedReason = reason }
        perform(flow.close(reason: reason))
        submissionsContinuation.finish()
        inboundContinuation.finish()
        if first, let route = router.withLock({ $0 }) { route.handler(.ended(reason)) }
        timer?.cancel()
        timer = nil
        armedDeadline = nil
    }

    private func perform(_ actions: [HCICommandFlow.Action]) {
        for action in actions {
            switch action {
            case .send(let packet):
                outbox.append(packet)
            case .finish(let ticket, let outcome):
                if let callback = callbacks.removeValue(forKey: ticket) {
                    callback(outcome)
                } else if let waiter = waiters.removeValue(forKey: ticket) {
                    waiter.resume(returning: outcome)
                } else {
                    early[ticket] = outcome
                }
            case .deliver(let event):
                deliver((.event, event))
            case .discard(let event, let error):
                logger.warning("discarded a malformed command-flow event \(Hex.encode(event)): \(error)")
            }
        }
        if !outbox.isEmpty && !draining {
            draining = true
            Task { await self.drainOutbox() }
        }
        rearmTimer()
    }

    /// Writes queued commands in order; one drain loop at a time keeps the order across awaits.
    private func drainOutbox() async {
        while !outbox.isEmpty {
            let packet = outbox.removeFirst()
            var writer = ByteWriter(capacity: packet.encodedLength)
            packet.write(to: &writer)
            do {
                try await transport.send(.command, writer.bytes)
            } catch {
                logger.error("writing \(packet.opcode) failed: \(error)")
                transport.close(reason: "\(error)")
                outbox.removeAll()
                transportEnded(Self.reason(error))
            }
        }
        draining = false
    }

    private func rearmTimer() {
        let deadline = flow.nextDeadline
        guard deadline != armedDeadline else { return }
        timer?.cancel()
        armedDeadline = deadline
        guard let deadline else {
            timer = nil
            return
        }
        // The clock's timer, not a sleeping task: every command re-arms it, and a cancelled
        // sleep would keep its timer until the old deadline (see SystemClock).
        timer = clock.schedule(after: deadline - now) { [weak self] in
            await self?.timerFired(for: deadline)
        }
    }

    /// The timer armed for `deadline` expired; a stale one (re-armed or cancelled since, its
    /// handler already running) is ignored.
    private func timerFired(for deadline: Duration) {
        guard armedDeadline == deadline else { return }
        armedDeadline = nil
        timer = nil
        perform(flow.expire(now: now))
    }

    private static func reason(_ error: any Error) -> String {
        if case .transportClosed(let reason)? = error as? HCIError { return reason }
        return "\(error)"
    }
}
