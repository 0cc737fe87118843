import Bluetooth
import Testing

@testable import HCI

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Transport I/O over sockets, ptys and memory")
struct TransportIOTests {
    static let reset: (HCIPacketType, [UInt8]) = (.command, [0x03, 0x0C, 0x00])
    static let resetComplete: (HCIPacketType, [UInt8]) = (.event, [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    static let acl: (HCIPacketType, [UInt8]) = (.acl, [0x40, 0x20, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x0B])

    static func h4(_ packets: [(HCIPacketType, [UInt8])]) -> [UInt8] { packets.flatMap { [$0.0.rawValue] + $0.1 } }

    // MARK: - TCP

    @Test func tcpCarriesPacketsBothWaysWhateverTheChunking() async throws {
        let listener = TestTCPListener()
        let transport = try await SocketTransport.connectTCP(host: "127.0.0.1", port: listener.port)
        defer { transport.close() }
        let controller = try #require(await listener.accept())

        try await transport.send(Self.reset.0, Self.reset.1)
        #expect(await controller.read(count: 4) == [0x01, 0x03, 0x0C, 0x00])

        // The controller's bytes arrive split in the middle of headers and bodies.
        let stream = Self.h4([Self.resetComplete, Self.acl, Self.resetComplete])
        controller.write(Array(stream[0..<2]))
        controller.write(Array(stream[2..<9]))
        controller.write(Array(stream[9...]))
        let received = try await receivePackets(transport, count: 3)
        #expect(samePackets(received, [Self.resetComplete, Self.acl, Self.resetComplete]))
    }

    @Test func tcpPeerClosingFailsTheStreamAndLaterSends() async throws {
        let listener = TestTCPListener()
        let transport = try await SocketTransport.connectTCP(host: "localhost", port: listener.port)
        do {
            let controller = try #require(await listener.accept())
            controller.write(Self.h4([Self.resetComplete]))
        }  // the controller's end closes here
        // The packet sent before the close is still delivered, then the stream ends.
        let first = try await receivePackets(transport, count: 1)
        #expect(samePackets(first, [Self.resetComplete]))
        let end = try await streamEnd(transport)
        guard case .transportClosed(let reason)? = end else {
            Issue.record("expected transportClosed, got \(String(describing: end))")
            return
        }
        #expect(reason.contains("closed the connection"))
        await #expect(throws: HCIError.transportClosed(reason)) {
            try await transport.send(Self.reset.0, Self.reset.1)
        }
    }

    @Test func localCloseReleasesAWaitingReader() async throws {
        let listener = TestTCPListener()
        let transport = try await SocketTransport.connectTCP(host: "127.0.0.1", port: listener.port)
        let controller = try #require(await listener.accept())
        let waiting = Task { try await streamEnd(transport) }
        transport.close(reason: "test over")
        #expect(try await waiting.value == .transportClosed("test over"))
        transport.close(reason: "again")  // idempotent
        await #expect(throws: HCIError.transportClosed("test over")) {
            try await transport.send(Self.reset.0, Self.reset.1)
        }
        // The controller sees the connection end.
        #expect(await controller.read(count: 1).isEmpty)
    }

    @Test func unknownIndicatorClosesTheTransport() async throws {
        let listener = TestTCPListener()
        let transport = try await SocketTransport.connectTCP(host: "127.0.0.1", port: listener.port)
        defer { transport.close() }
        let controller = try #require(await listener.accept())
        controller.write(Self.h4([Self.resetComplete]) + [0x09, 0x00])
        let first = try await receivePackets(transport, count: 1)
        #expect(samePackets(first, [Self.resetComplete]))
        let end = try await streamEnd(transport)
        guard case .transportClosed(let reason)? = end else {
            Issue.record("expected transportClosed, got \(String(describing: end))")
            return
        }
        #expect(reason.contains("unknown HCI packet type 0x9"))
    }

