import TestSupport
import Bluetooth
import HCI
import Testing
import Security

@testable import L2CAP

@Suite struct LEUserSpaceChannelTests {
    static func host(credits: Int = 4, queue: Int = 8, buffered: Int = 64) -> UserSpaceL2CAP {
        UserSpaceL2CAP(
            bufferSize: leBufferSize(count: credits), maximumQueuedFrames: queue, maximumBufferedSDUs: buffered,
            securityManager: SecurityManagerResponder())
    }

    static func disconnection(_ handle: UInt16, reason: UInt8) -> HCIEvent {
        .disconnectionComplete(
            DisconnectionCompleteEvent(status: .success, connectionHandle: handle, reason: HCIStatus(rawValue: reason)))
    }

    static func expectFailure(
        _ iterator: inout AsyncThrowingStream<[UInt8], Error>.Iterator, _ expected: L2CAPError,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            let element = try await iterator.next()
            Issue.record("expected \(expected), got \(String(describing: element))", sourceLocation: sourceLocation)
        } catch let error as L2CAPError {
            #expect(error == expected, sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func incomingATTSDUsArriveInOrder() async throws {
        let host = Self.host()
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        var expected: [[UInt8]] = []
        for index in 0..<20 {
            let sdu = [0x1B, 0x21, 0x00] + [UInt8](repeating: UInt8(index), count: index * 5)
            expected.append(sdu)
            for packet in ACLFragmenter.fragments(of: leFrame(cid: 4, sdu), handle: 0x40, maximumDataLength: 27) {
                // As a controller sends them: first fragment 0b10.
                var incoming = packet
                if incoming.packetBoundary == .firstNonFlushable { incoming.packetBoundary = .firstFlushable }
                host.receive(incoming)
            }
            // Interleaved noise on other channels changes nothing upward.
            host.receive(leIncoming(handle: 0x40, cid: 0x0007, [0xEE]))
        }
        var iterator = channel.incoming.makeAsyncIterator()
        var received: [[UInt8]] = []
        for _ in 0..<expected.count { received.append(try #require(try await iterator.next())) }
        #expect(received == expected)
        #expect(channel.maximumSDUSize == nil)
    }

    @Test func sendsBecomeACLPacketsWithinTheCredits() async throws {
        let host = Self.host(credits: 1)
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        var outputs = host.outputs.makeAsyncIterator()
        try await channel.send([0x0A, 0x03, 0x00])
        try await channel.send([0x0A, 0x05, 0x00])
        #expect(
            await outputs.next()
                == .acl(
                    ACLDataPacket(
                        handle: 0x40, packetBoundary: .firstNonFlushable, data: leFrame(cid: 4, [0x0A, 0x03, 0x00]))))
        #expect(host.availableCredits == 0)
        #expect(host.packetsInFlight(handle: 0x40) == 1)
        host.receive(.numberOfCompletedPackets(leCompleted((0x40, 1))))
        #expect(
            await outputs.next()
                == .acl(
                    ACLDataPacket(
                        handle: 0x40, packetBoundary: .firstNonFlushable, data: leFrame(cid: 4, [0x0A, 0x05, 0x00]))))
    }

