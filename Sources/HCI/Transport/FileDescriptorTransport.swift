import Bluetooth
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An `HCITransport` over one non-blocking descriptor: a stream socket or UART carrying H4
/// (framed by `H4Framer`), or a datagram socket delivering one whole packet per read
/// (the kernel HCI user channel).
///
/// Reading is readiness-driven: a `DispatchSourceRead` wakes a serial queue when the descriptor
/// is readable, which reads until `EAGAIN` and yields whole packets. Writing happens on the
/// caller's thread, serialized by a lock; when the descriptor's buffer is full it waits for
/// writability with `poll`, bounded by the write timeout.
///
/// `@unchecked Sendable`: the mutable reader state (`framer`, `readBuffer`) is touched only by
/// the source's handlers, which Dispatch runs one at a time on `queue`; every other mutable
/// state is inside a `Mutex`. The descriptor is closed only in the cancel handler, which runs
/// after the last event handler and under `io`, the lock writers hold while they use it.
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
    private let source: any DispatchSourceRead
    /// The reason the transport closed, once it has.
    private let closedReason = Mutex<String?>(nil)
    /// Held by writers while they use the descriptor, and by the cancel handler to close it.
    private let io = Mutex<Void>(())

    // Reader state: only on `queue`.
    private var framer = H4Framer()
    private let readBuffer: UnsafeMutableRawBufferPointer

    /// The largest HCI packet (an ACL packet with a 65535-octet body) plus its indicator and header.
    static let readBufferSize = 1 + 4 + 65535

    /// Takes ownership of `descriptor` (made non-blocking here) and starts reading.
    /// `name` (e.g. "tcp:127.0.0.1:1234") appears in close reasons and logs.
    public init(adopting descriptor: Int32, framing: Framing, name: String, writeTimeout: Duration = .seconds(2), logger: Logger = .disabled) {
        self.descriptor = descriptor
        self.framing = framing
        self.name = name
        self.writeTimeout = writeTimeout
        self.logger = logger
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0, flags & O_NONBLOCK == 0 { _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
        (packets, continuation) = AsyncThrowingStream.makeStream(of: HCITransportPacket.self, throwing: (any Error).self)
        queue = DispatchQueue(label: "hci.transport.\(name)")
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)

        source.setEventHandler { [self] in readAvailable() }
        source.setCancelHandler { [self] in
            io.withLock { _ in _ = Glibc.close(descriptor) }
            readBuffer.deallocate()
            let reason = closedReason.withLock { $0 } ?? "closed"
            logger.debug("\(name): closed (\(reason))")
            continuation.finish(throwing: HCIError.transportClosed(reason))
        }
        // The consumer went away (its task was cancelled): nobody reads any more, so close.
        continuation.onTermination = { [weak self] termination in
            if case .cancelled = termination { self?.close(reason: "the packet stream's consumer was cancelled") }
        }
        source.resume()
    }

    public func close(reason: String) {
        let first = closedReason.withLock { current -> Bool in
            guard current == nil else { return false }
            current = reason
            return true
        }
        guard first else { return }
        // Wakes a writer blocked in poll on a socket (harmless ENOTSOCK on a UART); the
        // descriptor is still open here, since only the cancel handler closes it.
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        source.cancel()
    }

    public func send(_ type: HCIPacketType, _ bytes: [UInt8]) async throws(HCIError) {
        var frame = [UInt8]()
        frame.reserveCapacity(1 + bytes.count)
        frame.append(type.rawValue)
        frame.append(contentsOf: bytes)
        try io.withLock { _ throws(HCIError) in
            if let reason = closedReason.withLock({ $0 }) { throw HCIError.transportClosed(reason) }
            try writeAll(frame)
        }
    }

    // MARK: - Writing (under `io`)

    private func writeAll(_ frame: [UInt8]) throws(HCIError) {
        let deadline = ContinuousClock.now.advanced(by: writeTimeout)
        var offset = 0
        while offset < frame.count {
            let written = frame.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            }
            if written >= 0 {
                if framing == .datagram && written != frame.count {
                    throw failed(.system(operation: "\(name): short datagram write (\(written) of \(frame.count))", errno: Errno(rawValue: EMSGSIZE)))
                }
                offset += written
                continue
            }
            let error = Errno.current
            if error == .interrupted { continue }
            guard error == .wouldBlock else {
                throw failed(.system(operation: "\(name): write", errno: error))
            }
            try waitWritable(until: deadline)
        }
    }

    private func waitWritable(until deadline: ContinuousClock.Instant) throws(HCIError) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else {
                throw failed(.system(operation: "\(name): the controller did not accept a packet within \(writeTimeout)", errno: .timedOut))
            }
            var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&entry, 1, SocketTransport.milliseconds(left))
            if ready > 0 {
                if entry.revents & Int16(POLLOUT) != 0 { return }
                throw failed(.transportClosed("\(name): connection lost while writing"))
            }
            if ready < 0 && Errno.current != .interrupted {
                throw failed(.system(operation: "\(name): poll", errno: .current))
            }
        }
    }

    /// Closes the transport because of `error` (a broken descriptor stays broken) and returns it.
    private func failed(_ error: HCIError) -> HCIError {
        logger.warning("\(error)")
        close(reason: "\(error)")
        return error
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
                throw .malformed(context: context, reason: .trailingBytes(count: framer.bufferedCount), offset: 1 + packet.1.count)
            }
            return packet
        }
        // Incomplete: the header, or the body it announces, is cut short.
        let headerLength = H4.headerLength(of: type)
        let available = datagram.count - 1
        guard available >= headerLength else {
            throw .malformed(context: context, reason: .truncated(needed: headerLength, available: available), offset: 1)
        }
        // The length field ends the header: one octet (command, event, SCO) or two (ACL, ISO,
        // whose top two bits are RFU).
        let declared: Int
        switch type {
        case .command, .event, .sco: declared = Int(datagram[headerLength])
        case .acl: declared = Int(datagram[headerLength - 1]) | Int(datagram[headerLength]) << 8
        case .iso: declared = (Int(datagram[headerLength - 1]) | Int(datagram[headerLength]) << 8) & 0x3FFF
        }
        throw .malformed(context: context, reason: .truncated(needed: declared, available: available - headerLength), offset: 1 + headerLength)
    }
}
