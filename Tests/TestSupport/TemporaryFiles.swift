#if canImport(Glibc)
    import Glibc
#endif

// The suite leaves nothing behind in /tmp (bond directories hold key files): every file or
// directory a test makes there, that test removes.

/// Why ``makeTemporaryDirectory(_:)`` failed: the call, the path and its errno.
public struct TemporaryFileError: Error, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var errno: Int32
    public var description: String { "\(operation) \(path): errno \(errno)" }

    public init(operation: String, path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }
}

/// Removes the file or the directory at `path` with everything in it. Symbolic links are
/// removed, never followed, so nothing outside `path` is touched. Errors are ignored: a path
/// that does not exist (the test never created it, or removed it itself) is fine.
public func removeTree(_ path: String) {
    var status = stat()
    guard lstat(path, &status) == 0 else { return }
    guard status.st_mode & S_IFMT == S_IFDIR else {
        unlink(path)
        return
    }
    // The names first, then the removals: the directory is not changed while it is read.
    var names: [String] = []
    if let directory = opendir(path) {
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(directory)
    }
    for name in names { removeTree(path + "/" + name) }
    rmdir(path)
}

/// Makes a fresh directory "/tmp/`prefix`-XXXXXX" (`mkdtemp`, mode 0700) and returns its path.
/// The caller removes it (``removeTree(_:)``); ``withTemporaryDirectory(_:isolation:_:)`` does both.
public func makeTemporaryDirectory(_ prefix: String) throws -> String {
    let pattern = "/tmp/\(prefix)-XXXXXX"
    var template = Array(pattern.utf8CString)
    guard let result = mkdtemp(&template) else {
        throw TemporaryFileError(operation: "mkdtemp", path: pattern, errno: errno)
    }
    return String(cString: result)
}

/// Runs `body` with a fresh directory "/tmp/`prefix`-XXXXXX" and removes the directory with
/// everything in it afterwards, whether `body` returned or threw.
public func withTemporaryDirectory<T>(
    _ prefix: String, isolation: isolated (any Actor)? = #isolation, _ body: (String) async throws -> T
) async throws -> T {
    let path = try makeTemporaryDirectory(prefix)
    defer { removeTree(path) }
    return try await body(path)
}

/// A fresh path "/tmp/`prefix`-<pid>-<random hex>`suffix`" for a file or socket the test makes
/// itself; nothing is created. The caller removes it: `defer { removeTree(path) }`.
public func temporaryPath(_ prefix: String, suffix: String = "") -> String {
    "/tmp/\(prefix)-\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))\(suffix)"
}
