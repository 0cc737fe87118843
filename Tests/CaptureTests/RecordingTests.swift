import Capture
import ATT
import Bluetooth
import HCI
import L2CAP
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `RecordingATTChannel` and its synthetic framing; record → replay round trips.
@Suite("Recording: ATT traffic to btsnoop")
struct RecordingTests {
    // MARK: Framing vectors

    struct FramingVector: Sendable, CustomStringConvertible {
        var sdu: [UInt8]
        var direction: CaptureDirection
        var handle: UInt16
        var maximumACLDataLength: Int
        var packets: [String]
        var description: String { "\(Hex.encode(sdu)) \(direction) max \(maximumACLDataLength)" }
    }

    static let framingVectors: [FramingVector] = [
        // Read Request, host → controller: PB 0b00; Data_Total_Length 7; L2CAP length 3, CID 4.
        FramingVector(
            sdu: [0x0A, 0x03, 0x00], direction: .sent, handle: 0x0001, maximumACLDataLength: 65_535,
            packets: ["01000700030004000a0300"]),
        // Read Response, controller → host: PB 0b10.
        FramingVector(
            sdu: [0x0B, 0x41, 0x42], direction: .received, handle: 0x0EFF, maximumACLDataLength: 65_535,
            packets: ["ff2e0700030004000b4142"]),
        // Empty-valued Write Response.
        FramingVector(
            sdu: [0x13], direction: .received, handle: 0x0040, maximumACLDataLength: 65_535,
            packets: ["402005000100040013"]),
        // Split at 4 octets: start fragment, then a continuation (PB 0b01).
        FramingVector(
            sdu: [0x0A, 0x03, 0x00], direction: .sent, handle: 0x0001, maximumACLDataLength: 4,
            packets: ["0100040003000400", "011003000a0300"]),
    ]

    @Test(arguments: framingVectors)
    func framingVector(_ vector: FramingVector) throws {
        let framer = ATTCaptureFramer(
            connectionHandle: vector.handle, channelID: 4, maximumACLDataLength: vector.maximumACLDataLength)
        let packets = try framer.aclPackets(vector.sdu, direction: vector.direction)
        #expect(packets.map { Hex.encode($0) } == vector.packets)
        // What the capture decoder makes of them: the SDU, on the handle and CID, that way.
        var writer = try BTSnoopWriter(datalink: .h4)
        for packet in packets {
            try writer.append(.acl, packet, direction: vector.direction, timestamp: 0)
        }
        let collector = ATTCollector.decode(try CaptureReader(bytes: writer.takeBytes()))
        #expect(collector.errors.isEmpty)
        #expect(collector.att.count == 1)
        let item = try #require(collector.att.first?.item)
        #expect(Array(item.bytes) == vector.sdu)
        #expect(item.connectionHandle == vector.handle && item.channelID == 4 && item.direction == vector.direction)
    }

