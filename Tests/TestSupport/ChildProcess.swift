import Bluetooth
import CTestSupport
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process for the tests (a Bumble peer, `zcat` of an oracle), spawned so that nothing
/// of this process leaks into it and every wait on it is bounded.
///
/// Why not Foundation's `Process`: on Linux it closes the parent's descriptors in the child by
/// listing them *before* `posix_spawn`, so a pipe or socket that another test thread opens in
/// between is inherited, and its exit-notification socket has no close-on-exec either; waiting
/// for a child (its pipe's end, its exit) can then last as long as an unrelated long-lived
/// sibling holds the inherited copy. A CI run froze twice for about a minute, each time until a
/// Bumble peer's 60 s or 120 s lifetime ended, while the waits held both Swift concurrency
/// threads of a 2-core machine — most likely this (not reproduced directly). Here every pipe is
/// opened close-on-exec and the child closes every descriptor above 2 itself
/// (`posix_spawn_file_actions_addclosefrom_np`), whatever other threads open meanwhile, and
/// every wait is bounded.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `pid` and stdout are set once; `standardInput` is only changed by the test that
    // owns the child (closeStandardInput), and the exit status is behind a Mutex.

    public enum Output: Sendable {
        /// A pipe this side reads (`standardOutput`).
        case pipe
        /// This process's own descriptor (stderr for diagnostics).
        case inherit
        /// /dev/null.
        case null
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    public let pid: pid_t
    /// The write end of the child's stdin, or -1 when stdin is /dev/null.
    public private(set) var standardInput: Int32
    /// The read end of the child's stdout, or -1 when stdout is not a pipe.
    public let standardOutput: Int32
    public let name: String

    /// The `waitpid` status word once reaped (-1: reaped elsewhere).
    private let status = Mutex<Int32?>(nil)

    /// Spawns `arguments[0]` (looked up in PATH) with the others as its arguments.
    public init(
        _ arguments: [String], stdinPipe: Bool = false, standardOutput output: Output = .pipe,
        standardError error: Output = .inherit
    ) throws {
        precondition(!arguments.isEmpty)
        Self.ignoreBrokenPipes
        name = arguments[0]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }

        var input: [Int32] = [-1, -1]
        var outputPipe: [Int32] = [-1, -1]
        func closeAll() {
            for descriptor in input + outputPipe where descriptor >= 0 { close(descriptor) }
        }
        if stdinPipe {
            let result = ctest_pipe_cloexec(&input)
            guard result == 0 else { throw Failure("pipe2: errno \(-result)") }
            posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        switch output {
        case .pipe:
            let result = ctest_pipe_cloexec(&outputPipe)
            guard result == 0 else {
                closeAll()
                throw Failure("pipe2: errno \(-result)")
            }
            posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        case .null: posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        case .inherit: break
        }
        switch error {
        case .null: posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        case .inherit, .pipe: break
        }
        // After the dup2s: the child keeps 0, 1 and 2 and nothing else.
        let closing = ctest_spawn_addclosefrom(&actions, 3)
        guard closing == 0 else {
            closeAll()
            throw Failure("posix_spawn_file_actions_addclosefrom_np: errno \(closing)")
        }

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        // The child starts with no signal blocked and SIGPIPE, SIGINT and SIGTERM at their
        // defaults: this process ignores SIGPIPE, and its threads (the concurrency pool's) block
        // signals, which a child would otherwise inherit (a SIGTERM to a broker then waited
        // forever).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGPIPE, SIGINT, SIGTERM] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        // `environ` is read while no test thread changes the environment (setenv may move it:
        // a spawn during a setenv failed once with EFAULT under the full suite).
        let result = withProcessEnvironment { posix_spawnp(&child, arguments[0], &actions, &attributes, argv, environ) }
        // The child's ends belong to the child now.
        if input[0] >= 0 { close(input[0]) }
        if outputPipe[1] >= 0 { close(outputPipe[1]) }
        guard result == 0 else {
            if input[1] >= 0 { close(input[1]) }
            if outputPipe[0] >= 0 { close(outputPipe[0]) }
            throw Failure("cannot start \(arguments[0]): errno \(result)")
        }
        pid = child
        standardInput = input[1]
        standardOutput = outputPipe[0]
    }

    /// A write to a child that has exited fails with EPIPE instead of killing the test process.
    private static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    deinit {
        kill()
        if standardInput >= 0 { close(standardInput) }
        if standardOutput >= 0 { close(standardOutput) }
    }

    /// Writes `text` to the child's stdin (blocking; the child reads it).
    public func write(_ text: String) throws {
        try write(bytes: Array(text.utf8))
    }

    /// Writes `bytes` to the child's stdin (blocking; the child reads it).
    public func write(bytes: [UInt8]) throws {
        var bytes = bytes
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(standardInput, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure("\(name): writing to stdin failed: errno \(errno)")
            }
            offset += written
        }
        bytes.removeAll()
    }

    /// Closes the child's stdin (the Bumble scripts exit when it closes).
    public func closeStandardInput() {
        if standardInput >= 0 {
            close(standardInput)
            standardInput = -1
        }
    }

    /// The exit status (`waitpid` status word) if the child has ended, reaping it; nil while it runs.
    public func poll() -> Int32? {
        status.withLock { status in
            if let status { return status }
            var word: Int32 = 0
            let result = waitpid(pid, &word, WNOHANG)
            if result == pid {
                status = word
            } else if result < 0 && errno == ECHILD {
                status = -1
            }
            return status
        }
    }

    /// Waits at most `timeout` seconds for the child to end; its exit code (128 + signal when
    /// killed), or nil when it still runs. The wait holds a thread of its own (``offThePool(_:)``).
    public func wait(timeout: Double) async -> Int32? {
        (try? await offThePool { self.waitBlocking(timeout: timeout) }) ?? nil
    }

    /// ``wait(timeout:)`` holding the calling thread: only for callers that are not on a Swift
    /// concurrency thread (or that wait for a child already killed).
    public func waitBlocking(timeout: Double) -> Int32? {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while true {
            if let word = poll() { return Self.exitCode(word) }
            if ContinuousClock.now >= deadline { return nil }
            usleep(5_000)
        }
    }

    /// SIGKILL (if still running) and reap; bounded.
    public func kill() {
        guard poll() == nil else { return }
        _ = Glibc.kill(pid, SIGKILL)
        _ = waitBlocking(timeout: 5)
    }

    /// Reads stdout to its end, waiting at most `timeout` seconds (on a thread of its own).
    public func readToEnd(within timeout: Double) async throws -> [UInt8] {
        try await offThePool {
            var result: [UInt8] = []
            try self.read(into: &result, until: { _ in false }, within: timeout, awaited: "its output to end", endIsDone: true)
            return result
        }
    }

    /// Reads stdout until `done` holds for everything read (`prefix`, what an earlier call
    /// returned, then what comes now), waiting at most `timeout` seconds (on a thread of its
    /// own); returns everything.
    public func read(
        after prefix: [UInt8] = [], until done: @escaping @Sendable ([UInt8]) -> Bool, within timeout: Double
    ) async throws -> [UInt8] {
        try await offThePool {
            var result = prefix
            try self.read(into: &result, until: done, within: timeout, awaited: "what was awaited", endIsDone: false)
            return result
        }
    }

    /// Appends what stdout gives to `result` until `done` holds, or (with `endIsDone`) until
    /// its end; a timeout, or an end that is not done, throws.
    private func read(
        into result: inout [UInt8], until done: ([UInt8]) -> Bool, within timeout: Double, awaited: String, endIsDone: Bool
    ) throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !done(result) {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw Failure("\(name) did not write \(awaited) within \(timeout) s") }
            var entry = pollfd(fd: standardOutput, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&entry, 1, Int32(min(1000, left.components.seconds * 1000 + 1)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { Glibc.read(standardOutput, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw Failure("\(name): reading stdout failed: errno \(errno)")
            }
            if count == 0 {
                if endIsDone { return }
                throw Failure("\(name) closed its output before writing \(awaited)")
            }
            result += chunk[0..<count]
        }
    }

    /// Runs `arguments` to completion: its stdout and exit code, bounded by `timeout`; the
    /// waits hold a thread of their own.
    public static func run(_ arguments: [String], timeout: Double = 60) async throws -> (code: Int32, output: [UInt8]) {
        try await offThePool { try runBlocking(arguments, timeout: timeout) }
    }

    /// ``run(_:timeout:)`` holding the calling thread: only for callers on a thread of their own.
    public static func runBlocking(_ arguments: [String], timeout: Double = 60) throws -> (code: Int32, output: [UInt8]) {
        let child = try ChildProcess(arguments)
        var output: [UInt8] = []
        try child.read(into: &output, until: { _ in false }, within: timeout, awaited: "its output to end", endIsDone: true)
        guard let code = child.waitBlocking(timeout: timeout) else {
            throw Failure("\(arguments[0]) did not exit within \(timeout) s")
        }
        return (code, output)
    }

    private static func exitCode(_ word: Int32) -> Int32 {
        if word < 0 { return -1 }
        let signal = word & 0x7F
        return signal == 0 ? (word >> 8) & 0xFF : 128 + signal
    }
}

