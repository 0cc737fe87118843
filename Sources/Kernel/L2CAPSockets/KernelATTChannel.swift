#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ATT
import Bluetooth
import Dispatch
import HCI

/// The ATT bearer's channel over the kernel's L2CAP LE socket on the ATT fixed channel (CID 4):
/// the kernel does HCI, ACL and L2CAP; we exchange whole ATT PDUs as SOCK_SEQPACKET datagrams.
///
/// Readiness-driven: one `DispatchSource` read source delivers every datagram into `incoming`
/// (unbounded, in order, none dropped); sends go straight to the socket and, when its buffer is
/// full, wait for a write source. No polling, no task per PDU.
///
/// Close it explicitly with `close()`; a channel that was never closed closes its socket when the
/// last reference goes. `incoming` finishes when either side closes, and throws
/// `KernelBluetoothError` when the link fails (reset, timeout).
public final class KernelATTChannel: ATTChannel, Sendable {
    /// The remote device, when known (connect and accept know it).
    public let peer: BluetoothAddress?
    public let peerAddressType: AddressType?
    /// The smaller of the kernel's send and receive MTUs, read when the channel was set up.
    public let maximumSDUSize: Int?
    public let incoming: AsyncThrowingStream<[UInt8], Error>
    private let core: Core

    /// Wraps any connected `SOCK_SEQPACKET` descriptor (an L2CAP socket, or one end of a
    /// `socketpair(AF_UNIX, SOCK_SEQPACKET)` in tests) and starts reading it. Takes ownership.
    init(
        adopting descriptor: SocketDescriptor, peer: BluetoothAddress? = nil, peerAddressType: AddressType? = nil,
        maximumSDUSize: Int? = nil, logger: Logger = .disabled
    ) {
        self.peer = peer
        self.peerAddressType = peerAddressType
        self.maximumSDUSize = maximumSDUSize
        let (stream, continuation) = AsyncThrowingStream<[UInt8], Error>.makeStream(bufferingPolicy: .unbounded)
        incoming = stream
        core = Core(descriptor: descriptor, peer: peer, continuation: continuation, logger: logger)
        core.queue.async { [core] in core.start() }
    }

    deinit {
        // Only closes a socket nobody closed; the core finishes on its own queue.
        core.queue.async { [core] in core.close(waiter: nil) }
    }

    /// Sends one SDU. Sends complete in call order.
    /// - Throws: `KernelBluetoothError` (`.closed` after `close()`, `.system` with the errno:
    ///   EMSGSIZE over the MTU, ENOTCONN/ECONNRESET once the link is gone).
    public func send(_ sdu: [UInt8]) async throws {
        guard !sdu.isEmpty else {
            throw KernelBluetoothError.invalidRequest(operation: .send(peer: peer), reason: "an ATT PDU is never empty")
        }
        let core = self.core
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            core.queue.async { core.enqueue(sdu, continuation) }
        }
    }

    /// Closes the channel: pending sends fail, `incoming` finishes, the socket is closed (the
    /// kernel then drops the link if nothing else uses it). Returns once the descriptor is closed.
    public func close() async {
        let core = self.core
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.queue.async { core.close(waiter: continuation) }
        }
    }

    /// Sets `BT_SECURITY`. On a connected LE link, raising it starts pairing/encryption; the
    /// next send or receive waits for it.
    public func setSecurity(_ level: L2CAPSecurityLevel) async throws(KernelBluetoothError) {
        try await core.withDescriptor(.setSecurity(level: level.rawValue)) { fd throws(KernelBluetoothError) in
            try KernelL2CAP.setSecurity(fd, level)
        }
    }

    /// Raises the link's security to `level` and waits, at most `timeout`, until the kernel has
    /// settled it: encrypted with a stored key, or paired (its agent answering the user's part).
    /// The kernel holds the socket in BT_CONFIG meanwhile, so sends queued in the meantime wait
    /// too. Returns the level the link has then (the kernel answers a level the link already
    /// has with EINVAL: that is success).
    /// - Throws: `.system(…, .timedOut)` after `timeout` (the kernel tells a failed pairing only
    ///   on the management channel: ``abandonSecurityWait(_:)`` ends the wait sooner),
    ///   `.system(…, .notConnected)` when the link ends meanwhile.
    public func raiseSecurity(to level: L2CAPSecurityLevel, timeout: Duration) async throws(KernelBluetoothError) -> L2CAPSecurityLevel {
        let core = self.core
        let operation = KernelOperation.setSecurity(level: level.rawValue)
        let started = try await core.withDescriptor(operation) { fd throws(KernelBluetoothError) -> Bool in
            do throws(KernelBluetoothError) {
                try KernelL2CAP.setSecurity(fd, level)
                return true
            } catch {
                if case .system(_, let errno) = error, errno.rawValue == EINVAL { return false }
                throw error
            }
        }
        if started {
            let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<KernelBluetoothError?, Never>) in
                core.queue.async { core.awaitSecurity(continuation) }
                Task {
                    try? await Task.sleep(for: timeout)
                    core.queue.async { core.endSecurityWait(with: .system(operation: operation, errno: .timedOut)) }
                }
            }
            if let outcome { throw outcome }
        }
        return try await securityLevel()
    }

    /// Ends a running ``raiseSecurity(to:timeout:)`` with `error` (the pairing failed).
    public func abandonSecurityWait(_ error: KernelBluetoothError) {
        let core = self.core
        core.queue.async { core.endSecurityWait(with: error) }
    }

    /// The link's current security level.
    public func securityLevel() async throws(KernelBluetoothError) -> L2CAPSecurityLevel {
        try await core.withDescriptor(.readSecurity) { fd throws(KernelBluetoothError) in try KernelL2CAP.securityLevel(fd) }
    }

    /// The kernel's current MTUs for this channel.
    public func mtu() async throws(KernelBluetoothError) -> L2CAPMTU {
        try await core.withDescriptor(.readMTU) { fd throws(KernelBluetoothError) in try KernelL2CAP.mtu(fd) }
    }
}

