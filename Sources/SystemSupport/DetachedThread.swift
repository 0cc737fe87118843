import Bluetooth
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A POSIX thread of its own for blocking work (a terminal read, a socket poll loop): not a
/// worker of the Swift concurrency pool, which a blocked worker would starve.
package enum DetachedThread {
    /// Starts a detached thread running `body`; the thread ends when `body` returns.
    /// Throws the `pthread_create` error (`EAGAIN`: no thread to be had) without running `body`.
    package static func start(_ body: @escaping @Sendable () -> Void) throws(Errno) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
                return nil
            }, box)
        guard created == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw Errno(rawValue: created)
        }
        let detached = pthread_detach(thread)
        // Only ESRCH/EINVAL, impossible for a thread just created and not joined: say so loudly
        // in debug builds; in release the thread still runs and ends, its resources kept.
        assert(detached == 0, "pthread_detach: \(Errno(rawValue: detached))")
    }

    private final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
