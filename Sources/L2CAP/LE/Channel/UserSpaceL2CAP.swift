import ATT
import Bluetooth
import HCI
import Synchronization

/// User-space LE L2CAP for one controller: the `LEL2CAPMultiplexer` behind a lock, with one
/// `UserSpaceATTChannel` per connection.
///
/// The HCI driver feeds it what the controller sends (`receive(_:)` for ACL data packets and
/// events) and performs what comes out of `outputs`, in order, from one task: writing ACL data
/// packets, issuing HCI_LE_Connection_Update, HCI_Disconnect. Nothing here starts a task or
/// polls; every call does its work synchronously under the lock and returns.
///
/// Bounds: `outputs` holds at most the controller's ACL buffer count of packets (a packet is
/// only yielded with a credit) plus control requests; each connection queues at most
/// `maximumQueuedFrames` outgoing PDUs (then `send` throws `L2CAPError.queueFull`); each channel
/// buffers at most `maximumBufferedSDUs` received SDUs (then it fails with
/// `L2CAPError.receiveQueueOverflow` and the link is disconnected, never losing one silently).
public final class UserSpaceL2CAP: Sendable {
    /// What the driver must do, in order.
    public enum Output: Hashable, Sendable {
        /// Write this ACL data packet to the controller.
        case acl(ACLDataPacket)
        /// Issue HCI_LE_Connection_Update: Connection_Interval_Min/Max = Interval Min/Max,
        /// Max_Latency = Peripheral Latency, Supervision_Timeout = Timeout Multiplier.
        case updateConnectionParameters(handle: UInt16, ConnectionParameterUpdateRequest)
        /// Issue HCI_Disconnect with this Reason (the ATT channel was closed or failed).
        case disconnect(handle: UInt16, reason: HCIStatus)
    }

    /// HCI_Disconnect reason for a channel closed by its user: Remote User Terminated Connection.
    static let closeReason = HCIStatus(rawValue: 0x13)

    /// Why a channel can no longer send, shared with the channel object so it outlives the
    /// connection's entry here (a handle may be reused by a later connection).
    final class ChannelStatus: Sendable {
        let closedError = Mutex<L2CAPError?>(nil)

        /// Records the first reason only.
        func close(_ error: L2CAPError) {
            closedError.withLock { if $0 == nil { $0 = error } }
        }

        var error: L2CAPError? { closedError.withLock { $0 } }
    }

    struct Channel {
        let id: UInt64
        let queue: ATTSDUQueue
        let status: ChannelStatus
        /// The connection's SMP PDUs, for the host's Security Manager (when attached).
        var securityManager: AsyncStream<[UInt8]>.Continuation?
        /// Whether the user closed it or it failed: incoming SDUs are dropped.
        var isClosed = false
        /// Who waits for the answer to our Connection Parameter Update Request.
        var parameterWaiter: CheckedContinuation<Bool, any Error>?
        /// Its open enhanced credit-based channels, by local CID.
        var creditBased: [UInt16: CreditBasedATTChannel] = [:]
        /// Who waits for our credit-based connection requests, by identifier.
        var openWaiters: [UInt8: CheckedContinuation<(channels: [CreditBasedATTChannel], collision: Bool), any Error>] = [:]
        /// Our requests that met the peer's (a collision, Vol 3 Part G §5.4).
        var collisions: Set<UInt8> = []
    }

