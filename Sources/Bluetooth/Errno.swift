#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A POSIX error number, as returned (negated) by the CHCI shim or read from `errno`.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The current thread's `errno`.
    public static var current: Errno { Errno(rawValue: errno) }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let permissionDenied = Errno(rawValue: EPERM)
    public static let accessDenied = Errno(rawValue: EACCES)
    public static let addressFamilyNotSupported = Errno(rawValue: EAFNOSUPPORT)
    public static let noSuchDevice = Errno(rawValue: ENODEV)
    public static let busy = Errno(rawValue: EBUSY)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    public static let notConnected = Errno(rawValue: ENOTCONN)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    public static let inProgress = Errno(rawValue: EINPROGRESS)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let hostDown = Errno(rawValue: EHOSTDOWN)
    public static let networkDown = Errno(rawValue: ENETDOWN)

    /// `strerror` text, e.g. "Address family not supported by protocol".
    public var description: String {
        guard let text = strerror(rawValue) else { return "errno \(rawValue)" }
        return String(cString: text)
    }

    /// Runs `body` again while it fails with `EINTR`; other failures are thrown.
    /// `body` returns a non-negative result, or `-errno` on failure (the CHCI convention).
    @discardableResult
    public static func retryingOnInterrupt(_ body: () -> Int32) throws(Errno) -> Int32 {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = Errno(rawValue: -result)
            if code == .interrupted { continue }
            throw code
        }
    }

    /// As `retryingOnInterrupt`, for system calls that return -1 and set `errno`.
    @discardableResult
    public static func retryingSyscall<T: BinaryInteger>(_ body: () -> T) throws(Errno) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = Errno.current
            if code == .interrupted { continue }
            throw code
        }
    }
}
