#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ATT
import Bluetooth
import Dispatch
import HCI
import Testing

@testable import L2CAP
@testable import Kernel
import TestSupport

/// Receives one datagram on the test's end, waiting at most 5 s (times TEST_TIMEOUT_SCALE) for it.
func kernelPeerReceive(_ peer: SocketDescriptor) throws -> [UInt8]? {
    guard try peer.wait(for: .readable, timeout: .seconds(5 * testTimeoutScale)) else { return nil }
    return try peer.receive(maximumLength: 70_000)
}

/// Runs blocking peer-side socket work on its own dispatch thread, never on Swift's cooperative
/// pool (as many threads as cores: blocking it could starve the code under test).
@discardableResult
func onPeerThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue(label: "kernel-test-peer").async { continuation.resume(with: Result { try body() }) }
    }
}

func kernelSDU(_ index: Int, length: Int = 20) -> [UInt8] {
    [0x1B, UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: index >> 8)]
        + [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: max(0, length - 3))
}

@Suite("Kernel ATT channel I/O over a seqpacket socketpair", .timeLimit(.minutes(1)))
struct KernelATTChannelIOTests {
    func makeChannel(maximumSDUSize: Int? = nil, logger: Logger = .disabled) throws -> (KernelATTChannel, SocketDescriptor) {
        let (ours, peer) = try kernelSeqpacketPair()
        return (KernelATTChannel(adopting: ours, maximumSDUSize: maximumSDUSize, logger: logger), peer)
    }

    @Test("sent SDUs reach the peer whole and in order")
    func sendOrder() async throws {
        let (channel, peer) = try makeChannel()
        defer { try? peer.close() }
        async let received = onPeerThread { try (0..<100).map { _ in try kernelPeerReceive(peer) } }
        for index in 0..<100 { try await channel.send(kernelSDU(index, length: 3 + index)) }
        #expect(try await received == (0..<100).map { kernelSDU($0, length: 3 + $0) })
        await channel.close()
    }

    @Test("received SDUs arrive in order, none lost, and the stream ends at the peer's close")
    func receiveOrder() async throws {
        let (channel, peer) = try makeChannel()
        let count = 1000
        let sender = Task {
            try await onPeerThread {
                for index in 0..<count { try peer.send(kernelSDU(index)) }
                try peer.close()
            }
        }
        var received: [[UInt8]] = []
        for try await sdu in channel.incoming { received.append(sdu) }
        #expect(received.count == count)
        #expect(received == (0..<count).map { kernelSDU($0) })
        try await sender.value
        await channel.close()
    }

    @Test("a flood far beyond one read batch drains into incoming before anyone consumes it")
    func floodBeforeConsuming() async throws {
        // Regression: libdispatch on Linux does not always fire a read source again when its
        // handler leaves datagrams unread, so the channel must continue a full batch itself.
        let (channel, peer) = try makeChannel()
        let count = 5000
        try await onPeerThread {
            for index in 0..<count {
                guard try peer.wait(for: .writable, timeout: .seconds(5)) else {
                    throw KernelBluetoothError.system(operation: .receive(peer: nil), errno: .timedOut)
                }
                try peer.send(kernelSDU(index))
            }
            try peer.close()
        }
        var received = 0
        for try await sdu in channel.incoming {
            #expect(sdu == kernelSDU(received))
            received += 1
        }
        #expect(received == count)
        await channel.close()
    }

    @Test("a 517-octet SDU and a 65535-octet SDU go through whole")
    func largeSDUs() async throws {
        let (channel, peer) = try makeChannel()
        defer { try? peer.close() }
        let big = kernelSDU(7, length: 65_535)
        try await channel.send(kernelSDU(1, length: 517))
        #expect(try await onPeerThread { try kernelPeerReceive(peer) } == kernelSDU(1, length: 517))
        try await onPeerThread { try peer.send(big) }
        var iterator = channel.incoming.makeAsyncIterator()
        #expect(try await iterator.next() == big)
        await channel.close()
    }

    @Test("sends beyond the socket buffer wait for writability and keep their order")
    func backpressure() async throws {
        // The log line the channel writes when a send meets a full buffer tells the peer to
        // start reading: the buffer is full before anyone drains it, without sleeping.
        let (signals, signal) = AsyncStream<Void>.makeStream()
        let logger = Logger(label: "test", minimumLevel: .trace) { _, _, message in
            if message.contains("waiting for writability") { signal.yield() }
        }
        let (channel, peer) = try makeChannel(logger: logger)
        defer { try? peer.close() }
        let count = 300
        let sender = Task {
            defer { signal.finish() }
            for index in 0..<count { try await channel.send(kernelSDU(index, length: 200)) }
        }
        var iterator = signals.makeAsyncIterator()
        let blocked: Void? = await iterator.next()
        #expect(blocked != nil, "every send fit in the socket buffer: the write source was never needed")
        let received = try await onPeerThread { try (0..<count).map { _ in try kernelPeerReceive(peer) } }
        #expect(received == (0..<count).map { kernelSDU($0, length: 200) })
        try await sender.value
        await channel.close()
    }

