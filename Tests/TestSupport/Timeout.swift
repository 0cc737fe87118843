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

/// Runs `body`, failing with ``TestTimeout`` when it takes longer than `seconds` of wall clock
/// (generous by default: the suites run in parallel on two cores). Every wait in the tests is
/// bounded through this one helper.
public func withTimeout<T: Sendable>(
    _ seconds: Double = 30, _ what: String = "the operation", _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TestTimeout(what: what, seconds: seconds)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
