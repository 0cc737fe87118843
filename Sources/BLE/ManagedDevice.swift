import Bluetooth
import GATT
import HCI
import Synchronization

/// How an ``Adapter`` keeps a managed device connected.
public struct ManagedDeviceOptions: Hashable, Sendable {
    /// How long one connection attempt may take once the device was seen advertising.
    public var connectTimeout: Duration
    /// The first pause after a failed attempt; each further failure doubles it, up to
    /// `maximumBackoff` (a success starts again from the first).
    public var initialBackoff: Duration
    public var maximumBackoff: Duration
    /// Security raised after every connection (the bond's key, else pairing); nil: the bond's
    /// own level when the device is bonded, else none.
    public var security: SecurityLevel?

    public init(
        connectTimeout: Duration = .seconds(5), initialBackoff: Duration = .milliseconds(250),
        maximumBackoff: Duration = .seconds(30), security: SecurityLevel? = nil
    ) {
        self.connectTimeout = connectTimeout
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.security = security
    }

    /// The pause after the `failures`-th failure in a row (1: `initialBackoff`), capped.
    public func backoff(after failures: Int) -> Duration {
        var pause = initialBackoff
        for _ in 1..<max(1, failures) {
            pause *= 2
            if pause >= maximumBackoff { return maximumBackoff }
        }
        return min(pause, maximumBackoff)
    }
}

/// A device the adapter keeps connected (``Adapter/manage(_:options:)``): it waits for the
/// device to advertise, connects, raises security with its bond, subscribes to what was asked
/// (reusing the cached database while its Database Hash is unchanged), and after a link loss
/// does it all again with capped exponential back-off. Each value a subscription receives is
/// delivered once, in order, through ``events()``; a link loss and the return are events of
/// their own, so every gap is said.
public final class ManagedDevice: Sendable {
    /// Where a managed device is.
    public enum State: Hashable, Sendable {
        /// Waiting for it to advertise (the link is down).
        case waiting
        case connecting
        /// Connected, security raised and every subscription enabled.
        case connected
        /// The link went; `reason` why. Waiting follows.
        case disconnected(DisconnectReason)
        /// No longer managed (``Adapter/stopManaging(_:)`` or the adapter closed).
        case removed
    }

    /// What a managed device reports, in order.
    public enum Event: Sendable {
        case state(State)
        /// A value of a subscribed characteristic (each one once), with its service where known.
        case notification(service: BluetoothUUID?, characteristic: BluetoothUUID, CharacteristicNotification)
        /// The link is back after a loss of `gap` (from the loss to the subscriptions restored):
        /// what the device sent meanwhile was not received. `attempts`: connections tried;
        /// `restoredIn`: from seeing it advertise again to the subscriptions restored.
        case reconnected(gap: Duration, attempts: Int, restoredIn: Duration)
        /// A connection attempt or a restore step failed (the device is tried again after `retryIn`).
        case attemptFailed(BLEError, retryIn: Duration)
    }

    public let peer: PeerAddress
    public let options: ManagedDeviceOptions

    private struct Wish: Hashable, Sendable {
        var characteristic: BluetoothUUID
    }

    private struct Status: Sendable {
        var state: State = .waiting
        var peripheral: Peripheral?
        var wishes: [Wish] = []
        /// Written (with response) on every connection, before the subscriptions.
        var writes: [(characteristic: BluetoothUUID, value: [UInt8])] = []
        /// The subscriptions of the current link, by characteristic, and the tasks that forward
        /// their values.
        var active: [BluetoothUUID: Subscription] = [:]
        var pumps: [BluetoothUUID: Task<Void, Never>] = [:]
        var connections = 0
        var reconnects = 0
    }

    private let status = Mutex(Status())
    private let broadcast = Broadcast<Event>()
    /// The states alone (current first), for waiters that must not buffer every value.
    private let stateBroadcast = Broadcast<State>(latest: .waiting)
    private let runner = Mutex<Task<Void, Never>?>(nil)

    init(peer: PeerAddress, options: ManagedDeviceOptions) {
        self.peer = peer
        self.options = options
    }

    /// Everything from now on (states, values, gaps), for one caller each; finishes after `.removed`.
    public func events() -> AsyncStream<Event> { broadcast.subscribe() }

    public var state: State { status.withLock { $0.state } }

    /// The device's states from now on, the current one first, for one caller each; finishes
    /// after `.removed`. (``events()`` has them too, among the values.)
    public func states() -> AsyncStream<State> { stateBroadcast.subscribe() }