    @Test("close: the peer sees end of stream, incoming finishes, later sends fail with .closed")
    func localClose() async throws {
        let (channel, peer) = try makeChannel()
        defer { try? peer.close() }
        await channel.close()
        #expect(try await onPeerThread { try kernelPeerReceive(peer) } == [])
        var count = 0
        for try await _ in channel.incoming { count += 1 }
        #expect(count == 0)
        await #expect(throws: KernelBluetoothError.closed(operation: .send(peer: nil))) {
            try await channel.send([0x0A, 0x01, 0x00])
        }
        await channel.close()  // twice is harmless
    }

    @Test("a reset link throws from incoming with the clear message")
    func connectionReset() async throws {
        let (channel, peer) = try makeChannel()
        // Unread data in the peer's queue when it closes makes the kernel report ECONNRESET.
        try await channel.send([0x02, 0x17, 0x00])
        #expect(try await onPeerThread { try peer.wait(for: .readable, timeout: .seconds(5)) })
        try peer.close()
        do {
            for try await sdu in channel.incoming { Issue.record("unexpected SDU \(sdu)") }
            Issue.record("incoming finished without an error")
        } catch let error as KernelBluetoothError {
            #expect(error == .system(operation: .receive(peer: nil), errno: .connectionReset))
            #expect(error.description == "receiving from the peer: connection reset: the device disconnected")
        }
        await #expect(throws: KernelBluetoothError.self) { try await channel.send([0x02, 0x17, 0x00]) }
        await channel.close()
    }

    @Test("an empty SDU is refused; maximumSDUSize is what the socket reported")
    func emptyAndSize() async throws {
        let (channel, peer) = try makeChannel(maximumSDUSize: 672)
        defer { try? peer.close() }
        await #expect(throws: KernelBluetoothError.invalidRequest(operation: .send(peer: nil), reason: "an ATT PDU is never empty")) {
            try await channel.send([])
        }
        #expect(channel.maximumSDUSize == 672)
        await channel.close()
    }

    @Test("socket options on a non-Bluetooth socket fail with a typed error; after close with .closed")
    func socketOptions() async throws {
        let (channel, peer) = try makeChannel()
        defer { try? peer.close() }
        do {
            try await channel.setSecurity(.medium)
            Issue.record("BT_SECURITY accepted by an AF_UNIX socket")
        } catch {
            guard case .system(.setSecurity(level: 2), _) = error else {
                Issue.record("\(error)")
                return
            }
        }
        await #expect(throws: KernelBluetoothError.self) { try await channel.mtu() }
        await channel.close()
        await #expect(throws: KernelBluetoothError.closed(operation: .readSecurity)) { try await channel.securityLevel() }
    }

    @Test("a channel nobody closed closes its socket when released")
    func releaseCloses() async throws {
        let (ours, peer) = try kernelSeqpacketPair()
        defer { try? peer.close() }
        do {
            let channel = KernelATTChannel(adopting: ours)
            try await channel.send([0x0A, 0x03, 0x00])
        }
        let received = try await onPeerThread { [try kernelPeerReceive(peer), try kernelPeerReceive(peer)] }
        #expect(received == [[0x0A, 0x03, 0x00], []])
    }

    @Test("works as an ATTChannel existential")
    func existential() async throws {
        let (channel, peer) = try makeChannel()
        defer { try? peer.close() }
        let generic: any ATTChannel = channel
        try await generic.send([0x02, 0x00, 0x02])
        #expect(try await onPeerThread { try kernelPeerReceive(peer) } == [0x02, 0x00, 0x02])
        try await onPeerThread { try peer.send([0x03, 0x17, 0x00]) }
        var iterator = generic.incoming.makeAsyncIterator()
        #expect(try await iterator.next() == [0x03, 0x17, 0x00])
        await generic.close()
    }
}