extension KernelATTChannel {
    struct PendingSend {
        let bytes: [UInt8]
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// The I/O state machine. Every mutable field is touched only on `queue` (serial), which is
    /// why the class is `@unchecked Sendable`.
    final class Core: @unchecked Sendable {
        let queue = DispatchQueue(label: "KernelATTChannel")
        let descriptor: SocketDescriptor
        let peer: BluetoothAddress?
        let logger: Logger
        private let continuation: AsyncThrowingStream<[UInt8], Error>.Continuation
        /// One receive buffer, larger than any L2CAP SDU (65535), so no datagram is truncated.
        private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        /// The most datagrams read per readiness event, so sends queued meanwhile get a turn.
        private static let readBatch = 64

        private var readSource: ReadinessSource?
        private var writeSource: ReadinessSource?
        private var liveSources = 0
        private var pending: [PendingSend] = []
        private var pendingHead = 0
        private var isClosed = false
        private var isReading = false
        private var batchExhausted = false
        private var isDescriptorClosed = false
        private var closeWaiters: [CheckedContinuation<Void, Never>] = []
        /// Waiting for the kernel to settle a security change (the socket writable again).
        private var securityWaiters: [CheckedContinuation<KernelBluetoothError?, Never>] = []

        init(
            descriptor: SocketDescriptor, peer: BluetoothAddress?,
            continuation: AsyncThrowingStream<[UInt8], Error>.Continuation, logger: Logger
        ) {
            self.descriptor = descriptor
            self.peer = peer
            self.continuation = continuation
            self.logger = logger
        }

        deinit { buffer.deallocate() }

        func start() {
            guard !isClosed else { return }
            let fd = descriptor.rawValue
            readSource = ReadinessSource(
                descriptor: fd, kind: .read, queue: queue, onReady: { self.readable() },
                onCancel: { self.sourceCancelled(read: true) })
            writeSource = ReadinessSource(
                descriptor: fd, kind: .write, queue: queue, onReady: { self.flush() },
                onCancel: { self.sourceCancelled(read: false) })
            liveSources = 2
            isReading = true
            readSource?.arm()
        }

        // MARK: receiving