/// Heap bytes in use in this process, for leak measurements: glibc's mallinfo2, or under
/// AddressSanitizer the sanitizer's count of allocated bytes (freed memory held in its
/// quarantine, which stays resident, is not counted).
public func heapBytesInUse() -> Int { Int(ctest_heap_in_use()) }

/// Heap growth since `before`, for leak bounds in a process where other suites allocate in
/// parallel: samples the heap up to `attempts` times, 100 ms apart, and returns the smallest
/// growth seen, stopping as soon as it is under `limit`. A neighbour's passing allocation is
/// thereby not taken for a leak; memory that stays allocated still counts, so a real leak fails
/// (after the whole wait). By default 90 s of samples times TEST_TIMEOUT_SCALE: the CPU-bound
/// suites, one after another on the ``CPULane``, each hold tens of MiB while they run and run for
/// about 30 s in all — a CI run (stop 33) saw the 1 000-cycle test finish at 27 s with 16 MiB of
/// theirs still allocated after a 5 s wait.
public func settledHeapGrowth(since before: Int, below limit: Int, attempts: Int = Int(900 * testTimeoutScale)) async -> Int {
    await settledMinimum(attempts: attempts, until: { $0 < limit }) { heapBytesInUse() - before }
}

/// The smallest reading of `measure`, taken up to `attempts` times, 100 ms apart, stopping as
/// soon as one satisfies `until`: for process-wide figures (heap bytes, open descriptors) that
/// neighbour suites move up and down while a test measures its own. No event says such a figure
/// changed, so this samples, and only while the figure is still above what the test expects.
public func settledMinimum(attempts: Int, until acceptable: (Int) -> Bool, _ measure: () -> Int) async -> Int {
    var smallest = measure()
    var attempt = 1
    while !acceptable(smallest) && attempt < attempts {
        try? await Task.sleep(for: .milliseconds(100))
        smallest = min(smallest, measure())
        attempt += 1
    }
    return smallest
}

/// True when this process runs under AddressSanitizer (its allocator, with redzones and a
/// quarantine of freed memory, serves the heap).
public let runsUnderAddressSanitizer: Bool = ctest_address_sanitizer_heap() != 0

/// Runs the blocking `body` on a thread of its own and awaits its result. A test must never
/// block a Swift concurrency thread: on a 2-core machine the pool has two, and with both held
/// (a child's output awaited, a tshark run) every task of the test process stalls — a CI run's
/// sanitized suite saw 25 tests' 30 s command timeouts expire at once while their in-process
/// fake controllers could not run.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue(label: "test-blocking-wait").async { continuation.resume(with: Result { try body() }) }
    }
}

/// Runs `body` (a `setenv`, `unsetenv`, or a spawn reading `environ`) while no other thread reads
/// or changes the environment (the package's one lock: in-process runs read it meanwhile).
public func withProcessEnvironment<T>(_ body: () throws -> T) rethrows -> T {
    try EnvironmentLock.withLock { try body() }
}
