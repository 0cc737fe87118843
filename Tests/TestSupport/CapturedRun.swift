import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// What an in-process run of a command line printed, and its exit code.
public struct CapturedRun: Sendable {
    public var code: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs `body` with two fresh temporary files as its standard output and error (their
/// descriptors are its arguments) on a thread of its own — the CLI's entry point blocks its
/// caller while its async work runs, and blocking a concurrency thread could starve the pool —
/// and returns the code it returned and what it wrote. The files are removed afterwards.
public func captureRun(_ body: @escaping @Sendable (_ stdout: Int32, _ stderr: Int32) -> Int32) async -> CapturedRun {
    _ = testCacheDirectory
    return await withCheckedContinuation { continuation in
        let thread = DispatchQueue(label: "captured-run")
        thread.async {
            let out = temporaryFile(), err = temporaryFile()
            let code = body(out.descriptor, err.descriptor)
            let stdout = readAll(out), stderr = readAll(err)
            continuation.resume(returning: CapturedRun(code: code, stdout: stdout, stderr: stderr))
        }
    }
}

private func temporaryFile() -> (descriptor: Int32, path: String) {
    var template = Array("/tmp/captured-run-XXXXXX".utf8CString)
    let descriptor = mkstemp(&template)
    precondition(descriptor >= 0, "mkstemp failed: \(errno)")
    let path = template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    return (descriptor, String(decoding: path, as: UTF8.self))
}

private func readAll(_ file: (descriptor: Int32, path: String)) -> String {
    defer {
        close(file.descriptor)
        unlink(file.path)
    }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    var offset: off_t = 0
    while true {
        let count = buffer.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, $0.count, offset) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { break }
        bytes += buffer[0..<count]
        offset += off_t(count)
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The tests' own gattclient cache (`GATTCLIENT_CACHE`: the address-type cache), one per test
/// process, set before the first in-process run so no test reads or writes the user's. The
/// process's tests share it, so it is removed when the process exits.
public let testCacheDirectory: String = {
    let path = "/tmp/gattclient-test-cache-\(getpid())"
    withProcessEnvironment {
        _ = setenv("GATTCLIENT_CACHE", path, 1)
        // No shell history written by the tests (set once here, before any in-process run reads
        // the environment, rather than by a test while others run).
        _ = setenv("GATTCLIENT_HISTORY", "", 1)
    }
    // A C function cannot capture: the handler computes the same path again.
    atexit { removeTree("/tmp/gattclient-test-cache-\(getpid())") }
    return path
}()
