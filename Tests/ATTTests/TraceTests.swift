import Bluetooth
import Testing

@testable import ATT

/// The text-trace fixture format and the scripted channel.
@Suite("Trace format and scripted channel", .timeLimit(.minutes(1)))
struct TraceFormatTests {
    @Test func parsesDirectionsHexCommentsAndBlankLines() throws {
        let trace = try ATTTrace(
            parsing: """
                # a comment line

                > 02 05 02        # EXCHANGE_MTU_REQ
                <03f700
                  < 0b:41:42\t
                >0x0a0300\r
                """)
        #expect(
            trace.entries == [
                .init(line: 3, direction: .hostToPeer, bytes: [0x02, 0x05, 0x02]),
                .init(line: 4, direction: .peerToHost, bytes: [0x03, 0xF7, 0x00]),
                .init(line: 5, direction: .peerToHost, bytes: [0x0B, 0x41, 0x42]),
                .init(line: 6, direction: .hostToPeer, bytes: [0x0A, 0x03, 0x00]),
            ])
        #expect(try ATTTrace(parsing: trace.text).entries.map(\.bytes) == trace.entries.map(\.bytes))
    }

    @Test(arguments: [
        ("> 0a 03 00\nhello", 2),
        ("> 0a 0", 1),
        ("\n\n<", 3),
        ("> 0a zz", 1),
        ("< 13\n>   # nothing", 2),
    ])
    func malformedLinesNameTheirNumber(text: String, line: Int) {
        #expect {
            try ATTTrace(parsing: text)
        } throws: { error in
            (error as? ATTTrace.ParseError)?.line == line
        }
    }

    @Test func scriptedChannelDeliversLeadingAndFollowingPeerLines() async throws {
        let channel = try ScriptedATTChannel(
            traceText: """
                < 1b 01 00 aa
                > 0a 03 00
                < 0b 01
                < 1b 01 00 bb
                > 0a 04 00
                """)
        var incoming = channel.incoming.makeAsyncIterator()
        #expect(try await incoming.next() == [0x1B, 0x01, 0x00, 0xAA])
        try await channel.send([0x0A, 0x03, 0x00])
        #expect(try await incoming.next() == [0x0B, 0x01])
        #expect(try await incoming.next() == [0x1B, 0x01, 0x00, 0xBB])
        #expect(!channel.isComplete)
        try await channel.send([0x0A, 0x04, 0x00])
        #expect(channel.isComplete)
        #expect(channel.sentSDUs == [[0x0A, 0x03, 0x00], [0x0A, 0x04, 0x00]])
    }

    @Test func scriptedChannelMismatchNamesTheLineAndBothPDUs() async throws {
        let channel = try ScriptedATTChannel(traceText: "# header\n> 0a 03 00\n< 0b 01\n")
        await #expect(
            throws: ATTChannelError(
                .scriptMismatch(position: "trace line 2", expected: [0x0A, 0x03, 0x00], actual: [0x0A, 0x04, 0x00]))
        ) {
            try await channel.send([0x0A, 0x04, 0x00])
        }
        #expect(channel.failure?.description == "trace line 2: expected > 0a0300, host sent > 0a0400")
        // The incoming stream ends with the same error.
        var incoming = channel.incoming.makeAsyncIterator()
        await #expect(throws: ATTChannelError.self) { _ = try await incoming.next() }
    }

    @Test func scriptedChannelRefusesSDUsPastTheEnd() async throws {
        let channel = try ScriptedATTChannel(traceText: "> 0a 03 00\n")
        try await channel.send([0x0A, 0x03, 0x00])
        await #expect(throws: ATTChannelError(.scriptExhausted(actual: [0x0A, 0x03, 0x00]))) {
            try await channel.send([0x0A, 0x03, 0x00])
        }
    }

    @Test func anyOrderMatchingServesRequestsInAnotherOrder() async throws {
        let channel = try ScriptedATTChannel(
            traceText: """
                > 0a 03 00
                < 0b 01
                > 0a 04 00
                < 0b 02
                < 1b 25 00 aa
                > 0a 03 00
                < 0b 03
                """, matching: .anyOrder)
        var incoming = channel.incoming.makeAsyncIterator()
        try await channel.send([0x0A, 0x04, 0x00])
        #expect(try await incoming.next() == [0x0B, 0x02])
        #expect(try await incoming.next() == [0x1B, 0x25, 0x00, 0xAA])
        // Identical requests take the recorded answers in order.
        try await channel.send([0x0A, 0x03, 0x00])
        #expect(try await incoming.next() == [0x0B, 0x01])
        try await channel.send([0x0A, 0x03, 0x00])
        #expect(try await incoming.next() == [0x0B, 0x03])
        #expect(channel.isComplete)
        await #expect(throws: ATTChannelError(.scriptNoMatch(actual: [0x0A, 0x03, 0x00]))) {
            try await channel.send([0x0A, 0x03, 0x00])
        }
    }

    @Test func capturePositionsAreNamedAsRecords() async throws {
        let trace = ATTTrace(entries: [.init(line: 57, direction: .hostToPeer, bytes: [0x0A, 0x03, 0x00])])
        let channel = ScriptedATTChannel(trace: trace, positionLabel: "record")
        await #expect(throws: ATTChannelError.self) { try await channel.send([0x0A]) }
        #expect(channel.failure?.description == "record 57: expected > 0a0300, host sent > 0a")
        #expect(channel.remainingEntries == trace.entries)
    }

    @Test func inMemoryPairCarriesBothWaysAndClosesBothEnds() async throws {
        let (a, b) = InMemoryATTChannel.pair()
        try await a.send([1])
        try await b.send([2])
        var fromA = b.incoming.makeAsyncIterator()
        var fromB = a.incoming.makeAsyncIterator()
        #expect(try await fromA.next() == [1])
        #expect(try await fromB.next() == [2])
        await b.close()
        #expect(try await fromA.next() == nil)
        #expect(try await fromB.next() == nil)
        await #expect(throws: ATTChannelError(.closed)) { try await a.send([3]) }
    }

    @Test func manualClockFiresDueTimersInOrderAndSkipsCancelledOnes() async {
        let clock = ManualClock()
        let (fired, sink) = AsyncStream<Int>.makeStream()
        _ = clock.schedule(after: .seconds(2)) { sink.yield(2) }
        _ = clock.schedule(after: .seconds(1)) { sink.yield(1) }
        let cancelled = clock.schedule(after: .seconds(1)) { sink.yield(99) }
        _ = clock.schedule(after: .seconds(5)) { sink.yield(5) }
        cancelled.cancel()
        await clock.advance(by: .seconds(3))
        sink.finish()
        var order: [Int] = []
        for await value in fired { order.append(value) }
        #expect(order == [1, 2])
        #expect(clock.pendingTimerCount == 1)
        #expect(clock.now == .seconds(3))
    }
}