@Suite("Kernel ATT listener and readiness waits", .timeLimit(.minutes(1)))
struct KernelATTListenerTests {
    /// A listening AF_UNIX SOCK_SEQPACKET socket on an abstract address, and that address.
    func makeListener() throws -> (SocketDescriptor, sockaddr_un) {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Errno.current }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array("\0chci-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in name.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 4) == 0 else { throw Errno.current }
        address.sun_family = sa_family_t(AF_UNIX)
        return (SocketDescriptor(rawValue: fd), address)
    }

    func connectClient(_ address: sockaddr_un) throws -> SocketDescriptor {
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Errno.current }
        var copy = address
        let nameLength = withUnsafeBytes(of: &copy.sun_path) { raw in
            1 + raw.dropFirst().prefix { $0 != 0 }.count
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + nameLength)
        let result = withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        guard result == 0 else { throw Errno.current }
        return SocketDescriptor(rawValue: fd)
    }

    @Test("accept waits for a connection and returns a working channel")
    func acceptExchange() async throws {
        let (listening, address) = try makeListener()
        let listener = KernelATTListener(adopting: listening)
        let pending = Task { try await listener.accept() }
        let client = try connectClient(address)
        defer { try? client.close() }
        let channel = try await pending.value
        #expect(channel.peerAddressType == nil)  // not an LE peer
        try await onPeerThread { try client.send([0x02, 0x00, 0x02]) }
        var iterator = channel.incoming.makeAsyncIterator()
        #expect(try await iterator.next() == [0x02, 0x00, 0x02])
        try await channel.send([0x03, 0x00, 0x02])
        #expect(try await onPeerThread { try kernelPeerReceive(client) } == [0x03, 0x00, 0x02])
        await channel.close()
        await listener.close()
    }

    @Test("two pending accepts are served in order")
    func twoAccepts() async throws {
        let (listening, address) = try makeListener()
        let listener = KernelATTListener(adopting: listening)
        let first = try connectClient(address)
        let second = try connectClient(address)
        defer {
            try? first.close()
            try? second.close()
        }
        let a = try await listener.accept()
        let b = try await listener.accept()
        try first.send([0x01])
        try second.send([0x02])
        var ia = a.incoming.makeAsyncIterator()
        var ib = b.incoming.makeAsyncIterator()
        #expect(try await ia.next() == [0x01])
        #expect(try await ib.next() == [0x02])
        await a.close()
        await b.close()
        await listener.close()
    }

    @Test("closing the listener fails a waiting accept with .closed")
    func closeWhileWaiting() async throws {
        let (listening, _) = try makeListener()
        let listener = KernelATTListener(adopting: listening)
        let pending = Task { () async throws(KernelBluetoothError) -> KernelATTChannel in try await listener.accept() }
        await listener.close()
        let result = await pending.result
        #expect(throws: KernelBluetoothError.closed(operation: .acceptL2CAP)) { try result.get() }
    }

    @Test("cancelling a waiting accept gives ECANCELED")
    func cancelAccept() async throws {
        let (listening, _) = try makeListener()
        let listener = KernelATTListener(adopting: listening)
        let pending = Task { () async throws(KernelBluetoothError) -> KernelATTChannel in try await listener.accept() }
        pending.cancel()
        let result = await pending.result
        #expect(throws: KernelBluetoothError.system(operation: .acceptL2CAP, errno: .cancelled)) { try result.get() }
        await listener.close()
    }

    @Test("a readiness wait times out, sees readiness, and honours cancellation")
    func readinessWait() async throws {
        let (a, b) = try kernelSeqpacketPair()
        defer {
            try? a.close()
            try? b.close()
        }
        #expect(await KernelReadiness.wait(a.rawValue, for: .read, timeout: .milliseconds(20)) == .timedOut)
        #expect(await KernelReadiness.wait(a.rawValue, for: .write, timeout: .seconds(5)) == .ready)
        try b.send([0x01])
        #expect(await KernelReadiness.wait(a.rawValue, for: .read, timeout: .seconds(5)) == .ready)
        _ = try a.receive(maximumLength: 8)
        let waiting = Task { await KernelReadiness.wait(a.rawValue, for: .read, timeout: nil) }
        waiting.cancel()
        #expect(await waiting.value == .cancelled)
    }
}

@Suite("Kernel L2CAP non-blocking connect completion", .timeLimit(.minutes(1)))
struct KernelConnectCompletionTests {
    static let operation = KernelOperation.connectL2CAP(peer: BluetoothAddress("C4:BE:84:70:69:09")!, type: .public)

    @Test("a writable socket without a pending error is connected")
    func connected() async throws {
        let (a, b) = try kernelSeqpacketPair()
        defer {
            try? a.close()
            try? b.close()
        }
        try await KernelL2CAP.awaitConnect(a.rawValue, operation: Self.operation, timeout: .seconds(5))
    }

