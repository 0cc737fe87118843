import Bluetooth
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An `HCITransport` over one non-blocking descriptor: a stream socket or UART carrying H4
/// (framed by `H4Framer`), or a datagram socket delivering one whole packet per read (the
/// kernel HCI user channel).
///
/// Everything is readiness-driven and nothing blocks a thread: a `DispatchSourceRead` wakes a
/// serial queue when the descriptor is readable, which reads until `EAGAIN` and yields whole
/// packets. `send` writes at once when nothing is waiting; when the descriptor's buffer is
/// full, the rest of the frame (and every frame sent after it, so order is kept) waits in a
/// list that a `DispatchSourceWrite` drains as the descriptor becomes writable. A frame that
/// waits longer than the write timeout fails the transport.
///
/// `@unchecked Sendable`: the reader state (`framer`, `readBuffer`) is touched only by the
/// sources' handlers, which Dispatch runs one at a time on `queue`; every other mutable state
/// is inside a `Mutex`. The descriptor is closed in the write source's cancel handler, which
/// runs after both sources' last handlers.
public final class FileDescriptorTransport: HCITransport, @unchecked Sendable {
    /// How the descriptor delimits packets.
    public enum Framing: Sendable, Hashable {
        /// H4: indicator, header, length-delimited body, in a byte stream of any chunking.
        case h4Stream
        /// One packet (indicator first) per read and per write.
        case datagram
    }

    public let packets: AsyncThrowingStream<HCITransportPacket, any Error>

    private let descriptor: Int32
    private let framing: Framing
    private let name: String
    private let writeTimeout: Duration
    private let logger: Logger
    private let continuation: AsyncThrowingStream<HCITransportPacket, any Error>.Continuation
    private let queue: DispatchQueue
    private let readSource: any DispatchSourceRead
    private let writeSource: any DispatchSourceWrite
    /// The reason the transport closed, once it has.
    private let closedReason = Mutex<String?>(nil)
    /// Frames waiting for the descriptor to become writable, and the write source's state.
    private let writes = Mutex(WriteState())

    private struct Waiting: Sendable {
        var id: UInt64
        var frame: [UInt8]
        var offset: Int
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Result<Void, HCIError>, Never>?
    }

    private struct WriteState: Sendable {
        var waiting: [Waiting] = []
        /// Outcomes of waiting frames whose sender had not yet registered its continuation.
        var finishedEarly: [UInt64: Result<Void, HCIError>] = [:]
        var lastID: UInt64 = 0
        var sourceResumed = false
        /// Set once the write source is cancelled: nothing may wait any more.
        var closed: String?
    }

    // Reader state: only on `queue`.
    private var framer = H4Framer()
    private let readBuffer: UnsafeMutableRawBufferPointer

    /// The largest HCI packet (an ACL packet with a 65535-octet body) plus its indicator and header.
    static let readBufferSize = 1 + 4 + 65535

    /// Takes ownership of `descriptor` (made non-blocking here) and starts reading.
    /// `name` (e.g. "tcp:127.0.0.1:1234") appears in close reasons and logs.
    public init(
        adopting descriptor: Int32, framing: Framing, name: String, writeTimeout: Duration = .seconds(2),
        logger: Logger = .disabled
    ) {
        self.descriptor = descriptor
        self.framing = framing
        self.name = name
        self.writeTimeout = writeTimeout
        self.logger = logger
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0, flags & O_NONBLOCK == 0 { _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
        (packets, continuation) = AsyncThrowingStream.makeStream(
            of: HCITransportPacket.self, throwing: (any Error).self)
        queue = DispatchQueue(label: "hci.transport.\(name)")
        readSource = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        writeSource = DispatchSource.makeWriteSource(fileDescriptor: descriptor, queue: queue)
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)

        readSource.setEventHandler { [self] in readAvailable() }
        readSource.setCancelHandler { [self] in
            readBuffer.deallocate()
            let reason = closedReason.withLock { $0 } ?? "closed"
            // Fail waiting writers, then retire the write source (a suspended source must be
            // resumed before its cancel handler can run).
            let failed = writes.withLock { state -> [Waiting] in
                state.closed = reason
                let waiting = state.waiting
                state.waiting.removeAll()
                if !state.sourceResumed {
                    state.sourceResumed = true
                    writeSource.resume()
                }
                return waiting
            }
            for entry in failed { finish(entry, .failure(.transportClosed(reason))) }
            writeSource.cancel()
            logger.debug("\(name): closed (\(reason))")
            continuation.finish(throwing: HCIError.transportClosed(reason))
        }
        writeSource.setEventHandler { [self] in writeWaiting() }
        writeSource.setCancelHandler { _ = Glibc.close(descriptor) }
        // The consumer went away (its task was cancelled): nobody reads any more, so close.
        continuation.onTermination = { [weak self] termination in
            if case .cancelled = termination { self?.close(reason: "the packet stream's consumer was cancelled") }
        }
        readSource.resume()
    }