    struct State {
        var multiplexer: LEL2CAPMultiplexer
        var channels: [UInt16: Channel] = [:]
        var nextChannelID: UInt64 = 1
        var shutDownReason: String?
        var scratch: [LEL2CAPMultiplexer.Action] = []
        /// Who waits in `waitUntilSent` (by connection; each waiter by its number, for its
        /// timeout), resumed when the connection's data is completed, it ends, or the
        /// transport does.
        var sentWaiters: [UInt16: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)]] = [:]
        var nextWaiterID: UInt64 = 1

        /// A connection's ACL data not yet completed by the controller.
        func unsentData(handle: UInt16) -> Int {
            multiplexer.flowControl.queuedFrames(handle: handle) + multiplexer.flowControl.packetsInFlight(handle: handle)
        }
    }

    /// What the driver performs, in order. Finishes on `shutDown(_:)`.
    public let outputs: AsyncStream<Output>
    /// The credit-based channels peers open on our registered SPSMs
    /// (``setCreditBasedServer(spsm:_:)``), in order; finishes on `shutDown(_:)`.
    public let acceptedCreditBasedChannels: AsyncStream<CreditBasedATTChannel>
    private let acceptedContinuation: AsyncStream<CreditBasedATTChannel>.Continuation
    private let outputContinuation: AsyncStream<Output>.Continuation
    private let state: Mutex<State>
    private let logger: Logger
    public let maximumBufferedSDUs: Int

    /// - Parameters:
    ///   - bufferSize: the controller's LE ACL buffers (LE Read Buffer Size / Read Buffer Size).
    ///   - maximumQueuedFrames: outgoing PDUs waiting per connection.
    ///   - maximumBufferedSDUs: received ATT SDUs waiting per channel for the reader.
    ///   - securityManager: answers SMP (CID 0x0006) on every connection (the Security
    ///     module's responder); nil drops it.
    public init(
        bufferSize: ACLBufferSize, maximumQueuedFrames: Int = 64, maximumBufferedSDUs: Int = 1024,
        securityManager: (any LESecurityManagerChannel)? = nil,
        parameterPolicy: ConnectionParameterRequestPolicy = .acceptValid, logger: Logger = .disabled
    ) {
        precondition(maximumBufferedSDUs > 0, "a channel must buffer at least one SDU")
        (outputs, outputContinuation) = AsyncStream<Output>.makeStream(bufferingPolicy: .unbounded)
        (acceptedCreditBasedChannels, acceptedContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(32))
        var multiplexer = LEL2CAPMultiplexer(
            bufferSize: bufferSize, maximumQueuedFrames: maximumQueuedFrames, securityManager: securityManager)
        multiplexer.parameterPolicy = parameterPolicy
        state = Mutex(State(multiplexer: multiplexer))
        self.maximumBufferedSDUs = maximumBufferedSDUs
        self.logger = logger
    }

    // MARK: driver side

    /// Starts L2CAP on a new LE connection and returns its ATT channel (fixed CID 0x0004).
    /// - Throws: `.connectionExists`, `.invalidArgument` (handle over 0x0EFF),
    ///   `.transportClosed` after `shutDown(_:)`.
    public func connectionOpened(handle: UInt16, role: LERole) throws(L2CAPError) -> UserSpaceATTChannel {
        let queue = ATTSDUQueue(limit: maximumBufferedSDUs)
        let status = ChannelStatus()
        let id = try state.withLock { (state: inout State) throws(L2CAPError) -> UInt64 in
            if let reason = state.shutDownReason { throw L2CAPError.transportClosed(reason) }
            guard state.channels[handle] == nil else { throw L2CAPError.connectionExists(handle: handle) }
            try state.multiplexer.connectionOpened(handle: handle, role: role)
            let id = state.nextChannelID
            state.nextChannelID += 1
            state.channels[handle] = Channel(id: id, queue: queue, status: status)
            return id
        }
        logger.debug("connection \(l2capHex(handle, 4)) open as \(role)")
        return UserSpaceATTChannel(handle: handle, id: id, queue: queue, status: status, host: self)
    }

    /// Feeds an ACL data packet from the controller.
    public func receive(_ packet: ACLDataPacket) {
        state.withLock { state in
            var actions = takeScratch(&state)
            state.multiplexer.receive(packet, into: &actions)
            perform(&actions, state: &state)
        }
    }

    /// Feeds an HCI event: Number Of Completed Packets and Disconnection Complete matter here.
    public func receive(_ event: HCIEvent) {
        switch event {
        case .numberOfCompletedPackets, .disconnectionComplete: break
        default: return
        }
        state.withLock { state in
            var actions = takeScratch(&state)
            state.multiplexer.receive(event, into: &actions)
            perform(&actions, state: &state)
            // Completions: whoever waits for a connection's data to be sent may go on.
            if !state.sentWaiters.isEmpty {
                for handle in state.sentWaiters.keys where state.unsentData(handle: handle) == 0 {
                    resumeSentWaiters(handle: handle, state: &state)
                }
            }
        }
    }

    /// The transport is gone: every channel fails with `L2CAPError.transportClosed`, `outputs`
    /// finishes, later calls are refused.
    public func shutDown(_ reason: String) {
        state.withLock { state in
            guard state.shutDownReason == nil else { return }
            state.shutDownReason = reason
            for (handle, channel) in state.channels {
                channel.parameterWaiter?.resume(throwing: L2CAPError.transportClosed(reason))
                channel.securityManager?.finish()
                channel.status.close(.transportClosed(reason))
                channel.queue.finish(throwing: L2CAPError.transportClosed(reason))
                state.multiplexer.disconnected(handle: handle, reason: Self.closeReason, into: &state.scratch)
            }
            state.scratch.removeAll()
            for handle in state.sentWaiters.keys { resumeSentWaiters(handle: handle, state: &state) }
            for channel in state.channels.values {
                for waiter in channel.openWaiters.values { waiter.resume(throwing: L2CAPError.transportClosed(reason)) }
                for dynamic in channel.creditBased.values {
                    dynamic.status.close(.transportClosed(reason))
                    dynamic.queue.finish(throwing: L2CAPError.transportClosed(reason))
                }
            }
            state.channels.removeAll()
            outputContinuation.finish()
            acceptedContinuation.finish()
        }
        logger.debug("shut down: \(reason)")
    }

    /// Number of ACL data packets the controller holds for a connection (for tests and stats).
    public func packetsInFlight(handle: UInt16) -> Int {
        state.withLock { $0.multiplexer.flowControl.packetsInFlight(handle: handle) }
    }

    /// A connection's ACL data not yet completed by the controller: PDUs queued in the host
    /// and packets the controller holds (0 for an unknown handle).
    public func unsentData(handle: UInt16) -> Int {
        state.withLock { $0.unsentData(handle: handle) }
    }

    /// Returns once the controller has completed all of the connection's ACL data (Number Of
    /// Completed Packets for what it holds, nothing left queued here), the connection or the
    /// transport has ended, or `timeout` (on `clock`) has passed — at once when nothing is
    /// pending. Event-driven: the completions that free the data resume it.
    public func waitUntilSent(handle: UInt16, timeout: Duration, clock: any BluetoothClock) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id = state.withLock { state -> UInt64? in
                guard state.shutDownReason == nil, state.channels[handle] != nil, state.unsentData(handle: handle) > 0 else {
                    return nil
                }
                let id = state.nextWaiterID
                state.nextWaiterID += 1
                state.sentWaiters[handle, default: []].append((id, continuation))
                return id
            }
            guard let id else {
                continuation.resume()
                return
            }
            // Not cancelled when the data goes first: it then finds no waiter of its number.
            _ = clock.schedule(after: timeout) { [weak self] in self?.stopWaitingUntilSent(handle: handle, id: id) }
        }
    }

    /// `waitUntilSent`'s timeout: the waiter `id`, if it still waits, goes on.
    private func stopWaitingUntilSent(handle: UInt16, id: UInt64) {
        state.withLock { state in
            guard let index = state.sentWaiters[handle]?.firstIndex(where: { $0.id == id }) else { return }
            let waiter = state.sentWaiters[handle]!.remove(at: index)
            if state.sentWaiters[handle]!.isEmpty { state.sentWaiters[handle] = nil }
            waiter.continuation.resume()
        }
    }

    /// Resumes everyone waiting for `handle`'s data (under the lock).
    private func resumeSentWaiters(handle: UInt16, state: inout State) {
        guard let waiters = state.sentWaiters.removeValue(forKey: handle) else { return }
        for waiter in waiters { waiter.continuation.resume() }
    }

    /// Credits the host holds.
    public var availableCredits: Int {
        state.withLock { $0.multiplexer.flowControl.availableCredits }
    }

    /// Hands the connection's SMP to the caller: every PDU the peer sends on CID 0x0006 from
    /// now on, in order; the stream finishes when the connection ends. At most one per connection.
    public func securityManagerPDUs(handle: UInt16) throws(L2CAPError) -> AsyncStream<[UInt8]> {
        // Bounded by SMP itself: a peer gets one answer per command, so a handful waits at most;
        // the limit only stops a flooding peer from growing memory.
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingOldest(64))
        try state.withLock { (state: inout State) throws(L2CAPError) in
            if let reason = state.shutDownReason { throw L2CAPError.transportClosed(reason) }
            guard state.channels[handle] != nil else { throw L2CAPError.unknownConnection(handle: handle) }
            guard state.channels[handle]?.securityManager == nil else {
                throw L2CAPError.invalidArgument(context: "SMP", reason: "a Security Manager is attached already")
            }
            try state.multiplexer.deliverSecurityManager(handle: handle)
            state.channels[handle]?.securityManager = continuation
        }
        return stream
    }

    /// Sends one SMP PDU on a connection (CID 0x0006).
    public func sendSecurityManagerPDU(_ pdu: [UInt8], handle: UInt16) throws(L2CAPError) {
        try state.withLock { (state: inout State) throws(L2CAPError) in
            if let reason = state.shutDownReason { throw L2CAPError.transportClosed(reason) }
            var actions = takeScratch(&state)
            defer { perform(&actions, state: &state) }
            try state.multiplexer.sendSMP(pdu, handle: handle, into: &actions)
        }
    }

    /// How long a Connection Parameter Update Request waits for its answer (the RTX timer may
    /// run 1 to 60 s, Vol 3, Part A, §6.2.1).
    public static let signalingTimeout: Duration = .seconds(30)

    /// As peripheral, asks the central for new connection parameters (L2CAP Connection
    /// Parameter Update Request) and waits, bounded, for its answer: true when it accepted (the
    /// new parameters then come with LE Connection Update Complete), false when it rejected or
    /// did not understand the request.
    public func requestConnectionParameters(
        _ request: ConnectionParameterUpdateRequest, handle: UInt16, timeout: Duration = UserSpaceL2CAP.signalingTimeout
    ) async throws(L2CAPError) -> Bool {
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                let failure = state.withLock { (state: inout State) -> L2CAPError? in
                    if let reason = state.shutDownReason { return .transportClosed(reason) }
                    guard state.channels[handle] != nil else { return .unknownConnection(handle: handle) }
                    var actions = takeScratch(&state)
                    defer { perform(&actions, state: &state) }
                    do throws(L2CAPError) {
                        try state.multiplexer.requestConnectionParameters(request, handle: handle, into: &actions)
                    } catch {
                        return error
                    }
                    state.channels[handle]?.parameterWaiter = continuation
                    return nil
                }
                if let failure {
                    continuation.resume(throwing: failure)
                    return
                }
                Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    self?.parameterRequestTimedOut(handle: handle)
                }
            }
        } catch let error as L2CAPError {
            throw error
        } catch {
            throw .timeout("Connection Parameter Update Request")
        }
    }

    // MARK: enhanced credit-based channels

    /// Accepts channels peers open on `spsm` on connections opened from now on (nil: refuses
    /// them, SPSM Not Supported); accepted channels come on ``acceptedCreditBasedChannels``.
    public func setCreditBasedServer(spsm: UInt16, _ server: EnhancedCreditBasedChannels.Server?) {
        state.withLock { $0.multiplexer.creditBasedConfiguration.servers[spsm] = server }
    }

    /// The MTU, MPS and initial credits of credit-based channels on connections opened from now on.
    public func setCreditBasedParameters(mtu: UInt16, mps: UInt16, initialCredits: UInt16) {
        state.withLock { state in
            state.multiplexer.creditBasedConfiguration.mtu = mtu
            state.multiplexer.creditBasedConfiguration.mps = mps
            state.multiplexer.creditBasedConfiguration.initialCredits = initialCredits
        }
    }

    /// Tells the connection's credit-based channels whether the link is encrypted (and with
    /// what key size): a server that requires encryption refuses channels until it is.
    public func setEncryptionKeySize(_ keySize: Int?, handle: UInt16) {
        state.withLock { state in
            var actions = takeScratch(&state)
            defer { perform(&actions, state: &state) }
            _ = try? state.multiplexer.withCreditBased(handle: handle, into: &actions) { channels, _ throws(L2CAPError) in
                channels.encryptionKeySize = keySize
            }
        }
    }

    /// Opens `count` (1…5) enhanced credit-based channels on `spsm` and waits, bounded by
    /// `timeout` (the RTX timer), for the peer's answer: the channels it opened — possibly fewer
    /// than asked, when it has the resources for fewer. When our request and the peer's met and
    /// each refused the other for want of resources (a collision, Vol 3 Part G §5.4), the missing
    /// channels are asked for once more after `collisionRetryDelay` (the central: at once; the
    /// peripheral: at least 100 ms); nil: no retry.
    /// - Throws: `.refused` with the peer's result when it opened none; `.timeout`;
    ///   `.disconnected`; `.unknownConnection`; `.invalidArgument`.
    public func openCreditBasedChannels(
        handle: UInt16, spsm: UInt16, count: Int, timeout: Duration = UserSpaceL2CAP.signalingTimeout,
        collisionRetryDelay: Duration? = nil
    ) async throws(L2CAPError) -> [CreditBasedATTChannel] {
        var (opened, collision) = try await requestCreditBasedChannels(handle: handle, spsm: spsm, count: count, timeout: timeout)
        if collision, opened.count < count, let delay = collisionRetryDelay {
            logger.debug("connection \(l2capHex(handle, 4)): credit-based connection collision; asking for \(count - opened.count) again")
            if delay > .zero { try? await Task.sleep(for: delay) }
            if let more = try? await requestCreditBasedChannels(handle: handle, spsm: spsm, count: count - opened.count, timeout: timeout) {
                opened += more.channels
            }
            collision = false
        }
        // A collision that left nothing open, even after the retry.
        guard !opened.isEmpty else { throw .refused(spsm: spsm, result: .noResourcesAvailable) }
        return opened
    }

    private func requestCreditBasedChannels(
        handle: UInt16, spsm: UInt16, count: Int, timeout: Duration
    ) async throws(L2CAPError) -> (channels: [CreditBasedATTChannel], collision: Bool) {
        do {
            return try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<(channels: [CreditBasedATTChannel], collision: Bool), any Error>) in
                let result = state.withLock { (state: inout State) -> Result<UInt8, L2CAPError> in
                    if let reason = state.shutDownReason { return .failure(.transportClosed(reason)) }
                    guard state.channels[handle] != nil else { return .failure(.unknownConnection(handle: handle)) }
                    var actions = takeScratch(&state)
                    defer { perform(&actions, state: &state) }
                    do throws(L2CAPError) {
                        let identifier = try state.multiplexer.withCreditBased(handle: handle, into: &actions) {
                            channels, channelActions throws(L2CAPError) in
                            try channels.connect(spsm: spsm, count: count, into: &channelActions)
                        }
                        state.channels[handle]?.openWaiters[identifier] = continuation
                        return .success(identifier)
                    } catch {
                        return .failure(error)
                    }
                }
                switch result {
                case .failure(let error):
                    continuation.resume(throwing: error)
                case .success(let identifier):
                    Task { [weak self] in
                        try? await Task.sleep(for: timeout)
                        self?.creditBasedRequestTimedOut(handle: handle, identifier: identifier)
                    }
                }
            }
        } catch let error as L2CAPError {
            throw error
        } catch {
            throw .timeout("L2CAP_CREDIT_BASED_CONNECTION_REQ")
        }
    }

    private func creditBasedRequestTimedOut(handle: UInt16, identifier: UInt8) {
        state.withLock { state in
            guard state.channels[handle]?.openWaiters[identifier] != nil else { return }
            var actions = takeScratch(&state)
            defer { perform(&actions, state: &state) }
            _ = try? state.multiplexer.withCreditBased(handle: handle, into: &actions) { channels, channelActions throws(L2CAPError) in
                channels.abandon(identifier, into: &channelActions)
            }
        }
    }

    func sendCreditBased(_ sdu: [UInt8], on channel: CreditBasedATTChannel) throws(L2CAPError) {
        if let error = channel.status.error { throw error }
        try state.withLock { (state: inout State) throws(L2CAPError) in
            guard state.channels[channel.handle]?.creditBased[channel.localCID] === channel else {
                throw channel.status.error ?? L2CAPError.channelClosed(handle: channel.handle)
            }
            var actions = takeScratch(&state)
            defer { perform(&actions, state: &state) }
            try state.multiplexer.withCreditBased(handle: channel.handle, into: &actions) { channels, channelActions throws(L2CAPError) in
                try channels.send(sdu, localCID: channel.localCID, into: &channelActions)
            }
        }
    }

    func closeCreditBased(_ channel: CreditBasedATTChannel) {
        state.withLock { state in
            guard state.channels[channel.handle]?.creditBased[channel.localCID] === channel else { return }
            channel.status.close(.channelClosed(handle: channel.handle))
            channel.queue.finish()
            var actions = takeScratch(&state)
            defer { perform(&actions, state: &state) }
            _ = try? state.multiplexer.withCreditBased(handle: channel.handle, into: &actions) { channels, channelActions throws(L2CAPError) in
                try channels.disconnect(localCID: channel.localCID, into: &channelActions)
            }
        }
    }

    /// What a connection's credit-based channels did (under the lock).
    private func creditBased(
        _ action: EnhancedCreditBasedChannels.Action, handle: UInt16, state: inout State,
        actions: inout [LEL2CAPMultiplexer.Action]
    ) {
        switch action {
        case .send:
            break  // queued by the multiplexer
        case .opened(let identifier, let spsm, let requested, let opened, let result):
            let made = opened.map { channel -> CreditBasedATTChannel in
                let made = CreditBasedATTChannel(
                    handle: handle, channel: channel, queue: ATTSDUQueue(limit: maximumBufferedSDUs), host: self)
                state.channels[handle]?.creditBased[channel.localCID] = made
                return made
            }
            logger.debug(
                "connection \(l2capHex(handle, 4)): \(made.count) of \(requested) channel(s) on SPSM \(l2capHex(spsm, 4)) opened (\(result.rawValue))")
            let collision = state.channels[handle]?.collisions.remove(identifier) != nil
            guard let waiter = state.channels[handle]?.openWaiters.removeValue(forKey: identifier) else {
                for channel in made { channel.queue.finish() }
                return
            }
            if made.isEmpty, !collision {
                waiter.resume(throwing: L2CAPError.refused(spsm: spsm, result: result))
            } else {
                waiter.resume(returning: (made, collision))
            }
        case .collision(let identifier, let spsm, let missing):
            logger.debug("connection \(l2capHex(handle, 4)): collision on SPSM \(l2capHex(spsm, 4)), \(missing) channel(s) missing")
            state.channels[handle]?.collisions.insert(identifier)
        case .accepted(let channel):
            let made = CreditBasedATTChannel(
                handle: handle, channel: channel, queue: ATTSDUQueue(limit: maximumBufferedSDUs), host: self)
            state.channels[handle]?.creditBased[channel.localCID] = made
            acceptedContinuation.yield(made)
        case .sdu(let cid, let sdu):
            guard let channel = state.channels[handle]?.creditBased[cid] else { return }
            if channel.queue.push(sdu) == .full {
                logger.warning("channel \(l2capHex(cid, 4)) fell \(maximumBufferedSDUs) SDUs behind; closing it")
                channel.status.close(.receiveQueueOverflow(handle: handle, limit: maximumBufferedSDUs))
                channel.queue.finish(throwing: L2CAPError.receiveQueueOverflow(handle: handle, limit: maximumBufferedSDUs))
                _ = try? state.multiplexer.withCreditBased(handle: handle, into: &actions) { channels, channelActions throws(L2CAPError) in
                    try channels.disconnect(localCID: cid, into: &channelActions)
                }
            }
        case .closed(let cid, let reason):
            guard let channel = state.channels[handle]?.creditBased.removeValue(forKey: cid) else { return }
            logger.debug("connection \(l2capHex(handle, 4)): channel \(l2capHex(cid, 4)) \(reason)")
            channel.status.close(.channelClosed(handle: handle))
            if case .violation(let why) = reason {
                channel.queue.finish(throwing: L2CAPError.protocolViolation(why))
            } else {
                channel.queue.finish()
            }
        case .reconfigured(let cids, let result):
            guard result == .successful else { return }
            for cid in cids {
                guard let channel = state.channels[handle]?.creditBased[cid],
                    let updated = state.multiplexer.creditBasedChannels(handle: handle)?.channel(cid)
                else { continue }
                channel.mtus.withLock { $0 = (updated.remoteMTU, updated.localMTU) }
            }
        case .report(let text):
            logger.debug("connection \(l2capHex(handle, 4)): \(text)")
        }
    }

    private func parameterRequestTimedOut(handle: UInt16) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, any Error>? in
            guard let waiter = state.channels[handle]?.parameterWaiter else { return nil }
            state.channels[handle]?.parameterWaiter = nil
            state.multiplexer.abandonParameterRequest(handle: handle)
            return waiter
        }
        waiter?.resume(throwing: L2CAPError.timeout("Connection Parameter Update Request"))
    }

    // MARK: channel side

    func send(_ sdu: [UInt8], handle: UInt16, id: UInt64, status: ChannelStatus) throws(L2CAPError) {
        if let error = status.error { throw error }
        try state.withLock { (state: inout State) throws(L2CAPError) in
            guard let channel = state.channels[handle], channel.id == id, !channel.isClosed else {
                throw status.error ?? L2CAPError.channelClosed(handle: handle)
            }
            var actions = takeScratch(&state)
            defer { perform(&actions, state: &state) }
            try state.multiplexer.sendATT(sdu, handle: handle, into: &actions)
        }
    }

    func close(handle: UInt16, id: UInt64) {
        let closed = state.withLock { state -> Bool in
            guard let channel = state.channels[handle], channel.id == id, !channel.isClosed else { return false }
            state.channels[handle]?.isClosed = true
            channel.status.close(.channelClosed(handle: handle))
            channel.queue.finish()
            outputContinuation.yield(.disconnect(handle: handle, reason: Self.closeReason))
            return true
        }
        if closed { logger.debug("ATT channel on \(l2capHex(handle, 4)) closed; disconnecting") }
    }

    // MARK: performing actions (under the lock)

    private func takeScratch(_ state: inout State) -> [LEL2CAPMultiplexer.Action] {
        var actions: [LEL2CAPMultiplexer.Action] = []
        swap(&actions, &state.scratch)
        return actions
    }

    private func perform(_ actions: inout [LEL2CAPMultiplexer.Action], state: inout State) {
        // By index: handling an action may append more (a channel closed for overflow).
        var index = 0
        while index < actions.count {
            let action = actions[index]
            index += 1
            switch action {
            case .transmit(let packet):
                outputContinuation.yield(.acl(packet))
            case .deliverATT(let handle, let sdu):
                deliver(sdu, handle: handle, state: &state)
            case .deliverSMP(let handle, let pdu):
                if state.channels[handle]?.securityManager?.yield(pdu) == nil {
                    logger.debug("connection \(l2capHex(handle, 4)): SMP PDU with no Security Manager, dropped")
                }
            case .updateConnectionParameters(let handle, let request):
                logger.debug("connection \(l2capHex(handle, 4)): accepted \(request)")
                outputContinuation.yield(.updateConnectionParameters(handle: handle, request))
            case .creditBased(let handle, let action):
                creditBased(action, handle: handle, state: &state, actions: &actions)
            case .parameterRequestAnswered(let handle, let accepted):
                if let waiter = state.channels[handle]?.parameterWaiter {
                    state.channels[handle]?.parameterWaiter = nil
                    waiter.resume(returning: accepted)
                }
            case .report(let handle, let report):
                logger.debug("connection \(l2capHex(handle, 4)): \(report)")
            case .ignoredCompletions(let ignored):
                logger.warning("Number Of Completed Packets: ignored \(ignored)")
            case .connectionClosed(let handle, let reason, let removal):
                if removal.droppedFrames > 0 {
                    logger.debug(
                        "connection \(l2capHex(handle, 4)) closed: dropped \(removal.droppedFrames) queued PDU(s), "
                            + "\(removal.droppedOctets) octets")
                }
                resumeSentWaiters(handle: handle, state: &state)
                if let channel = state.channels.removeValue(forKey: handle) {
                    channel.parameterWaiter?.resume(throwing: L2CAPError.disconnected(handle: handle, reason: reason))
                    for waiter in channel.openWaiters.values {
                        waiter.resume(throwing: L2CAPError.disconnected(handle: handle, reason: reason))
                    }
                    for dynamic in channel.creditBased.values {
                        dynamic.status.close(.disconnected(handle: handle, reason: reason))
                        dynamic.queue.finish(throwing: L2CAPError.disconnected(handle: handle, reason: reason))
                    }
                    channel.securityManager?.finish()
                    channel.status.close(.disconnected(handle: handle, reason: reason))
                    channel.queue.finish(throwing: L2CAPError.disconnected(handle: handle, reason: reason))
                }
            }
        }
        actions.removeAll(keepingCapacity: true)
        swap(&actions, &state.scratch)
    }

    private func deliver(_ sdu: [UInt8], handle: UInt16, state: inout State) {
        guard let channel = state.channels[handle], !channel.isClosed else {
            logger.debug("connection \(l2capHex(handle, 4)): ATT PDU after the channel closed, dropped")
            return
        }
        if channel.queue.push(sdu) == .full {
            let error = L2CAPError.receiveQueueOverflow(handle: handle, limit: maximumBufferedSDUs)
            logger.warning("\(error); disconnecting")
            state.channels[handle]?.isClosed = true
            channel.status.close(error)
            channel.queue.finish(throwing: error)
            outputContinuation.yield(.disconnect(handle: handle, reason: Self.closeReason))
        }
    }
}
