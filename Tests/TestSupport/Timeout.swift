#if canImport(Glibc)
    import Glibc
#endif

/// Why ``withTimeout(_:_:_:)`` gave up.
public struct TestTimeout: Error, CustomStringConvertible {
    public var what: String
    public var seconds: Double
    public var description: String { "timed out after \(seconds) s: \(what)" }

    public init(what: String, seconds: Double) {
        self.what = what
        self.seconds = seconds
    }
}

/// How much longer every bound is in this run: `TEST_TIMEOUT_SCALE` (a positive number, 1 when
/// unset). `fuzz/sanitize-tests.sh` sets 4: under AddressSanitizer, with the suite's Bumble
/// peers starting on two cores, nothing of the test process ran for up to 20 s.
public let testTimeoutScale: Double = {
    guard let text = withProcessEnvironment({ getenv("TEST_TIMEOUT_SCALE").map({ String(cString: $0) }) }), let scale = Double(text),
        scale > 0, scale.isFinite
    else { return 1 }
    return scale
}()

/// Runs `body`, failing with ``TestTimeout`` when it takes longer than `seconds` of wall clock
/// (times ``testTimeoutScale``; generous by default: the suites run in parallel on two cores).
/// Every wait in the tests is bounded through this one helper.
public func withTimeout<T: Sendable>(
    _ seconds: Double = 30, _ what: String = "the operation", _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let seconds = seconds * testTimeoutScale
    return try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TestTimeout(what: what, seconds: seconds)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