    public func close(reason: String) {
        let first = closedReason.withLock { current -> Bool in
            guard current == nil else { return false }
            current = reason
            return true
        }
        guard first else { return }
        // The descriptor stays open until the write source's cancel handler, so shutdown is safe.
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        readSource.cancel()
    }

    public func send(_ type: HCIPacketType, _ bytes: [UInt8]) async throws(HCIError) {
        var frame = [UInt8]()
        frame.reserveCapacity(1 + bytes.count)
        frame.append(type.rawValue)
        frame.append(contentsOf: bytes)

        // Fast path: nothing waiting, the descriptor takes the frame now. Otherwise the frame
        // joins the waiting list (under the same lock, so order is kept).
        let parked: UInt64?
        do {
            parked = try enqueueOrWrite(frame)
        } catch {
            // A descriptor that failed a write stays unusable: close (already closed: no-op).
            if case .transportClosed = error {} else { fail(error) }
            throw error
        }
        guard let id = parked else { return }

        let result: Result<Void, HCIError> = await withCheckedContinuation { continuation in
            let early = writes.withLock { state -> Result<Void, HCIError>? in
                if let index = state.waiting.firstIndex(where: { $0.id == id }) {
                    state.waiting[index].continuation = continuation
                    return nil
                }
                return state.finishedEarly.removeValue(forKey: id)
                    ?? .failure(.transportClosed(state.closed ?? "closed"))
            }
            if let early { continuation.resume(returning: early) }
        }
        try result.get()
    }

    /// Writes `frame` now if nothing waits and the descriptor takes it all (nil); otherwise
    /// appends it to the waiting list and returns its id.
    private func enqueueOrWrite(_ frame: [UInt8]) throws(HCIError) -> UInt64? {
        try writes.withLock { state throws(HCIError) -> UInt64? in
            if let reason = closedReason.withLock({ $0 }) ?? state.closed { throw HCIError.transportClosed(reason) }
            var offset = 0
            if state.waiting.isEmpty {
                offset = try writeNonBlocking(frame, from: 0)
                if offset == frame.count { return nil }
            }
            state.lastID += 1
            state.waiting.append(
                Waiting(
                    id: state.lastID, frame: frame, offset: offset, deadline: .now.advanced(by: writeTimeout),
                    continuation: nil))
            if !state.sourceResumed {
                state.sourceResumed = true
                writeSource.resume()
            }
            let id = state.lastID
            queue.asyncAfter(deadline: .now() + Self.dispatchInterval(writeTimeout)) { [weak self] in
                self?.checkWriteDeadline(id)
            }
            return id
        }
    }

    // MARK: - Writing

