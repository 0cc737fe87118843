import ATT
import Bluetooth
import Foundation
import GATT
import Testing
import TestSupport

/// Open file descriptors of this process (/proc/self/fd).
func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// The fewest descriptors open over a bounded wait (up to 30 s × TEST_TIMEOUT_SCALE) until the
/// count is at most `limit`: the suites running beside a test open and close descriptors of
/// their own (a full run of the suite saw 90 → 93 at the moment of counting), while a leak of the test's would
/// keep the count above its limit for good.
func settledDescriptorCount(atMost limit: Int) async -> Int {
    await settledMinimum(attempts: Int(300 * testTimeoutScale), until: { $0 <= limit }) { openDescriptorCount() }
}

@Suite("Robustness: connect/disconnect cycles")
struct RobustnessCycleTests {
    /// One connection to our GATT server: connect, read, discover, disconnect.
    func cycle(_ host: GATTServerHost, linkLoss: Bool) async throws {
        let (ours, theirs) = InMemoryATTChannel.pair()
        let (serverConnection, _) = await host.serve(theirs)
        let client = GATTClient(connection: ATTConnection(channel: ours), configuration: .manual)
        #expect(try await client.read(handle: 0x0003) == Array("Peer".utf8))
        _ = try await client.run(DiscoverAllPrimaryServices())
        if linkLoss { ours.fail("link lost") } else { await client.close() }
        _ = await serverConnection.waitUntilClosed()
        _ = await client.connection.waitUntilClosed()
    }

    @Test("1 000 connect/disconnect cycles: no descriptor, client-state or memory growth")
    func thousandCycles() async throws {
        let host = GATTServerHost(server: try PeerDatabase.server())
        // Warm-up, inside the same bounded wait as the measured cycles: the runtime opens its
        // timer descriptors lazily, on first use, and they are not a leak of the cycles.
        try await withTimeout(60, "warm-up cycles") {
            for index in 0..<50 { try await self.cycle(host, linkLoss: index % 2 == 1) }
        }
        let descriptorsBefore = openDescriptorCount()
        let heapBefore = heapBytesInUse()
        let residentBefore = residentBytes()
        try await withTimeout(600, "1 000 cycles") {
            for index in 0..<1_000 { try await self.cycle(host, linkLoss: index % 2 == 1) }
        }
        // The server forgets a client when its bearer closes (asynchronously): wait, bounded.
        let clients = try await withTimeout(30, "the server forgetting its clients") { () async -> Int in
            while await !host.state.connectedClients.isEmpty { try? await Task.sleep(for: .milliseconds(10)) }
            return 0
        }
        let descriptorsAfter = await settledDescriptorCount(atMost: descriptorsBefore)
        let heapLimit = 8 * 1_048_576
        let heapAfter = heapBefore + (await settledHeapGrowth(since: heapBefore, below: heapLimit))
        let residentAfter = residentBytes()
        print(
            "1000 cycles: descriptors \(descriptorsBefore) → \(descriptorsAfter), heap in use \(heapBefore / 1024) KiB → \(heapAfter / 1024) KiB, "
                + "resident \(residentBefore / 1_048_576) MiB → \(residentAfter / 1_048_576) MiB, clients left \(clients)"
        )
        #expect(descriptorsAfter <= descriptorsBefore, "descriptors leaked")
        // The heap's count of bytes in use, not the resident set (freed memory stays resident in
        // malloc's arenas and AddressSanitizer's quarantine). Other suites allocate meanwhile; a
        // leak of one small object per cycle would add its size × 1 000.
        #expect(heapAfter - heapBefore < heapLimit, "heap in use grew by \((heapAfter - heapBefore) / 1024) KiB")
    }
}
