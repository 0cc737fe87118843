#if canImport(Glibc)
import BLE
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A buffered writer to a file descriptor (standard output by default): one `write(2)` per
/// 64 KiB, so a million-record dump is not a million system calls.
public struct BufferedOutput: Sendable {
    public let fileDescriptor: Int32
    /// Text not yet written: the dumps format straight into it, then `endLine()`.
    var buffer: [UInt8] = []
    private let capacity: Int
    /// Set when a write failed (a closed pipe): later output is dropped.
    public private(set) var failed = false
    /// With `capturing()`, everything flushed so far (for tests and in-process callers).
    public private(set) var captured: [UInt8] = []
    private var capturesInMemory = false

    /// Collects output in `captured` instead of writing to a descriptor.
    public static func capturing() -> BufferedOutput {
        var output = BufferedOutput(fileDescriptor: -1)
        output.capturesInMemory = true
        return output
    }

    /// `captured` as text, one element per line.
    public var capturedLines: [String] {
        String(decoding: captured, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    public init(fileDescriptor: Int32 = STDOUT_FILENO, capacity: Int = 1 << 16) {
        self.fileDescriptor = fileDescriptor
        self.capacity = capacity
        buffer.reserveCapacity(capacity)
    }

    public mutating func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= capacity { flush() }
    }

    public mutating func writeLine(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        buffer.append(0x0A)
        if buffer.count >= capacity { flush() }
    }

    /// Ends a line formatted into `buffer`.
    @inline(__always)
    mutating func endLine() {
        buffer.append(0x0A)
        if buffer.count >= capacity { flush() }
    }

    public mutating func writeLine(bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
        buffer.append(0x0A)
        if buffer.count >= capacity { flush() }
    }

    public mutating func flush() {
        guard !buffer.isEmpty else { return }
        defer { buffer.removeAll(keepingCapacity: true) }
        if capturesInMemory {
            captured.append(contentsOf: buffer)
            return
        }
        guard !failed else { return }
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { raw in
                Glibc.write(fileDescriptor, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                failed = true
                return
            }
            offset += written
        }
    }
}

/// Writes one line to standard error (or `descriptor`) at once. While the shell shows its
/// prompt, a line for the shell's standard error goes around the line being typed
/// (``ShellConsole/writing(errorsTo:)``): an ATT trace or a warning does not break it.
public func printError(_ text: String, to descriptor: Int32 = STDERR_FILENO) {
    if let console = ShellConsole.writing(errorsTo: descriptor) {
        console.print(text, toErrors: true)
        return
    }
    writeAll(Array((text + "\n").utf8), to: descriptor)
}

/// Writes every byte of `bytes` to `descriptor` (retrying after EINTR; a failure drops the rest).
func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
    bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
