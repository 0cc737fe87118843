import ATT
import Bluetooth
import GATT
import HCI
import Synchronization

/// Why a connection ended.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.5 (Disconnection Complete)
public enum DisconnectReason: Hashable, Sendable {
    /// We ended it (``Peripheral/disconnect()`` or ``Adapter/close()``).
    case local
    /// The peer ended it, with the reason its controller gave.
    case remote(HCIStatus)
    /// The link was lost: supervision timeout (0x08) or LMP/LL response timeout (0x22).
    case timeout
    /// The transport under the link closed (the controller, socket or capture went away).
    case transportClosed
}

/// Where a connection is.
public enum PeripheralState: Hashable, Sendable {
    /// The connection is being made.
    case connecting
    /// Connected, the ATT_MTU exchanged.
    case connected
    /// The link is gone, and why.
    case disconnected(DisconnectReason)
}

/// A connected remote device (we are central). It owns its link: ``disconnect()`` ends it,
/// and nothing else does but the peer, the link's loss or ``Adapter/close()``.
///
/// Reads return whole values (Read Blob where a value fills ATT_MTU − 1), writes with response
/// become long writes beyond ATT_MTU − 3, and characteristics named by UUID are located with the
/// fewest requests (the discovered services when there are any).
public actor Peripheral {
    /// The device's address and type.
    public nonisolated let peer: PeerAddress
    /// The session under the facade: client, ATT connection, link (the CLI's handle-level use).
    package nonisolated let session: GATTSession
    /// The GATT client (procedures beyond the contract: reliable writes, Read Multiple, …).
    package nonisolated var client: GATTClient { session.client }

    private let stateBroadcast: StateBroadcast
    private let epoch: ContinuousClock.Instant
    private let cache: ServiceCache
    /// The adapter's pairing delegate and bond store.
    let securityContext: SecurityContext
    /// Our controller's address (the bond's `local`).
    let localAddress: PeerAddress
    private var currentSecurity: SecurityLevel = .none
    /// The bonded identity behind the resolvable private address this link was made to (the
    /// adapter resolved it with the bond's IRK); nil: `peer` is the address bonds and caches know.
    package private(set) var identity: PeerAddress?
    /// The address the bond store and the service cache know this device by.
    var bondPeer: PeerAddress { identity ?? peer }

    func setIdentity(_ identity: PeerAddress?) {
        self.identity = identity
    }
    /// The identity whose bond encrypted this link (its key proven by the peer), if one did.
    var encryptedWithBond: PeerAddress?
    /// The securing in progress (``ensureSecurity(_:options:)``), which later callers wait for.
    var securing: Task<Void, any Error>?
    private var negotiatedMTU: Int
    private var discovered: [RemoteService]?
    private var localDisconnect = false

    /// The ATT_MTU both sides agreed on (23 until the exchange; we ask for 517).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.2
    public var mtu: Int { negotiatedMTU }

    /// Where the connection is now.
    public var state: PeripheralState { stateBroadcast.current }

    /// The connection's interval, latency and supervision timeout now, where the transport
    /// shows them (our host in user space, `sim`); nil on the kernel path, whose sockets hide
    /// the link layer, and in a replay.
    public nonisolated var connectionParameters: ConnectionParameters? { session.link.parameters?() }

    /// Whether ``linkEvents()`` can report anything on this transport.
    public nonisolated var showsLinkEvents: Bool { session.link.linkEvents != nil }

    /// The link's changes from now on (parameter updates, data length and PHY changes), for one
    /// caller each; finishes when the link ends. Where the transport hides the link layer (the
    /// kernel path, a replay) it finishes at once: see ``showsLinkEvents``.
    public nonisolated func linkEvents() -> AsyncStream<LinkEvent> { linkBroadcast.subscribe() }
    private nonisolated let linkBroadcast = Broadcast<LinkEvent>()

    /// The link's security as this host established it (Vol 3, Part C, §10.2): `.none` until
    /// it encrypts with a bond or pairs (on the kernel path: the level the kernel reports after
    /// we raised it; encryption the kernel starts by itself is not seen here).
    public var securityLevel: SecurityLevel { currentSecurity }

    func raiseSecurityLevel(to level: SecurityLevel) async {
        guard level > currentSecurity else { return }
        currentSecurity = level
        await client.linkSecurityChanged(to: level)
    }

    init(
        session: GATTSession, mtu: Int, epoch: ContinuousClock.Instant, cache: ServiceCache,
        securityContext: SecurityContext, localAddress: PeerAddress
    ) {
        self.peer = session.peer
        self.session = session
        self.negotiatedMTU = mtu
        self.epoch = epoch
        self.cache = cache
        self.securityContext = securityContext
        self.localAddress = localAddress
        self.stateBroadcast = StateBroadcast(.connected)
    }

    /// Makes the peripheral of an open session and watches its link; `ended` runs once the
    /// link is gone.
    static func make(
        session: GATTSession, epoch: ContinuousClock.Instant, cache: ServiceCache, securityContext: SecurityContext,
        localAddress: PeerAddress, ended: @escaping @Sendable (Peripheral) async -> Void
    ) async -> Peripheral {
        let peripheral = Peripheral(
            session: session, mtu: await session.client.mtu, epoch: epoch, cache: cache,
            securityContext: securityContext, localAddress: localAddress)
        if let manager = session.link.securityManager {
            // A peripheral's Security Request (§3.6.7): encrypt with the bond, or pair.
            let warning = securityContext.warning
            let peer = session.peer
            Task {
                for await requirements in manager.securityRequests {
                    let level: SecurityLevel = requirements.contains(.mitm) ? .authenticated : .encrypted
                    do {
                        try await peripheral.ensureSecurity(level)
                    } catch {
                        warning("warning: \(peer) asked for security (Security Request): \(error)")
                    }
                }
            }
        }
        let link = session.link
        let connection = session.connection
        if let events = link.linkEvents {
            let broadcast = peripheral.linkBroadcast
            Task {
                for await event in events { broadcast.yield(event) }
                broadcast.finish()
            }
        } else {
            peripheral.linkBroadcast.finish()
        }
        Task {
            let status: HCIStatus?
            if let ended = link.ended {
                status = await ended()
            } else {
                _ = await connection.waitUntilClosed()
                status = nil
            }
            await peripheral.linkEnded(status)
            await ended(peripheral)
        }
        return peripheral
    }

    /// The connection's states, for one caller: the current state first, then each change;
    /// the stream finishes after `disconnected`.
    public nonisolated func states() -> AsyncStream<PeripheralState> {
        stateBroadcast.subscribe()
    }

    // MARK: - Discovery

    /// Every primary service with its includes, characteristics and descriptors (Vol 3, Part G,
    /// §4.4–§4.7). Discovered once per connection; across connections reused from the adapter's
    /// cache only when the peer's Database Hash (§7.3) is unchanged.
    public func services() async throws(BLEError) -> [RemoteService] {
        // The client keeps its database current through Service Changed (§7.1).
        if discovered != nil, let current = await client.database { return current.services }
        do throws(GATTError) {
            let hash = try await client.readDatabaseHash()
            // §2.5.2: a bonded server with Service Changed keeps its handles across connections
            // (it indicates a change when we reconnect).
            let bonded = securityContext.store.bond(local: localAddress.address, peer: bondPeer) != nil
            if let cached = cache.lookup(bondPeer, hash: hash, bonded: bonded) {
                try await client.adopt(cached, hash: hash)
                discovered = cached.services
                return cached.services
            }
            let database = try await client.discoverDatabase()
            // Kept current by Service Changed (§7.1), as a reused database is.
            try await client.adopt(database, hash: hash)
            cache.store(database, hash: hash, for: bondPeer)
            discovered = database.services
            return database.services
        } catch {
            throw BLEError.gatt(error, doing: "discovering the services of \(peer)")
        }
    }

    // MARK: - Reading and writing

    /// The whole value of the one characteristic with `uuid` (Vol 3, Part G, §4.8.1, §4.8.3).
    /// `raisingSecurity` false: a peer's Insufficient Authentication or Encryption is thrown as
    /// it came, never cured by encrypting or pairing (the gateway's commands).
    public func read(_ characteristic: BluetoothUUID, raisingSecurity: Bool = true) async throws(BLEError) -> [UInt8] {
        let located = try await locate(characteristic, doing: "reading \(characteristic)")
        return try await read(handle: located.valueHandle, raisingSecurity: raisingSecurity)
    }

    /// The whole value at `handle` (Read, then Read Blob while a response fills ATT_MTU − 1).
    public func read(handle: UInt16, raisingSecurity: Bool = true) async throws(BLEError) -> [UInt8] {
        let client = client
        let once = { () async throws(BLEError) -> [UInt8] in
            do throws(GATTError) {
                return try await client.read(handle: handle)
            } catch {
                throw BLEError.gatt(error, doing: "reading handle 0x\(hex4(handle))")
            }
        }
        guard raisingSecurity else { return try await once() }
        return try await withSecurityRetry(once)
    }

    /// Writes the one characteristic with `uuid` (Write Request, or Prepare/Execute Write beyond
    /// ATT_MTU − 3; without response: Write Command, which must fit ATT_MTU − 3).
    /// `raisingSecurity` false: as for ``read(_:raisingSecurity:)``.
    public func write(
        _ value: [UInt8], to characteristic: BluetoothUUID, withResponse: Bool = true, raisingSecurity: Bool = true
    ) async throws(BLEError) {
        let located = try await locate(characteristic, doing: "writing \(characteristic)")
        try await write(value, handle: located.valueHandle, withResponse: withResponse, raisingSecurity: raisingSecurity)
    }

    /// Writes the value at `handle`; see ``write(_:to:withResponse:raisingSecurity:)``.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.9.1, §4.9.3, §4.9.4
    public func write(_ value: [UInt8], handle: UInt16, withResponse: Bool = true, raisingSecurity: Bool = true) async throws(BLEError) {
        guard raisingSecurity else { return try await writeOnce(value, handle: handle, withResponse: withResponse) }
        try await withSecurityRetry { () async throws(BLEError) in
            try await writeOnce(value, handle: handle, withResponse: withResponse)
        }
    }

    private func writeOnce(_ value: [UInt8], handle: UInt16, withResponse: Bool) async throws(BLEError) {
        let what = "writing handle 0x\(hex4(handle))"
        if !withResponse, value.count > negotiatedMTU - 3 {
            throw BLEError(
                "\(what): \(value.count) octets do not fit one Write Command (ATT_MTU \(negotiatedMTU) − 3); "
                    + "write with response for a long write", kind: "usage", exitCode: .usage, handle: handle)
        }
        do throws(GATTError) {
            if !withResponse {
                try await client.writeWithoutResponse(handle: handle, value: value)
            } else if value.count > negotiatedMTU - 3 {
                _ = try await client.writeLong(handle: handle, value: value)
            } else {
                _ = try await client.write(handle: handle, value: value)
            }
        } catch {
            throw BLEError.gatt(error, doing: what)
        }
    }

    // MARK: - Subscribing

    /// Subscribes to the one characteristic with `uuid`: notifications when it has the Notify
    /// property, else indications; its Client Characteristic Configuration descriptor is
    /// written (Vol 3, Part G, §4.10, §4.11, §4.12.3). A characteristic that can do neither, or
    /// has no such descriptor, is refused here rather than failing later.
    public func subscribe(to characteristic: BluetoothUUID) async throws(BLEError) -> Subscription {
        let what = "subscribing to \(characteristic)"
        let located = try await locate(characteristic, doing: what)
        return try await withSecurityRetry { () async throws(BLEError) -> Subscription in
            try await subscribe(located, doing: what)
        }
    }

    /// Subscribes to a discovered characteristic (a device model's, which knows its service).
    func subscribe(_ characteristic: RemoteCharacteristic) async throws(BLEError) -> Subscription {
        let what = "subscribing to \(characteristic.uuid)"
        return try await withSecurityRetry { () async throws(BLEError) -> Subscription in
            try await subscribe(characteristic, doing: what)
        }
    }

    private func subscribe(_ characteristic: RemoteCharacteristic, doing what: String) async throws(BLEError) -> Subscription {
        let properties = characteristic.properties
        guard properties.contains(.notify) || properties.contains(.indicate) else {
            throw BLEError(
                "\(what): the characteristic at 0x\(hex4(characteristic.valueHandle)) has neither Notify nor Indicate "
                    + "(properties \(properties))", kind: "usage", exitCode: .usage, handle: characteristic.valueHandle)
        }
        let subscription: GATTSubscription
        do {
            subscription = try await client.subscribe(
                characteristic: characteristic, indications: !properties.contains(.notify))
        } catch GATTError.noAttribute(let handle) where handle == characteristic.valueHandle {
            throw BLEError(
                "\(what): the characteristic at 0x\(hex4(handle)) has no Client Characteristic Configuration "
                    + "descriptor, so it cannot be subscribed to", kind: "gatt", handle: handle)
        } catch {
            throw BLEError.gatt(error, doing: what)
        }
        let buffer = SubscriptionBuffer()
        let epoch = epoch
        let peer = peer
        let client = client
        let pump = Task {
            do throws(GATTError) {
                for try await notification in subscription {
                    let open = buffer.push(
                        CharacteristicNotification(
                            value: notification.value, isIndication: notification.isIndication,
                            time: ContinuousClock.now - epoch))
                    if !open {
                        // Overflowed (or cancelled): the CCCD goes off rather than values piling up.
                        try? await client.unsubscribe(subscription)
                        return
                    }
                }
                buffer.finish(BLEError("the subscription ended", kind: "cancelled"))
            } catch {
                buffer.finish(BLEError.gatt(error, doing: "the subscription to \(peer)"))
            }
        }
        return Subscription(buffer: buffer) {
            try? await client.unsubscribe(subscription)
            pump.cancel()
        }
    }

    // MARK: - The link

    /// Ends the connection (HCI Disconnect, Remote User Terminated Connection; on the kernel path
    /// the socket closes). Returns once the link is down; the state becomes
    /// `disconnected(.local)`.
    public func disconnect() async {
        if case .disconnected = stateBroadcast.current { return }
        localDisconnect = true
        await session.link.disconnect()
        await session.client.close()
        await session.connection.close()
        if case .disconnected = stateBroadcast.current { return }
        // The transport reports the end asynchronously; wait for it so the caller's next connect
        // does not race the old link, but at most `disconnectBound` (a controller that never
        // answers HCI Disconnect): then the link counts as ended here.
        let states = stateBroadcast.subscribe()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await state in states {
                    if case .disconnected = state { return }
                }
            }
            group.addTask { try? await Task.sleep(for: Self.disconnectBound) }
            await group.next()
            group.cancelAll()
        }
        if case .disconnected = stateBroadcast.current { return }
        await linkEnded(nil)
    }

    /// How long ``disconnect()`` waits for the transport to report the link's end.
    static let disconnectBound = Duration.seconds(5)

    /// The link ended with `status` (nil: the transport saw only the channel end).
    func linkEnded(_ status: HCIStatus?) async {
        let reason: DisconnectReason
        switch status {
        case _ where localDisconnect: reason = .local
        case .connectionTimeout?, .lmpResponseTimeout?: reason = .timeout
        case .connectionTerminatedByLocalHost?: reason = .local
        case let status?: reason = .remote(status)
        case nil: reason = .transportClosed
        }
        stateBroadcast.update(.disconnected(reason))
        // What the link delivered before it ended is still on its way up (the channel ends after
        // its buffered PDUs): the bearer closes by itself once it has read them. Closing it at
        // once would drop them; at most 2 s.
        let connection = session.connection
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await connection.waitUntilClosed() }
            group.addTask { try? await Task.sleep(for: .seconds(2)) }
            await group.next()
            group.cancelAll()
            await session.client.close()
            await connection.close()
        }
    }

    /// The one characteristic with `uuid`, from the discovered services or a targeted search.
    private func locate(_ uuid: BluetoothUUID, doing what: String) async throws(BLEError) -> RemoteCharacteristic {
        do {
            return try await client.locateCharacteristic(uuid: uuid)
        } catch {
            throw BLEError.gatt(error, doing: what)
        }
    }
}

