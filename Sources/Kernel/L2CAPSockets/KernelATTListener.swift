import Bluetooth
import Dispatch
import HCI

/// A listening L2CAP LE socket on the ATT fixed channel: `accept()` waits (on readiness, no
/// polling) for a central to connect and returns its channel. Close it explicitly; one that was
/// never closed is closed when the last reference goes.
public final class KernelATTListener: Sendable {
    private let core: Core

    /// Adopts a listening `SOCK_SEQPACKET` descriptor (an L2CAP socket, or an AF_UNIX one in tests).
    init(adopting descriptor: SocketDescriptor, logger: Logger = .disabled) {
        core = Core(descriptor: descriptor, logger: logger)
        core.queue.async { [core] in core.start() }
    }

    deinit {
        core.queue.async { [core] in core.close(waiter: nil) }
    }

    /// Waits for the next connection. The channel knows its peer's address and type.
    /// - Throws: `.closed` once the listener is closed, `.system(.acceptL2CAP, …)` for accept
    ///   failures, ECANCELED when the task is cancelled.
    public func accept() async throws(KernelBluetoothError) -> KernelATTChannel {
        let core = self.core
        let id = core.makeID()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<KernelATTChannel, KernelBluetoothError>, Never>) in
                core.queue.async { core.enqueue(id: id, continuation) }
            }
        } onCancel: {
            core.queue.async { core.cancel(id: id) }
        }
        return try result.get()
    }

    /// Stops listening: waiting `accept()` calls fail with `.closed`. Returns once the
    /// descriptor is closed.
    public func close() async {
        let core = self.core
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.queue.async { core.close(waiter: continuation) }
        }
    }

    /// State touched only on `queue` (serial), except `makeID` (atomic via the queue too).
    final class Core: @unchecked Sendable {
        typealias Waiter = CheckedContinuation<Result<KernelATTChannel, KernelBluetoothError>, Never>

        let queue = DispatchQueue(label: "KernelATTListener")
        let descriptor: SocketDescriptor
        let logger: Logger
        private var source: ReadinessSource?
        private var waiters: [(id: UInt64, continuation: Waiter)] = []
        private var cancelledEarly: Set<UInt64> = []
        private var lastID: UInt64 = 0
        private var isClosed = false
        private var sourceLive = false
        private var isDescriptorClosed = false
        private var closeWaiters: [CheckedContinuation<Void, Never>] = []

        init(descriptor: SocketDescriptor, logger: Logger) {
            self.descriptor = descriptor
            self.logger = logger
        }

        func makeID() -> UInt64 {
            queue.sync {
                lastID += 1
                return lastID
            }
        }

        func start() {
            guard !isClosed else { return }
            source = ReadinessSource(
                descriptor: descriptor.rawValue, kind: .read, queue: queue, onReady: { self.acceptPending() },
                onCancel: {
                    self.source = nil
                    self.sourceLive = false
                    self.closeDescriptorIfIdle()
                })
            sourceLive = true
        }

        func enqueue(id: UInt64, _ waiter: Waiter) {
            if cancelledEarly.remove(id) != nil {
                waiter.resume(returning: .failure(.system(operation: .acceptL2CAP, errno: .cancelled)))
                return
            }
            guard !isClosed else {
                waiter.resume(returning: .failure(.closed(operation: .acceptL2CAP)))
                return
            }
            waiters.append((id, waiter))
            acceptPending()
        }

        func cancel(id: UInt64) {
            guard let index = waiters.firstIndex(where: { $0.id == id }) else {
                cancelledEarly.insert(id)
                return
            }
            let waiter = waiters.remove(at: index).continuation
            waiter.resume(returning: .failure(.system(operation: .acceptL2CAP, errno: .cancelled)))
            if waiters.isEmpty { source?.disarm() }
        }

        private func acceptPending() {
            while !isClosed, !waiters.isEmpty {
                do {
                    guard let (client, peer, type) = try KernelL2CAP.accept(descriptor.rawValue) else {
                        source?.arm()
                        return
                    }
                    logger.debug("accepted an ATT connection from \(peer)")
                    let channel = KernelATTChannel(
                        adopting: client, peer: peer, peerAddressType: type,
                        maximumSDUSize: KernelL2CAP.maximumSDUSize(client.rawValue), logger: logger)
                    waiters.removeFirst().continuation.resume(returning: .success(channel))
                } catch {
                    waiters.removeFirst().continuation.resume(returning: .failure(error))
                }
            }
            source?.disarm()
        }

        func close(waiter: CheckedContinuation<Void, Never>?) {
            if let waiter { closeWaiters.append(waiter) }
            if !isClosed {
                isClosed = true
                for (_, waiter) in waiters { waiter.resume(returning: .failure(.closed(operation: .acceptL2CAP))) }
                waiters.removeAll()
                source?.cancel()
            }
            closeDescriptorIfIdle()
        }

        private func closeDescriptorIfIdle() {
            guard isClosed, !sourceLive else { return }
            if !isDescriptorClosed {
                isDescriptorClosed = true
                try? descriptor.close()
            }
            let waiters = closeWaiters
            closeWaiters.removeAll()
            for waiter in waiters { waiter.resume() }
        }
    }
}
