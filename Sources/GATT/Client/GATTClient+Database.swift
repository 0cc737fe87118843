import ATT
import Bluetooth

/// A change of the server's database the client has applied (Service Changed).
public struct GATTDatabaseChange: Hashable, Sendable {
    /// The handles the server named in its Service Changed indication.
    public var affected: ClosedRange<UInt16>
    /// The handles rediscovered: `affected` widened to whole services.
    public var rediscovered: ClosedRange<UInt16>
    /// The database after the change.
    public var database: GATTDatabase
}

extension GATTClient {
    /// Database changes, one per Service Changed indication, after the client rediscovered the
    /// affected range and updated ``database`` (and the cache). Finishes on ``close()``. One
    /// consumer.
    public nonisolated var databaseChanges: AsyncStream<GATTDatabaseChange> { changes }

    /// The database, from the cache when it may be reused, otherwise discovered (and then
    /// cached); it becomes ``database`` and, when it has Service Changed, the client subscribes
    /// to its indications (``Configuration/watchesServiceChanged``).
    ///
    /// With a cache and a peer configured, the Database Hash is read first (one Read By Type
    /// Request for 0x2B2A): the cached database is reused when the hashes match, or — under
    /// ``GATTCachePolicy/trust`` — when the server has no hash. Otherwise nothing is reused.
    public func loadDatabase(findIncludes: Bool = true) async throws(GATTError) -> GATTDatabase {
        var hash: [UInt8]?
        var loaded: GATTDatabase?
        if let cache = configuration.cache, let peer = configuration.peer {
            hash = try await readDatabaseHash()
            if let entry = cache.load(peer) {
                switch (hash, entry.databaseHash) {
                case (let now?, let then?) where now == then:
                    loaded = entry.database
                case (nil, _) where configuration.cachePolicy == .trust:
                    loaded = entry.database
                case (nil, _):
                    logger.info("cache of \(peer) not reused: the server has no Database Hash (policy requireHash)")
                default:
                    logger.info("cache of \(peer) not reused: the Database Hash differs")
                }
            }
        }
        let result: GATTDatabase
        if let loaded {
            result = loaded
            database = loaded
        } else {
            result = try await discoverDatabase(findIncludes: findIncludes)
            if let cache = configuration.cache, let peer = configuration.peer {
                try cache.store(GATTCacheEntry(database: result, databaseHash: hash), for: peer)
            }
        }
        databaseHash = hash
        try await watchServiceChanged()
        return result
    }

    /// The server's Database Hash (0x2B2A, §7.3) with one Read By Type Request, or nil when it
    /// has none (Attribute Not Found, or a value of another length).
    public func readDatabaseHash() async throws(GATTError) -> [UInt8]? {
        _ = try await readyMTU()
        if Task.isCancelled { throw GATTError.cancelled }
        let request = ATTPDU.readByTypeRequest(
            ReadByTypeRequest(startingHandle: 0x0001, endingHandle: 0xFFFF, attributeType: GATTUUID.databaseHash))
        do {
            let answer = try await connection.request(request)
            guard case .readByTypeResponse(let response) = answer else {
                throw GATTError.unexpectedResponse(request: .readByTypeRequest, received: answer.opcode)
            }
            guard let value = response.entries.first?.value, value.count == 16 else {
                logger.warning("Database Hash of unexpected length; treated as absent")
                return nil
            }
            return value
        } catch let error as GATTError {
            throw error
        } catch let error as ATTError {
            if case .peerError(_, _, let code) = error, code == .attributeNotFound { return nil }
            if case .peerError(_, _, let code) = error {
                logger.info("Database Hash not readable (\(code)); treated as absent")
                return nil
            }
            throw GATTError.att(error)
        } catch {
            throw GATTError.invalidParameter("\(error)")
        }
    }

    /// Takes `database` as the server's, without discovery: a database the caller kept from an
    /// earlier connection and has just checked against the server's Database Hash `hash`
    /// (§2.5.2: reusable while the hash is unchanged). Watches Service Changed as
    /// ``loadDatabase(findIncludes:)`` does.
    public func adopt(_ database: GATTDatabase, hash: [UInt8]?) async throws(GATTError) {
        self.database = database
        databaseHash = hash
        try await watchServiceChanged()
    }

    /// Forgets the cached database of the configured peer (file and ``database``).
    public func invalidateCache() throws(GATTError) {
        database = nil
        databaseHash = nil
        if let cache = configuration.cache, let peer = configuration.peer { try cache.invalidate(peer) }
    }

    // MARK: Service Changed

    /// Subscribes to Service Changed indications when the database has the characteristic
    /// and the configuration asks for it (once).
    func watchServiceChanged() async throws(GATTError) {
        guard configuration.watchesServiceChanged, serviceChangedSubscription == nil, let database,
            let characteristic = database.characteristics(uuid: GATTUUID.serviceChanged).first,
            characteristic.clientConfigurationHandle != nil
        else { return }
        let subscription = try await subscribe(characteristic: characteristic, indications: true)
        serviceChangedSubscription = subscription
        serviceChangedTask = Task { [weak self] in
            do {
                for try await change in subscription {
                    guard let self else { return }
                    await self.serviceChanged(change.value)
                }
            } catch {
                // The bearer closed: nothing more will change.
            }
        }
    }

    /// Applies one Service Changed value: the affected range is dropped from the database and
    /// the cache, rediscovered, and reported on ``databaseChanges``.
    func serviceChanged(_ value: [UInt8]) async {
        guard value.count == 4 else {
            logger.warning("Service Changed value of \(value.count) octets ignored (expected 4)")
            return
        }
        let start = UInt16(value[0]) | UInt16(value[1]) << 8
        let end = UInt16(value[2]) | UInt16(value[3]) << 8
        guard start != 0, start <= end else {
            logger.warning("Service Changed range 0x\(hex4(start))-0x\(hex4(end)) ignored")
            return
        }
        if let cache = configuration.cache, let peer = configuration.peer {
            do { try cache.invalidate(peer) } catch { logger.warning("\(error)") }
        }
        // Widen to whole services: a service overlapping the range is rediscovered whole.
        var low = start
        var high = end
        let kept = (database?.services ?? []).filter { service in
            guard service.handleRange.overlaps(start...end) else { return true }
            low = min(low, service.startHandle)
            high = max(high, service.endHandle)
            return false
        }
        do {
            let found = try await run(DatabaseDiscovery(range: low...high, mtu: try await readyMTU()))
            let updated = GATTDatabase(services: kept + found.services)
            database = updated
            if let cache = configuration.cache, let peer = configuration.peer {
                let hash = try await readDatabaseHash()
                databaseHash = hash
                try cache.store(GATTCacheEntry(database: updated, databaseHash: hash), for: peer)
            }
            changesContinuation.yield(
                GATTDatabaseChange(affected: start...end, rediscovered: low...high, database: updated))
        } catch {
            logger.warning("rediscovery of 0x\(hex4(low))-0x\(hex4(high)) after Service Changed failed: \(error)")
        }
    }
}
