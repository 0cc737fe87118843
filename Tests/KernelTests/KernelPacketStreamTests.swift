#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
import HCI
import Host
import Synchronization
import Testing

@testable import Kernel

/// Whether `descriptor` is still open in this process. (Only "still open" is a safe
/// expectation: tests run in parallel, and a closed number may be reused at once; that the
/// descriptor was closed shows as end of stream on the other end of the pair.)
func kernelDescriptorIsOpen(_ descriptor: SocketDescriptor) -> Bool {
    fcntl(descriptor.rawValue, F_GETFD) >= 0
}

/// Closes `socket` and returns once its descriptor is really closed (readers stopped first).
func kernelClose(_ socket: HCISocket) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        socket.close(then: { continuation.resume() })
    }
}

@Suite("HCI socket packet stream over a seqpacket socketpair", .timeLimit(.minutes(1)))
struct KernelPacketStreamTests {
    func makeSocket(channel: HCIChannel = .monitor) throws -> (HCISocket, SocketDescriptor) {
        let (ours, kernel) = try kernelSeqpacketPair()
        return (HCISocket(adopting: ours, device: nil, channel: channel), kernel)
    }

    @Test("datagrams queued before the first readiness event all arrive, whole and in order")
    func queuedDatagramsInOrder() async throws {
        let (socket, kernel) = try makeSocket()
        defer { try? kernel.close() }
        let sent = (0..<200).map { index in [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 1 + index % 37) }
        for datagram in sent { try kernel.send(datagram) }
        var received: [[UInt8]] = []
        for try await packet in socket.packets() {
            received.append(packet)
            if received.count == sent.count { break }
        }
        #expect(received == sent)
        await kernelClose(socket)
    }

    @Test("datagrams sent while the stream waits arrive too")
    func laterDatagrams() async throws {
        let (socket, kernel) = try makeSocket()
        defer { try? kernel.close() }
        let packets = socket.packets()
        let sender = Task {
            for index in 0..<50 {
                try kernel.send([UInt8(index)])
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        var received: [UInt8] = []
        for try await packet in packets {
            received += packet
            if received.count == 50 { break }
        }
        try await sender.value
        #expect(received == (0..<50).map { UInt8($0) })
        await kernelClose(socket)
    }

    @Test("end of stream finishes the stream after the queued datagrams")
    func endOfStream() async throws {
        let (socket, kernel) = try makeSocket()
        try kernel.send([0x01, 0x02])
        try kernel.send([0x03])
        try kernel.close()
        var received: [[UInt8]] = []
        for try await packet in socket.packets() { received.append(packet) }
        #expect(received == [[0x01, 0x02], [0x03]])
        // The socket stays open until closed.
        let descriptor = try #require(socket.descriptor)
        #expect(kernelDescriptorIsOpen(descriptor))
        await kernelClose(socket)
        #expect(socket.descriptor == nil)
    }

    @Test("cancelling the iteration stops reading; closing afterwards closes the descriptor once")
    func cancelThenClose() async throws {
        let (socket, kernel) = try makeSocket()
        defer { try? kernel.close() }
        let descriptor = try #require(socket.descriptor)
        let started = Mutex(false)
        let task = Task {
            var count = 0
            for try await _ in socket.packets() {
                count += 1
                started.withLock { $0 = true }
            }
            return count
        }
        try kernel.send([0xAA])
        while !started.withLock({ $0 }) { await Task.yield() }
        task.cancel()
        _ = try? await task.value
        // The reading stopped, the socket did not close.
        #expect(kernelDescriptorIsOpen(descriptor))
        try socket.send([0x01])
        #expect(try kernelPeerReceive(kernel) == [0x01])
        await kernelClose(socket)
        #expect(socket.descriptor == nil)
        // The kernel side sees the end: the descriptor is not leaked.
        #expect(try kernelPeerReceive(kernel) == [])
        socket.close()  // twice is harmless
    }

    @Test("closing the socket while a stream reads finishes the stream, then closes the descriptor")
    func closeWhileReading() async throws {
        let (socket, kernel) = try makeSocket()
        defer { try? kernel.close() }
        let packets = socket.packets()
        let reader = Task {
            var received: [[UInt8]] = []
            for try await packet in packets { received.append(packet) }
            return received
        }
        try kernel.send([0x42])
        try await Task.sleep(for: .milliseconds(20))
        await kernelClose(socket)
        let received = try await reader.value
        #expect(received.count <= 1)
        #expect(try kernelPeerReceive(kernel) == [])
    }

    @Test("several streams one after another on one socket")
    func sequentialStreams() async throws {
        let (socket, kernel) = try makeSocket()
        defer { try? kernel.close() }
        for round in 0..<5 {
            try kernel.send([UInt8(round)])
            for try await packet in socket.packets() {
                #expect(packet == [UInt8(round)])
                break
            }
        }
        await kernelClose(socket)
    }

    @Test("a closed socket's stream throws closed")
    func closedSocket() async throws {
        let (socket, kernel) = try makeSocket()
        defer { try? kernel.close() }
        socket.close()
        await #expect(throws: KernelBluetoothError.closed(operation: .hciReceive(channel: .monitor, device: nil))) {
            for try await _ in socket.packets() {}
        }
    }

    @Test("a receive error ends the stream with the errno")
    func receiveError() async throws {
        // A pipe is readable but no socket: recv fails with ENOTSOCK.
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { _ = Glibc.close(fds[1]) }
        let socket = HCISocket(adopting: SocketDescriptor(rawValue: fds[0]), device: nil, channel: .monitor)
        #expect(Glibc.write(fds[1], [UInt8(0x01)], 1) == 1)
        await #expect(
            throws: KernelBluetoothError.system(operation: .hciReceive(channel: .monitor, device: nil), errno: Errno(rawValue: ENOTSOCK))
        ) {
            for try await _ in socket.packets() {}
        }
        await kernelClose(socket)
    }
}

