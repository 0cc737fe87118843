import Bluetooth
import Synchronization
import Testing

@testable import ATT

/// The async driver over the in-memory channel pair: a client connection against a tiny
/// server handler, or against a raw channel end the test drives by hand.
@Suite("Bearer connection driver", .timeLimit(.minutes(1)))
struct BearerConnectionTests {
    typealias F = BearerFixtures

    /// A small server: handle 0x0003 is "SensorTag", writes are accepted, reads of other
    /// handles fail with Invalid Handle, handle 0x0009 echoes its handle.
    static let tinyServer: ATTConnection.ServerHandler = { pdu in
        switch pdu {
        case .readRequest(let request) where request.handle == 0x0003:
            return .readResponse(ReadResponse(value: Array("SensorTag".utf8)))
        case .readRequest(let request) where request.handle >= 0x0100:
            return .readResponse(ReadResponse(value: [UInt8(request.handle & 0xFF), UInt8(request.handle >> 8)]))
        case .readRequest(let request):
            return F.errorResponse(.readRequest, request.handle, .invalidHandle)
        case .writeRequest:
            return .writeResponse(WriteResponse())
        default:
            return nil
        }
    }

    @Test func clientAgainstTinyServer() async throws {
        let (a, b) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        let server = ATTConnection(channel: b, configuration: .init(rxMTU: 100))
        await server.setServerHandler(Self.tinyServer)

        #expect(try await client.exchangeMTU(517) == 100)
        #expect(await client.mtu == 100)
        #expect(await server.mtu == 100)

        #expect(try await client.request(F.read(0x0003)) == F.readResponse(Array("SensorTag".utf8)))
        #expect(try await client.request(F.write(0x0003, [1, 2])) == .writeResponse(WriteResponse()))
        await #expect(throws: ATTError.peerError(request: .readRequest, handle: 0x0042, code: .invalidHandle)) {
            try await client.request(F.read(0x0042))
        }
        await client.close()
        #expect(await server.waitUntilClosed() == "the ATT channel closed (disconnected)")
        #expect(await client.waitUntilClosed() == "closed locally")
    }

    @Test func serverHandlerGivenAtInitAnswersTheFirstRequest() async throws {
        let (a, peer) = InMemoryATTChannel.pair()
        // The peer's request is already waiting when the connection starts.
        try await peer.send([0x0A, 0x03, 0x00])
        let server = ATTConnection(channel: a, serverHandler: Self.tinyServer)
        var fromServer = peer.incoming.makeAsyncIterator()
        #expect(try await fromServer.next() == [0x0B] + Array("SensorTag".utf8))
        await server.close()
    }

    @Test func requestsSentCountsExchangeMTUAndQueuedRequests() async throws {
        let (a, b) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        let server = ATTConnection(channel: b, serverHandler: Self.tinyServer)
        _ = try await client.exchangeMTU(247)
        _ = try await client.request(F.read(0x0003))
        _ = try? await client.request(F.read(0x0004))
        #expect(await client.requestsSent == 3)
        #expect(await server.requestsSent == 0)
        await client.close()
    }

    @Test func concurrentRequestsAreSentOneAtATime() async throws {
        let (a, b) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a, configuration: .init(requestQueueLimit: 100))
        let server = ATTConnection(channel: b)
        await server.setServerHandler(Self.tinyServer)
        // A client breaking the sequential rule would make the server close the bearer.
        try await withThrowingTaskGroup(of: (UInt16, ATTPDU).self) { group in
            for handle in UInt16(0x0100)..<0x0140 {
                group.addTask { (handle, try await client.request(F.read(handle))) }
            }
            var answered = 0
            for try await (handle, response) in group {
                #expect(response == F.readResponse([UInt8(handle & 0xFF), UInt8(handle >> 8)]))
                answered += 1
            }
            #expect(answered == 0x40)
        }
        #expect(await server.isOpen)
        await client.close()
    }

    @Test func requestWithoutServerHandlerGetsRequestNotSupported() async throws {
        let (a, b) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        let server = ATTConnection(channel: b)
        await #expect(throws: ATTError.peerError(request: .readRequest, handle: 0, code: .requestNotSupported)) {
            try await client.request(F.read(3))
        }
        // Removing a handler restores that behaviour.
        await server.setServerHandler(Self.tinyServer)
        #expect(try await client.request(F.read(3)) == F.readResponse(Array("SensorTag".utf8)))
        await server.setServerHandler(nil)
        await #expect(throws: ATTError.peerError(request: .readRequest, handle: 0, code: .requestNotSupported)) {
            try await client.request(F.read(3))
        }
        await server.close()
    }

    @Test func handlerWithoutAnAnswerYieldsUnlikelyError() async {
        let (a, b) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        let server = ATTConnection(channel: b)
        await server.setServerHandler { pdu in
            // A wrong kind of answer for reads, no answer for anything else.
            if case .readRequest = pdu { return .writeResponse(WriteResponse()) }
            return nil
        }
        await #expect(throws: ATTError.peerError(request: .readRequest, handle: 0, code: .unlikelyError)) {
            try await client.request(F.read(3))
        }
        await #expect(throws: ATTError.peerError(request: .writeRequest, handle: 0, code: .unlikelyError)) {
            try await client.request(F.write(3, [0]))
        }
        await client.close()
    }

    @Test func commandsReachTheHandlerInOrder() async throws {
        let (a, b) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        let server = ATTConnection(channel: b)
        let (received, sink) = AsyncStream<ATTPDU>.makeStream()
        await server.setServerHandler { pdu in
            sink.yield(pdu)
            return nil
        }
        for index in UInt8(0)..<50 {
            try await client.send(.writeCommand(WriteCommand(handle: 0x0021, value: [index])))
        }
        var iterator = received.makeAsyncIterator()
        for index in UInt8(0)..<50 {
            #expect(await iterator.next() == .writeCommand(WriteCommand(handle: 0x0021, value: [index])))
        }
        await client.close()
    }

    @Test func notificationsArriveInOrder() async throws {
        let (a, b) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        let server = ATTConnection(channel: b)
        let count = 10_000
        for index in 0..<count {
            try await server.send(F.notification(0x0025, [UInt8(index & 0xFF), UInt8(index >> 8)]))
        }
        var received: [ATTPDU] = []
        for await pdu in client.inbound {
            received.append(pdu)
            if received.count == count { break }
        }
        let expected: [ATTPDU] = (0..<count).map { (index: Int) -> ATTPDU in
            F.notification(0x0025, [UInt8(index & 0xFF), UInt8(index >> 8)])
        }
        #expect(received == expected)
        await client.close()
    }

    @Test func indicationRoundTrip() async throws {
        let (a, b) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        let server = ATTConnection(channel: b)
        let indications = Task {
            try await server.indicate(HandleValueIndication(handle: 0x0030, value: [1]))
            try await server.indicate(HandleValueIndication(handle: 0x0030, value: [2]))
        }
        var received: [ATTPDU] = []
        for await pdu in client.inbound {
            received.append(pdu)
            if received.count == 2 { break }
        }
        try await indications.value
        #expect(received == [F.indication(0x30, [1]), F.indication(0x30, [2])])
        await client.close()
    }

    @Test func indicationIsConfirmedOnlyWhenTheConsumerTakesIt() async throws {
        let (a, peer) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        var fromClient = peer.incoming.makeAsyncIterator()
        try await peer.send([0x1D, 0x30, 0x00, 0x07])
        // A probe the bearer answers by itself: its answer proves the indication was processed.
        try await peer.send([0x3F])
        #expect(try await fromClient.next() == [0x01, 0x3F, 0x00, 0x00, 0x06])

        var inbound = client.inbound.makeAsyncIterator()
        #expect(await inbound.next() == F.indication(0x30, [7]))
        #expect(try await fromClient.next() == [0x1E])
        await client.close()
    }

    @Test func transactionTimeoutWithTheManualClock() async throws {
        let clock = ManualClock()
        let (a, peer) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a, clock: clock)
        var fromClient = peer.incoming.makeAsyncIterator()
        let started = ContinuousClock.now

        let pending = Task { try await client.request(F.read(0x0003)) }
        #expect(try await fromClient.next() == [0x0A, 0x03, 0x00])
        #expect(clock.pendingTimerCount == 1)
        await clock.advance(by: .seconds(29))
        #expect(await client.isOpen)
        await clock.advance(by: .seconds(1))
        await #expect(throws: ATTError.timeout(request: .readRequest)) { try await pending.value }

        // §3.3.3: the bearer is dead; later requests are refused at once.
        #expect(await !client.isOpen)
        await #expect {
            try await client.request(F.read(0x0005))
        } throws: { error in
            (error as? ATTError)?.isBearerClosed == true
        }
        await #expect(throws: ATTError.self) { try await client.send(F.notification(1, [1])) }
        // The channel was closed: the peer's stream ends.
        #expect(try await fromClient.next() == nil)
        // The injected clock stood for 30 s; the wall clock, even with the whole suite running
        // on 2 cores, saw far less.
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test func disconnectFailsPendingOperationsAtOnce() async throws {
        let (a, peer) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        var fromClient = peer.incoming.makeAsyncIterator()
        let request = Task { try await client.request(F.read(0x0003)) }
        let indication = Task { try await client.indicate(HandleValueIndication(handle: 0x30, value: [1])) }
        _ = try await fromClient.next()
        _ = try await fromClient.next()
        peer.fail("link lost (HCI Disconnection Complete 0x08)")
        for outcome in [await request.result.map { _ in () }, await indication.result] {
            guard case .failure(let error as ATTError) = outcome, case .bearerClosed(let reason) = error else {
                Issue.record("expected bearerClosed, got \(outcome)")
                continue
            }
            #expect(reason.contains("link lost"))
        }
        var inbound = client.inbound.makeAsyncIterator()
        #expect(await inbound.next() == nil)
    }

    @Test func peerCloseFailsPendingRequest() async throws {
        let (a, peer) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        var fromClient = peer.incoming.makeAsyncIterator()
        let request = Task { try await client.request(F.read(0x0003)) }
        _ = try await fromClient.next()
        await peer.close()
        await #expect(throws: ATTError.bearerClosed(reason: "the ATT channel closed (disconnected)")) {
            try await request.value
        }
    }

    @Test func localCloseFailsPendingAndClosesTheChannel() async throws {
        let (a, peer) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        var fromClient = peer.incoming.makeAsyncIterator()
        let request = Task { try await client.request(F.read(0x0003)) }
        _ = try await fromClient.next()
        await client.close()
        await #expect(throws: ATTError.bearerClosed(reason: "closed locally")) { try await request.value }
        #expect(try await fromClient.next() == nil)
        #expect(a.isClosed)
        await client.close()  // idempotent
    }

    @Test func overMTUSendThrowsThroughTheDriver() async {
        let (a, _) = InMemoryATTChannel.pair()
        let client = ATTConnection(channel: a)
        await #expect(throws: ATTError.pduTooLarge(opcode: .handleValueNotification, length: 30, mtu: 23)) {
            try await client.send(F.notification(1, [UInt8](repeating: 0, count: 27)))
        }
        await #expect(throws: ATTError.pduTooLarge(opcode: .writeRequest, length: 30, mtu: 23)) {
            try await client.request(F.write(1, [UInt8](repeating: 0, count: 27)))
        }
        await #expect(throws: ATTError.unsupportedRequest(.readRequest)) { try await client.send(F.read(1)) }
        await client.close()
    }

    @Test func exchangeMTUIsClampedToTheChannelLimit() async throws {
        let (a, b) = InMemoryATTChannel.pair(maximumSDUSize: 64)
        let client = ATTConnection(channel: a)
        let server = ATTConnection(channel: b, configuration: .init(rxMTU: 64))
        #expect(try await client.exchangeMTU(517) == 64)
        #expect(await server.mtu == 64)
        await client.close()
    }
}
