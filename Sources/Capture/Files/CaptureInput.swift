#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
import HCI

/// Where a streaming `CaptureReader` reads its octets: a file, a pipe or standard input, and
/// for a followed file an inotify watch that wakes the reader when the file grows.
///
/// Reads never block (opening a FIFO waits for its writer, as for any program): a pipe with
/// nothing to read, or a followed file at its current end, says `.wouldWait`, and `wait()` then
/// blocks (without CPU) until there is more. The reader's caller decides when to wait, so that it
/// can flush its own output first.
/// - SeeAlso: inotify(7), poll(2)
public final class CaptureInput: Sendable {
    /// The descriptor read from.
    public let fileDescriptor: Int32
    /// A name for messages: the path, or "standard input".
    public let name: String
    /// Whether the input is followed: its end is only where the writer has got to.
    public let isFollowing: Bool
    private let ownsDescriptor: Bool
    /// A regular file (reads never wait unless followed); otherwise a pipe, socket or terminal,
    /// polled before each read.
    private let isRegularFile: Bool
    /// The inotify instance watching a followed file, or -1.
    private let watch: Int32
    /// A descriptor that becomes readable to end a wait (a Ctrl-C's self-pipe), or -1.
    private let interrupt: Int32

    /// What one read gave.
    public enum ReadOutcome: Equatable, Sendable {
        /// This many octets.
        case data(Int)
        /// The end of the input: a file's end, or a pipe whose writers are gone.
        case end
        /// Nothing now; `wait()` blocks until there may be more.
        case wouldWait
        /// read(2) failed.
        case failed(Errno)
    }

    /// What `wait()` found.
    public enum WaitOutcome: Equatable, Sendable {
        /// There may be more to read.
        case ready
        /// A followed file was deleted: nothing more will come.
        case gone
        /// The interrupt descriptor became readable (the user ended the follow).
        case interrupted
        /// The wait failed.
        case failed(Errno)
    }

    /// Opens the file at `path`; `follow` watches it for appended octets (inotify) and makes
    /// its end a place to wait instead of the end of the input. A wait also ends when
    /// `interrupt` (if not -1) becomes readable.
    public init(path: String, follow: Bool = false, interrupt: Int32 = -1) throws(HCIError) {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system(operation: "open \(path)", errno: .current) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let failure = Errno.current
            _ = Glibc.close(descriptor)
            throw .system(operation: "stat \(path)", errno: failure)
        }
        if status.st_mode & S_IFMT == S_IFDIR {
            _ = Glibc.close(descriptor)
            throw .system(operation: "read \(path)", errno: Errno(rawValue: EISDIR))
        }
        let regular = status.st_mode & S_IFMT == S_IFREG
        if follow && !regular {
            _ = Glibc.close(descriptor)
            throw .captureFile("--follow follows a regular file; \(path) is not one (read a pipe without --follow: it is read as it arrives)")
        }
        var watch: Int32 = -1
        if follow {
            watch = inotify_init1(Int32(IN_CLOEXEC))
            let mask = UInt32(IN_MODIFY | IN_DELETE_SELF | IN_ATTRIB)
            guard watch >= 0, inotify_add_watch(watch, path, mask) >= 0 else {
                let failure = Errno.current
                if watch >= 0 { _ = Glibc.close(watch) }
                _ = Glibc.close(descriptor)
                throw .system(operation: "inotify \(path)", errno: failure)
            }
        }
        self.fileDescriptor = descriptor
        self.name = path
        self.isFollowing = follow
        self.ownsDescriptor = true
        self.isRegularFile = regular
        self.watch = watch
        self.interrupt = interrupt
    }

    /// Reads `descriptor` (standard input by default) without taking ownership of it. A wait
    /// also ends when `interrupt` (if not -1) becomes readable.
    public init(fileDescriptor descriptor: Int32 = STDIN_FILENO, name: String = "standard input", interrupt: Int32 = -1) {
        var status = stat()
        let regular = fstat(descriptor, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
        self.fileDescriptor = descriptor
        self.name = name
        self.isFollowing = false
        self.ownsDescriptor = false
        self.isRegularFile = regular
        self.watch = -1
        self.interrupt = interrupt
    }

    deinit {
        if ownsDescriptor { _ = Glibc.close(fileDescriptor) }
        if watch >= 0 { _ = Glibc.close(watch) }
    }

    /// Reads at most `count` octets into `buffer`, without blocking.
    public func read(into buffer: UnsafeMutableRawPointer, count: Int) -> ReadOutcome {
        if !isRegularFile {
            var descriptor = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
            do {
                if try Errno.retryingSyscall({ poll(&descriptor, 1, 0) }) == 0 { return .wouldWait }
            } catch {
                return .failed(error)
            }
        }
        do {
            let result = try Errno.retryingSyscall { Glibc.read(fileDescriptor, buffer, count) }
            if result > 0 { return .data(result) }
            return isFollowing ? .wouldWait : .end
        } catch {
            return error == Errno(rawValue: EAGAIN) ? .wouldWait : .failed(error)
        }
    }

    /// Blocks until there may be more to read: a followed file's next change (inotify), or a
    /// pipe's next octets or hang-up (poll). Returns at once for a regular file not followed.
    public func wait() -> WaitOutcome {
        // The data (a pipe) or the watch (a followed file), and the interrupt.
        if !isRegularFile || watch >= 0 {
            var descriptors = [
                pollfd(fd: watch >= 0 ? watch : fileDescriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: interrupt, events: Int16(POLLIN), revents: 0),
            ]
            do {
                _ = try Errno.retryingSyscall { poll(&descriptors, interrupt >= 0 ? 2 : 1, -1) }
            } catch {
                return .failed(error)
            }
            if interrupt >= 0, descriptors[1].revents != 0 { return .interrupted }
        }
        guard watch >= 0 else { return .ready }
        // inotify events are at least 16 octets and at most 16 + NAME_MAX + 1; the watch is on
        // the file itself, so its events carry no name.
        var events = [UInt8](repeating: 0, count: 4096)
        let count: Int
        do {
            count = try Errno.retryingSyscall { events.withUnsafeMutableBytes { Glibc.read(watch, $0.baseAddress!, $0.count) } }
        } catch {
            return .failed(error)
        }
        var offset = 0
        var gone = false
        var attributes = false
        while count - offset >= 16 {
            let mask = events.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
            let nameLength = Int(events.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) })
            if mask & UInt32(IN_DELETE_SELF | IN_IGNORED) != 0 { gone = true }
            if mask & UInt32(IN_ATTRIB) != 0 { attributes = true }
            offset += 16 + nameLength
        }
        // While this reader holds the file open, its deletion shows as a link count of 0
        // (IN_ATTRIB), not IN_DELETE_SELF. A renamed file is still the writer's.
        if attributes {
            var status = stat()
            if fstat(fileDescriptor, &status) == 0, status.st_nlink == 0 { gone = true }
        }
        return gone ? .gone : .ready
    }

    /// The file's size now (a followed file that shrank was truncated under the reader).
    func currentSize() -> Int? {
        guard isRegularFile else { return nil }
        var status = stat()
        guard fstat(fileDescriptor, &status) == 0 else { return nil }
        return Int(status.st_size)
    }
}
