import ATT
import Bluetooth

/// The GATT client of one ATT bearer (`ATTConnection`): async methods for every client
/// procedure of Core 5.4 Vol 3 Part G §4, subscriptions, Service Changed and the database
/// cache.
///
/// Procedures are the sans-I/O state machines of `Procedures/`; ``run(_:)`` sends each request a
/// procedure asks for and feeds each answer back until it ends. The bearer keeps one request
/// outstanding and applies the 30 s transaction timeout; an Error Response is handed to the
/// procedure as the PDU it was (Attribute Not Found ends a discovery) and a refusal surfaces as
/// `GATTError.peerError` naming the request, the handle and the ATT error code; any other
/// bearer failure ends the procedure with `GATTError.att`.
///
/// - MTU: before its first procedure the client exchanges MTU once, offering
///   ``Configuration/exchangeMTU`` (517, the largest ATT_MTU, by default), so discovery runs at
///   the largest MTU both sides allow. A peer-initiated exchange is followed mid-procedure.
/// - Cancellation: cancelling the calling task stops the procedure after the outstanding
///   response (ATT cannot withdraw a request) and throws `GATTError.cancelled`.
/// - Notifications and indications: ``subscribe(characteristic:indications:bufferLimit:overflow:)``
///   (see `GATTClient+Subscriptions.swift`), routed by one task per client. From the first
///   subscription on, that task is the consumer of `ATTConnection.inbound` (it has one
///   consumer): read values through subscriptions, not from `inbound`. `ATTConnection`
///   confirms an indication when its consumer takes it; the router hands it to the
///   subscriber's stream in that same step, before it takes the next PDU.
/// - Database: ``loadDatabase(findIncludes:)`` (cache, Database Hash, Service Changed),
///   ``discoverDatabase(findIncludes:)``, ``databaseChanges``.
public actor GATTClient {
    /// How the client behaves on its bearer.
    public struct Configuration: Sendable {
        /// The Client Rx MTU offered in Exchange MTU before the first procedure; `nil` leaves
        /// ATT_MTU as it is (a bearer whose MTU was exchanged already, a recorded trace).
        public var exchangeMTU: Int?
        /// Subscribe to Service Changed (0x2A05) indications when a loaded database has it.
        public var watchesServiceChanged: Bool
        /// Where discovered databases are kept across connections; nil: no cache.
        public var cache: GATTDatabaseCache?
        /// The peer's identity, the cache key; nil: no cache.
        public var peer: GATTPeerIdentity?
        /// When a cached database may be reused.
        public var cachePolicy: GATTCachePolicy

        public init(
            exchangeMTU: Int? = 517, watchesServiceChanged: Bool = true, cache: GATTDatabaseCache? = nil,
            peer: GATTPeerIdentity? = nil, cachePolicy: GATTCachePolicy = .requireHash
        ) {
            self.exchangeMTU = exchangeMTU
            self.watchesServiceChanged = watchesServiceChanged
            self.cache = cache
            self.peer = peer
            self.cachePolicy = cachePolicy
        }

        /// No MTU exchange, no Service Changed subscription, no cache: the client sends only
        /// what its callers ask for.
        public static let manual = Configuration(exchangeMTU: nil, watchesServiceChanged: false)
    }

    public nonisolated let connection: ATTConnection
    public nonisolated let configuration: Configuration
    let logger: Logger
    nonisolated let router: SubscriptionRouter
    private var routerTask: Task<Void, Never>?
    private var mtuExchangeStarted = false
    /// Enhanced ATT bearers beside `connection` (EATT): each procedure runs on a free one.
    var enhancedBearers: [ATTConnection] = []
    /// Bearers running a procedure (while there are enhanced bearers).
    var busyBearers: Set<ObjectIdentifier> = []
    /// Procedures waiting for a free bearer.
    var bearerWaiters: [CheckedContinuation<Void, Never>] = []
    /// The tasks taking what the peer sends on the enhanced bearers (notifications, indications).
    var enhancedRouterTasks: [Task<Void, Never>] = []
    /// The requests the last ``discoverDatabase(findIncludes:)`` sent, and how many of them
    /// followed one another (its sequential round trips: all of them on one bearer; with
    /// Enhanced ATT bearers, the service discovery plus the longest part).
    public internal(set) var lastDiscovery: (requests: Int, roundTrips: Int)?

    /// The database the client knows (discovered, loaded from the cache, kept current by
    /// Service Changed); nil before ``loadDatabase()`` or ``discoverDatabase(findIncludes:)``.
    public internal(set) var database: GATTDatabase?
    /// The Database Hash read with the current database, when the server has one.
    public internal(set) var databaseHash: [UInt8]?
    /// The Service Changed subscription, while watched.
    var serviceChangedSubscription: GATTSubscription?
    var serviceChangedTask: Task<Void, Never>?
    let changes: AsyncStream<GATTDatabaseChange>
    let changesContinuation: AsyncStream<GATTDatabaseChange>.Continuation

    public init(connection: ATTConnection, configuration: Configuration = Configuration(), logger: Logger = .disabled) {
        self.connection = connection
        self.configuration = configuration
        self.logger = logger
        self.router = SubscriptionRouter(logger: logger)
        (changes, changesContinuation) = AsyncStream<GATTDatabaseChange>.makeStream(bufferingPolicy: .unbounded)
    }

    /// The security level of the link this bearer runs on (Core 5.4 Vol 3 Part C §10.2), as
    /// the host reports it through ``linkSecurityChanged(to:)``: `.none` until the link is
    /// encrypted. A refusal for Insufficient Encryption or Authentication is judged against it.
    public private(set) var securityLevel: SecurityLevel = .none

    /// The host tells the bearer that the link's encryption changed (Encryption Change, Key
    /// Refresh after pairing). The level only rises on a link: encryption cannot be turned off
    /// on an LE link without ending it (Vol 6 Part B §5.1.3), so a lower level is ignored.
    public func linkSecurityChanged(to level: SecurityLevel) {
        if level > securityLevel {
            logger.debug("link security: \(securityLevel) -> \(level)")
            securityLevel = level
        }
    }

    /// The current ATT_MTU.
    public var mtu: Int {
        get async { await connection.mtu }
    }

    /// Exchanges MTU now (once per bearer), offering `clientRxMTU`; returns ATT_MTU. A second
    /// call, or one after the automatic exchange, returns the current ATT_MTU.
    @discardableResult
    public func exchangeMTU(_ clientRxMTU: Int = 517) async throws(GATTError) -> Int {
        if !mtuExchangeStarted {
            mtuExchangeStarted = true
            do {
                _ = try await connection.exchangeMTU(clientRxMTU)
            } catch {
                switch error {
                case .unsupportedRequest(.exchangeMTURequest):
                    break  // exchanged already on this bearer
                case .peerError(_, _, let code) where code == .requestNotSupported:
                    logger.info("the server does not support Exchange MTU; ATT_MTU stays 23")
                default:
                    throw GATTError.att(error)
                }
            }
        }
        return await connection.mtu
    }

    /// ATT_MTU for a procedure about to start: exchanges MTU first when configured.
    func readyMTU() async throws(GATTError) -> Int {
        if let offer = configuration.exchangeMTU, !mtuExchangeStarted {
            return try await exchangeMTU(offer)
        }
        return await connection.mtu
    }

    /// Runs `procedure` to its end and returns its result. Checks cancellation before each
    /// request and after each response. With Enhanced ATT bearers (``addEnhancedBearers(_:)``)
    /// it runs on whichever bearer is free — one request outstanding per bearer — so procedures
    /// of concurrent callers proceed in parallel; without, on `connection`.
    public func run<P: GATTClientProcedure>(_ procedure: P) async throws(GATTError) -> P.Result {
        let mtu = try await readyMTU()
        guard !enhancedBearers.isEmpty else { return try await run(procedure, on: connection, mtu: mtu) }
        let bearer = await acquireBearer()
        let bearerMTU = bearer === connection ? mtu : await bearer.mtu
        do {
            let result = try await run(procedure, on: bearer, mtu: bearerMTU)
            releaseBearer(bearer)
            return result
        } catch {
            releaseBearer(bearer)
            throw error
        }
    }

    /// Runs `procedure` on `bearer`, starting at `mtu`.
    func run<P: GATTClientProcedure>(_ procedure: P, on bearer: ATTConnection, mtu: Int) async throws(GATTError) -> P.Result {
        var procedure = procedure
        procedure.updateMTU(mtu)
        var action = procedure.start()
        while true {
            switch action {
            case .done(let result):
                return result
            case .fail(let error):
                throw error
            case .send(let request):
                if Task.isCancelled { throw GATTError.cancelled }
                let answer: ATTPDU
                do {
                    answer = try await bearer.request(request)
                } catch {
                    guard case .peerError(let opcode, let handle, let code) = error else { throw GATTError.att(error) }
                    answer = .errorResponse(ErrorResponse(requestOpcode: opcode, handle: handle, errorCode: code))
                }
                // ATT cannot abort a request: the procedure stops once its answer is in.
                if Task.isCancelled { throw GATTError.cancelled }
                // A peer-initiated MTU exchange may have completed while the request was out.
                procedure.updateMTU(await bearer.mtu)
                action = procedure.receive(answer)
            }
        }
    }

    // MARK: Reads and writes

    /// The value at `handle`, whole: a Read Request (§4.8.1), and when its response fills
    /// ATT_MTU − 1 octets (the value may go on) Read Blob Requests until the end (§4.8.3).
    /// `complete: false` gives the one Read Response as it came (at most ATT_MTU − 1 octets).
    public func read(handle: UInt16, complete: Bool = true) async throws(GATTError) -> [UInt8] {
        let mtu = try await readyMTU()
        if complete { return try await run(ReadLongCharacteristicValues(handle: handle, mtu: mtu)) }
        return try await run(ReadCharacteristicValue(handle: handle, mtu: mtu))
    }

    /// The whole value at `handle` from `offset` (§4.8.3).
    public func readLong(handle: UInt16, offset: UInt16 = 0) async throws(GATTError) -> [UInt8] {
        try await run(ReadLongCharacteristicValues(handle: handle, offset: offset, mtu: try await readyMTU()))
    }

    /// Every value of characteristics with `uuid` in `range`, with Read Using Characteristic
    /// UUID (§4.8.2): no discovery needed.
    public func read(uuid: BluetoothUUID, in range: ClosedRange<UInt16> = 0x0001...0xFFFF) async throws(GATTError)
        -> [ReadByTypeResponse.AttributeData]
    {
        try await run(ReadUsingCharacteristicUUID(uuid: uuid, range: range, mtu: try await readyMTU()))
    }

    /// The values at `handles`, concatenated (§4.8.4).
    public func readMultiple(handles: [UInt16]) async throws(GATTError) -> [UInt8] {
        try await run(ReadMultipleCharacteristicValues(handles: handles, mtu: try await readyMTU()))
    }

    /// Every value at `handles`, whole, one per handle in the order asked (a handle named twice
    /// is read twice).
    ///
    /// Read Multiple Variable Length (§4.8.5) carries them in as few requests as ATT_MTU allows:
    /// a response cut at ATT_MTU leaves its last value partial, which is completed with Read
    /// Blob from where it stopped, and the handles whose tuples did not fit are asked for again.
    /// A server that rejects the request (Request Not Supported) or answers beyond ATT_MTU gets
    /// one complete read per remaining handle instead; the answer beyond ATT_MTU is reported to
    /// the connection's violation handler, since it is tolerated. Any other Error Response fails
    /// the whole read, naming the handle the server gave.
    public func readMultipleVariable(handles: [UInt16]) async throws(GATTError) -> [HandleValue] {
        guard !handles.isEmpty else { throw GATTError.invalidParameter("no handles to read") }
        var values: [HandleValue] = []
        values.reserveCapacity(handles.count)
        var multiple = true
        while values.count < handles.count {
            let next = values.count
            let remaining = handles.count - next
            let mtu = try await readyMTU()
            // A request names at most (ATT_MTU − 1) / 2 handles, and at least two.
            let batch = min(remaining, (mtu - 1) / 2)
            guard multiple, batch >= 2 else {
                values.append(HandleValue(handle: handles[next], value: try await read(handle: handles[next])))
                continue
            }
            let asked = Array(handles[next..<(next + batch)])
            let entries: [ReadMultipleVariableResponse.LengthValue]
            do {
                entries = try await run(ReadMultipleVariableLengthCharacteristicValues(handles: asked, mtu: mtu))
            } catch {
                switch error {
                case .peerError(_, _, .requestNotSupported):
                    multiple = false
                    continue
                case .att(.malformed(let opcode, _, _, .exceedsMTU(let length, let limit))),
                    .invalidResponse(let opcode, .exceedsMTU(let length, let limit)):
                    multiple = false
                    await connection.reportViolation(
                        .protocolError(
                            "\(opcode) of \(length) octets exceeds ATT_MTU \(limit) (Vol 3 Part F §3.4.4.12); "
                                + "reading the \(remaining) value\(remaining == 1 ? "" : "s") one by one instead"))
                    continue
                default:
                    throw error
                }
            }
            guard !entries.isEmpty else {
                // No tuple at all: nothing to build on; read the rest one by one.
                multiple = false
                continue
            }
            for (handle, entry) in zip(asked, entries) {
                var value = entry.value
                if entry.isTruncated {
                    // Cut at ATT_MTU: Read Blob from the first octet that did not arrive.
                    value += try await run(
                        ReadLongCharacteristicValues(
                            handle: handle, offset: UInt16(value.count), mtu: try await readyMTU()))
                }
                values.append(HandleValue(handle: handle, value: value))
            }
        }
        return values
    }

    /// Writes `value` with a Write Request (§4.9.3); returns the octets written.
    @discardableResult
    public func write(handle: UInt16, value: [UInt8]) async throws(GATTError) -> Int {
        try await run(WriteCharacteristicValue(handle: handle, value: value, mtu: try await readyMTU()))
    }

    /// Writes `value` with Prepare/Execute Write (§4.9.4); returns the octets written.
    @discardableResult
    public func writeLong(handle: UInt16, value: [UInt8], offset: UInt16 = 0) async throws(GATTError) -> Int {
        try await run(
            WriteLongCharacteristicValues(handle: handle, value: value, offset: offset, mtu: try await readyMTU()))
    }

    /// Writes several values atomically (§4.9.5); returns the octets written.
    @discardableResult
    public func reliableWrite(_ writes: [ReliableWrites.Write]) async throws(GATTError) -> Int {
        try await run(ReliableWrites(writes: writes, mtu: try await readyMTU()))
    }

    /// Writes the Client Characteristic Configuration descriptor of `characteristic` (§4.12.3):
    /// `.notifications`, `.indications`, or `[]` to stop. Throws `noAttribute` when its
    /// descriptors hold no CCCD (discover them first). Prefer
    /// ``subscribe(characteristic:indications:bufferLimit:overflow:)``, which also routes the values.
    public func configure(
        _ characteristic: Characteristic, _ configuration: ClientCharacteristicConfiguration
    ) async throws(GATTError) {
        guard let handle = characteristic.clientConfigurationHandle else {
            throw GATTError.noAttribute(handle: characteristic.valueHandle)
        }
        try await write(handle: handle, value: configuration.encoded)
    }

    /// Sends an ATT_WRITE_CMD (§4.9.1): no answer, no confirmation of delivery.
    public func writeWithoutResponse(handle: UInt16, value: [UInt8]) async throws(GATTError) {
        let command = try WriteWithoutResponse.command(handle: handle, value: value, mtu: try await readyMTU())
        do {
            try await connection.send(command)
        } catch {
            throw GATTError.att(error)
        }
    }

    // MARK: Router

    /// Starts the one router task of this client (on the first subscription).
    func startRouter() {
        guard routerTask == nil else { return }
        let router = self.router
        let connection = self.connection
        routerTask = Task.detached { await SubscriptionRouter.run(router, connection: connection) }
    }

    /// Closes the bearer (and the enhanced ones); every subscription ends with the reason, the
    /// change stream finishes.
    public func close() async {
        for bearer in enhancedBearers { await bearer.close() }
        for task in enhancedRouterTasks { await task.value }
        await connection.close()
        await routerTask?.value
        serviceChangedTask?.cancel()
        changesContinuation.finish()
    }
}