/// Discovered databases by peer, reused only where Vol 3 Part G §2.5.2 allows it: under an
/// unchanged Database Hash, or for a bonded peer whose database has Service Changed; optionally
/// kept in a directory across runs (``Adapter/setServiceCache(directory:)``).
final class ServiceCache: Sendable {
    private struct Entry {
        var database: GATTDatabase
        var hash: [UInt8]?
    }
    private let state = Mutex<(entries: [PeerAddress: Entry], directory: GATTDatabaseCache?)>(([:], nil))

    func setDirectory(_ path: String?) {
        state.withLock { $0.directory = path.map { GATTDatabaseCache(directory: $0) } }
    }

    /// The database that may be reused for `peer` given the hash it has now (nil: none) and
    /// whether it is bonded.
    func lookup(_ peer: PeerAddress, hash: [UInt8]?, bonded: Bool) -> GATTDatabase? {
        state.withLock { state -> GATTDatabase? in
            var entry = state.entries[peer]
            if entry == nil {
                let identity = GATTPeerIdentity(address: peer.address, addressType: peer.type)
                if let stored = state.directory?.load(identity) {
                    entry = Entry(database: stored.database, hash: stored.databaseHash)
                    state.entries[peer] = entry
                }
            }
            guard let entry else { return nil }
            if let hash { return entry.hash == hash ? entry.database : nil }
            let hasServiceChanged = !entry.database.characteristics(uuid: GATTUUID.serviceChanged).isEmpty
            return bonded && hasServiceChanged ? entry.database : nil
        }
    }

    func store(_ database: GATTDatabase, hash: [UInt8]?, for peer: PeerAddress) {
        state.withLock { state in
            state.entries[peer] = Entry(database: database, hash: hash)
            let identity = GATTPeerIdentity(address: peer.address, addressType: peer.type)
            // A cache that cannot be written only costs a discovery next time.
            try? state.directory?.store(GATTCacheEntry(database: database, databaseHash: hash), for: identity)
        }
    }
}

/// `value` as four lower-case hex digits.
func hex4(_ value: UInt16) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - text.count)) + text
}
