import Bluetooth
import Synchronization

/// The devices a scan hears, each merged from its reports (advertising and scan response come
/// apart when every report is asked for), each forgotten after `window` without a report; the
/// list is those that match a model's criteria. A change of the list is a device that arrives
/// (matches), leaves, or changes what it advertises (not its RSSI alone).
final class NearbyList: Sendable {
    private struct Entry: Sendable {
        var advertisement: Advertisement
        var lastSeen: ContinuousClock.Instant
        var matches: Bool
    }

    private struct State: Sendable {
        var entries: [BluetoothAddress: Entry] = [:]
        /// Arrival order, for a stable list.
        var order: [BluetoothAddress] = []
    }

    private let state = Mutex(State())
    let criteria: [DiscoveryCriteria]
    let window: Duration

    init(criteria: [DiscoveryCriteria], window: Duration) {
        self.criteria = criteria
        self.window = window
    }

    /// The matching devices, in the order they arrived.
    var list: [Advertisement] {
        state.withLock { state in
            state.order.compactMap { key in state.entries[key].flatMap { $0.matches ? $0.advertisement : nil } }
        }
    }

    /// The merged advertisement of `address` when it matches.
    func matching(_ address: BluetoothAddress) -> Advertisement? {
        state.withLock { state in state.entries[address].flatMap { $0.matches ? $0.advertisement : nil } }
    }

    /// A report: merged into its device's entry. Returns whether the list changed, and whether
    /// the device is new (the expiry has one more entry to watch).
    func heard(_ report: Advertisement, at now: ContinuousClock.Instant) -> (changed: Bool, new: Bool) {
        state.withLock { state in
            let key = report.peer.address
            guard var entry = state.entries[key] else {
                let matches = criteria.contains { $0.matches(report) }
                state.entries[key] = Entry(advertisement: report, lastSeen: now, matches: matches)
                state.order.append(key)
                return (matches, true)
            }
            let before = entry.advertisement
            var merged = before
            merged.name = report.name ?? before.name
            merged.rssi = report.rssi
            merged.isConnectable = before.isConnectable || report.isConnectable
            for uuid in report.serviceUUIDs where !merged.serviceUUIDs.contains(uuid) { merged.serviceUUIDs.append(uuid) }
            if !report.manufacturerData.isEmpty { merged.manufacturerData = report.manufacturerData }
            if !report.serviceData.isEmpty { merged.serviceData = report.serviceData }
            merged.txPower = report.txPower ?? before.txPower
            merged.identity = report.identity ?? before.identity
            merged.data = report.data
            let matched = entry.matches
            entry.matches = criteria.contains { $0.matches(merged) }
            entry.advertisement = merged
            entry.lastSeen = now
            state.entries[key] = entry
            guard entry.matches else { return (matched, false) }
            return (
                !matched || merged.name != before.name || merged.serviceUUIDs != before.serviceUUIDs
                    || merged.manufacturerData != before.manufacturerData || merged.isConnectable != before.isConnectable,
                false
            )
        }
    }

    /// Forgets the devices unheard for `window`; returns whether the list changed and when the
    /// next one would be forgotten.
    func expire(at now: ContinuousClock.Instant) -> (changed: Bool, next: ContinuousClock.Instant?) {
        state.withLock { state in
            let gone = state.entries.filter { now - $0.value.lastSeen >= window }
            for key in gone.keys { state.entries[key] = nil }
            if !gone.isEmpty { state.order.removeAll { state.entries[$0] == nil } }
            return (gone.values.contains(where: \.matches), state.entries.values.map(\.lastSeen).min().map { $0 + window })
        }
    }
}

extension Adapter {
    /// The devices nearby that a `D` model could connect to: the current list each time it
    /// changes (a device arrives, leaves, or changes what it advertises). Criteria are ORed; none
    /// given: the model's required services, as advertised. A device leaves the list 10 s after
    /// its last advertisement (``nearbyDevices(_:by:leavingAfter:)`` sets it). The stream scans
    /// until the caller stops iterating.
    public nonisolated func nearbyDevices<D: BluetoothDevice>(
        _ type: D.Type, by criteria: DiscoveryCriteria...
    ) -> AsyncThrowingStream<[Advertisement], any Error> {
        nearbyDevices(type, by: criteria, leavingAfter: .seconds(10))
    }

