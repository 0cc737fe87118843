#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
import HCI

/// A socket file descriptor, in the manner of swift-system's `FileDescriptor`: a plain value
/// with no ownership semantics; whoever opened it closes it explicitly with `close()`.
///
/// The Kernel module's one syscall layer, with two faces for waiting: `wait(for:timeout:)` blocks
/// (for synchronous callers such as the management channel's request/response), and
/// `ReadinessSource` / `KernelReadiness` / `DatagramReader` deliver readiness from a
/// `DispatchSource` (for async callers). Every socket of the module (`HCISocket`,
/// `ManagementSocket`, `KernelATTChannel`, `KernelATTListener`) does its I/O through them.
///
/// Owners that must close exactly once (`HCISocket`, the L2CAP channels) wrap it in a final class.
/// Every call retries on `EINTR` (through `Errno.retryingSyscall`) and throws `Errno` otherwise.
package struct SocketDescriptor: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: Int32

    package init(rawValue: Int32) { self.rawValue = rawValue }

    package var description: String { "fd \(rawValue)" }

    /// Closes the descriptor. Not retried on `EINTR`: on Linux the descriptor is released even
    /// then, and a retry could close a descriptor another thread has just been given.
    package func close() throws(Errno) {
        if Glibc.close(rawValue) < 0 {
            let error = Errno.current
            if error != .interrupted { throw error }
        }
    }

    /// Sends one datagram / SDU (`MSG_NOSIGNAL`: a closed peer gives `EPIPE`, not `SIGPIPE`).
    /// Returns the octets sent.
    @discardableResult
    package func send(_ bytes: [UInt8], nonBlocking: Bool = false) throws(Errno) -> Int {
        let flags = Int32(MSG_NOSIGNAL) | (nonBlocking ? Int32(MSG_DONTWAIT) : 0)
        return try Errno.retryingSyscall {
            bytes.withUnsafeBytes { Glibc.send(rawValue, $0.baseAddress, $0.count, flags) }
        }
    }

    /// Receives one datagram into `buffer`; returns its length (0 at end of stream).
    package func receive(into buffer: UnsafeMutableRawBufferPointer, nonBlocking: Bool = false) throws(Errno) -> Int {
        let flags = nonBlocking ? Int32(MSG_DONTWAIT) : 0
        return try Errno.retryingSyscall { Glibc.recv(rawValue, buffer.baseAddress, buffer.count, flags) }
    }

    /// Receives one datagram of at most `maximumLength` octets (0 octets at end of stream).
    package func receive(maximumLength: Int, nonBlocking: Bool = false) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(0, maximumLength))
        let result = bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(Errno) -> Int in try receive(into: buffer, nonBlocking: nonBlocking) }
        }
        let count = try result.get()
        bytes.removeSubrange(count...)
        return bytes
    }

    /// Which readiness to wait for.
    package struct Readiness: OptionSet, Hashable, Sendable {
        package let rawValue: Int16
        package init(rawValue: Int16) { self.rawValue = rawValue }
        package static let readable = Readiness(rawValue: Int16(POLLIN))
        package static let writable = Readiness(rawValue: Int16(POLLOUT))
    }

    /// Blocks until the descriptor is ready (or has an error/hang-up pending, which the next
    /// read or write reports) or `timeout` passes (`nil`: no limit). Returns `false` on timeout.
    /// `EINTR` restarts the wait with the time that is left.
    package func wait(for readiness: Readiness, timeout: Duration?) throws(Errno) -> Bool {
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now.advanced(by: $0) }
        while true {
            var entry = pollfd(fd: rawValue, events: readiness.rawValue, revents: 0)
            var milliseconds: Int32 = -1
            if let deadline {
                let left = clock.now.duration(to: deadline)
                milliseconds = left <= .zero ? 0 : Int32(clamping: left.roundedUpMilliseconds)
            }
            let result = Glibc.poll(&entry, 1, milliseconds)
            if result > 0 { return true }
            if result == 0 { return false }
            let error = Errno.current
            if error != .interrupted { throw error }
        }
    }

    /// Marks a bound socket as accepting connections (`listen(2)`).
    package func listen(backlog: Int32) throws(Errno) {
        try Errno.retryingSyscall { Glibc.listen(rawValue, backlog) }
    }

    /// Sets or clears `O_NONBLOCK`.
    package func setNonBlocking(_ nonBlocking: Bool) throws(Errno) {
        let flags = try Errno.retryingSyscall { fcntl(rawValue, F_GETFL) }
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags { try Errno.retryingSyscall { fcntl(rawValue, F_SETFL, wanted) } }
    }

    /// The pending socket error (`SO_ERROR`), cleared by reading it; `nil` when there is none.
    package func pendingError() throws(Errno) -> Errno? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        try Errno.retryingSyscall { getsockopt(rawValue, SOL_SOCKET, SO_ERROR, &value, &length) }
        return value == 0 ? nil : Errno(rawValue: value)
    }
}

extension Errno {
    /// `EAGAIN`/`EWOULDBLOCK`: a non-blocking call found nothing to do (the same value on Linux).
    var isWouldBlock: Bool { self == .wouldBlock || rawValue == EWOULDBLOCK }
}

extension Duration {
    /// Whole milliseconds, rounded up so a short positive wait never becomes a zero-time poll.
    var roundedUpMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let millis = seconds.multipliedReportingOverflow(by: 1000)
        guard !millis.overflow else { return seconds < 0 ? Int64.min : Int64.max }
        let fraction = attoseconds / 1_000_000_000_000_000
        let remainder = attoseconds % 1_000_000_000_000_000
        return millis.partialValue + fraction + (remainder > 0 ? 1 : 0)
    }
}
