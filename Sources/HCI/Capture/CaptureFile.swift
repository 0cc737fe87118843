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
        // st_size is a hint (0 for pipes and /proc files): read until end of file.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(max(Int(status.st_size), 0) + 1)
        var chunk = max(Int(status.st_size) + 1, 65_536)
        while true {
            let start = bytes.count
            var failure: Errno?
            var count = 0
            bytes.append(contentsOf: repeatElement(0, count: chunk))
            bytes.withUnsafeMutableBufferPointer { buffer in
                while true {
                    let result = Glibc.read(descriptor, buffer.baseAddress! + start, chunk)
                    if result >= 0 {
                        count = result
                        return
                    }
                    if errno != EINTR {
                        failure = .current
                        return
                    }
                }
            }
            bytes.removeLast(chunk - count)
            if let failure { throw .system(operation: "read \(path)", errno: failure) }
            if count == 0 { break }
            chunk = 65_536
        }
        return bytes
    }
}