    /// The connected peripheral, nil while the link is down.
    public var peripheral: Peripheral? { status.withLock { $0.peripheral } }

    /// Connections made so far, and how many of them followed a loss.
    public var connectionCount: Int { status.withLock { $0.connections } }
    public var reconnectionCount: Int { status.withLock { $0.reconnects } }

    /// Keeps `characteristic` subscribed on every connection from now on (at once when
    /// connected), notifications or indications as its properties offer (as
    /// ``Peripheral/subscribe(to:)``). Subscribing twice to one characteristic is one subscription.
    public func subscribe(to characteristic: BluetoothUUID) async throws(BLEError) {
        let (added, peripheral) = status.withLock { status -> (Bool, Peripheral?) in
            guard !status.wishes.contains(where: { $0.characteristic == characteristic }) else { return (false, nil) }
            status.wishes.append(Wish(characteristic: characteristic))
            return (true, status.state == .connected ? status.peripheral : nil)
        }
        guard added, let peripheral else { return }
        try await enable(Wish(characteristic: characteristic), on: peripheral)
    }

    /// Writes `value` to `characteristic` (with response) after every connection, before the
    /// subscriptions are enabled (a sensor switched on), and at once when connected.
    public func write(onEveryConnection value: [UInt8], to characteristic: BluetoothUUID) async throws(BLEError) {
        let peripheral = status.withLock { status -> Peripheral? in
            status.writes.append((characteristic, value))
            return status.state == .connected ? status.peripheral : nil
        }
        try await peripheral?.write(value, to: characteristic)
    }

    /// Stops keeping `characteristic` subscribed (its CCCD goes off now when connected).
    public func unsubscribe(from characteristic: BluetoothUUID) async {
        let subscription = status.withLock { status -> Subscription? in
            status.wishes.removeAll { $0.characteristic == characteristic }
            status.pumps[characteristic] = nil
            return status.active.removeValue(forKey: characteristic)
        }
        await subscription?.cancel()
    }

    // MARK: - The loop

    func start(on adapter: Adapter) {
        let task = Task { [self] in await run(on: adapter) }
        runner.withLock { $0 = task }
    }

    /// Ends management: the loop stops, the link (if any) is ended, `.removed` is the last event.
    func stop() async {
        let task = runner.withLock { runner -> Task<Void, Never>? in
            defer { runner = nil }
            return runner
        }
        task?.cancel()
        await task?.value
        let (peripheral, subscriptions) = status.withLock { status -> (Peripheral?, [Subscription]) in
            defer {
                status.active = [:]
                status.pumps = [:]
                status.peripheral = nil
            }
            return (status.peripheral, Array(status.active.values))
        }
        for subscription in subscriptions { await subscription.cancel() }
        await peripheral?.disconnect()
        set(.removed)
        broadcast.finish()
    }

    private func set(_ state: State) {
        let changed = status.withLock { status -> Bool in
            guard status.state != state else { return false }
            status.state = state
            return true
        }
        if changed {
            broadcast.yield(.state(state))
            stateBroadcast.yield(state, final: state == .removed)
        }
    }

    private func run(on adapter: Adapter) async {
        var failures = 0
        var lostAt: ContinuousClock.Instant?
        var attempts = 0
        while !Task.isCancelled {
            set(.waiting)
            guard await waitForAdvertising(on: adapter) else { return }
            let seen = ContinuousClock.now
            set(.connecting)
            attempts += 1
            let peripheral: Peripheral
            do {
                peripheral = try await adapter.connect(to: peer, timeout: options.connectTimeout)
            } catch {
                if Task.isCancelled { return }
                failures += 1
                let pause = options.backoff(after: failures)
                broadcast.yield(.attemptFailed(error, retryIn: pause))
                try? await Task.sleep(for: pause)
                continue
            }
            let states = peripheral.states()
            do throws(BLEError) {
                try await restore(on: peripheral, adapter: adapter)
            } catch {
                if Task.isCancelled {
                    await peripheral.disconnect()
                    return
                }
                failures += 1
                let pause = options.backoff(after: failures)
                broadcast.yield(.attemptFailed(error, retryIn: pause))
                await dropLink(peripheral)
                try? await Task.sleep(for: pause)
                continue
            }
            failures = 0
            let reconnect = status.withLock { status -> Bool in
                status.connections += 1
                if lostAt != nil { status.reconnects += 1 }
                return lostAt != nil
            }
            if reconnect, let since = lostAt {
                let now = ContinuousClock.now
                broadcast.yield(.reconnected(gap: now - since, attempts: attempts, restoredIn: now - seen))
            }
            attempts = 0
            set(.connected)
            // A subscription asked for while the link was being restored: enabled now.
            let missed = status.withLock { status in status.wishes.filter { status.active[$0.characteristic] == nil } }
            for wish in missed { try? await enable(wish, on: peripheral) }
            // Until the link ends (or management does).
            var reason: DisconnectReason = .transportClosed
            for await state in states {
                if case .disconnected(let why) = state {
                    reason = why
                    break
                }
            }
            if Task.isCancelled { return }
            lostAt = ContinuousClock.now
            await linkLost(peripheral)
            set(.disconnected(reason))
        }
    }

