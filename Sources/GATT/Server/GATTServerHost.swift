import ATT
import Bluetooth

/// Runs a ``GATTServer`` over ATT connections — the one GATT server driver, used by
/// `gattclient peripheral`, the emulated devices and the tests: each attached ``ATTConnection``
/// gets the server as its request handler, and value updates go out as notifications and
/// indications.
///
/// Per connection there is one task that sends its indications in order (the bearer allows
/// one outstanding and this task awaits each confirmation) and one that notices the bearer
/// closing; never a task per PDU. Server events (writes, subscriptions) arrive on ``events``,
/// or, when an application is set (``setApplication(writeCheck:eventHandler:)``), go to its
/// handler before the request's response leaves.
public actor GATTServerHost {
    /// The application's veto on a write before it is stored (an application error such as
    /// TI's 0x80); synchronous and pure. nil lets the write through.
    public typealias WriteCheck = @Sendable (_ handle: UInt16, _ value: [UInt8]) -> ATTErrorCode?
    /// The application's reaction to a server event; awaited before the request's response is
    /// sent, so a write's effects (a sensor timer, an echo) are in place when the client sees it.
    public typealias EventHandler = @Sendable (GATTServer.Event) async -> Void
    /// Hears that a request or command of a client was refused for its link's security:
    /// Insufficient Authentication (0x05), Insufficient Encryption (0x0F) or Insufficient
    /// Encryption Key Size (0x0C).
    public typealias SecurityRefusalHandler = @Sendable (GATTServer.ClientID, ATTErrorCode) async -> Void
    /// Asked when a request is refused for its link's security: waits while a pairing that
    /// already encrypted the link is completing, and says whether it waited (the request is then
    /// answered again, at the level the pairing gave).
    public typealias SecuritySettling = @Sendable (GATTServer.ClientID) async -> Bool

    /// How ``push(_:handle:indication:to:)`` delivered a value.
    public enum PushOutcome: Hashable, Sendable {
        /// Sent (an indication: and confirmed).
        case sent
        /// Stored; the client is not connected.
        case notConnected
        /// Stored; the characteristic does not have the notify (indicate) property.
        case notPermitted
        /// Stored; the client's Client Characteristic Configuration does not enable it.
        case notEnabled(ClientCharacteristicConfiguration)
    }

    /// Indications waiting for the one outstanding per client; beyond, the oldest waiting one
    /// is dropped (and logged): a client that never confirms is closed by the 30 s timeout.
    public static let pendingIndicationLimit = 64

    private struct Link {
        let connection: ATTConnection
        let indications: AsyncStream<HandleValueIndication>.Continuation
    }

    private var server: GATTServer
    private var links: [GATTServer.ClientID: Link] = [:]
    /// Each client's Enhanced ATT bearers beside its unenhanced one.
    private var enhancedBearers: [GATTServer.ClientID: [ATTConnection]] = [:]
    private var writeCheck: WriteCheck?
    private var eventHandler: EventHandler?
    private var securityRefusalHandler: SecurityRefusalHandler?
    private var securitySettling: SecuritySettling?
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

    /// Sets the application behind the server: `writeCheck` vetoes writes (Write Request, Write
    /// Command, the first Prepare Write of a value) before they are stored; `eventHandler`
    /// takes the server events instead of ``events``, before each response leaves.
    public func setApplication(writeCheck: WriteCheck?, eventHandler: EventHandler?) {
        self.writeCheck = writeCheck
        self.eventHandler = eventHandler
    }

    /// Sets who hears of requests refused for the link's security (the peripheral's Security
    /// Manager sends a Security Request then, Vol 3 Part H §2.4.6). A Write Command refused
    /// that way counts too: it gets no Error Response, so the central would otherwise never
    /// know.
    public func setSecurityRefusalHandler(_ handler: SecurityRefusalHandler?) {
        securityRefusalHandler = handler
    }

    /// Sets who holds a request refused for security while a pairing on its link completes.
    public func setSecuritySettling(_ handler: SecuritySettling?) {
        securitySettling = handler
    }

    /// Replaces the server's configuration (its Rx MTU, queue limits) keeping the database;
    /// refused (false) while a client is attached.
    @discardableResult
    public func setConfiguration(_ configuration: GATTServer.Configuration) -> Bool {
        guard links.isEmpty else { return false }
        server = GATTServer(database: server.database, configuration: configuration)
        return true
    }

    /// `client`'s Client Characteristic Configuration of the value at `valueHandle`.
    public func clientConfiguration(
        ofValue valueHandle: UInt16, for client: GATTServer.ClientID
    ) -> ClientCharacteristicConfiguration {
        server.clientConfiguration(ofValue: valueHandle, for: client)
    }

    /// The ATT_MTU of `client`'s bearer; nil when it is not attached.
    public func mtu(of client: GATTServer.ClientID) async -> Int? {
        guard let link = links[client] else { return nil }
        return await link.connection.mtu
    }

    /// A snapshot of the server state (for inspection).
    public var state: GATTServer { server }

    /// Opens an ``ATTConnection`` over `channel` that serves this server from its first PDU
    /// (no request can arrive before the handler is in place), as a new client at `security`.
    /// The client is forgotten when the bearer closes. `registered` learns the client's
    /// identifier before the first PDU can be handled (an application's table of clients).
    public func serve(
        _ channel: any ATTChannel, configuration: ATTBearer.Configuration = ATTBearer.Configuration(),
        clock: any BluetoothClock = SystemClock(), security: SecurityLevel = .none,
        registered: ((GATTServer.ClientID) -> Void)? = nil
    ) -> (connection: ATTConnection, client: GATTServer.ClientID) {
        let id = server.connect(security: security)
        registered?(id)
        let connection = ATTConnection(
            channel: channel, configuration: configuration, clock: clock, logger: logger,
            serverHandler: { [weak self] pdu in await self?.handle(pdu, from: id) })
        register(connection, id)
        return (connection, id)
    }

    /// Serves an Enhanced ATT bearer (an L2CAP enhanced credit-based channel) of an existing
    /// `client`: its requests are answered from the same client state — its CCCDs, its security,
    /// its prepare queue — at the bearer's own ATT_MTU (`mtu`, the smaller of the two L2CAP MTUs;
    /// no exchange on it). Notifications and indications keep going on the unenhanced bearer.
    /// The bearer is forgotten when it closes.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §5.3
    @discardableResult
    public func serveEnhancedBearer(
        _ channel: any ATTChannel, of client: GATTServer.ClientID, mtu: Int, clock: any BluetoothClock = SystemClock()
    ) -> ATTConnection? {
        guard links[client] != nil else { return nil }
        let connection = ATTConnection(
            channel: channel, configuration: ATTBearer.Configuration(rxMTU: mtu, acceptsRequests: true, enhancedMTU: mtu),
            clock: clock, logger: logger,
            serverHandler: { [weak self] pdu in await self?.handle(pdu, from: client, on: mtu) })
        enhancedBearers[client, default: []].append(connection)
        Task { [weak self] in
            _ = await connection.waitUntilClosed()
            await self?.enhancedBearerClosed(connection, of: client)
        }
        return connection
    }

    /// The Enhanced ATT bearers `client` has open.
    public func enhancedBearerCount(of client: GATTServer.ClientID) -> Int { enhancedBearers[client]?.count ?? 0 }

    private func enhancedBearerClosed(_ connection: ATTConnection, of client: GATTServer.ClientID) {
        enhancedBearers[client]?.removeAll { $0 === connection }
        if enhancedBearers[client]?.isEmpty == true { enhancedBearers[client] = nil }
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
        for bearer in enhancedBearers.removeValue(forKey: client) ?? [] { await bearer.close() }
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

    /// Stores `value` at `handle` without telling anyone (application-internal state).
    public func setValue(_ value: [UInt8], handle: UInt16) throws(GATTError) {
        // The PDUs updateValue would send are dropped: nobody is told.
        _ = try server.updateValue(value, handle: handle)
    }

    /// Stores `value` at the characteristic value `handle` and sends it to `client` as an
    /// indication (awaiting the confirmation) or notification, when that client enabled that kind
    /// in its Client Characteristic Configuration; the value is cut to ATT_MTU − 3 octets.
    /// Throws `noAttribute`/`valueTooLong` as storing does, `.att` when sending fails.
    public func push(
        _ value: [UInt8], handle: UInt16, indication: Bool, to client: GATTServer.ClientID?
    ) async throws(GATTError) -> PushOutcome {
        _ = try server.updateValue(value, handle: handle)
        guard let client, let link = links[client] else { return .notConnected }
        let properties = server.database.properties(ofValue: handle) ?? []
        guard properties.contains(indication ? .indicate : .notify) else { return .notPermitted }
        let configuration = server.clientConfiguration(ofValue: handle, for: client)
        guard configuration.contains(indication ? .indications : .notifications) else {
            return .notEnabled(configuration)
        }
        let fitted = Array(value.prefix(await link.connection.mtu - 3))
        do throws(ATTError) {
            if indication {
                try await link.connection.indicate(HandleValueIndication(handle: handle, value: fitted))
            } else {
                try await link.connection.send(
                    .handleValueNotification(HandleValueNotification(handle: handle, value: fitted)))
            }
        } catch {
            throw .att(error)
        }
        return .sent
    }

    /// Swaps in `database` and indicates Service Changed to the clients that asked for it.
    public func replaceDatabase(_ database: AttributeDatabase, changed: ClosedRange<UInt16> = 0x0001...0xFFFF) async {
        let outbound = server.replaceDatabase(database, changed: changed)
        await send(outbound)
    }

    // MARK: Internals

    private func handle(_ pdu: ATTPDU, from client: GATTServer.ClientID, on enhancedMTU: Int? = nil) async -> ATTPDU? {
        guard let link = links[client] else { return nil }
        if let writeCheck {
            switch pdu {
            case .writeRequest(let request):
                if let error = writeCheck(request.handle, request.value) {
                    return .errorResponse(ErrorResponse(requestOpcode: pdu.opcode, handle: request.handle, errorCode: error))
                }
            case .writeCommand(let command):
                if writeCheck(command.handle, command.value) != nil { return nil }
            case .prepareWriteRequest(let request) where request.offset == 0:
                // A queued write whose first part the application refuses is refused at once.
                if let error = writeCheck(request.handle, request.value) {
                    return .errorResponse(ErrorResponse(requestOpcode: pdu.opcode, handle: request.handle, errorCode: error))
                }
            default:
                break
            }
        }
        // The bearer's ATT_MTU (an enhanced bearer has its own), set with no suspension before
        // the response is built.
        let mtu: Int
        if let enhancedMTU { mtu = enhancedMTU } else { mtu = await link.connection.mtu }
        server.setMTU(mtu, for: client)
        let commandRefusal = securityRefusalHandler == nil ? nil : commandSecurityRefusal(pdu, from: client)
        var response = server.respond(to: pdu, from: client)
        if let securitySettling, case .errorResponse(let error) = response, Self.securityCodes.contains(error.errorCode),
            await securitySettling(client)
        {
            // The wait suspended: the bearer's MTU is read again before the response is built.
            if enhancedMTU == nil { server.setMTU(await link.connection.mtu, for: client) } else { server.setMTU(mtu, for: client) }
            response = server.respond(to: pdu, from: client)
        }
        if let securityRefusalHandler {
            if case .errorResponse(let error) = response, Self.securityCodes.contains(error.errorCode) {
                await securityRefusalHandler(client, error.errorCode)
            } else if let commandRefusal {
                await securityRefusalHandler(client, commandRefusal)
            }
        }
        let events = server.takeEvents()
        if let eventHandler {
            for event in events { await eventHandler(event) }
        } else {
            for event in events { eventContinuation.yield(event) }
        }
        return response
    }

    /// The Error Responses that name the link's security.
    private static let securityCodes: Set<ATTErrorCode> = [
        .insufficientAuthentication, .insufficientEncryption, .encryptionKeySizeTooShort,
    ]

    /// The security refusal a Write Command meets (commands are dropped without an answer),
    /// nil for anything else.
    private func commandSecurityRefusal(_ pdu: ATTPDU, from client: GATTServer.ClientID) -> ATTErrorCode? {
        let handle: UInt16
        switch pdu {
        case .writeCommand(let command): handle = command.handle
        default: return nil
        }
        guard let level = server.security(of: client), let attribute = server.database.attribute(at: handle),
            let code = attribute.permissions.writeError(at: level), Self.securityCodes.contains(code)
        else { return nil }
        return code
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