@Suite("Kernel scanning over a seqpacket socketpair", .timeLimit(.minutes(1)))
struct KernelScannerStreamTests {
    static let scanParameters = kernelHex("0B 20 07 01 10 00 10 00 00 00")
    static let scanEnable = kernelHex("0C 20 02 01 00")
    static let scanDisable = kernelHex("0C 20 02 00 00")

    /// What the socket carried, as the observer saw it.
    final class Seen: Sendable {
        let packets = Mutex<[(HCIPacketType, [UInt8], Bool)]>([])
        let ended = Mutex(0)
        let (endedCalls, endedContinuation) = AsyncStream.makeStream(of: Void.self)

        func scanEnded() {
            ended.withLock { $0 += 1 }
            endedContinuation.yield()
        }

        /// Waits for the first `ended` call.
        func waitForEnded() async {
            for await _ in endedCalls { return }
        }
        var commands: [[UInt8]] { packets.withLock { $0.filter { $0.2 }.map(\.1) } }
        var events: [[UInt8]] { packets.withLock { $0.filter { !$0.2 }.map(\.1) } }
    }

    /// Starts a scan on one end of a socketpair; returns the only reference to its stream (an
    /// iterator: setting it to nil ends the iteration, as a consumer that goes away does).
    func startScan(_ seen: Seen) throws -> (AsyncThrowingStream<ScanEvent, any Error>.Iterator?, SocketDescriptor) {
        let (ours, kernel) = try kernelSeqpacketPair()
        let socket = HCISocket(adopting: ours, device: 0, channel: .raw)
        let stream = try KernelScanner.scan(
            socket: socket, options: LEScanParameters(),
            observer: { type, bytes, sent in seen.packets.withLock { $0.append((type, Array(bytes), sent)) } },
            ended: { seen.scanEnded() })
        return (stream.makeAsyncIterator(), kernel)
    }

    @Test("scan commands out, reports in, and ending the iteration disables the scan and closes the socket")
    func scanAndEnd() async throws {
        let seen = Seen()
        var (events, kernel) = try startScan(seen)
        defer { try? kernel.close() }
        #expect(try kernelPeerReceive(kernel) == [0x01] + Self.scanParameters)
        #expect(try kernelPeerReceive(kernel) == [0x01] + Self.scanEnable)
        // Both completions and two reports queued before the scan reads anything.
        let report1 = kernelHex("3E 0C 02 01 00 00 66 55 44 33 22 11 00 C5")
        let report2 = kernelHex("3E 0C 02 01 00 00 01 02 03 04 05 06 00 C0")
        for event in [kernelHex("0E 04 01 0B 20 00"), kernelHex("0E 04 01 0C 20 00"), report1, report2] {
            try kernel.send([0x04] + event)
        }
        var devices: [BluetoothAddress] = []
        while devices.count < 2, let event = try await events?.next() {
            if case .discovered(let device) = event { devices.append(device.address) }
        }
        events = nil  // the consumer goes away
        #expect(devices.map(\.description) == ["11:22:33:44:55:66", "06:05:04:03:02:01"])
        #expect(try kernelPeerReceive(kernel) == [0x01] + Self.scanDisable)
        #expect(try kernelPeerReceive(kernel) == [], "the socket is closed")
        await seen.waitForEnded()
        #expect(seen.ended.withLock { $0 } == 1)
        #expect(seen.commands == [Self.scanParameters, Self.scanEnable, Self.scanDisable])
        #expect(seen.events.count == 4)
    }

    @Test("a refused scan command ends the stream with Failure.refused, then disables and closes")
    func refused() async throws {
        let seen = Seen()
        var (events, kernel) = try startScan(seen)
        defer { try? kernel.close() }
        try kernel.send([0x04] + kernelHex("0E 04 01 0C 20 0C"))
        await #expect(throws: KernelScanner.Failure.refused(opcode: HCIOpcode(rawValue: 0x200C), status: HCIStatus(rawValue: 0x0C))) {
            while try await events?.next() != nil {}
        }
        for _ in 0..<2 { _ = try kernelPeerReceive(kernel) }
        #expect(try kernelPeerReceive(kernel) == [0x01] + Self.scanDisable)
        #expect(try kernelPeerReceive(kernel) == [])
        await seen.waitForEnded()
        #expect(seen.ended.withLock { $0 } == 1)
    }

    @Test("the controller side closing ends the scan cleanly")
    func endOfStream() async throws {
        let seen = Seen()
        var (events, kernel) = try startScan(seen)
        for _ in 0..<2 { _ = try kernelPeerReceive(kernel) }  // unread data would make it a reset
        try kernel.close()
        while try await events?.next() != nil {}
        // `ended` follows the disabling command and the close, on the reader's queue.
        await seen.waitForEnded()
        #expect(seen.commands.last == Self.scanDisable)
    }
}