    /// ``nearbyDevices(_:by:)`` with the criteria as an array and the time a device stays in the
    /// list after its last advertisement.
    public nonisolated func nearbyDevices<D: BluetoothDevice>(
        _ type: D.Type, by criteria: [DiscoveryCriteria], leavingAfter window: Duration
    ) -> AsyncThrowingStream<[Advertisement], any Error> {
        let criteria = criteria.isEmpty ? ModelParts(D()).requiredServices.map(DiscoveryCriteria.advertisedService) : criteria
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: [Advertisement].self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(1))
        guard !criteria.isEmpty else {
            continuation.finish(
                throwing: BLEError("nearbyDevices: \(D.self) requires no service; give discovery criteria", kind: "usage", exitCode: .usage))
            return stream
        }
        let nearby = NearbyList(criteria: criteria, window: window)
        // Woken when a device arrives, so the expiry waits for the earliest departure only.
        let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let scanner = Task { [self] in
            var options = ScanOptions()
            options.everyReport = true
            do {
                for try await report in await scan(options) {
                    let (changed, new) = nearby.heard(report, at: .now)
                    if changed { continuation.yield(nearby.list) }
                    if new { arrived.yield() }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
            arrived.finish()
        }
        let expiry = Task {
            var wake = arrivals.makeAsyncIterator()
            while !Task.isCancelled {
                let (changed, next) = nearby.expire(at: .now)
                if changed { continuation.yield(nearby.list) }
                if let next {
                    try? await Task.sleep(until: next, clock: .continuous)
                } else if await wake.next() == nil {
                    return
                }
            }
        }
        continuation.onTermination = { _ in
            scanner.cancel()
            expiry.cancel()
        }
        return stream
    }

    /// Connects a `D` model to each device that matches `criteria` (ORed; none: the model's
    /// required services) as it is heard, and yields it connected. A device whose link ends is
    /// connected again (a new model) when it is heard again. Scans until the caller stops
    /// iterating; a device that cannot be connected or bound is skipped with a warning.
    public nonisolated func autoConnect<D: BluetoothDevice>(
        _ type: D.Type, by criteria: DiscoveryCriteria...
    ) -> AsyncThrowingStream<D, any Error> {
        let criteria = criteria.isEmpty ? ModelParts(D()).requiredServices.map(DiscoveryCriteria.advertisedService) : criteria
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: D.self, throwing: (any Error).self)
        guard !criteria.isEmpty else {
            continuation.finish(
                throwing: BLEError("autoConnect: \(D.self) requires no service; give discovery criteria", kind: "usage", exitCode: .usage))
            return stream
        }
        let warning = options.warning
        let nearby = NearbyList(criteria: criteria, window: .seconds(10))
        let task = Task { [self] in
            // Devices with a model connected (or being connected), by address.
            let busy = BusyAddresses()
            var options = ScanOptions()
            options.everyReport = true
            var lastExpiry = ContinuousClock.now
            do {
                for try await report in await scan(options) {
                    let now = ContinuousClock.now
                    _ = nearby.heard(report, at: now)
                    // Devices unheard for the window are forgotten (checked once a second at most).
                    if now - lastExpiry >= .seconds(1) {
                        _ = nearby.expire(at: now)
                        lastExpiry = now
                    }
                    let address = report.peer.address
                    guard let advertisement = nearby.matching(address), advertisement.isConnectable,
                        busy.set.withLock({ $0.insert(address).inserted })
                    else { continue }
                    // One at a time, as the controller connects one at a time anyway.
                    let connected: (model: D, context: ModelContext)
                    do {
                        connected = try await connectModel(to: advertisement.peer, as: D.self, timeout: .seconds(30), advertisement: advertisement)
                    } catch {
                        warning("warning: autoConnect: \(advertisement.peer): \(error)")
                        busy.set.withLock { _ = $0.remove(address) }
                        continue
                    }
                    if case .terminated = continuation.yield(connected.model) {
                        // Nobody takes it any more: its link is not left behind.
                        await connected.context.disconnect()
                        return
                    }
                    let context = connected.context
                    Task {
                        await context.linkEnded()
                        busy.set.withLock { _ = $0.remove(address) }
                    }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// The addresses `autoConnect` has a model connected to (or is connecting).
final class BusyAddresses: Sendable {
    let set = Mutex<Set<BluetoothAddress>>([])
}
