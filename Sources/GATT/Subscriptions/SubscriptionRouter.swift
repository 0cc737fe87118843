import ATT
import Bluetooth
import Synchronization

/// Routes the notifications and indications of one bearer to the subscriptions, by value
/// handle, in arrival order.
///
/// One router task per client (``run(connection:)``) consumes `ATTConnection.inbound` and
/// calls ``deliver(_:)`` for each PDU: no task per PDU, no actor hop per PDU. Every yield to a
/// subscriber's stream happens inside that one call, so values keep their order. A route is
/// registered before the CCCD is written, so a value the server sends before its Write
/// Response is delivered.
///
/// Indications: `ATTConnection` confirms an indication when the consumer of `inbound` takes
/// it — here the router, which hands it to the subscriber's stream in the same step, before
/// taking the next PDU.
final class SubscriptionRouter: Sendable {
    struct Route {
        let id: UInt64
        let handle: UInt16
        let indications: Bool
        let continuation: AsyncThrowingStream<GATTNotification, any Error>.Continuation
        let policy: GATTOverflowPolicy
        let limit: Int
    }

    struct State {
        var routes: [UInt16: [Route]] = [:]
        var nextID: UInt64 = 1
        /// Set once the bearer closed: new routes end at once with this error.
        var closedError: GATTError?
        var delivered = 0
        var unrouted = 0
        var dropped = 0
    }

    private let state = Mutex(State())
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// Values delivered to some stream, values no route wanted, values dropped by a policy.
    var counters: (delivered: Int, unrouted: Int, dropped: Int) {
        state.withLock { ($0.delivered, $0.unrouted, $0.dropped) }
    }

    /// Registers a route for `characteristic`'s value handle.
    func add(
        _ characteristic: Characteristic, indications: Bool, bufferLimit: Int, overflow: GATTOverflowPolicy
    ) -> GATTSubscription {
        let limit = max(1, bufferLimit)
        let buffering: AsyncThrowingStream<GATTNotification, any Error>.Continuation.BufferingPolicy
        switch overflow {
        case .fail, .dropNewest: buffering = .bufferingOldest(limit)
        case .dropOldest: buffering = .bufferingNewest(limit)
        }
        let (stream, continuation) = AsyncThrowingStream<GATTNotification, any Error>.makeStream(
            bufferingPolicy: buffering)
        let id: UInt64 = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            if let error = state.closedError {
                continuation.finish(throwing: error)
            } else {
                state.routes[characteristic.valueHandle, default: []].append(
                    Route(
                        id: id, handle: characteristic.valueHandle, indications: indications,
                        continuation: continuation, policy: overflow, limit: limit))
            }
            return id
        }
        return GATTSubscription(
            id: GATTSubscription.ID(rawValue: id), characteristic: characteristic, indications: indications,
            stream: stream)
    }

    /// Removes a route and ends its stream normally (or with `error`). Returns the routes
    /// left on its handle, or nil when the id is unknown.
    @discardableResult
    func remove(_ id: GATTSubscription.ID, error: GATTError? = nil) -> [Route]? {
        state.withLock { state in
            for (handle, routes) in state.routes {
                guard let index = routes.firstIndex(where: { $0.id == id.rawValue }) else { continue }
                let route = routes[index]
                var left = routes
                left.remove(at: index)
                state.routes[handle] = left.isEmpty ? nil : left
                if let error { route.continuation.finish(throwing: error) } else { route.continuation.finish() }
                return left
            }
            return nil
        }
    }

    /// The routes on `handle`.
    func routes(on handle: UInt16) -> [Route] {
        state.withLock { $0.routes[handle] ?? [] }
    }

    /// Hands one PDU from the bearer to the streams subscribed to its handle(s).
    func deliver(_ pdu: ATTPDU) {
        switch pdu {
        case .handleValueNotification(let notification):
            deliver(GATTNotification(handle: notification.handle, value: notification.value, isIndication: false))
        case .handleValueIndication(let indication):
            deliver(GATTNotification(handle: indication.handle, value: indication.value, isIndication: true))
        case .multipleHandleValueNotification(let multiple):
            for entry in multiple.entries {
                deliver(GATTNotification(handle: entry.handle, value: entry.value, isIndication: false))
            }
        default:
            logger.warning("router ignored \(pdu.opcode)")
        }
    }

    private func deliver(_ value: GATTNotification) {
        state.withLock { state in
            guard var routes = state.routes[value.handle] else {
                state.unrouted += 1
                return
            }
            var index = 0
            while index < routes.count {
                let route = routes[index]
                switch route.continuation.yield(value) {
                case .enqueued:
                    state.delivered += 1
                    index += 1
                case .dropped:
                    state.dropped += 1
                    if route.policy == .fail {
                        route.continuation.finish(
                            throwing: GATTError.subscriptionOverflow(handle: route.handle, limit: route.limit))
                        routes.remove(at: index)
                    } else {
                        // The policy's own drop (oldest or newest); the arriving value counts as
                        // delivered when the oldest made room for it.
                        if route.policy == .dropOldest { state.delivered += 1 }
                        index += 1
                    }
                case .terminated:
                    routes.remove(at: index)
                @unknown default:
                    index += 1
                }
            }
            state.routes[value.handle] = routes.isEmpty ? nil : routes
        }
    }

    /// Ends every stream with `error` (the bearer closed); later routes end at once.
    func finishAll(_ error: GATTError) {
        state.withLock { state in
            state.closedError = error
            for routes in state.routes.values {
                for route in routes { route.continuation.finish(throwing: error) }
            }
            state.routes = [:]
        }
    }

    /// The router task's body: consumes `connection.inbound` until the bearer closes, then
    /// ends every stream with the close reason.
    static func run(_ router: SubscriptionRouter, connection: ATTConnection) async {
        for await pdu in connection.inbound {
            router.deliver(pdu)
        }
        let reason = await connection.closeReason ?? "the ATT bearer closed"
        router.finishAll(.att(.bearerClosed(reason: reason)))
    }
}