    @Test("a socket that never becomes writable times out with ETIMEDOUT")
    func timesOut() async throws {
        let (a, b) = try kernelSeqpacketPair()
        defer {
            try? a.close()
            try? b.close()
        }
        // Fill the queue towards the peer, so `a` stays unwritable as a pending connect does.
        while (try? a.send([0x00], nonBlocking: true)) != nil {}
        await #expect(throws: KernelBluetoothError.system(operation: Self.operation, errno: .timedOut)) {
            try await KernelL2CAP.awaitConnect(a.rawValue, operation: Self.operation, timeout: .milliseconds(30))
        }
    }

    @Test("a failed connect reports SO_ERROR")
    func failed() async throws {
        let (a, b) = try kernelSeqpacketPair()
        defer { try? a.close() }
        // Unread data at the peer's close leaves ECONNRESET pending on `a`.
        try a.send([0x01])
        try b.close()
        await #expect(throws: KernelBluetoothError.system(operation: Self.operation, errno: .connectionReset)) {
            try await KernelL2CAP.awaitConnect(a.rawValue, operation: Self.operation, timeout: .seconds(5))
        }
    }

    @Test("cancelling the connecting task gives ECANCELED")
    func cancelled() async throws {
        let (a, b) = try kernelSeqpacketPair()
        defer {
            try? a.close()
            try? b.close()
        }
        while (try? a.send([0x00], nonBlocking: true)) != nil {}
        let fd = a.rawValue
        let pending = Task {
            try await KernelL2CAP.awaitConnect(fd, operation: Self.operation, timeout: .seconds(50))
        }
        pending.cancel()
        let result = await pending.result
        #expect(throws: KernelBluetoothError.system(operation: Self.operation, errno: .cancelled)) { try result.get() }
    }
}

@Suite("Kernel L2CAP sockets on this machine", .timeLimit(.minutes(1)))
struct KernelL2CAPSocketTests {
    @Test("connect succeeds or throws the typed error (exact message without Bluetooth)")
    func connect() async {
        let peer = BluetoothAddress("00:00:5E:00:53:01")!
        do {
            let channel = try await KernelATTChannel.connect(to: peer, type: .random, timeout: .seconds(2))
            await channel.close()
        } catch {
            switch error {
            case .system(.openL2CAP(adapter: .zero), let errno) where errno == .addressFamilyNotSupported:
                #expect(
                    error.description
                        == "opening an L2CAP LE socket: this kernel has no Bluetooth support (AF_BLUETOOTH); "
                        + "use --transport sim or tcp:HOST:PORT")
            case .system(.openL2CAP, _):
                expectTypedKernelError(error, .openL2CAP(adapter: .zero))
            case .system(.connectL2CAP(peer, .random), let errno):
                #expect(
                    [Errno.timedOut, .hostDown, Errno(rawValue: EHOSTUNREACH), .connectionRefused,
                     Errno(rawValue: EOPNOTSUPP)].contains(errno), "\(error)")
            default:
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test("listen succeeds or throws the typed error")
    func listen() async {
        do {
            let listener = try KernelATTChannel.listen()
            await listener.close()
        } catch {
            if error.errno == .addressFamilyNotSupported {
                #expect(
                    error.description
                        == "listening on the ATT channel: this kernel has no Bluetooth support (AF_BLUETOOTH); "
                        + "use --transport sim or tcp:HOST:PORT")
            } else if error.errno != Errno(rawValue: EADDRINUSE) {
                expectTypedKernelError(error, .listenL2CAP(adapter: .zero))
            }
        }
    }

    @Test("security levels and MTU limits")
    func levelsAndMTU() {
        #expect(L2CAPSecurityLevel("high") == .high)
        #expect(L2CAPSecurityLevel("FIPS") == .fips)
        #expect(L2CAPSecurityLevel("none") == nil)
        #expect(L2CAPSecurityLevel.medium.description == "medium")
        #expect(L2CAPSecurityLevel.low < .high)
        #expect(L2CAPMTU(send: 672, receive: 517).maximumSDUSize == 517)
        #expect(L2CAPMTU(send: 0, receive: 672).maximumSDUSize == nil)
        #expect(KernelL2CAP.addressType(socketType: 1) == .public)
        #expect(KernelL2CAP.addressType(socketType: 2) == .random)
        #expect(KernelL2CAP.addressType(socketType: 0) == nil)
        #expect(KernelL2CAP.socketType(.random) == 2)
    }
}