    @Test func aFullQueueFailsTheSend() async throws {
        let host = Self.host(credits: 1, queue: 2)
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        try channel.sendNow([0x0A, 0x01, 0x00])  // goes to the controller
        try channel.sendNow([0x0A, 0x02, 0x00])
        try channel.sendNow([0x0A, 0x03, 0x00])
        await #expect(throws: L2CAPError.queueFull(handle: 0x40, limit: 2)) {
            try await channel.send([0x0A, 0x04, 0x00])
        }
    }

    @Test func closeFinishesIncomingFailsSendsAndAsksForADisconnect() async throws {
        let host = Self.host()
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        host.receive(leIncoming(handle: 0x40, cid: 4, [0x1B, 0x21, 0x00, 0x01]))
        await channel.close()
        await channel.close()  // twice is harmless
        host.receive(leIncoming(handle: 0x40, cid: 4, [0x1B, 0x21, 0x00, 0x02]))  // after close: dropped

        var incoming = channel.incoming.makeAsyncIterator()
        #expect(try await incoming.next() == [0x1B, 0x21, 0x00, 0x01], "what arrived before close is still read")
        #expect(try await incoming.next() == nil)
        await #expect(throws: L2CAPError.channelClosed(handle: 0x40)) { try await channel.send([0x0A, 0x01, 0x00]) }
        #expect(channel.closedError == .channelClosed(handle: 0x40))

        var outputs = host.outputs.makeAsyncIterator()
        #expect(await outputs.next() == .disconnect(handle: 0x40, reason: HCIStatus(rawValue: 0x13)))
        // The controller confirms; the handle can then be reused by a new connection.
        host.receive(Self.disconnection(0x40, reason: 0x16))
        #expect(channel.closedError == .channelClosed(handle: 0x40), "the first reason stays")
        let next = try host.connectionOpened(handle: 0x40, role: .central)
        await #expect(throws: L2CAPError.channelClosed(handle: 0x40)) { try await channel.send([0x0A, 0x01, 0x00]) }
        try await next.send([0x0A, 0x07, 0x00])
        #expect(
            await outputs.next()
                == .acl(
                    ACLDataPacket(
                        handle: 0x40, packetBoundary: .firstNonFlushable, data: leFrame(cid: 4, [0x0A, 0x07, 0x00]))))
    }

    @Test func disconnectionFailsIncomingAfterWhatArrivedAndFailsSends() async throws {
        let host = Self.host(credits: 1)
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        let other = try host.connectionOpened(handle: 0x41, role: .central)
        try await channel.send([0x0A, 0x01, 0x00])
        try await channel.send([0x0A, 0x02, 0x00])  // waits for a credit
        try await other.send([0x0A, 0x09, 0x00])  // waits too
        host.receive(leIncoming(handle: 0x40, cid: 4, [0x1B, 0x21, 0x00, 0x01]))
        host.receive(Self.disconnection(0x40, reason: 0x08))

        var incoming = channel.incoming.makeAsyncIterator()
        #expect(try await incoming.next() == [0x1B, 0x21, 0x00, 0x01])
        await Self.expectFailure(&incoming, .disconnected(handle: 0x40, reason: HCIStatus(rawValue: 0x08)))
        await #expect(throws: L2CAPError.disconnected(handle: 0x40, reason: HCIStatus(rawValue: 0x08))) {
            try await channel.send([0x0A, 0x03, 0x00])
        }
        var outputs = host.outputs.makeAsyncIterator()
        #expect(
            await outputs.next()
                == .acl(
                    ACLDataPacket(
                        handle: 0x40, packetBoundary: .firstNonFlushable, data: leFrame(cid: 4, [0x0A, 0x01, 0x00]))))
        #expect(
            await outputs.next()
                == .acl(
                    ACLDataPacket(
                        handle: 0x41, packetBoundary: .firstNonFlushable, data: leFrame(cid: 4, [0x0A, 0x09, 0x00]))),
            "the freed credit goes to the other connection; the dropped PDU never goes")
        #expect(host.packetsInFlight(handle: 0x40) == 0)
    }

    @Test func shutDownFailsEverything() async throws {
        let host = Self.host()
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        try await channel.send([0x0A, 0x01, 0x00])
        host.shutDown("H4 socket closed")
        host.shutDown("again")

        var incoming = channel.incoming.makeAsyncIterator()
        await Self.expectFailure(&incoming, .transportClosed("H4 socket closed"))
        await #expect(throws: L2CAPError.transportClosed("H4 socket closed")) {
            try await channel.send([0x0A, 0x01, 0x00])
        }
        #expect(throws: L2CAPError.transportClosed("H4 socket closed")) {
            try host.connectionOpened(handle: 0x41, role: .central)
        }
        var outputs = host.outputs.makeAsyncIterator()
        #expect(
            await outputs.next()
                == .acl(
                    ACLDataPacket(
                        handle: 0x40, packetBoundary: .firstNonFlushable, data: leFrame(cid: 4, [0x0A, 0x01, 0x00]))))
        #expect(await outputs.next() == nil)
    }

    @Test func aReaderThatFallsBehindFailsTheChannelInsteadOfLosingSDUs() async throws {
        let host = Self.host(buffered: 2)
        let channel = try host.connectionOpened(handle: 0x40, role: .central)
        for value: UInt8 in 1...3 { host.receive(leIncoming(handle: 0x40, cid: 4, [0x1B, 0x21, 0x00, value])) }
        var incoming = channel.incoming.makeAsyncIterator()
        #expect(try await incoming.next() == [0x1B, 0x21, 0x00, 1])
        #expect(try await incoming.next() == [0x1B, 0x21, 0x00, 2])
        await Self.expectFailure(&incoming, .receiveQueueOverflow(handle: 0x40, limit: 2))
        await #expect(throws: L2CAPError.receiveQueueOverflow(handle: 0x40, limit: 2)) {
            try await channel.send([0x0A, 0x01, 0x00])
        }
        var outputs = host.outputs.makeAsyncIterator()
        #expect(await outputs.next() == .disconnect(handle: 0x40, reason: HCIStatus(rawValue: 0x13)))
    }

    @Test func signalingAndSMPAreAnsweredThroughTheOutputs() async throws {
        let host = Self.host()
        _ = try host.connectionOpened(handle: 0x40, role: .central)
        host.receive(leIncoming(handle: 0x40, cid: 5, leBytes("12 03 08 00 18 00 28 00 00 00 f4 01")))
        host.receive(leIncoming(handle: 0x40, cid: 6, leBytes("01 03 00 09 10 03 03")))
        let outputs = host.outputs
        let first3 = try await withTimeout(10, "the three outputs") {
            var iterator = outputs.makeAsyncIterator()
            var taken: [UserSpaceL2CAP.Output] = []
            while taken.count < 3, let next = await iterator.next() { taken.append(next) }
            return taken
        }
        #expect(
            first3 == [
                .updateConnectionParameters(
                    handle: 0x40, .init(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500)),
                .acl(
                    ACLDataPacket(
                        handle: 0x40, packetBoundary: .firstNonFlushable, data: leBytes("06 00 05 00 13 03 02 00 00 00"))),
                .acl(ACLDataPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: leBytes("02 00 06 00 05 05"))),
            ])
    }

    @Test func openingTwiceIsRefused() throws {
        let host = Self.host()
        _ = try host.connectionOpened(handle: 0x40, role: .central)
        #expect(throws: L2CAPError.connectionExists(handle: 0x40)) {
            try host.connectionOpened(handle: 0x40, role: .central)
        }
    }

    /// Two channels sending from their own tasks while a simulated controller drains the outputs
    /// and returns credits: every PDU arrives once, in each channel's order.
    @Test func concurrentSendersKeepTheirOrder() async throws {
        let host = Self.host(credits: 3, queue: 128)
        let a = try host.connectionOpened(handle: 1, role: .central)
        let b = try host.connectionOpened(handle: 2, role: .central)
        let perChannel = 100
        let controller = Task {
            var perHandle: [UInt16: [[UInt8]]] = [:]
            var count = 0
            for await output in host.outputs {
                guard case .acl(let packet) = output else { continue }
                perHandle[packet.handle, default: []].append(packet.data)
                host.receive(.numberOfCompletedPackets(leCompleted((packet.handle, 1))))
                count += 1
                if count == 2 * perChannel { break }
            }
            return perHandle
        }
        async let sentA: Void = {
            for i in 0..<perChannel { try await a.send([0x52, 0x21, 0x00, UInt8(i)]) }
        }()
        async let sentB: Void = {
            for i in 0..<perChannel { try await b.send([0x52, 0x22, 0x00, UInt8(i)]) }
        }()
        try await sentA
        try await sentB
        let perHandle = await controller.value
        #expect(perHandle[1] == (0..<perChannel).map { leFrame(cid: 4, [0x52, 0x21, 0x00, UInt8($0)]) })
        #expect(perHandle[2] == (0..<perChannel).map { leFrame(cid: 4, [0x52, 0x22, 0x00, UInt8($0)]) })
        #expect(host.availableCredits == 3)
    }
}
