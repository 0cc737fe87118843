import HCI

import Dispatch

/// A `DispatchSource` read or write source on one descriptor that can be armed (delivering
/// readiness events) and disarmed, and cancelled exactly once. Confined to its queue: every
/// method must run on it. The descriptor must stay open until `onCancel` has run.
final class ReadinessSource {
    enum Kind { case read, write }

    private let source: any DispatchSourceProtocol
    private var activated = false
    private var suspended = false
    private(set) var isCancelled = false

    init(descriptor: Int32, kind: Kind, queue: DispatchQueue, onReady: @escaping () -> Void, onCancel: @escaping () -> Void) {
        switch kind {
        case .read: source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        case .write: source = DispatchSource.makeWriteSource(fileDescriptor: descriptor, queue: queue)
        }
        source.setEventHandler(handler: onReady)
        source.setCancelHandler(handler: onCancel)
    }

    /// Starts (or resumes) event delivery.
    func arm() {
        guard !isCancelled else { return }
        if !activated {
            activated = true
            source.activate()
        } else if suspended {
            suspended = false
            source.resume()
        }
    }

    /// Stops event delivery until the next `arm()` (level-triggered sources would otherwise
    /// fire again and again while nobody wants the event).
    func disarm() {
        guard !isCancelled, activated, !suspended else { return }
        suspended = true
        source.suspend()
    }

    /// Cancels; `onCancel` runs on the queue afterwards (then the descriptor may be closed).
    /// An inactive or suspended source is activated/resumed after the cancel, so it is released
    /// in a state libdispatch accepts and delivers no event.
    func cancel() {
        guard !isCancelled else { return }
        isCancelled = true
        source.cancel()
        if !activated {
            activated = true
            source.activate()
        } else if suspended {
            suspended = false
            source.resume()
        }
    }
}

/// One wait for a descriptor's readiness with an optional deadline, from async code.
enum KernelReadiness {
    enum Outcome: Hashable, Sendable { case ready, timedOut, cancelled }

    /// Waits until `descriptor` is readable (or writable), `timeout` passes, or the task is
    /// cancelled. Returns only after the dispatch source is fully cancelled, so the caller may
    /// close the descriptor right away.
    static func wait(_ descriptor: Int32, for kind: ReadinessSource.Kind, timeout: Duration?) async -> Outcome {
        let waiter = Waiter()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiter.queue.async {
                    waiter.start(descriptor: descriptor, kind: kind, timeout: timeout, continuation: continuation)
                }
            }
        } onCancel: {
            waiter.queue.async { waiter.finish(.cancelled) }
        }
    }

    /// Mutable state touched only on `queue` (a serial queue), which is why it is
    /// `@unchecked Sendable`.
    private final class Waiter: @unchecked Sendable {
        let queue = DispatchQueue(label: "KernelReadiness.wait")
        private var source: ReadinessSource?
        private var sourceDone = true
        private var timer: DispatchWorkItem?
        private var outcome: Outcome?
        private var continuation: CheckedContinuation<Outcome, Never>?

        func start(descriptor: Int32, kind: ReadinessSource.Kind, timeout: Duration?, continuation: CheckedContinuation<Outcome, Never>) {
            self.continuation = continuation
            guard outcome == nil else {  // cancelled before we started
                deliver()
                return
            }
            sourceDone = false
            let source = ReadinessSource(
                descriptor: descriptor, kind: kind, queue: queue,
                onReady: { self.finish(.ready) },
                onCancel: {
                    self.sourceDone = true
                    self.source = nil
                    self.deliver()
                })
            self.source = source
            source.arm()
            if let timeout {
                let item = DispatchWorkItem { self.finish(.timedOut) }
                timer = item
                queue.asyncAfter(deadline: .now() + timeout.dispatchInterval, execute: item)
            }
        }

        func finish(_ result: Outcome) {
            guard outcome == nil else { return }
            outcome = result
            timer?.cancel()
            timer = nil
            if let source {
                source.cancel()
            } else {
                deliver()
            }
        }

        private func deliver() {
            guard sourceDone, let outcome, let continuation else { return }
            self.continuation = nil
            continuation.resume(returning: outcome)
        }
    }
}

extension Duration {
    /// As a dispatch interval (nanoseconds, clamped; negative becomes zero).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return .nanoseconds(0) }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow || whole > Int64(Int.max) { return .never }
        return .nanoseconds(Int(clamping: whole + attoseconds / 1_000_000_000))
    }
}
