import ATT
import Bluetooth

/// Enhanced ATT (Core 5.2+): several ATT bearers on one link, each an L2CAP enhanced
/// credit-based channel, each with one request outstanding. The client keeps its unenhanced
/// bearer (`connection`) and adds enhanced ones; a procedure takes a free bearer for its whole
/// run, so independent procedures — concurrent reads and writes, the parts of a discovery —
/// proceed side by side. Notifications, indications and Multiple Handle Value Notifications
/// are taken on every bearer; an indication is confirmed on the bearer that carried it (each
/// `ATTConnection` confirms its own).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.2.11, §3.3.2; Part G, §5.3
extension GATTClient {
    /// Adds Enhanced ATT bearers (ATTConnections over EATT channels, their MTU set: no
    /// exchange). A bearer that closes leaves the pool; the client goes on with the others.
    public func addEnhancedBearers(_ bearers: [ATTConnection]) {
        for bearer in bearers where !enhancedBearers.contains(where: { $0 === bearer }) {
            enhancedBearers.append(bearer)
            let router = self.router
            enhancedRouterTasks.append(
                Task.detached { [weak self] in
                    for await pdu in bearer.inbound { router.deliver(pdu) }
                    await self?.enhancedBearerClosed(bearer)
                })
        }
        wakeBearerWaiters()
    }

    /// The Enhanced ATT bearers in use.
    public var enhancedBearerCount: Int { enhancedBearers.count }

    /// Every bearer: the unenhanced one first.
    public var bearers: [ATTConnection] { [connection] + enhancedBearers }

    func enhancedBearerClosed(_ bearer: ATTConnection) {
        enhancedBearers.removeAll { $0 === bearer }
        busyBearers.remove(ObjectIdentifier(bearer))
        wakeBearerWaiters()
    }

    /// A bearer no procedure runs on, waiting until one is free.
    func acquireBearer() async -> ATTConnection {
        while true {
            if enhancedBearers.isEmpty { return connection }
            if let free = bearers.first(where: { !busyBearers.contains(ObjectIdentifier($0)) }) {
                busyBearers.insert(ObjectIdentifier(free))
                return free
            }
            await withCheckedContinuation { bearerWaiters.append($0) }
        }
    }

    func releaseBearer(_ bearer: ATTConnection) {
        busyBearers.remove(ObjectIdentifier(bearer))
        if !bearerWaiters.isEmpty { bearerWaiters.removeFirst().resume() }
    }

    private func wakeBearerWaiters() {
        let waiters = bearerWaiters
        bearerWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// The whole database with several bearers: the primary services on one, then their
    /// definitions in parts of about equal size — two per bearer, so a bearer whose part went
    /// quickly takes another while a long one runs — in parallel
    /// (``DatabaseDiscovery/init(services:mtu:findIncludes:)``). Fewer sequential round trips
    /// than one bearer (the busiest bearer's, not the sum), for a few more requests (each part
    /// ends its own sweeps).
    func discoverDatabaseInParallel(findIncludes: Bool) async throws(GATTError) -> GATTDatabase {
        let start = await requestCounts()
        let mtu = try await readyMTU()
        let services = try await run(DiscoverAllPrimaryServices(mtu: mtu)).sorted { $0.startHandle < $1.startHandle }
        let afterServices = await requestCounts()
        let serviceTrips = zip(afterServices, start).map { $0 - $1 }.reduce(0, +)
        let parts = Self.partition(services, into: bearers.count * 2)
        guard parts.count > 1 else {
            let found = try await run(DatabaseDiscovery(services: services, mtu: mtu, findIncludes: findIncludes))
            let total = zip(await requestCounts(), start).map { $0 - $1 }.reduce(0, +)
            lastDiscovery = (total, total)
            return found
        }
        let results = await withTaskGroup(of: Result<GATTDatabase, GATTError>.self) { group in
            for part in parts {
                group.addTask {
                    do throws(GATTError) {
                        return .success(try await self.run(DatabaseDiscovery(services: part, mtu: mtu, findIncludes: findIncludes)))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var all: [Result<GATTDatabase, GATTError>] = []
            for await result in group { all.append(result) }
            return all
        }
        // Each part ran on one bearer (a procedure keeps its bearer): the longest is the critical path.
        let partTrips = zip(await requestCounts(), afterServices).map { $0 - $1 }
        lastDiscovery = (serviceTrips + partTrips.reduce(0, +), serviceTrips + (partTrips.max() ?? 0))
        var merged: [UInt16: Service] = [:]
        for result in results {
            switch result {
            case .failure(let error): throw error
            case .success(let part):
                // A secondary service found through an include may come from two parts: once.
                for service in part.services where merged[service.startHandle] == nil { merged[service.startHandle] = service }
            }
        }
        return GATTDatabase(services: merged.values.sorted { $0.startHandle < $1.startHandle })
    }

    /// Requests sent so far on each bearer (the unenhanced one first).
    func requestCounts() async -> [Int] {
        var counts: [Int] = []
        for bearer in bearers { counts.append(await bearer.requestsSent) }
        return counts
    }

    /// `services` (sorted) cut into at most `count` runs of neighbours with about equal numbers
    /// of handles each (a service's weight: its handles up to the next service, at most 256,
    /// so a last service ending at 0xFFFF does not count as 65 535).
    static func partition(_ services: [Service], into count: Int) -> [[Service]] {
        guard count > 1, services.count > 1 else { return services.isEmpty ? [] : [services] }
        let weights = services.enumerated().map { index, service -> Int in
            let end = index + 1 < services.count ? min(Int(service.endHandle), Int(services[index + 1].startHandle) - 1) : Int(service.endHandle)
            return min(256, max(1, end - Int(service.startHandle) + 1))
        }
        let parts = min(count, services.count)
        let target = Double(weights.reduce(0, +)) / Double(parts)
        var result: [[Service]] = []
        var current: [Service] = []
        var weight = 0
        for (index, service) in services.enumerated() {
            current.append(service)
            weight += weights[index]
            let left = services.count - index - 1
            let partsLeft = parts - result.count - 1
            if partsLeft > 0, (Double(weight) >= target || left == partsLeft) {
                result.append(current)
                current = []
                weight = 0
            }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }
}
