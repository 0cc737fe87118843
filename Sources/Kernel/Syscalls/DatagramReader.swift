import Bluetooth
import Dispatch

/// Reads whole datagrams from a descriptor as they arrive, driven by a `ReadinessSource`: each
/// readiness event drains every datagram queued on the socket (non-blocking receives until
/// `EAGAIN`), in order, none dropped. No thread, no timed wake-ups.
///
/// Lifecycle: `start()`, then datagrams go to `onDatagram` until the reading ends, which
/// `onEnd` reports exactly once: end of stream (`nil`), a receive error (its errno), or `stop()`
/// (`nil`). The reader never closes the descriptor; its owner may close it once `onStopped` has
/// run (that is, once the dispatch source's cancel handler has run, so libdispatch no longer
/// watches the descriptor). `onStopped` runs once, after a `stop()` or after the reading ended
/// on its own, whichever comes first, and before the completions given to `stop(then:)`.
///
/// Every callback runs on the reader's own serial queue. Mutable state is touched only on that
/// queue, which is why the class is `@unchecked Sendable`.
final class DatagramReader: @unchecked Sendable {
    typealias DatagramHandler = @Sendable ([UInt8]) -> Void
    typealias EndHandler = @Sendable (Errno?) -> Void

    let queue: DispatchQueue
    private let descriptor: SocketDescriptor
    private let buffer: UnsafeMutableRawBufferPointer
    private let onDatagram: DatagramHandler
    private let onEnd: EndHandler
    private let onStopped: @Sendable (DatagramReader) -> Void
    /// The most datagrams read in one go; then the queue gets a turn (a `stop()` waiting behind a
    /// flood) and the reading goes on from a fresh queue item.
    private static let batch = 64

    private var source: ReadinessSource?
    private var started = false
    private var ended = false
    private var stopped = false
    private var completions: [@Sendable () -> Void] = []

    /// - Parameter maximumLength: the receive buffer; a longer datagram is truncated by the
    ///   kernel, so make it larger than any packet the socket can carry.
    init(
        descriptor: SocketDescriptor, maximumLength: Int, label: String, onDatagram: @escaping DatagramHandler,
        onEnd: @escaping EndHandler, onStopped: @escaping @Sendable (DatagramReader) -> Void
    ) {
        self.descriptor = descriptor
        self.queue = DispatchQueue(label: label)
        self.buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, maximumLength), alignment: 1)
        self.onDatagram = onDatagram
        self.onEnd = onEnd
        self.onStopped = onStopped
    }

    deinit { buffer.deallocate() }

    /// Starts watching the descriptor (asynchronously, on the queue). A reader stopped before it
    /// started never watches it.
    func start() {
        queue.async { [self] in
            guard !started, !ended else { return }
            started = true
            let source = ReadinessSource(
                descriptor: descriptor.rawValue, kind: .read, queue: queue, onReady: { [self] in readable() },
                onCancel: { [self] in sourceCancelled() })
            self.source = source
            source.arm()
        }
    }

    /// Stops reading (`onEnd(nil)` if the reading had not ended yet), then runs `completion` on
    /// the queue once the dispatch source is cancelled: from then on the descriptor may be closed.
    /// Safe from any thread, any number of times.
    func stop(then completion: (@Sendable () -> Void)? = nil) {
        queue.async { [self] in
            if let completion { completions.append(completion) }
            finish(nil)
        }
    }

    private func readable() {
        for _ in 0..<Self.batch {
            guard !ended else { return }
            let count: Int
            do {
                count = try descriptor.receive(into: buffer, nonBlocking: true)
            } catch where error.isWouldBlock {
                return  // drained; the source fires again with the next datagram
            } catch {
                finish(error)
                return
            }
            if count == 0 {
                finish(nil)  // end of stream
                return
            }
            onDatagram(Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
        }
        queue.async { [self] in readable() }
    }

    /// Ends the reading once (reporting `error`) and cancels the source; the rest happens in
    /// `sourceCancelled` (or right away when no source was ever made).
    private func finish(_ error: Errno?) {
        if !ended {
            ended = true
            onEnd(error)
        }
        if let source {
            source.cancel()  // idempotent; the cancel handler follows on the queue
        } else {
            sourceCancelled()
        }
    }

    private func sourceCancelled() {
        source = nil
        if !stopped {
            stopped = true
            onStopped(self)
        }
        let waiting = completions
        completions.removeAll()
        for completion in waiting { completion() }
    }
}