    /// Writes what the descriptor accepts now; returns the new offset. Call under `writes`.
    private func writeNonBlocking(_ frame: [UInt8], from start: Int) throws(HCIError) -> Int {
        var offset = start
        while offset < frame.count {
            let written = frame.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            }
            if written >= 0 {
                if framing == .datagram && written != frame.count {
                    throw .system(
                        operation: "\(name): short datagram write (\(written) of \(frame.count))",
                        errno: Errno(rawValue: EMSGSIZE))
                }
                offset += written
                continue
            }
            let error = Errno.current
            if error == .interrupted { continue }
            if error == .wouldBlock { return offset }
            throw .system(operation: "\(name): write", errno: error)
        }
        return offset
    }

    /// On `queue`, when the descriptor is writable: writes waiting frames in order.
    private func writeWaiting() {
        var done: [(Waiting, Result<Void, HCIError>)] = []
        var failure: HCIError?
        writes.withLock { state in
            while !state.waiting.isEmpty {
                do throws(HCIError) {
                    state.waiting[0].offset = try writeNonBlocking(
                        state.waiting[0].frame, from: state.waiting[0].offset)
                } catch {
                    failure = error
                    return
                }
                guard state.waiting[0].offset == state.waiting[0].frame.count else { return }
                done.append((state.waiting.removeFirst(), .success(())))
            }
            // Nothing left to write: stop watching writability.
            if state.sourceResumed && state.closed == nil {
                state.sourceResumed = false
                writeSource.suspend()
            }
        }
        for (entry, result) in done { finish(entry, result) }
        if let failure { fail(failure) }
    }

    /// On `queue`, a write timeout after frame `id` started waiting.
    private func checkWriteDeadline(_ id: UInt64) {
        let overdue = writes.withLock { state in
            state.waiting.contains { $0.id == id && $0.deadline <= .now }
        }
        if overdue {
            fail(
                .system(
                    operation: "\(name): the controller did not accept a packet within \(writeTimeout.roundedText)",
                    errno: .timedOut))
        }
    }

    /// Fails every waiting frame with `error` and closes the transport (a descriptor that
    /// cannot be written stays unusable).
    private func fail(_ error: HCIError) {
        logger.warning("\(error)")
        let failed = writes.withLock { state -> [Waiting] in
            let waiting = state.waiting
            state.waiting.removeAll()
            return waiting
        }
        for entry in failed { finish(entry, .failure(error)) }
        close(reason: "\(error)")
    }

    /// Resumes the frame's sender, or keeps the outcome until it registers.
    private func finish(_ entry: Waiting, _ result: Result<Void, HCIError>) {
        if let continuation = entry.continuation {
            continuation.resume(returning: result)
        } else {
            writes.withLock { $0.finishedEarly[entry.id] = result }
        }
    }

    static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        return .microseconds(Int(clamping: seconds * 1_000_000 + attoseconds / 1_000_000_000_000 + 1))
    }

    // MARK: - Reading (on `queue`)

    private func readAvailable() {
        while true {
            let count = Glibc.read(descriptor, readBuffer.baseAddress!, readBuffer.count)
            if count > 0 {
                let chunk = UnsafeRawBufferPointer(rebasing: readBuffer[0..<count])
                do {
                    try deliver(chunk)
                } catch {
                    close(reason: "\(name): \(error)")
                    return
                }
                if framing == .h4Stream && count < readBuffer.count { return }
                continue
            }
            if count == 0 {
                close(reason: "\(name): the controller side closed the connection")
                return
            }
            let error = Errno.current
            if error == .interrupted { continue }
            if error == .wouldBlock { return }
            close(reason: "\(name): read: \(error)")
            return
        }
    }

    private func deliver(_ chunk: UnsafeRawBufferPointer) throws(HCIError) {
        switch framing {
        case .h4Stream:
            framer.append(chunk)
            while let packet = try framer.nextPacket() {
                continuation.yield(packet)
            }
        case .datagram:
            continuation.yield(try Self.parseDatagram(Array(chunk)))
        }
    }

    /// One whole packet from a datagram descriptor: indicator, header, and exactly the body the
    /// header announces. A short or long datagram is malformed, never "need more".
    /// Offsets in errors count from the indicator.
    static func parseDatagram(_ datagram: [UInt8]) throws(HCIError) -> HCITransportPacket {
        guard let indicator = datagram.first else {
            throw .malformed(context: "HCI datagram", reason: .truncated(needed: 1, available: 0), offset: 0)
        }
        guard let type = HCIPacketType(rawValue: indicator) else { throw .unknownPacketType(indicator) }
        let context = "\(type) datagram"
        var framer = H4Framer()
        framer.append(datagram)
        if let packet = try framer.nextPacket() {
            guard framer.bufferedCount == 0 else {
                throw .malformed(
                    context: context, reason: .trailingBytes(count: framer.bufferedCount), offset: 1 + packet.1.count)
            }
            return packet
        }
        // Incomplete: the header, or the body it announces, is cut short.
        let headerLength = H4.headerLength(of: type)
        let available = datagram.count - 1
        guard available >= headerLength else {
            throw .malformed(
                context: context, reason: .truncated(needed: headerLength, available: available), offset: 1)
        }
        // The length field ends the header: one octet (command, event, SCO) or two (ACL, ISO,
        // whose top two bits are RFU).
        let declared: Int
        switch type {
        case .command, .event, .sco: declared = Int(datagram[headerLength])
        case .acl: declared = Int(datagram[headerLength - 1]) | Int(datagram[headerLength]) << 8
        case .iso: declared = (Int(datagram[headerLength - 1]) | Int(datagram[headerLength]) << 8) & 0x3FFF
        }
        throw .malformed(
            context: context, reason: .truncated(needed: declared, available: available - headerLength),
            offset: 1 + headerLength)
    }
}
