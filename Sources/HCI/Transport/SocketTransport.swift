import SystemSupport
import Bluetooth

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// H4 over a stream socket: TCP (Bumble virtual controllers, btproxy, Zephyr native_sim, the
/// Android emulator) or a unix socket (btvirt `-s`, btproxy). Opening returns a
/// `FileDescriptorTransport` with H4 stream framing.
public enum SocketTransport {
    /// Resolves `host` and connects to `port`, trying each address in turn, each attempt
    /// bounded by `connectTimeout`. `TCP_NODELAY` is set: HCI packets are small and
    /// latency-bound.
    public static func connectTCP(
        host: String, port: UInt16, connectTimeout: Duration = .seconds(5),
        writeTimeout: Duration = .seconds(2), logger: Logger = .disabled
    ) async throws(HCIError) -> FileDescriptorTransport {
        let uri = host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        let descriptor = try await offCooperativePool { () throws(HCIError) -> Int32 in
            try connectTCPBlocking(host: host, port: port, uri: uri, timeout: connectTimeout)
        }
        logger.debug("\(uri): connected")
        return FileDescriptorTransport(
            adopting: descriptor, framing: .h4Stream, name: uri, writeTimeout: writeTimeout, logger: logger)
    }

    /// Connects to the unix stream socket at `path`.
    public static func connectUnix(
        path: String, writeTimeout: Duration = .seconds(2), logger: Logger = .disabled
    ) async throws(HCIError) -> FileDescriptorTransport {
        let uri = "unix:\(path)"
        let descriptor = try await offCooperativePool { () throws(HCIError) -> Int32 in
            try connectUnixBlocking(path: path, uri: uri)
        }
        logger.debug("\(uri): connected")
        return FileDescriptorTransport(
            adopting: descriptor, framing: .h4Stream, name: uri, writeTimeout: writeTimeout, logger: logger)
    }

    // MARK: - Blocking steps (run on a Dispatch thread, never on the cooperative pool)

    static func connectTCPBlocking(host: String, port: UInt16, uri: String, timeout: Duration) throws(HCIError) -> Int32
    {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let text = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw .unsupportedTransport(uri: uri, reason: "cannot resolve host '\(host)': \(text)")
        }
        defer { freeaddrinfo(first) }

        var lastError = HCIError.unsupportedTransport(uri: uri, reason: "no address to connect to")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            do {
                let descriptor = try connectOne(info.pointee, uri: uri, timeout: timeout)
                var one: Int32 = 1
                _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return descriptor
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    private static func connectOne(_ info: addrinfo, uri: String, timeout: Duration) throws(HCIError) -> Int32 {
        let descriptor = socket(
            info.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            info.ai_protocol)
        guard descriptor >= 0 else { throw .system(operation: "\(uri): socket", errno: .current) }
        var succeeded = false
        defer { if !succeeded { _ = close(descriptor) } }

        if connect(descriptor, info.ai_addr, info.ai_addrlen) != 0 {
            let error = Errno.current
            guard error == .inProgress || error == .interrupted else {
                throw .system(operation: "\(uri): connect", errno: error)
            }
            try waitConnected(descriptor, uri: uri, timeout: timeout)
        }
        succeeded = true
        return descriptor
    }

    /// Waits (bounded) for a non-blocking connect to finish and reports its outcome.
    private static func waitConnected(_ descriptor: Int32, uri: String, timeout: Duration) throws(HCIError) {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw .system(operation: "\(uri): connect", errno: .timedOut) }
            var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&entry, 1, milliseconds(left))
            if ready < 0 {
                if Errno.current == .interrupted { continue }
                throw .system(operation: "\(uri): poll", errno: .current)
            }
            if ready == 0 { continue }
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &pending, &length) == 0 else {
                throw .system(operation: "\(uri): getsockopt(SO_ERROR)", errno: .current)
            }
            guard pending == 0 else { throw .system(operation: "\(uri): connect", errno: Errno(rawValue: pending)) }
            return
        }
    }

    static func connectUnixBlocking(path: String, uri: String) throws(HCIError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity, !pathBytes.contains(0) else {
            throw .invalidTransportURI(uri: uri, reason: "socket path must be 1 to \(capacity - 1) octets without NUL")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let descriptor = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .system(operation: "\(uri): socket", errno: .current) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + 1)
        // A non-blocking unix connect completes or fails at once (EAGAIN when the listener's
        // backlog is full), so it never waits.
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) }
        }
        guard result == 0 else {
            let error = Errno.current
            _ = close(descriptor)
            throw .system(operation: "\(uri): connect", errno: error)
        }
        return descriptor
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
    }
}

/// Runs a blocking step (DNS, connect, open of a tty) on a thread of its own and returns its
/// outcome. Not on Dispatch's global queues: on Linux the Swift concurrency pool shares their
/// worker threads, so a blocked worker there stalls unrelated tasks.
func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws(HCIError) -> T) async throws(HCIError) -> T {
    let result: Result<T, HCIError> = await withCheckedContinuation { continuation in
        runOnDedicatedThread {
            do throws(HCIError) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}

/// Starts a detached POSIX thread running `body` (for bounded blocking work only); with no
/// thread to be had, runs it here rather than lose the work.
func runOnDedicatedThread(_ body: @escaping @Sendable () -> Void) {
    do {
        try DetachedThread.start(body)
    } catch {
        body()
    }
}
