#if canImport(Glibc)
    import Glibc
#endif

/// Debian's `mosquitto` broker, started for one test with its own configuration on a free
/// loopback port (never 1883, which the package's own service may hold), persistence on in a
/// directory of its own so a restart keeps sessions and queued QoS 1 messages. Every process it
/// starts is stopped by its id (`stop`, `kill`, or `deinit`).
public final class MosquittoBroker: @unchecked Sendable {
    // @unchecked: `process` changes only in start/stop/kill, which the test calls in sequence.

    /// The broker's executable, where the `mosquitto` package put it.
    public static let executable: String? = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"].first { (path: String) in access(path, X_OK) == 0 }
    /// Whether the broker and libmosquitto (libmosquitto1) are installed.
    public static var isAvailable: Bool {
        guard executable != nil, let library = dlopen("libmosquitto.so.1", RTLD_LAZY) else { return false }
        dlclose(library)
        return true
    }

    public let port: Int
    public let directory: String
    private var process: ChildProcess?

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// The broker's log (`log`: every line, `log_type all`), nil without.
    public var logPath: String? { logging ? directory + "/mosquitto.log" : nil }
    private let logging: Bool

    /// With `tlsName`: the CA certificate a client checks the broker against (``caFile``).
    public var caFile: String { directory + "/ca.pem" }

    /// Writes the configuration and starts the broker; returns once it accepts connections (at
    /// most 10 s). `listener`: more lines for the listener; `tlsName`: the listener speaks TLS
    /// with a server certificate for that name (a DNS name: a client connecting to 127.0.0.1
    /// finds it does not match), signed by a throwaway CA made with `openssl` in the broker's
    /// directory (``caFile``; removed with it); `log`: the broker logs everything to ``logPath``.
    public init(listener: String = "", tlsName: String? = nil, log: Bool = false) async throws {
        logging = log
        port = try Self.freePort()
        let temporary = withProcessEnvironment { getenv("TMPDIR").map { String(cString: $0) } } ?? "/tmp"
        directory = temporary + "/mosquitto-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(directory, 0o700) == 0 else { throw Failure(description: "mkdir \(directory): errno \(errno)") }
        // As root, mosquitto would drop to its own user, which cannot write this directory: the
        // persistence would be lost at the restart.
        let user = getuid() == 0 ? "user root\n" : ""
        var listener = listener
        if let tlsName {
            try await Self.makeCertificates(for: tlsName, in: directory)
            listener += "\ncafile \(directory)/ca.pem\ncertfile \(directory)/server.pem\nkeyfile \(directory)/server.key"
        }
        let configuration = user + """
            listener \(port) 127.0.0.1
            \(listener)
            allow_anonymous true
            persistence true
            persistence_location \(directory)/
            persistence_file broker.db
            autosave_interval 1
            max_queued_messages 0
            max_inflight_messages 100
            \(log ? "log_dest file \(directory)/mosquitto.log\nlog_type all" : "log_dest none")

            """
        guard let file = fopen(directory + "/mosquitto.conf", "w") else { throw Failure(description: "cannot write the configuration") }
        fputs(configuration, file)
        fclose(file)
        try await start()
    }

    deinit {
        process?.kill()
        // Whatever the broker wrote there too.
        removeTree(directory)
    }

    /// Starts it (again); returns once it accepts connections.
    public func start() async throws {
        guard let executable = Self.executable else { throw Failure(description: "mosquitto is not installed") }
        process = try ChildProcess([executable, "-c", directory + "/mosquitto.conf"], standardOutput: .null, standardError: .null)
        for _ in 0..<200 {
            if Self.accepts(port) { return }
            if let process, process.poll() != nil { throw Failure(description: "mosquitto exited at start (port \(port) taken?)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "mosquitto did not accept connections on 127.0.0.1:\(port) within 10 s")
    }

    /// SIGTERM (the broker saves its persistence and exits), reaped within 10 s, else SIGKILL.
    public func stop() {
        guard let process else { return }
        if process.poll() == nil {
            _ = Glibc.kill(process.pid, SIGTERM)
            // Blocking (a defer cannot await): the broker ends within milliseconds of SIGTERM.
            if process.waitBlocking(timeout: 10) == nil { process.kill() }
        }
        self.process = nil
    }

    /// A port the kernel had free a moment ago.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw Failure(description: "bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A CA (ca.pem, ca.key) and a server certificate it signs for `name` (server.pem,
    /// server.key) in `directory`, by `openssl`.
    static func makeCertificates(for name: String, in directory: String) async throws {
        guard let file = fopen(directory + "/san.cnf", "w") else { throw Failure(description: "cannot write san.cnf") }
        fputs("subjectAltName=DNS:\(name)\n", file)
        fclose(file)
        let d = directory
        for step in [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/ca.key", "-out", d + "/ca.pem", "-days", "1", "-subj", "/CN=test CA"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", d + "/server.key", "-out", d + "/server.csr", "-subj", "/CN=\(name)"],
            [
                "x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key", "-CAcreateserial", "-out",
                d + "/server.pem", "-days", "1", "-extfile", d + "/san.cnf",
            ],
        ] {
            let run = try await ChildProcess.run(["/usr/bin/openssl"] + step, timeout: 60)
            guard run.code == 0 else {
                throw Failure(description: "openssl \(step[0]) exited \(run.code): \(String(decoding: run.output, as: UTF8.self))")
            }
        }
    }

    /// The broker's log as it is now (empty without one).
    public func log() -> String {
        guard let logPath, let file = fopen(logPath, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether something accepts a TCP connection on 127.0.0.1:`port`.
    static func accepts(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
