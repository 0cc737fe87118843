import ATT
import Bluetooth

/// Runs a ``GATTServer`` over ATT connections: each attached ``ATTConnection`` gets the
/// server as its request handler, and value updates go out as notifications and indications.
///
/// Per connection there is one task that sends its indications in order (the bearer allows
/// one outstanding and this task awaits each confirmation) and one that notices the bearer
/// closing; never a task per PDU. Server events (writes, subscriptions) arrive on ``events``.
public actor GATTServerHost {
    /// Indications waiting for the one outstanding per client; beyond, the oldest waiting one
    /// is dropped (and logged): a client that never confirms is closed by the 30 s timeout.
    public static let pendingIndicationLimit = 64

    private struct Link {
        let connection: ATTConnection
        let indications: AsyncStream<HandleValueIndication>.Continuation
    }

    private var server: GATTServer
    private var links: [GATTServer.ClientID: Link] = [:]
    private let logger: Logger
    private let eventContinuation: AsyncStream<GATTServer.Event>.Continuation

    /// What clients did (writes, configuration changes, rejected signed writes), in order.
    /// One consumer. At most `eventBufferLimit` events wait for it; beyond, the oldest are
    /// dropped (a server nobody listens to must not grow without bound).
    public nonisolated let events: AsyncStream<GATTServer.Event>

    public init(server: GATTServer, eventBufferLimit: Int = 1024, logger: Logger = .disabled) {
        self.server = server
        self.logger = logger
        (events, eventContinuation) = AsyncStream<GATTServer.Event>.makeStream(
            bufferingPolicy: .bufferingNewest(max(1, eventBufferLimit)))
    }

    /// The current database.
    public var database: AttributeDatabase { server.database }

    /// A snapshot of the server state (for inspection).
    public var state: GATTServer { server }

    /// Opens an ``ATTConnection`` over `channel` that serves this server from its first PDU
    /// (no request can arrive before the handler is in place), as a new client at `security`.
    /// The client is forgotten when the bearer closes.
    public func serve(
        _ channel: any ATTChannel, configuration: ATTBearer.Configuration = ATTBearer.Configuration(),
        clock: any BluetoothClock = SystemClock(), security: SecurityLevel = .none
    ) -> (connection: ATTConnection, client: GATTServer.ClientID) {
        let id = server.connect(security: security)
        let connection = ATTConnection(
            channel: channel, configuration: configuration, clock: clock, logger: logger,
            serverHandler: { [weak self] pdu in await self?.handle(pdu, from: id) })
        register(connection, id)
        return (connection, id)
    }

    /// Serves an existing `connection` as a new client at `security`; returns its identifier.
    /// Requests that arrive before this call are answered by whatever handler the connection
    /// had. The client is forgotten when the bearer closes.
    @discardableResult
    public func attach(_ connection: ATTConnection, security: SecurityLevel = .none) async -> GATTServer.ClientID {
        let id = server.connect(mtu: await connection.mtu, security: security)
        register(connection, id)
        await connection.setServerHandler { [weak self] pdu in
            await self?.handle(pdu, from: id)
        }
        return id
    }

    /// Records the link and starts its indication sender and close watcher.
    private func register(_ connection: ATTConnection, _ id: GATTServer.ClientID) {
        let (stream, continuation) = AsyncStream<HandleValueIndication>.makeStream(
            bufferingPolicy: .bufferingNewest(Self.pendingIndicationLimit))
        links[id] = Link(connection: connection, indications: continuation)
        Task { [weak self] in
            for await indication in stream {
                do throws(ATTError) {
                    try await connection.indicate(indication)
                    await self?.indicationConfirmed(indication, by: id)
                } catch {
                    await self?.log("indication to \(id) failed: \(error)")
                }
            }
        }
        Task { [weak self] in
            _ = await connection.waitUntilClosed()
            await self?.detach(id)
        }
    }

    /// Stops serving `client` (its connection keeps running without a server role).
    public func detach(_ client: GATTServer.ClientID) async {
        guard let link = links.removeValue(forKey: client) else { return }
        link.indications.finish()
        server.disconnect(client)
        await link.connection.setServerHandler(nil)
    }

    /// Sets the security level of `client`'s link (after pairing or encryption).
    public func setSecurity(_ security: SecurityLevel, for client: GATTServer.ClientID) {
        server.setSecurity(security, for: client)
    }

    /// Sets `client`'s CSRK for Signed Write Commands.
    public func setSigningKey(
        _ key: ConnectionSignatureResolvingKey?, authenticated: Bool = false, lastSignCounter: UInt32? = nil,
        for client: GATTServer.ClientID
    ) {
        server.setSigningKey(key, authenticated: authenticated, lastSignCounter: lastSignCounter, for: client)
    }

    /// Stores `value` at the characteristic value `handle` and notifies or indicates it to
    /// the subscribed clients.
    public func updateValue(_ value: [UInt8], handle: UInt16) async throws(GATTError) {
        await refreshMTUs()
        let outbound = try server.updateValue(value, handle: handle)
        await send(outbound)
    }

    /// Swaps in `database` and indicates Service Changed to the clients that asked for it.
    public func replaceDatabase(_ database: AttributeDatabase, changed: ClosedRange<UInt16> = 0x0001...0xFFFF) async {
        let outbound = server.replaceDatabase(database, changed: changed)
        await send(outbound)
    }

    // MARK: Internals

    private func handle(_ pdu: ATTPDU, from client: GATTServer.ClientID) async -> ATTPDU? {
        guard let link = links[client] else { return nil }
        let mtu = await link.connection.mtu
        server.setMTU(mtu, for: client)
        let response = server.respond(to: pdu, from: client)
        for event in server.takeEvents() { eventContinuation.yield(event) }
        return response
    }

    private func refreshMTUs() async {
        for (client, link) in links {
            let mtu = await link.connection.mtu
            server.setMTU(mtu, for: client)
        }
    }

    private func send(_ outbound: [GATTServer.Outbound]) async {
        for item in outbound {
            guard let link = links[item.client] else { continue }
            switch item.pdu {
            case .handleValueIndication(let indication):
                if case .dropped(let old) = link.indications.yield(indication) {
                    logger.warning("\(item.client): indication queue full, dropped the one for 0x\(hex4(old.handle))")
                }
            default:
                do throws(ATTError) {
                    try await link.connection.send(item.pdu)
                } catch {
                    logger.warning("notification to \(item.client) failed: \(error)")
                }
            }
        }
    }

    private func indicationConfirmed(_ indication: HandleValueIndication, by client: GATTServer.ClientID) {
        if indication.handle == server.database.valueHandle(of: GATTUUID.serviceChanged) {
            server.serviceChangedConfirmed(by: client)
        }
    }

    private func log(_ message: String) {
        logger.warning(message)
    }
}
