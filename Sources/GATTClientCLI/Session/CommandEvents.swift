import BLE
import SystemSupport
import Bluetooth
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a long-running command (`subscribe`, `sensortag`, `uart`, `scan`) waits for, merged into
/// one stream so the command has a single loop and never polls: its data, the end of its
/// `--duration`, Ctrl-C/SIGTERM.
enum CommandEvent<Value: Sendable>: Sendable {
    case value(Value)
    /// The data source ended (nil) or failed.
    case ended((any Error)?)
    case durationElapsed
    case interrupted
}

final class CommandEvents<Value: Sendable>: Sendable {
    let stream: AsyncStream<CommandEvent<Value>>
    private let continuation: AsyncStream<CommandEvent<Value>>.Continuation
    private let tasks = Mutex<[Task<Void, Never>]>([])
    /// Dispatch sources are thread-safe; the array is written once, in `init`.
    private nonisolated(unsafe) let signalSources: [any DispatchSourceSignal]
    /// SIGINT's and SIGTERM's handling before (restored by `finish`: the runner may be
    /// ignoring them for its own Ctrl-C handling).
    private let previousHandlers: [(Int32, sighandler_t?)]
    /// The runner's interrupt handling this wait listens to (nil: it handles signals itself).
    private let listening: (Interrupts, Int)?

    init(duration: Double?) {
        (stream, continuation) = AsyncStream.makeStream(of: CommandEvent<Value>.self, bufferingPolicy: .unbounded)
        if let duration {
            let continuation = continuation
            let timer = Task {
                try? await Task.sleep(for: .milliseconds(Int64(duration * 1000)))
                if !Task.isCancelled { continuation.yield(.durationElapsed) }
            }
            tasks.withLock { $0.append(timer) }
        }
        var sources: [any DispatchSourceSignal] = []
        var previous: [(Int32, sighandler_t?)] = []
        var listened: (Interrupts, Int)?
        if let interrupts = Interrupts.current {
            // The runner owns Ctrl-C: listen to it.
            let continuation = continuation
            let key = interrupts.addListener { continuation.yield(.interrupted) }
            listened = (interrupts, key)
        }
        listening = listened
        for number in [SIGINT, SIGTERM] where listened == nil {
            previous.append((number, signal(number, SIG_IGN)))
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            let continuation = continuation
            source.setEventHandler { continuation.yield(.interrupted) }
            source.resume()
            sources.append(source)
        }
        signalSources = sources
        previousHandlers = previous
    }

    /// Feeds every element of `sequence` as `.value`, then `.ended`.
    func forward<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Value {
        let continuation = continuation
        let task = Task {
            do {
                for try await element in sequence { continuation.yield(.value(element)) }
                continuation.yield(.ended(nil))
            } catch {
                continuation.yield(.ended(error))
            }
        }
        tasks.withLock { $0.append(task) }
    }

    func yield(_ value: Value) { continuation.yield(.value(value)) }

    /// Stops the timer and the forwarders, restores the default signal handling.
    func finish() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
        for source in signalSources { source.cancel() }
        for (number, handler) in previousHandlers { signal(number, handler ?? SIG_DFL) }
        if let (interrupts, key) = listening { interrupts.removeListener(key) }
        continuation.finish()
    }
}

extension CommandEvents {
    /// Reads standard input line by line on a thread of its own (a blocking read is the only
    /// way to wait for a terminal) and yields `line(text)` for each, then `end`.
    /// Throws when no thread can be started (`pthread_create`'s error).
    /// Reads standard input's octets on a thread of its own: with `lines`, one value per line
    /// (its newline taken off, nothing else changed; a last line without one is still a line),
    /// else each chunk as it was read. Then `end`.
    func readStandardInputOctets(
        lines: Bool, end: Value, _ make: @escaping @Sendable (_ octets: [UInt8], _ isLine: Bool) -> Value
    ) throws(CommandFailure) {
        do {
            try DetachedThread.start { [self] in
                var buffer = [UInt8](repeating: 0, count: 4096)
                var pending: [UInt8] = []
                while true {
                    let count = read(STDIN_FILENO, &buffer, buffer.count)
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }
                    guard lines else {
                        yield(make(Array(buffer[0..<count]), false))
                        continue
                    }
                    pending += buffer[0..<count]
                    while let newline = pending.firstIndex(of: 0x0A) {
                        yield(make(Array(pending[..<newline]), true))
                        pending.removeSubrange(...newline)
                    }
                }
                if lines, !pending.isEmpty { yield(make(pending, true)) }
                yield(end)
            }
        } catch {
            throw CommandFailure("cannot start the standard input reader: \(error)", kind: "failure")
        }
    }

    func readStandardInput(line: @escaping @Sendable (String) -> Value, end: Value) throws(CommandFailure) {
        do {
            try DetachedThread.start { [self] in
                while let text = Swift.readLine(strippingNewline: true) {
                    yield(line(text))
                }
                yield(end)
            }
        } catch {
            throw CommandFailure("cannot start the standard input reader: \(error)", kind: "failure")
        }
    }
}
