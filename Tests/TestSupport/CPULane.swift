import CTestSupport
import Dispatch
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// One thread of its own, at a lower scheduling priority, for the suite's CPU-bound tests
/// (decoding every capture in every variant, mutation and random-input loops), so they never
/// hold the Swift concurrency pool nor take CPU from the tests that wait on time.
///
/// Swift Testing starts every test at once on the cooperative pool, which on this machine has two
/// threads. A test body that computes for seconds without suspending holds one of them; with a
/// few such tests under AddressSanitizer, nothing else of the process ran for 30 s at a time, and
/// tests whose peer answers on the pool (ATT's 30 s transaction timeout, in-process controllers)
/// timed out though nothing was wrong (CI, stop 32: 30 such failures). The tests marked
/// ``Trait/cpuBound`` run here instead, one job after another, on a thread the kernel schedules at
/// nice 10: it computes whenever the timed tests leave a core free.
///
/// Only tests that bound no wait in wall-clock time belong here: a lane busy with another test's
/// work, at a low priority, delays their next step.
public final class CPULane: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` is behind its Mutex; `thread` is written once, before any job runs.
    public static let shared = CPULane()

    /// The lane's niceness (`setpriority`, for its thread alone).
    public static let niceness: Int32 = 10

    private let jobs = Mutex<[UnownedJob]>([])
    private let available = DispatchSemaphore(value: 0)
    private var thread = pthread_t()

    private init() {
        let started = DispatchSemaphore(value: 0)
        let context = Unmanaged.passRetained(Start(lane: self, started: started)).toOpaque()
        let result = pthread_create(
            &thread, nil,
            { context in
                let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
                _ = ctest_nice_this_thread(CPULane.niceness)
                start.started.signal()
                start.lane.run()
                return nil
            }, context)
        precondition(result == 0, "the CPU lane's thread did not start: \(result)")
        started.wait()
    }

    private final class Start: @unchecked Sendable {
        let lane: CPULane
        let started: DispatchSemaphore
        init(lane: CPULane, started: DispatchSemaphore) {
            self.lane = lane
            self.started = started
        }
    }

    /// Whether the caller runs on the lane.
    public static var isCurrent: Bool { pthread_equal(pthread_self(), shared.thread) != 0 }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        available.signal()
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            available.wait()
            let job = jobs.withLock { $0.removeFirst() }
            job.runSynchronously(on: executor)
        }
    }
}

/// Runs a test, or every test of a suite, on the ``CPULane``.
public struct CPUBoundTrait: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(CPULane.shared) { try await function() }
    }
}

extension Trait where Self == CPUBoundTrait {
    /// The test (or every test of the suite) computes without waiting on time: it runs on the
    /// ``CPULane``, off the concurrency pool, at a lower priority.
    public static var cpuBound: Self { CPUBoundTrait() }
}
