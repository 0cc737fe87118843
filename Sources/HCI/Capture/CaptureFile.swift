#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth

/// Opening capture files from disk (POSIX, no Foundation).
public enum CaptureFile {
    /// Reads the whole file at `path` and sniffs its format: btsnoop, pcap or pcapng.
    public static func open(path: String) throws(HCIError) -> CaptureReader {
        try CaptureReader(bytes: readAll(path: path))
    }

    /// The whole content of the file at `path`.
    public static func readAll(path: String) throws(HCIError) -> [UInt8] {
        let descriptor: Int32
        do {
            descriptor = try Errno.retryingSyscall { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
        } catch {
            throw .system(operation: "open \(path)", errno: error)
        }
        defer { _ = Glibc.close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .system(operation: "fstat \(path)", errno: .current) }
        guard status.st_mode & S_IFMT != S_IFDIR else {
            throw .system(operation: "read \(path)", errno: Errno(rawValue: EISDIR))
        }
        // st_size is a hint (0 for pipes and /proc files): read until end of file. The buffer
        // grows uninitialised (no zero-fill, no copy when the size was right): peak memory is
        // the file plus one chunk, not twice the file.
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
                    let result = Glibc.read(descriptor, base + initialized, capacity - initialized)
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
        if let failure { throw .system(operation: "read \(path)", errno: failure) }
        return bytes
    }
}
