import Bluetooth
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A file operation that failed: what was done, to which path, and the `errno`.
package struct FileSystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `open`, `read`, `write`, `fsync`, `rename`, `mkdir`, `unlink`, `mkstemp`, `stat`.
    package var operation: String
    package var path: String
    package var errno: Errno

    package init(operation: String, path: String, errno: Errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// `open /x/y: No such file or directory`.
    package var description: String { "\(operation) \(path): \(errno)" }
}

/// The few file operations the command-line tool and its caches need, on POSIX calls (no
/// Foundation): every call retried on `EINTR`, every failure a ``FileSystemError``.
package enum FileSystem {
    /// The whole content of the regular file (or pipe, or `/proc` file) at `path`.
    package static func readFile(atPath path: String) throws(FileSystemError) -> [UInt8] {
        let descriptor = try open(path, O_RDONLY | O_CLOEXEC, operation: "open")
        defer { _ = close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw FileSystemError(operation: "stat", path: path, errno: .current) }
        guard status.st_mode & S_IFMT != S_IFDIR else {
            throw FileSystemError(operation: "read", path: path, errno: Errno(rawValue: EISDIR))
        }
        // st_size is a hint (0 for pipes and /proc files): read until end of file. The buffer
        // grows uninitialised (no zero-fill, no copy when the size was right): peak memory is
        // the file, not twice the file (`dump` reads whole captures this way).
        var bytes: [UInt8] = []
        var capacity = max(Int(status.st_size), 0) + 1
        var failure: Errno?
        while failure == nil {
            if bytes.count == capacity { capacity = max(capacity * 2, bytes.count + 65_536) }
            let filled = bytes.count
            var reachedEnd = false
            let grown = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
                guard let base = buffer.baseAddress else { return }
                if filled > 0 {
                    bytes.withUnsafeBufferPointer { old in base.initialize(from: old.baseAddress!, count: filled) }
                }
                initialized = filled
                // Fill the new capacity with read(2) until it is full or the file ends.
                while initialized < capacity {
                    let result = read(descriptor, base + initialized, capacity - initialized)
                    if result > 0 {
                        initialized += result
                    } else if result == 0 {
                        reachedEnd = true
                        return
                    } else if errno != EINTR {
                        failure = .current
                        return
                    }
                }
            }
            bytes = grown
            if reachedEnd { break }
        }
        if let failure { throw FileSystemError(operation: "read", path: path, errno: failure) }
        return bytes
    }

    /// Replaces the file at `path` with `bytes` atomically: a temporary file in the same
    /// directory (`mkstemp`), every byte written, `fsync`ed, then renamed over `path`. Readers
    /// see the old content or the new one, never a part; on failure the temporary file is removed.
    /// The new file has `mkstemp`'s mode 0600: readable by its owner only.
    package static func writeFileAtomically(_ bytes: [UInt8], toPath path: String) throws(FileSystemError) {
        var template = Array((path + ".tmp-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw FileSystemError(operation: "mkstemp", path: path, errno: .current) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var closed = false
        do throws(FileSystemError) {
            try writeAll(bytes, to: descriptor, path: temporary)
            do {
                try Errno.retryingSyscall { fsync(descriptor) }
            } catch {
                throw FileSystemError(operation: "fsync", path: temporary, errno: error)
            }
            closed = true
            guard close(descriptor) == 0 else { throw FileSystemError(operation: "close", path: temporary, errno: .current) }
            guard rename(temporary, path) == 0 else { throw FileSystemError(operation: "rename", path: path, errno: .current) }
        } catch {
            if !closed { _ = close(descriptor) }
            _ = unlink(temporary)
            throw error
        }
    }

    /// Creates (or truncates) the file at `path` and writes `bytes`; returns the open
    /// descriptor for more ``append(_:to:path:)`` calls (the caller closes it).
    package static func createFile(atPath path: String, contents bytes: [UInt8] = []) throws(FileSystemError) -> Int32 {
        let descriptor = try open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644, operation: "open")
        do {
            try writeAll(bytes, to: descriptor, path: path)
        } catch {
            _ = close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Writes all of `bytes` to `descriptor` (short writes continued, `EINTR` retried).
    package static func append(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(FileSystemError) {
        try writeAll(bytes, to: descriptor, path: path)
    }

    /// Creates `path` and its missing parents (mode 0755 less the umask); an existing
    /// directory is no error, an existing file on the way is `ENOTDIR`.
    package static func createDirectory(atPath path: String, mode: mode_t = 0o755) throws(FileSystemError) {
        guard !path.isEmpty else { throw FileSystemError(operation: "mkdir", path: path, errno: Errno(rawValue: ENOENT)) }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += component
            if mkdir(prefix, mode) != 0 {
                let error = Errno.current
                guard error.rawValue == EEXIST else { throw FileSystemError(operation: "mkdir", path: prefix, errno: error) }
                // Something is there: fine if it is a directory (or a link to one).
                guard isDirectory(atPath: prefix) else {
                    throw FileSystemError(operation: "mkdir", path: prefix, errno: Errno(rawValue: ENOTDIR))
                }
            }
            prefix += "/"
        }
    }

    /// Whether something (a file, a directory, a live link's target) exists at `path`.
    package static func fileExists(atPath path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }

    /// Whether `path` names a directory (following links).
    package static func isDirectory(atPath path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
    }

    /// What changes when a directory's entries change (a file renamed into it, removed): its
    /// modification time to the nanosecond and its inode; nil when it cannot be read.
    package static func modificationStamp(atPath path: String) -> [Int]? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return [Int(status.st_mtim.tv_sec), Int(status.st_mtim.tv_nsec), Int(status.st_ino), Int(status.st_size)]
    }

    /// Takes an exclusive advisory lock (`flock`) on the file at `path`, created mode 0600 if
    /// absent, without waiting: the open descriptor that holds it (close it to release), or nil
    /// when another open file holds the lock (another process, or another open in this one).
    package static func tryExclusiveLock(atPath path: String) throws(FileSystemError) -> Int32? {
        let descriptor = try open(path, O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600, operation: "open")
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let error = Errno.current
            if error.rawValue == EINTR { continue }
            close(descriptor)
            if error.rawValue == EWOULDBLOCK { return nil }
            throw FileSystemError(operation: "flock", path: path, errno: error)
        }
        return descriptor
    }

    /// Releases a lock ``tryExclusiveLock(atPath:)`` took (closes its descriptor).
    package static func releaseLock(_ descriptor: Int32) {
        close(descriptor)
    }

    /// Removes the file at `path`; `mustExist` false: a missing file is no error.
    package static func removeFile(atPath path: String, mustExist: Bool = true) throws(FileSystemError) {
        guard unlink(path) == 0 else {
            let error = Errno.current
            if !mustExist, error.rawValue == ENOENT { return }
            throw FileSystemError(operation: "unlink", path: path, errno: error)
        }
    }

    /// The names in the directory at `path` (not `.` or `..`), in no particular order.
    package static func contentsOfDirectory(atPath path: String) throws(FileSystemError) -> [String] {
        guard let directory = opendir(path) else { throw FileSystemError(operation: "opendir", path: path, errno: .current) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    // MARK: Internals

    private static func open(_ path: String, _ flags: Int32, mode: mode_t = 0, operation: String) throws(FileSystemError)
        -> Int32
    {
        do {
            return try Errno.retryingSyscall { Glibc.open(path, flags, mode) }
        } catch {
            throw FileSystemError(operation: operation, path: path, errno: error)
        }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(FileSystemError) {
        var written = 0
        while written < bytes.count {
            let count: Int
            do {
                count = try Errno.retryingSyscall {
                    bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
                }
            } catch {
                throw FileSystemError(operation: "write", path: path, errno: error)
            }
            written += count
        }
    }
}
