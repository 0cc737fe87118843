import Synchronization

/// One lock for the process environment: `setenv` may move `environ` while another thread reads
/// it (`getenv`, a walk of `environ`, `posix_spawn` copying it), which glibc does not guard. Every
/// read and change of the environment in this package (and its tests, which change it while
/// in-process runs read it) goes through ``withLock(_:)``.
package enum EnvironmentLock {
    private static let mutex = Mutex<Void>(())

    /// Runs `body` while no other thread of this package reads or changes the environment.
    package static func withLock<T>(_ body: () throws -> T) rethrows -> T {
        try mutex.withLock { _ in try body() }
    }
}
