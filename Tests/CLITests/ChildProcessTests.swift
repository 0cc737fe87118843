import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The test helper that runs Bumble peers and `zcat`: children spawned at the same moment from
/// several threads must not inherit one another's pipes, or a short child's output never ends
/// while a long-lived sibling (a 60 s Bumble peer) holds its write end. Foundation's `Process`
/// has that race on Linux (it lists descriptors to close before spawning); a CI run that froze
/// until Bumble peers exited most likely met it.
@Suite struct ChildProcessTests {
    @Test func concurrentSpawnsNeverShareAPipe() async throws {
        let failures = FailureList()
        let longLived = ChildList()
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for round in 0..<12 {
                    do {
                        // A sibling that outlives the test unless killed, spawned between the others.
                        if round % 3 == 0 { longLived.append(try ChildProcess(["sleep", "600"], standardOutput: .null)) }
                        let started = ContinuousClock.now
                        let (code, output) = try ChildProcess.runBlocking(["echo", "round \(round)"], timeout: 10)
                        if code != 0 || output != Array("round \(round)\n".utf8) {
                            failures.append("echo: code \(code), output \(output)")
                        }
                        if ContinuousClock.now - started > .seconds(5) {
                            failures.append("echo took \(ContinuousClock.now - started): a sibling held its pipe")
                        }
                    } catch {
                        failures.append("\(error)")
                    }
                }
            }
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                group.wait()
                continuation.resume()
            }
        }
        let children = longLived.all
        #expect(children.count == 16)
        for child in children {
            #expect(child.poll() == nil, "still running until killed")
            child.kill()
            #expect(await child.wait(timeout: 5) == 128 + SIGKILL)
        }
        #expect(failures.all.isEmpty, "\(failures.all)")
    }

    @Test func exitCodesAndAMissingProgram() async throws {
        #expect(try await ChildProcess.run(["sh", "-c", "exit 3"]).code == 3)
        #expect(throws: ChildProcess.Failure.self) { try ChildProcess(["/nonexistent/program"]) }
    }

    @Test func standardInputReachesTheChildAndClosingItEndsIt() async throws {
        let cat = try ChildProcess(["cat"], stdinPipe: true)
        try cat.write("hello\n")
        cat.closeStandardInput()
        #expect(try await cat.readToEnd(within: 10) == Array("hello\n".utf8))
        #expect(await cat.wait(timeout: 10) == 0)
    }
}

private final class FailureList: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func append(_ item: String) { lock.withLock { items.append(item) } }
    var all: [String] { lock.withLock { items } }
}

private final class ChildList: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [ChildProcess] = []
    func append(_ item: ChildProcess) { lock.withLock { items.append(item) } }
    var all: [ChildProcess] { lock.withLock { items } }
}