    @Test func connectionRefusedIsASystemError() async throws {
        // Bind a port, then close it: nothing listens there any more.
        let port = TestTCPListener().port
        await #expect {
            _ = try await SocketTransport.connectTCP(host: "127.0.0.1", port: port, connectTimeout: .seconds(2))
        } throws: { error in
            guard case .system(let operation, let errno)? = error as? HCIError else { return false }
            return operation.contains("connect") && errno == .connectionRefused
        }
    }

    @Test func unresolvableHostSaysSo() async {
        await #expect {
            _ = try await SocketTransport.connectTCP(host: "no-such-host.invalid", port: 9, connectTimeout: .seconds(2))
        } throws: { error in
            guard case .unsupportedTransport(_, let reason)? = error as? HCIError else { return false }
            return reason.contains("cannot resolve host")
        }
    }

    @Test func concurrentSendsNeverInterleave() async throws {
        let listener = TestTCPListener()
        let transport = try await SocketTransport.connectTCP(host: "127.0.0.1", port: listener.port)
        defer { transport.close() }
        let controller = try #require(await listener.accept())
        let senders = 8
        let perSender = 25
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<senders {
                group.addTask {
                    for index in 0..<perSender {
                        // An ACL packet whose 600 payload octets all carry the sender number.
                        let payload = [UInt8](repeating: UInt8(sender), count: 600)
                        let header: [UInt8] = [UInt8(index), 0x00, 0x58, 0x02]
                        try await transport.send(.acl, header + payload)
                    }
                }
            }
            try await group.waitForAll()
        }
        let total = senders * perSender * (1 + 4 + 600)
        let bytes = await controller.read(count: total)
        #expect(bytes.count == total)
        var framer = H4Framer()
        framer.append(bytes)
        var packets: [HCITransportPacket] = []
        while let packet = try framer.nextPacket() { packets.append(packet) }
        #expect(framer.bufferedCount == 0)
        #expect(packets.count == senders * perSender)
        for packet in packets {
            let payload = packet.1.dropFirst(4)
            #expect(Set(payload).count == 1, "a packet mixes two senders' bytes")
        }
    }

    @Test func aStalledControllerMakesSendFailWithinTheWriteTimeout() async throws {
        let listener = TestTCPListener(receiveBuffer: 4096)
        let transport = try await SocketTransport.connectTCP(
            host: "127.0.0.1", port: listener.port, writeTimeout: .milliseconds(200))
        defer { transport.close() }
        let controller = try #require(await listener.accept())
        let big = [UInt8](repeating: 0, count: 4) + [UInt8](repeating: 0xEE, count: 65531)
        let started = ContinuousClock.now
        var failure: HCIError?
        for _ in 0..<2000 {
            do {
                try await transport.send(.acl, [0x01, 0x00, 0xFF, 0xFF] + big)
            } catch {
                failure = error
                break
            }
        }
        guard case .system(let operation, let errno)? = failure else {
            Issue.record("expected a write timeout, got \(String(describing: failure))")
            return
        }
        #expect(errno == .timedOut)
        #expect(operation.contains("did not accept"))
        #expect(ContinuousClock.now - started < .seconds(30))
        // A failed write closes the transport: everything after fails the same way.
        #expect(try await streamEnd(transport) != nil)
        _ = controller
    }

    // MARK: - Unix socket

    @Test func unixSocketCarriesPackets() async throws {
        let listener = TestUnixListener()
        let transport = try await SocketTransport.connectUnix(path: listener.path)
        defer { transport.close() }
        let controller = try #require(await listener.accept())
        try await transport.send(.command, [0x09, 0x10, 0x00])
        #expect(await controller.read(count: 4) == [0x01, 0x09, 0x10, 0x00])
        controller.write(Self.h4([Self.acl, Self.resetComplete]))
        #expect(samePackets(try await receivePackets(transport, count: 2), [Self.acl, Self.resetComplete]))
    }

    @Test func unixSocketThatDoesNotExist() async {
        await #expect {
            _ = try await SocketTransport.connectUnix(path: "/tmp/no-such-hci-socket-\(getpid())")
        } throws: { error in
            guard case .system(_, let errno)? = error as? HCIError else { return false }
            return errno == Errno(rawValue: ENOENT)
        }
    }

    // MARK: - Datagrams (the user channel's framing) over a SOCK_SEQPACKET pair

    @Test func datagramFramingOnePacketPerRead() async throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let transport = FileDescriptorTransport(adopting: pair[0], framing: .datagram, name: "seqpacket")
        defer { transport.close() }
        let controller = TestSocket(descriptor: pair[1])
        for packet in [Self.resetComplete, Self.acl] { controller.write([packet.0.rawValue] + packet.1) }
        #expect(samePackets(try await receivePackets(transport, count: 2), [Self.resetComplete, Self.acl]))

        try await transport.send(.command, [0x03, 0x0C, 0x00])
        #expect(await controller.read(count: 4) == [0x01, 0x03, 0x0C, 0x00])

        // A short datagram is malformed and fails the transport, never "need more".
        controller.write([0x04, 0x0E, 0x04, 0x01])
        let end = try await streamEnd(transport)
        guard case .transportClosed(let reason)? = end else {
            Issue.record("expected transportClosed, got \(String(describing: end))")
            return
        }
        #expect(reason.contains("malformed"))
    }

    // MARK: - Serial, over a pseudo-terminal

    /// TIOCSPTLCK = _IOW('T', 0x31, int) and TIOCGPTN = _IOR('T', 0x30, unsigned int) in the
    /// generic Linux ioctl encoding (x86-64, arm64); the Glibc module exports neither macro.
    static let setPtyLock: UInt = 0x4004_5431
    static let getPtyNumber: UInt = 0x8004_5430

    @Test func serialOverAPseudoTerminal() async throws {
        // posix_openpt/unlockpt/ptsname by hand: the Glibc module does not export them.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        try #require(master >= 0, "no /dev/ptmx: \(Errno.current)")
        let controller = TestSocket(descriptor: master)
        var unlock: Int32 = 0
        try #require(ioctl(master, Self.setPtyLock, &unlock) == 0)
        var number: UInt32 = 0
        try #require(ioctl(master, Self.getPtyNumber, &number) == 0)
        let path = "/dev/pts/\(number)"
        let transport = try await SerialTransport.open(device: path, baudRate: 115_200)
        defer { transport.close() }

        // The slave is in raw mode: binary bytes (0x03, 0x11, 0x13, 0x0A) pass untouched.
        let command: (HCIPacketType, [UInt8]) = (.command, [0x11, 0x13, 0x03, 0x0A, 0x0D, 0x7F])
        try await transport.send(command.0, command.1)
        #expect(await controller.read(count: 7) == [0x01, 0x11, 0x13, 0x03, 0x0A, 0x0D, 0x7F])
        let event: (HCIPacketType, [UInt8]) = (.event, [0x0E, 0x04, 0x01, 0x0A, 0x0D, 0x03])
        controller.write(Self.h4([event, Self.acl]))
        #expect(samePackets(try await receivePackets(transport, count: 2), [event, Self.acl]))
    }

    @Test func serialConfigurationIsRaw8N1WithRTSCTS() {
        var settings = termios()
        settings.c_lflag = tcflag_t(ICANON | ECHO | ISIG)
        settings.c_cflag = tcflag_t(PARENB | CSTOPB | CS7)
        settings.c_iflag = tcflag_t(IXON | ICRNL)
        SerialTransport.configure(&settings, speed: SerialBaudRate.termiosSpeed(for: 1_000_000)!, flowControl: true)
        #expect(settings.c_cflag & tcflag_t(CSIZE) == tcflag_t(CS8))
        #expect(settings.c_cflag & tcflag_t(PARENB) == 0)
        #expect(settings.c_cflag & tcflag_t(CSTOPB) == 0)
        #expect(settings.c_cflag & tcflag_t(CRTSCTS) != 0)
        #expect(settings.c_cflag & tcflag_t(CREAD | CLOCAL) == tcflag_t(CREAD | CLOCAL))
        #expect(settings.c_lflag & tcflag_t(ICANON | ECHO | ISIG) == 0)
        #expect(settings.c_iflag & tcflag_t(IXON | ICRNL) == 0)
        #expect(cfgetospeed(&settings) == speed_t(B1000000))
        #expect(cfgetispeed(&settings) == speed_t(B1000000))
        SerialTransport.configure(&settings, speed: speed_t(B115200), flowControl: false)
        #expect(settings.c_cflag & tcflag_t(CRTSCTS) == 0)
    }

    @Test func serialDeviceThatIsNotATerminal() async {
        await #expect {
            _ = try await SerialTransport.open(device: "/dev/null")
        } throws: { error in
            guard case .system(let operation, let errno)? = error as? HCIError else { return false }
            return operation.contains("tcgetattr") && errno == Errno(rawValue: ENOTTY)
        }
    }

    // MARK: - In memory

    @Test func inMemoryPairCarriesPacketsAndClosesBothEnds() async throws {
        let (host, controller) = InMemoryTransport.makePair()
        try await host.send(Self.reset.0, Self.reset.1)
        try await controller.send(Self.resetComplete.0, Self.resetComplete.1)
        try await controller.send(Self.acl.0, Self.acl.1)
        #expect(samePackets(try await receivePackets(controller, count: 1), [Self.reset]))
        #expect(samePackets(try await receivePackets(host, count: 2), [Self.resetComplete, Self.acl]))

        controller.close(reason: "controller gone")
        #expect(try await streamEnd(host) == .transportClosed("controller gone"))
        #expect(try await streamEnd(controller) == .transportClosed("controller gone"))
        await #expect(throws: HCIError.transportClosed("controller gone")) {
            try await host.send(Self.reset.0, Self.reset.1)
        }
    }
}
