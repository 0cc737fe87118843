import CTestSupport
import Testing
import TestSupport

/// The `.cpuBound` trait (TestSupport/CPULane.swift): a marked test runs on the lane, before and
/// after it suspends, a parameterized one in every case, a suite's mark reaches its tests; an
/// unmarked test stays on the pool.
@Suite struct CPULaneTests {
    @Test(.cpuBound) func aMarkedTestRunsOnTheLane() async {
        #expect(CPULane.isCurrent)
        #expect(ctest_this_thread_niceness() == CPULane.niceness, "the lane's thread alone is niced")
        await Task.yield()
        try? await Task.sleep(for: .milliseconds(1))
        #expect(CPULane.isCurrent, "after suspending")
    }

    @Test(.cpuBound, arguments: [1, 2, 3]) func everyCaseRunsOnTheLane(_ value: Int) {
        #expect(CPULane.isCurrent, "case \(value)")
    }

    @Test func anUnmarkedTestStaysOnThePool() async {
        #expect(!CPULane.isCurrent)
        #expect(ctest_this_thread_niceness() == 0)
    }

    /// A task a marked test starts (a library's long-lived reader, a timer) runs on the pool,
    /// not behind the lane's work.
    @Test(.cpuBound) func tasksItStartsRunOnThePool() async {
        #expect(await Task { CPULane.isCurrent }.value == false)
        #expect(await Task.detached { CPULane.isCurrent }.value == false)
    }

    @Suite(.cpuBound) struct MarkedSuite {
        @Test func aTestOfAMarkedSuiteRunsOnTheLane() {
            #expect(CPULane.isCurrent)
        }
    }
}