    @Test func framingRefusesWhatL2CAPCannotCarry() throws {
        #expect(throws: HCIError.self) {
            try ATTCaptureFramer().aclPackets([UInt8](repeating: 0, count: 65_536), direction: .sent)
        }
        #expect(throws: HCIError.self) {
            try ATTCaptureFramer(connectionHandle: 0x0F00).aclPackets([0x13], direction: .received)
        }
        // The largest SDU fits in two ACL packets.
        let packets = try ATTCaptureFramer().aclPackets([UInt8](repeating: 7, count: 65_535), direction: .sent)
        #expect(packets.map(\.count) == [4 + 65_535, 4 + 4])
    }

    @Test func connectionEventsVector() throws {
        let framer = ATTCaptureFramer(connectionHandle: 0x0001)
        let address = try #require(BluetoothAddress("C0:11:22:33:44:55"))
        #expect(
            Hex.encode(try framer.connectionComplete(peerAddress: address, peerAddressType: .random))
                == "3e13" + "01" + "00" + "0100" + "00" + "01" + "5544332211c0" + "1800" + "0000" + "c800" + "00")
        #expect(Hex.encode(try framer.disconnectionComplete()) == "0504" + "00" + "0100" + "16")
    }

    // MARK: Round trip

    /// What one client session observed, compared between the live and the replayed run.
    struct Observed: Equatable {
        var mtu = 0
        var values: [[UInt8]] = []
        var errors: [String] = []
        var inbound: [ATTPDU] = []
    }

    /// Exchange MTU, reads (one refused), a write answered after two notifications, an
    /// indication (confirmed), a final read. `server` is the live peer, nil when replaying.
    static func session(_ client: ATTConnection, server: ATTConnection?) async throws -> Observed {
        var observed = Observed()
        var inbound = client.inbound.makeAsyncIterator()
        observed.mtu = try await client.exchangeMTU(185)
        for handle: UInt16 in [0x0003, 0x0099] {
            do {
                guard
                    case .readResponse(let response) = try await client.request(
                        .readRequest(ReadRequest(handle: handle)))
                else { throw ATTError.bearerClosed(reason: "not a Read Response") }
                observed.values.append(response.value)
            } catch {
                observed.errors.append("\(error)")
            }
        }
        _ = try await client.request(.writeRequest(WriteRequest(handle: 0x0010, value: [0x01, 0x00])))
        for _ in 0..<2 {
            if let pdu = await inbound.next() { observed.inbound.append(pdu) }
        }
        let indication = Task {
            if let server { try await server.indicate(HandleValueIndication(handle: 0x000F, value: [0xAB])) }
        }
        if let pdu = await inbound.next() { observed.inbound.append(pdu) }
        try await indication.value
        guard case .readResponse(let last) = try await client.request(.readRequest(ReadRequest(handle: 0x0003))) else {
            throw ATTError.bearerClosed(reason: "not a Read Response")
        }
        observed.values.append(last.value)
        return observed
    }

    /// A live in-memory server for `session`.
    static func server(_ channel: InMemoryATTChannel) async -> ATTConnection {
        let connection = ATTConnection(channel: channel)
        await connection.setServerHandler { [connection] pdu in
            switch pdu {
            case .readRequest(let request) where request.handle == 0x0003:
                return .readResponse(ReadResponse(value: Array("Replay".utf8)))
            case .readRequest(let request):
                return .errorResponse(
                    ErrorResponse(requestOpcode: .readRequest, handle: request.handle, errorCode: .invalidHandle))
            case .writeRequest:
                for value: UInt8 in [1, 2] {
                    try? await connection.send(
                        .handleValueNotification(HandleValueNotification(handle: 0x000C, value: [value])))
                }
                return .writeResponse(WriteResponse())
            default:
                return nil
            }
        }
        return connection
    }

    @Test func recordedSessionReplaysByteForByte() async throws {
        let path = ReplayFixtures.temporaryPath("session.btsnoop")
        defer { unlink(path) }
        let peer = RecordingATTChannel.Peer(address: BluetoothAddress("C0:11:22:33:44:55")!, addressType: .random)
        let (clientEnd, serverEnd) = InMemoryATTChannel.pair()
        let server = await Self.server(serverEnd)
        let recording = try RecordingATTChannel(wrapping: clientEnd, path: path, peer: peer)
        let client = ATTConnection(channel: recording)
        let live = try await Self.session(client, server: server)
        #expect(live.mtu == 185)
        #expect(live.values == [Array("Replay".utf8), Array("Replay".utf8)])
        #expect(live.errors.count == 1)
        #expect(live.inbound.count == 3)
        await client.close()
        await server.close()
        try recording.finishRecording()
        #expect(recording.recordingFailure == nil)

        // Strictly replayed, the same client session sees the same peer, byte for byte.
        // The synthetic LE Connection Complete names the peer: the bearer is found by address.
        let replay = try ReplayATTChannel(path: path, peerAddress: peer.address)
        #expect(replay.bearer.peerAddress == peer.address && replay.bearer.peerAddressType == .random)
        #expect(recording.recordedSDUCount == replay.trace.entries.count)
        #expect(replay.recordedClientMTU == 185)
        let replayedConnection = ATTConnection(channel: replay)
        let replayed = try await Self.session(replayedConnection, server: nil)
        #expect(replayed == live)
        await replay.waitUntilComplete()
        #expect(replay.isComplete && replay.failure == nil)
        #expect(replay.sentSDUs == replay.trace.entries.filter { $0.direction == .hostToPeer }.map(\.bytes))
        await replayedConnection.close()
        // Ours: Exchange MTU, 3 reads, the write, the confirmation; theirs: the answers and 3 PDUs.
        #expect(
            replay.trace.entries.map { $0.bytes[0] } == [
                0x02, 0x03, 0x0A, 0x0B, 0x0A, 0x01, 0x12, 0x1B, 0x1B, 0x13, 0x1D, 0x1E, 0x0A, 0x0B,
            ])
    }

    /// The recording read back by the capture reader and decoder: H4 btsnoop, the synthetic
    /// connection events, every SDU on handle 1 / CID 4 in the direction it went.
    @Test func recordingReadsBackWithDirectionsAndChannel() async throws {
        let path = ReplayFixtures.temporaryPath("readback.btsnoop")
        defer { unlink(path) }
        let address = BluetoothAddress("C0:11:22:33:44:55")!
        let (clientEnd, serverEnd) = InMemoryATTChannel.pair()
        let times = Timestamps()
        let recording = try RecordingATTChannel(
            wrapping: clientEnd, path: path, peer: RecordingATTChannel.Peer(address: address, addressType: .random),
            clock: { times.next() })
        var peerIncoming = serverEnd.incoming.makeAsyncIterator()
        var ourIncoming = recording.incoming.makeAsyncIterator()
        try await recording.send([0x0A, 0x03, 0x00])
        #expect(try await receive(1, from: &peerIncoming) == [[0x0A, 0x03, 0x00]])
        try await serverEnd.send([0x0B, 0x41])
        try await serverEnd.send([0x1B, 0x0C, 0x00, 0x07])
        #expect(try await receive(2, from: &ourIncoming) == [[0x0B, 0x41], [0x1B, 0x0C, 0x00, 0x07]])
        await recording.close()
        #expect(try await ourIncoming.next() == nil)
        try recording.finishRecording()

        let reader = try CaptureFile.open(path: path)
        #expect(reader.format == .btsnoop(.h4))
        let records = Array(reader)
        #expect(records.map(\.timestamp) == [1, 2, 3, 4, 5])
        #expect(records.map(\.direction) == [.received, .sent, .received, .received, .received])
        let collector = ATTCollector.decode(reader)
        #expect(collector.errors.isEmpty)
        guard case .event(.leMeta(.connectionComplete(let complete)))? = collector.packets.first else {
            Issue.record("no LE Connection Complete first: \(collector.packets)")
            return
        }
        #expect(
            complete.connectionHandle == 1 && complete.peerAddress == address && complete.peerAddressType == .random)
        #expect(complete.role == .central && complete.status == .success)
        guard case .event(.disconnectionComplete(let end))? = collector.packets.last else {
            Issue.record("no Disconnection Complete last")
            return
        }
        #expect(end.connectionHandle == 1)
        #expect(collector.att.map(\.record) == [2, 3, 4])
        #expect(
            collector.att.map { Array($0.item.bytes) } == [
                [0x0A, 0x03, 0x00], [0x0B, 0x41], [0x1B, 0x0C, 0x00, 0x07],
            ])
        #expect(collector.att.map(\.item.direction) == [.sent, .received, .received])
        #expect(collector.att.allSatisfy { $0.item.connectionHandle == 1 && $0.item.channelID == 4 })
        #expect(
            collector.att.map(\.item.pdu) == [
                .readRequest(ReadRequest(handle: 3)), .readResponse(ReadResponse(value: [0x41])),
                .handleValueNotification(HandleValueNotification(handle: 0x0C, value: [0x07])),
            ])
    }

    /// Without a peer: no connection events, ATT only; a file that cannot be written fails at once.
    @Test func recordingWithoutPeerAndUnwritableFile() async throws {
        let path = ReplayFixtures.temporaryPath("bare.btsnoop")
        defer { unlink(path) }
        let (clientEnd, _) = InMemoryATTChannel.pair()
        let recording = try RecordingATTChannel(
            wrapping: clientEnd, path: path, framer: ATTCaptureFramer(connectionHandle: 0x0042))
        try await recording.send([0x0A, 0x03, 0x00])
        await recording.close()
        try recording.finishRecording()
        let records = Array(try CaptureFile.open(path: path))
        #expect(records.count == 1 && records.first?.kind == .packet(.acl))
        #expect(Hex.encode(records.first?.bytes ?? []) == "42000700030004000a0300")
        // A send after the recording finished is not recorded (nor an error).
        #expect(recording.recordingFailure == nil)

        #expect(throws: HCIError.self) {
            try RecordingATTChannel(wrapping: InMemoryATTChannel.pair().0, path: "/nonexistent/dir/x.btsnoop")
        }
        #expect(throws: HCIError.self) {
            try RecordingATTChannel(wrapping: InMemoryATTChannel.pair().0, path: "/dev/full")
        }
    }
}

