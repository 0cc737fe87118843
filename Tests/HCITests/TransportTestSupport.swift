import TestSupport
import Bluetooth

@testable import HCI

#if canImport(Glibc)
    import Glibc
#endif

/// A test waited longer than its bound.

/// Reads exactly `count` packets from `transport` (bounded).
func receivePackets(_ transport: some HCITransport, count: Int, seconds: Double = 30) async throws
    -> [HCITransportPacket]
{
    let packets = transport.packets
    return try await withTimeout(seconds, "\(count) packet(s)") {
        var out: [HCITransportPacket] = []
        var iterator = packets.makeAsyncIterator()
        while out.count < count, let packet = try await iterator.next() {
            out.append(packet)
        }
        return out
    }
}

/// Waits (bounded) for the packet stream to end and returns how: the error it threw, or nil
/// when it finished without one. Packets still queued are skipped.
func streamEnd(_ transport: some HCITransport, seconds: Double = 30) async throws -> HCIError? {
    let packets = transport.packets
    return try await withTimeout(seconds, "the packet stream to end") {
        do {
            for try await _ in packets {}
            return nil
        } catch let error as HCIError {
            return error
        }
    }
}

/// Runs a blocking test step on a thread of its own: neither the Swift concurrency pool nor
/// Dispatch's workers (which that pool shares on Linux) may wait in poll while other suites run.
func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        runOnDedicatedThread { continuation.resume(returning: body()) }
    }
}

/// A blocking POSIX socket end used as the "controller" in transport tests. Its waits run off
/// the concurrency pool (`offPool`). `@unchecked Sendable`: only the descriptor, a constant.
final class TestSocket: @unchecked Sendable {
    let descriptor: Int32

    init(descriptor: Int32) { self.descriptor = descriptor }
    deinit { _ = close(descriptor) }

    /// Waits (bounded) until readable; false on timeout.
    func waitReadable(seconds: Double = 5) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, Int32(seconds * 1000)) > 0
    }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.write(descriptor, $0.baseAddress! + offset, bytes.count - offset)
            }
            precondition(written > 0, "test socket write failed: \(Errno.current)")
            offset += written
        }
    }

    /// Reads exactly `count` bytes (bounded); fewer when the peer closes or time runs out.
    func read(count: Int, seconds: Double = 30) async -> [UInt8] {
        await offPool { self.readBlocking(count: count, seconds: seconds) }
    }

    func readBlocking(count: Int, seconds: Double) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while out.count < count, waitReadable(seconds: seconds) {
            let n = buffer.withUnsafeMutableBytes {
                Glibc.read(descriptor, $0.baseAddress!, min($0.count, count - out.count))
            }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }
}

/// A listening TCP socket on 127.0.0.1 with a kernel-chosen port.
final class TestTCPListener: @unchecked Sendable {
    let descriptor: Int32
    let port: UInt16

    /// `receiveBuffer`: SO_RCVBUF for accepted sockets (small, to make a write stall).
    init(receiveBuffer: Int32? = nil) {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(descriptor >= 0)
        if var size = receiveBuffer {
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = descriptor
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
                bind(fd, raw, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        precondition(bound, "listen failed: \(Errno.current)")
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { _ = close(descriptor) }

    /// Accepts one connection (bounded).
    func accept(seconds: Double = 30) async -> TestSocket? {
        await offPool { self.acceptBlocking(seconds: seconds) }
    }

    func acceptBlocking(seconds: Double) -> TestSocket? {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32(seconds * 1000)) > 0 else { return nil }
        let client = Glibc.accept(descriptor, nil, nil)
        return client >= 0 ? TestSocket(descriptor: client) : nil
    }
}

/// A listening unix stream socket at a fresh path under /tmp.
final class TestUnixListener: @unchecked Sendable {
    let descriptor: Int32
    let path: String

    init() {
        path = "/tmp/hci-transport-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
        let fd = descriptor
        let ok = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 && listen(fd, 4) == 0
            }
        }
        precondition(ok, "unix listen failed: \(Errno.current)")
    }

    deinit {
        _ = close(descriptor)
        _ = unlink(path)
    }

    func accept(seconds: Double = 30) async -> TestSocket? {
        await offPool { self.acceptBlocking(seconds: seconds) }
    }

    func acceptBlocking(seconds: Double) -> TestSocket? {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32(seconds * 1000)) > 0 else { return nil }
        let client = Glibc.accept(descriptor, nil, nil)
        return client >= 0 ? TestSocket(descriptor: client) : nil
    }
}

/// Packets whose types and bytes are equal, in order.
func samePackets(_ a: [HCITransportPacket], _ b: [(HCIPacketType, [UInt8])]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.type == $1.0 && $0.bytes == $1.1 }
}
