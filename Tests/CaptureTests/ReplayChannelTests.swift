import Capture
import ATT
import Bluetooth
import GATT
import HCI
import L2CAP
import Testing

/// `ReplayATTChannel` playing the peer of a recorded session.
@Suite("Replay: recorded session as a scripted peer")
struct ReplayChannelTests {
    static let bumbleName = "bumble-sensortag-session.btsnoop"

    /// The recorded client's own PDUs, sent in capture order, get exactly the recorded
    /// answers: every response and the 5 notifications, in order.
    @Test func strictReplayOfTheRecordedClientYieldsTheRecordedServer() async throws {
        let channel = try ReplayATTChannel(path: ReplayFixtures.bumble)
        #expect(channel.bearer.connectionHandle == 1 && channel.bearer.channelID == 4)
        #expect(channel.maximumSDUSize == 247)
        var incoming = channel.incoming.makeAsyncIterator()
        var received: [[UInt8]] = []
        var index = 0
        let entries = channel.trace.entries
        while index < entries.count {
            // Our PDU, then the peer's answers up to our next one.
            try await channel.send(entries[index].bytes)
            index += 1
            let answers = entries[index...].prefix { $0.direction == .peerToHost }.count
            received += try await receive(answers, from: &incoming)
            index += answers
        }
        #expect(received == entries.filter { $0.direction == .peerToHost }.map(\.bytes))
        let notifications = received.filter { $0.first == ATTOpcode.handleValueNotification.rawValue }
        #expect(
            notifications.map { Hex.encode($0) } == [
                "1b1400680b400c", "1b14006c0b410c", "1b1400700b420c", "1b1400740b430c", "1b1400780b440c",
            ])
        #expect(channel.isComplete)
        #expect(channel.failure == nil)
        #expect(channel.sentSDUs == entries.filter { $0.direction == .hostToPeer }.map(\.bytes))
        await channel.close()
        #expect(try await incoming.next() == nil)
    }

    /// Our GATT client in strict mode: the MTU exchange (offered at the recorded 247) and
    /// primary service discovery are Bumble's requests exactly; our discovery then asks for
    /// included services, which Bumble did not: the replay stops at record 52 naming both PDUs.
    @Test func strictGATTDiscoveryStopsWhereOurClientDiffers() async throws {
        let channel = try ReplayATTChannel(path: ReplayFixtures.bumble)
        let client = GATTClient(connection: ATTConnection(channel: channel))
        #expect(try await client.connection.exchangeMTU(517) == 247)
        let expected = ReplayError(
            capture: Self.bumbleName,
            .mismatch(
                record: 52, expected: [0x08, 0x01, 0x00, 0x05, 0x00, 0x03, 0x28],
                actual: [0x08, 0x01, 0x00, 0x05, 0x00, 0x02, 0x28]))
        #expect(
            expected.description
                == "replay mismatch at bumble-sensortag-session.btsnoop record 52: expected > 08010005000328,"
                + " host sent > 08010005000228")
        do {
            _ = try await client.discoverDatabase()
            Issue.record("discovery cannot complete against Bumble's recorded requests")
        } catch {
            guard case .att(.bearerClosed(let reason)) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(reason.contains("replay mismatch at bumble-sensortag-session.btsnoop record 52: expected > 08010005000328"))
        }
        // Where Bumble's client asked for the characteristics of the first service, ours sweeps
        // characteristic declarations over a wider range (the discovery engine's choice).
        guard case .mismatch(let record, let recorded, let sent)? = (channel.failure as? ReplayError)?.kind else {
            Issue.record("expected a mismatch, got \(String(describing: channel.failure))")
            return
        }
        #expect(record == 52 && recorded == [0x08, 0x01, 0x00, 0x05, 0x00, 0x03, 0x28])
        #expect(sent.first == 0x08 && sent != recorded)
        #expect(channel.sentSDUs.count == 4)  // Exchange MTU and the three service requests
        await client.connection.close()
    }

    /// Any order: our client's own sequence (characteristics then descriptors service by
    /// service, read by UUID, write, subscribe) is answered from Bumble's recording; what our
    /// client never asked is left: the characteristic requests past a value at the range end
    /// (records 55, 61, 73) and Bumble's second descriptor discovery before subscribing (94).
    @Test func anyOrderServesOurClientsOwnSequence() async throws {
        let channel = try ReplayATTChannel(path: ReplayFixtures.bumble, matching: .anyOrder)
        let connection = ATTConnection(channel: channel)
        let client = GATTClient(connection: connection)
        var inbound = connection.inbound.makeAsyncIterator()
        #expect(try await connection.exchangeMTU(517) == 247)
        var services = try await client.discoverPrimaryServices()
        #expect(
            services.map(\.uuid) == [
                0x1800, 0x1801, 0x180F, BluetoothUUID("F000AA00-0451-4000-B000-000000000000")!,
            ])
        for index in services.indices {
            var characteristics = try await client.discoverCharacteristics(of: services[index])
            for c in characteristics.indices {
                characteristics[c].descriptors = try await client.discoverDescriptors(of: characteristics[c])
            }
            services[index].characteristics = characteristics
        }
        let database = GATTDatabase(services: services)
        #expect(services.flatMap(\.characteristics).map(\.valueHandle) == [3, 5, 8, 11, 13, 16, 20, 23, 25])
        #expect(
            services.flatMap(\.characteristics).compactMap(\.clientConfigurationHandle) == [9, 17, 21])
        let battery = try database.characteristic(uuid: 0x2A19)
        #expect(battery.valueHandle == 16)

        #expect(try await client.read(uuid: 0x2A19) == [ReadByTypeResponse.AttributeData(handle: 16, value: [0x5C])])
        try await client.write(handle: 0x17, value: [0x01])
        let data = try database.characteristic(uuid: BluetoothUUID("F000AA01-0451-4000-B000-000000000000")!)
        try await client.configure(data, .notifications)
        var values: [[UInt8]] = []
        for _ in 0..<5 {
            guard case .handleValueNotification(let notification)? = await inbound.next() else {
                Issue.record("expected a notification")
                break
            }
            #expect(notification.handle == 0x14)
            values.append(notification.value)
        }
        #expect(values.map { Hex.encode($0) } == ["680b400c", "6c0b410c", "700b420c", "740b430c", "780b440c"])
        try await client.write(handle: 0x17, value: [0x00])

        #expect(channel.failure == nil)
        #expect(channel.remainingEntries.map(\.line) == [55, 57, 61, 63, 73, 75, 94, 96])
        #expect(!channel.isComplete)
        #expect(await connection.requestsSent == 17)
        await connection.close()
    }

    /// Any order cannot invent what was never recorded: our Find Included Services request
    /// fails, naming the closest unused recorded request.
    @Test func anyOrderNoMatchNamesTheClosestRecordedRequest() async throws {
        let channel = try ReplayATTChannel(path: ReplayFixtures.bumble, matching: .anyOrder)
        let client = GATTClient(connection: ATTConnection(channel: channel))
        _ = try await client.connection.exchangeMTU(517)
        let services = try await client.discoverPrimaryServices()
        let message =
            "replay of bumble-sensortag-session.btsnoop (any order): no unused recorded PDU equals > 08010005000228;"
            + " closest unused with opcode 0x08: record 52 > 08010005000328"
        await #expect {
            _ = try await client.findIncludedServices(of: services[0])
        } throws: { error in
            guard case GATTError.att(.bearerClosed(let reason)) = error else { return false }
            return reason.hasSuffix(message)
        }
        #expect((channel.failure as? ReplayError)?.description == message)
    }

    /// Any order on a small capture: requests answered out of order, a repeated request by
    /// its second recording, then one with no unused match.
    @Test func anyOrderAnswersEachRequestWithTheFirstUnusedRecording() async throws {
        let trace = try ATTTrace(parsing: "> 0a0300\n< 0b41\n> 0a0500\n< 0b42\n> 0a0300\n< 0b43\n")
        let (bytes, records) = try ReplayFixtures.capture(of: trace)
        #expect(records == [3, 4, 5, 6, 7, 8])
        let capture = try ReplayCapture(bytes: bytes, name: "small.btsnoop")
        let channel = try ReplayATTChannel(capture: capture, matching: .anyOrder)
        var incoming = channel.incoming.makeAsyncIterator()
        try await channel.send([0x0A, 0x05, 0x00])
        #expect(try await receive(1, from: &incoming) == [[0x0B, 0x42]])
        try await channel.send([0x0A, 0x03, 0x00])
        #expect(try await receive(1, from: &incoming) == [[0x0B, 0x41]])
        try await channel.send([0x0A, 0x03, 0x00])
        #expect(try await receive(1, from: &incoming) == [[0x0B, 0x43]])
        #expect(channel.isComplete)
        let expected = ReplayError(capture: "small.btsnoop", .noMatch(actual: [0x0A, 0x03, 0x00], closest: nil))
        await #expect(throws: expected) { try await channel.send([0x0A, 0x03, 0x00]) }
        #expect(
            expected.description
                == "replay of small.btsnoop (any order): no unused recorded PDU equals > 0a0300;"
                + " no unused recorded PDU has opcode 0x0a")
        await #expect(throws: expected) { _ = try await incoming.next() }
    }

    /// Strict mismatch and exhaustion: the thrown error and the end of `incoming` agree.
    @Test func strictMismatchNamesRecordAndBothPDUs() async throws {
        let trace = try ATTTrace(parsing: "> 0a0300\n< 0b41\n> 0a0500\n< 0b42\n")
        let (bytes, _) = try ReplayFixtures.capture(of: trace)
        let capture = try ReplayCapture(bytes: bytes, name: "small.btsnoop")
        let channel = try ReplayATTChannel(capture: capture)
        #expect(channel.maximumSDUSize == nil)  // no Exchange MTU recorded
        var incoming = channel.incoming.makeAsyncIterator()
        try await channel.send([0x0A, 0x03, 0x00])
        #expect(try await receive(1, from: &incoming) == [[0x0B, 0x41]])
        let expected = ReplayError(
            capture: "small.btsnoop", .mismatch(record: 5, expected: [0x0A, 0x05, 0x00], actual: [0x0A, 0x06, 0x00]))
        await #expect(throws: expected) { try await channel.send([0x0A, 0x06, 0x00]) }
        await #expect(throws: expected) { _ = try await incoming.next() }
        #expect(
            expected.description
                == "replay mismatch at small.btsnoop record 5: expected > 0a0500, host sent > 0a0600")
        #expect(channel.failure as? ReplayError == expected)
    }

    @Test func strictReplayBeyondTheRecordingIsExhausted() async throws {
        let trace = try ATTTrace(parsing: "> 0a0300\n< 0b41\n")
        let (bytes, _) = try ReplayFixtures.capture(of: trace)
        let channel = try ReplayATTChannel(capture: ReplayCapture(bytes: bytes, name: "one.btsnoop"))
        try await channel.send([0x0A, 0x03, 0x00])
        await channel.waitUntilComplete()
        let expected = ReplayError(capture: "one.btsnoop", .exhausted(lastRecord: 3, actual: [0x0A, 0x04, 0x00]))
        await #expect(throws: expected) { try await channel.send([0x0A, 0x04, 0x00]) }
        #expect(
            expected.description
                == "replay of one.btsnoop: no further recorded PDU from our side after record 3, host sent > 0a0400")
    }

    /// An Enhanced ATT bearer of the synthetic capture: our Read Request went on the peer's
    /// CID 0x0080, its response (one SDU over two K-frames) came on ours, 0x0040.
    @Test func enhancedATTBearerReplays() async throws {
        let channel = try ReplayATTChannel(path: ReplayFixtures.synthetic, connectionHandle: 64, channelID: 0x0040)
        #expect(channel.bearer.peerChannelID == 0x0080)
        #expect(channel.trace.entries.map(\.direction) == [.hostToPeer, .peerToHost])
        var incoming = channel.incoming.makeAsyncIterator()
        try await channel.send(channel.trace.entries[0].bytes)
        let answer = try await receive(1, from: &incoming)
        #expect(answer == [[0x0B] + Array("CC2650 SensorTag, EATT bearer one".utf8)])
        #expect(channel.isComplete)
    }

    /// PDUs the peer sent before our first one (here its own Exchange MTU Request, which our
    /// bearer answers itself) are delivered at once; the answer is matched like any other.
    @Test func peerSpeakingFirstIsDeliveredAtOnce() async throws {
        let trace = try ATTTrace(parsing: "< 02 1700\n> 03 0502\n> 0a0300\n< 0b41\n")
        let (bytes, records) = try ReplayFixtures.capture(of: trace)
        let channel = try ReplayATTChannel(capture: ReplayCapture(bytes: bytes, name: "peer-first.btsnoop"))
        let connection = ATTConnection(channel: channel)
        await channel.waitUntilReached(record: records[1])
        #expect(channel.failure == nil)
        #expect(await connection.mtu == 23)
        #expect(
            try await connection.request(.readRequest(ReadRequest(handle: 3)))
                == .readResponse(ReadResponse(value: [0x41])))
        await channel.waitUntilComplete()
        #expect(channel.isComplete && channel.failure == nil)
        await connection.close()
    }
}
