import ATT
import Bluetooth

/// Runs a ``GATTServer`` over ATT connections: each attached ``ATTConnection`` gets the
/// server as its request handler, and value updates go out as notifications and indications.
///
/// Per connection there is one task that sends its indications in order (the bearer allows
/// one outstanding and this task awaits each confirmation) and one that notices the bearer
/// closing; never a task per PDU. Server events (writes, subscriptions) arrive on ``events``.
public actor GATTServerHost {
    private struct Link {
        let connection: ATTConnection
        let indications: AsyncStream<HandleValueIndication>.Continuation
    }

    private var server: GATTServer
    private var links: [GATTServer.ClientID: Link] = [:]
    private let logger: Logger
    private let eventContinuation: AsyncStream<GATTServer.Event>.Continuation

    /// What clients did (writes, configuration changes, rejected signed writes), in order.
    /// One consumer; unbounded buffer.
    public nonisolated let events: AsyncStream<GATTServer.Event>

    public init(server: GATTServer, logger: Logger = .disabled) {
        self.server = server
        self.logger = logger
        (events, eventContinuation) = AsyncStream<GATTServer.Event>.makeStream(bufferingPolicy: .unbounded)
    }

    /// The current database.
    public var database: AttributeDatabase { server.database }

    /// A snapshot of the server state (for inspection).
    public var state: GATTServer { server }

    /// Serves `connection` as a new client at `security`; returns its identifier. The client
    /// is forgotten when the bearer closes.
    @discardableResult
    public func attach(_ connection: ATTConnection, security: SecurityLevel = .none) async -> GATTServer.ClientID {
        let id = server.connect(mtu: await connection.mtu, security: security)
        let (stream, continuation) = AsyncStream<HandleValueIndication>.makeStream(bufferingPolicy: .unbounded)
        links[id] = Link(connection: connection, indications: continuation)
        await connection.setServerHandler { [weak self] pdu in
            await self?.handle(pdu, from: id)
        }
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
        return id
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
                link.indications.yield(indication)
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
