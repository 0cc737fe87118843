#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
import HCI
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
