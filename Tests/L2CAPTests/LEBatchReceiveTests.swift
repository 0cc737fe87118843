import ATT
import Bluetooth
import HCI
import Testing

@testable import L2CAP

/// `UserSpaceATTChannel.receiveAll(into:)` (the batch path `ATTConnection` reads) and
/// `ATTConnection` over it: order, bound, end, failure, cancellation, indication hand-over.
@Suite struct LEBatchReceiveTests {
    static func notification(_ value: UInt8) -> [UInt8] { [0x1B, 0x21, 0x00, value] }

    @Test func receiveAllTakesEveryBufferedSDUInOrderThenEndsAfterThem() async throws {
        let host = LEUserSpaceChannelTests.host(buffered: 8)
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        for value: UInt8 in 1...5 { host.receive(leIncoming(handle: 0x40, cid: 4, Self.notification(value))) }
        var batch: [[UInt8]] = []
        #expect(try await channel.receiveAll(into: &batch))
        #expect(batch == (1...5).map { Self.notification($0) })
        // Appends to what the caller kept; the user closes: buffered SDUs first, then the end.
        host.receive(leIncoming(handle: 0x40, cid: 4, Self.notification(6)))
        await channel.close()
        #expect(try await channel.receiveAll(into: &batch))
        #expect(batch.count == 6 && batch.last == Self.notification(6))
        batch.removeAll()
        #expect(try await channel.receiveAll(into: &batch) == false)
        #expect(batch.isEmpty)
    }

    @Test func receiveAllWaitsForTheNextSDU() async throws {
        let host = LEUserSpaceChannelTests.host()
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        let reader = Task {
            var batch: [[UInt8]] = []
            _ = try await channel.receiveAll(into: &batch)
            return batch
        }
        host.receive(leIncoming(handle: 0x40, cid: 4, Self.notification(7)))
        let batch = try await reader.value
        #expect(batch.first == Self.notification(7))
    }

    @Test func aDisconnectIsThrownAfterTheBufferedSDUs() async throws {
        let host = LEUserSpaceChannelTests.host()
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        host.receive(leIncoming(handle: 0x40, cid: 4, Self.notification(1)))
        host.receive(LEUserSpaceChannelTests.disconnection(0x40, reason: 0x08))
        var batch: [[UInt8]] = []
        #expect(try await channel.receiveAll(into: &batch))
        #expect(batch == [Self.notification(1)])
        await #expect(throws: L2CAPError.disconnected(handle: 0x40, reason: HCIStatus(rawValue: 0x08))) {
            var more: [[UInt8]] = []
            _ = try await channel.receiveAll(into: &more)
        }
        // Thrown once, as a stream does; then the end.
        var after: [[UInt8]] = []
        #expect(try await channel.receiveAll(into: &after) == false)
    }

    @Test func theBoundStillFailsTheChannelInsteadOfLosingSDUs() async throws {
        let host = LEUserSpaceChannelTests.host(buffered: 3)
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        for value: UInt8 in 1...4 { host.receive(leIncoming(handle: 0x40, cid: 4, Self.notification(value))) }
        var batch: [[UInt8]] = []
        #expect(try await channel.receiveAll(into: &batch))
        #expect(batch == (1...3).map { Self.notification($0) })
        await #expect(throws: L2CAPError.receiveQueueOverflow(handle: 0x40, limit: 3)) {
            var more: [[UInt8]] = []
            _ = try await channel.receiveAll(into: &more)
        }
    }

    @Test func cancellingAWaitingReaderEndsIt() async throws {
        let host = LEUserSpaceChannelTests.host()
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        let reader = Task {
            var batch: [[UInt8]] = []
            return try await channel.receiveAll(into: &batch)
        }
        reader.cancel()
        #expect(try await reader.value == false)
    }

    /// A whole batch (notifications around an indication) reaches `inbound` in order; the
    /// indication is confirmed only once the consumer's `next()` has handed it over.
    @Test func connectionDeliversABatchInOrderAndConfirmsAtHandOver() async throws {
        let host = LEUserSpaceChannelTests.host(credits: 4)
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        let connection = ATTConnection(channel: channel)
        var inbound = connection.inbound.makeAsyncIterator()
        let indication: [UInt8] = [0x1D, 0x25, 0x00, 0x42]
        for sdu in [Self.notification(1), Self.notification(2), indication, Self.notification(3)] {
            host.receive(leIncoming(handle: 0x40, cid: 4, sdu))
        }
        #expect(await inbound.next()?.encoded == Self.notification(1))
        #expect(await inbound.next()?.encoded == Self.notification(2))
        for _ in 0..<20 { await Task.yield() }
        #expect(host.packetsInFlight(handle: 0x40) == 0, "confirmed before the hand-over")
        #expect(await inbound.next()?.encoded == indication)
        var outputs = host.outputs.makeAsyncIterator()
        #expect(await outputs.next() == .acl(ACLDataPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: leFrame(cid: 4, [0x1E]))))
        #expect(await inbound.next()?.encoded == Self.notification(3))
        await connection.close()
        #expect(await inbound.next() == nil)
    }
}
