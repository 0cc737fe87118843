import Synchronization
import Testing
import TestSupport

@testable import GATTClientCLI

#if canImport(Glibc)
    import Glibc
#endif

/// The relay behind every command's Ctrl-C, on SIGUSR2 (SIGINT here would reach the other
/// in-process runs of the suite): the handler is in place when `add` returns, so a signal raised
/// at once is delivered — the dispatch signal source it replaced was armed later, and a Ctrl-C
/// right after start could be lost — and the last watch to go puts the previous action back.
@Suite("gattclient: signals onto a pipe", .serialized)
struct SignalRelayTests {
    @Test func aSignalSentRightAfterStartReachesEveryWatch() async throws {
        let relay = SignalRelay(numbers: [SIGUSR2])
        _ = signal(SIGUSR2, SIG_IGN)
        defer { _ = signal(SIGUSR2, SIG_DFL) }
        let first = Mutex<[Int32]>([]), second = Mutex<[Int32]>([])
        let a = Token(), b = Token()
        for round in 0..<20 {
            relay.add(ObjectIdentifier(a)) { number in first.withLock { $0.append(number) } }
            relay.add(ObjectIdentifier(b)) { number in second.withLock { $0.append(number) } }
            // Process-directed, as a Ctrl-C (raise would pend on this thread: the pool's threads
            // block signals); one at a time (a signal sent while one is pending merges with it).
            kill(getpid(), SIGUSR2)
            try await withTimeout(30, "round \(round)'s signal") {
                while first.withLock({ $0.count }) < round + 1 || second.withLock({ $0.count }) < round + 1 {
                    try await Task.sleep(for: .milliseconds(2))
                }
            }
            relay.remove(ObjectIdentifier(a))
            // One watch left: the handler stays.
            #expect(!Self.isIgnored(SIGUSR2))
            relay.remove(ObjectIdentifier(b))
            #expect(Self.isIgnored(SIGUSR2), "the action before the first watch is back")
        }
        #expect(first.withLock { $0 } == Array(repeating: SIGUSR2, count: 20))
        #expect(second.withLock { $0 } == Array(repeating: SIGUSR2, count: 20))
    }

    final class Token: Sendable {}

    /// Whether `number`'s action is SIG_IGN (function pointers compared as addresses).
    static func isIgnored(_ number: Int32) -> Bool {
        var action = sigaction()
        sigaction(number, nil, &action)
        return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}