extension RecordingTests {
    /// A write failing mid-session (the disk fills: the descriptor now points at /dev/full)
    /// stops the recording, not the traffic; `finishRecording()` reports it.
    @Test func recordingFailureDoesNotDisturbTraffic() async throws {
        let path = ReplayFixtures.temporaryPath("full.btsnoop")
        defer { unlink(path) }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0)
        let (clientEnd, serverEnd) = InMemoryATTChannel.pair()
        let recording = try RecordingATTChannel(wrapping: clientEnd, fileDescriptor: descriptor, takingOwnership: true)
        var peerIncoming = serverEnd.incoming.makeAsyncIterator()
        try await recording.send([0x0A, 0x03, 0x00])
        #expect(recording.recordedSDUCount == 1 && recording.recordingFailure == nil)
        let full = open("/dev/full", O_WRONLY | O_CLOEXEC)
        try #require(full >= 0)
        #expect(dup2(full, descriptor) == descriptor)
        close(full)
        try await recording.send([0x0A, 0x04, 0x00])
        try await recording.send([0x0A, 0x05, 0x00])
        #expect(try await receive(3, from: &peerIncoming).count == 3)
        #expect(recording.recordedSDUCount == 1)
        guard case .system(_, let errno)? = recording.recordingFailure else {
            Issue.record("expected a write failure, got \(String(describing: recording.recordingFailure))")
            return
        }
        #expect(errno.rawValue == ENOSPC)
        #expect(throws: HCIError.self) { try recording.finishRecording() }
        await recording.close()
        // What was written before the failure is a valid capture.
        let records = Array(try CaptureFile.open(path: path))
        #expect(records.count == 1)
    }
}

/// A deterministic clock: 1, 2, 3, … microseconds.
final class Timestamps: Sendable {
    private let counter = Mutex<Int64>(0)
    func next() -> Int64 {
        counter.withLock { value in
            value += 1
            return value
        }
    }
}