    /// Waits until the device advertises (a scan of the adapter, shared with its other scans);
    /// false when management ended first.
    private func waitForAdvertising(on adapter: Adapter) async -> Bool {
        while !Task.isCancelled {
            do {
                for try await advertisement in await adapter.scan(ScanOptions())
                where advertisement.peer.address == peer.address && advertisement.isConnectable {
                    return true
                }
            } catch {
                // The scan failed (the transport cannot scan, a replay): try connecting anyway.
                return !Task.isCancelled
            }
            // The scan ended without the device (the adapter closing): end when cancelled.
            if Task.isCancelled { return false }
            try? await Task.sleep(for: options.initialBackoff)
        }
        return false
    }

    /// Security with the bond (or `options.security`), then every wished subscription.
    private func restore(on peripheral: Peripheral, adapter: Adapter) async throws(BLEError) {
        var level = options.security
        if level == nil {
            let bonds = await adapter.bonds()
            let known = await peripheral.bondPeer
            level = bonds.first { $0.peer == known.address || $0.identity == known.address }?.securityLevel
        }
        if let level, level > .none { try await peripheral.ensureSecurity(level) }
        status.withLock { $0.peripheral = peripheral }
        for (characteristic, value) in status.withLock({ $0.writes }) { try await peripheral.write(value, to: characteristic) }
        for wish in status.withLock({ $0.wishes }) { try await enable(wish, on: peripheral) }
    }

    /// Subscribes on this link and forwards each value once.
    private func enable(_ wish: Wish, on peripheral: Peripheral) async throws(BLEError) {
        let subscription = try await peripheral.subscribe(to: wish.characteristic)
        // The service it belongs to (the database is discovered once, then cached by its hash).
        let service = (try? await peripheral.services())?.first { service in
            service.characteristics.contains { $0.uuid == wish.characteristic }
        }?.uuid
        let stale = status.withLock { status -> Subscription? in
            defer { status.active[wish.characteristic] = subscription }
            return status.active[wish.characteristic]
        }
        await stale?.cancel()
        let (broadcast, characteristic) = (broadcast, wish.characteristic)
        let pump = Task {
            do {
                for try await value in subscription {
                    broadcast.yield(.notification(service: service, characteristic: characteristic, value))
                }
            } catch {
                // The link ended (the loop reports it) or the subscription was cancelled.
            }
        }
        status.withLock { $0.pumps[wish.characteristic] = pump }
    }

    /// The link went: every value it delivered is forwarded before the loss is said. Each
    /// subscription ends by itself with the link, after the values it holds (cancelling it would
    /// drop them); its forwarding task is awaited, at most `drainTimeout`.
    private func linkLost(_ peripheral: Peripheral) async {
        let pumps = status.withLock { status -> [Task<Void, Never>] in
            defer {
                status.active = [:]
                status.pumps = [:]
                status.peripheral = nil
            }
            return Array(status.pumps.values)
        }
        let bound = Task {
            try? await Task.sleep(for: Self.drainTimeout)
            for pump in pumps { pump.cancel() }
        }
        for pump in pumps { await pump.value }
        bound.cancel()
        await peripheral.disconnect()
    }

    /// How long a lost link's values may take to be forwarded (they are already in memory).
    static let drainTimeout: Duration = .seconds(5)

    /// Forgets the link's subscriptions (their streams ended with it) and the peripheral.
    private func dropLink(_ peripheral: Peripheral) async {
        let subscriptions = status.withLock { status -> [Subscription] in
            defer {
                status.active = [:]
                status.pumps = [:]
                status.peripheral = nil
            }
            return Array(status.active.values)
        }
        for subscription in subscriptions { await subscription.cancel() }
        await peripheral.disconnect()
    }
}
