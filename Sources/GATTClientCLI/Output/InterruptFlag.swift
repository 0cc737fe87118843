#if canImport(Glibc)
import BLE
import Glibc
#endif
import Synchronization

/// Set by SIGINT/SIGTERM so that long-running commands stop cleanly (flush output, switch a
/// device back off) instead of dying mid-write.
final class InterruptFlag: Sendable {
    static let shared = InterruptFlag()
    private let flag = Atomic<Bool>(false)

    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }

    /// Installs the handlers (idempotent) and returns the flag.
    static func install() -> InterruptFlag {
        signal(SIGINT) { _ in InterruptFlag.shared.set() }
        signal(SIGTERM) { _ in InterruptFlag.shared.set() }
        return shared
    }
}