        private func readable() {
            defer {
                // A full batch: continue after whatever else is queued (sends, close), without
                // relying on the source firing again.
                if isReading, !isClosed, batchExhausted { queue.async { self.readable() } }
            }
            batchExhausted = false
            for _ in 0..<Core.readBatch {
                guard isReading, !isClosed else { return }
                let count: Int
                do {
                    count = try descriptor.receive(into: buffer, nonBlocking: true)
                } catch where error.isWouldBlock {
                    return  // drained
                } catch {
                    logger.debug("ATT channel \(descriptor): receive failed: \(error)")
                    stopReading(error: .system(operation: .receive(peer: peer), errno: error))
                    return
                }
                if count == 0 {
                    logger.debug("ATT channel \(descriptor): end of stream")
                    stopReading(error: nil)
                    return
                }
                continuation.yield(Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
            }
            batchExhausted = true
        }

        /// The peer is gone (EOF) or the link failed: finish `incoming`, stop watching for input.
        /// The descriptor stays open until `close()`, so sends report the errno themselves.
        private func stopReading(error: KernelBluetoothError?) {
            isReading = false
            if let error {
                continuation.finish(throwing: error)
            } else {
                continuation.finish()
            }
            readSource?.cancel()
        }

        // MARK: sending

        func enqueue(_ bytes: [UInt8], _ sender: CheckedContinuation<Void, any Error>) {
            guard !isClosed else {
                sender.resume(throwing: KernelBluetoothError.closed(operation: .send(peer: peer)))
                return
            }
            pending.append(PendingSend(bytes: bytes, continuation: sender))
            // With earlier sends waiting for the write source, this one waits behind them.
            if pending.count - pendingHead == 1 { flush() }
        }

        func awaitSecurity(_ waiter: CheckedContinuation<KernelBluetoothError?, Never>) {
            guard !isClosed else {
                waiter.resume(returning: .closed(operation: .readSecurity))
                return
            }
            securityWaiters.append(waiter)
            writeSource?.arm()
            _ = securitySettled()
        }

        func endSecurityWait(with error: KernelBluetoothError?) {
            let waiters = securityWaiters
            securityWaiters.removeAll()
            for waiter in waiters { waiter.resume(returning: error) }
            if error != nil { flush() }
        }

        /// Whether no security change is pending: the socket is writable again (the kernel moved
        /// it from BT_CONFIG back to connected), or the link failed (waiters told).
        private func securitySettled() -> Bool {
            guard !securityWaiters.isEmpty else { return true }
            var entry = pollfd(fd: descriptor.rawValue, events: Int16(POLLOUT), revents: 0)
            guard poll(&entry, 1, 0) > 0 else { return false }
            if entry.revents & Int16(POLLOUT) != 0 {
                endSecurityWait(with: nil)
                return true
            }
            if entry.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                endSecurityWait(with: .system(operation: .readSecurity, errno: .notConnected))
                return true
            }
            return false
        }

        private func flush() {
            guard !isClosed else { return }
            // Sends wait while the kernel changes the link's security (it refuses them meanwhile).
            guard securitySettled() else {
                writeSource?.arm()
                return
            }
            while pendingHead < pending.count {
                let item = pending[pendingHead]
                let sent: Int
                do {
                    sent = try descriptor.send(item.bytes, nonBlocking: true)
                } catch where error.isWouldBlock {
                    logger.trace("ATT channel \(descriptor): send buffer full, waiting for writability")
                    writeSource?.arm()
                    return
                } catch {
                    pendingHead += 1
                    item.continuation.resume(throwing: KernelBluetoothError.system(operation: .send(peer: peer), errno: error))
                    continue
                }
                pendingHead += 1
                if sent == item.bytes.count {
                    item.continuation.resume()
                } else {
                    // A SOCK_SEQPACKET send is all or nothing; anything else is a broken socket.
                    item.continuation.resume(
                        throwing: KernelBluetoothError.system(operation: .send(peer: peer), errno: Errno(rawValue: EMSGSIZE)))
                }
            }
            pending.removeAll(keepingCapacity: true)
            pendingHead = 0
            writeSource?.disarm()
        }

        // MARK: closing

        func close(waiter: CheckedContinuation<Void, Never>?) {
            if let waiter { closeWaiters.append(waiter) }
            if !isClosed {
                isClosed = true
                let failure = KernelBluetoothError.closed(operation: .send(peer: peer))
                for item in pending[pendingHead...] { item.continuation.resume(throwing: failure) }
                let waiters = securityWaiters
                securityWaiters.removeAll()
                for waiter in waiters { waiter.resume(returning: .closed(operation: .readSecurity)) }
                pending.removeAll()
                pendingHead = 0
                if isReading {
                    isReading = false
                    continuation.finish()
                }
                readSource?.cancel()
                writeSource?.cancel()
            }
            closeDescriptorIfIdle()
        }

        private func sourceCancelled(read: Bool) {
            if read { readSource = nil } else { writeSource = nil }
            liveSources -= 1
            closeDescriptorIfIdle()
        }

        /// Closes the descriptor once closed and no dispatch source watches it any more.
        private func closeDescriptorIfIdle() {
            guard isClosed, liveSources == 0 else { return }
            if !isDescriptorClosed {
                isDescriptorClosed = true
                try? descriptor.close()
                logger.debug("ATT channel \(descriptor): closed")
            }
            let waiters = closeWaiters
            closeWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
        }

        /// Runs `body` with the descriptor on the queue, unless the channel is closed.
        func withDescriptor<T: Sendable>(
            _ operation: KernelOperation, _ body: @escaping @Sendable (Int32) throws(KernelBluetoothError) -> T
        ) async throws(KernelBluetoothError) -> T {
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, KernelBluetoothError>, Never>) in
                queue.async {
                    guard !self.isClosed else {
                        continuation.resume(returning: .failure(.closed(operation: operation)))
                        return
                    }
                    continuation.resume(returning: Result { () throws(KernelBluetoothError) -> T in try body(self.descriptor.rawValue) })
                }
            }
            return try result.get()
        }
    }
}
