import ATT
import Bluetooth
import HCI
import L2CAP
import Security
import Synchronization

/// The user-space LE host on one controller: the `HCIControllerDriver` and `UserSpaceL2CAP`
/// wired together, with scanning, connecting, disconnecting, connection parameter handling,
/// encryption and advertising.
///
/// The logic is ``LEHostCore``, a value state machine; this actor runs it. `start(transport:)`
/// initialises the controller (Reset, version, features, supported commands, BD_ADDR, event
/// masks including LE Meta and the LE subevents below, buffer sizes), then routes the driver's
/// inbound packets here: each is handled in the driver's reader task, in arrival order — ACL
/// data to L2CAP, events to L2CAP and to the core — with no hop per packet. The core's commands
/// go to the driver in order, their outcomes come back to the core before the next packet from
/// the controller is handled; one task carries L2CAP's outputs to the controller. Malformed
/// packets from the controller are logged and counted (`statistics`), never fatal.
///
/// Every wait is bounded: commands by the driver's command timeout, a connect by its timeout
/// (then LE Create Connection Cancel and a bounded wait for the cancelled completion),
/// disconnects and parameter updates by `Configuration`; one timer is armed for the core's
/// next deadline. One LE Create Connection is pending at a time per controller (later connects
/// queue behind it); any number of connections may be up. Call `close()` when done: it closes
/// the transport and ends the host.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §4.1 (buffers), §7.8.12–§7.8.13, §7.8.18, §7.8.31–§7.8.32
public actor LEHost {
    public struct Configuration: Sendable {
        /// Which LE scanning and initiating commands the host uses.
        public enum CommandSet: Hashable, Sendable {
            /// Extended (LE Set Extended Scan *, LE Extended Create Connection) when the controller
            /// has the LE Extended Advertising feature and claims those commands, else legacy.
            case automatic
            case legacy
            case extended
        }

        public var commandTimeout: Duration = .seconds(2)
        public var commandSet: CommandSet = .automatic
        /// Default connect timeout.
        public var connectTimeout: Duration = .seconds(10)
        /// Bound on the wait for the cancelled LE (Enhanced) Connection Complete after LE Create
        /// Connection Cancel.
        public var cancelTimeout: Duration = .seconds(2)
        /// Bound on the wait for Disconnection Complete.
        public var disconnectTimeout: Duration = .seconds(5)
        /// Bound on the wait, before HCI_Disconnect, for the controller to complete the link's
        /// ACL data (what was sent last — an SMP key distribution, a Write Command — reaches
        /// the peer rather than being dropped with the link's queue).
        public var disconnectFlushTimeout: Duration = .seconds(1)
        /// How long LE Enable Encryption may wait for Encryption Change (or Key Refresh).
        public var encryptionTimeout: Duration = .seconds(10)
        /// Bound on the wait for LE Connection Update Complete.
        public var updateTimeout: Duration = .seconds(10)
        /// What a peer may ask for when it requests new connection parameters (through L2CAP or
        /// the link layer) while we are Central.
        public var parameterRequests = ConnectionParameterRequestPolicy.acceptValid
        /// Connection parameters of LE Create Connection: 30–50 ms, latency 0, 4 s timeout.
        public var connectionParameters = LEConnectionParameters(
            connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400)
        /// With several links, the default connection interval is at least this much per link
        /// (``ConnectionParameterPolicy/scaled(_:links:perLink:)``): 32 links, 80 ms. Nil: the
        /// default parameters whatever the number of links. Parameters given to a connect are
        /// used as given.
        public var intervalPerLink: Duration? = .microseconds(2500)
        /// Initiator scan interval and window (0.625 ms units).
        public var initiatorScanInterval: UInt16 = 0x0060
        public var initiatorScanWindow: UInt16 = 0x0030
        /// Outgoing PDUs per connection, received SDUs per channel (`UserSpaceL2CAP`).
        public var maximumQueuedFrames = 64
        public var maximumBufferedSDUs = 1024

        public init() {}
    }

    /// Counts of what went wrong without failing anything.
    public struct Statistics: Hashable, Sendable {
        /// ACL data packets from the controller that did not parse.
        public var malformedACLPackets = 0
        /// Events from the controller that did not parse.
        public var malformedEvents = 0
        /// Connection complete events that matched no pending connect (the link is dropped).
        public var unexpectedConnections = 0
        /// Commands the pumps could not issue (L2CAP outputs, parameter request replies).
        public var failedCommands = 0
        /// Scan events dropped because the consumer was too slow.
        public var droppedScanEvents = 0
        /// Times scanning was paused for a connection attempt the controller refused while
        /// scanning (Command Disallowed), and resumed after it.
        public var scanPauses = 0
        /// Data Buffer Overflow events: the controller dropped data (a flow control fault).
        public var dataBufferOverflows = 0
        /// Hardware Error events.
        public var hardwareErrors = 0
        /// Peer connection parameter requests accepted and refused.
        public var acceptedParameterRequests = 0
        public var refusedParameterRequests = 0

        public init() {}
    }

    /// The LE subevents the host enables: those of `ControllerInitialization.leHostLEEventMask`
    /// plus LE Enhanced Connection Complete [v2] (bit 40), sent instead of [v1] when enabled.
    public static let leEventMask = HCIEventMask(
        rawValue: ControllerInitialization.leHostLEEventMask.rawValue | 1 << 40)

    public nonisolated let driver: HCIControllerDriver
    public nonisolated let l2cap: UserSpaceL2CAP
    /// What initialisation learned.
    public nonisolated let info: ControllerInfo
    public nonisolated let configuration: Configuration
    /// Whether scanning and initiating use the extended commands.
    public nonisolated let usesExtendedCommands: Bool
    /// Whether advertising uses the extended commands (LE Set Extended Advertising *): when the
    /// host chose the extended command set (a controller refuses legacy advertising commands
    /// once extended ones were used) and the controller claims them.
    public nonisolated let usesExtendedAdvertising: Bool

    let logger: Logger
    /// Times the host's waits (connection timeouts), and the controller driver's command timeout.
    let clock: any BluetoothClock

    /// The core and what the runner keeps beside it: the objects and continuations its actions name.
    struct Shared {
        var core: LEHostCore
        var connections: [UInt16: LEConnection] = [:]
        var waiters: [LEHostCore.RequestID: CheckedContinuation<LEHostCore.Result, Never>] = [:]
        var scans: [LEHostCore.RequestID: AsyncThrowingStream<ScanEvent, Error>.Continuation] = [:]
        var advertising: (id: LEHostCore.RequestID, continuation: AsyncStream<LEConnection>.Continuation)?
        /// Answers LE Long Term Key Request where we are peripheral (``setLongTermKeyProvider(_:)``).
        var longTermKeyProvider: LongTermKeyProvider?
        var lastRequest: UInt64 = 0
        var timer: ScheduledTimer?
        var armedDeadline: Duration?

        mutating func nextRequest() -> LEHostCore.RequestID {
            lastRequest += 1
            return LEHostCore.RequestID(rawValue: lastRequest)
        }
    }

    let shared: Mutex<Shared>
    private var outputPump: Task<Void, Never>?

    private init(
        driver: HCIControllerDriver, l2cap: UserSpaceL2CAP, info: ControllerInfo, configuration: Configuration,
        clock: any BluetoothClock, logger: Logger
    ) {
        self.driver = driver
        self.clock = clock
        self.l2cap = l2cap
        self.info = info
        self.configuration = configuration
        self.logger = logger
        let commands = info.supportedCommands
        let extended: Bool
        switch configuration.commandSet {
        case .legacy: extended = false
        case .extended: extended = true
        case .automatic:
            extended =
                info.leFeatures?.contains(.leExtendedAdvertising) == true
                && commands?.supports(.leSetExtendedScanParameters) == true
                && commands?.supports(.leSetExtendedScanEnable) == true
                && commands?.supports(.leExtendedCreateConnectionV1) == true
        }
        usesExtendedCommands = extended
        usesExtendedAdvertising =
            extended && commands?.supports(.leSetExtendedAdvertisingParametersV1) == true
            && commands?.supports(.leSetExtendedAdvertisingData) == true
            && commands?.supports(.leSetExtendedScanResponseData) == true
            && commands?.supports(.leSetExtendedAdvertisingEnable) == true
        shared = Mutex(
            Shared(
                core: LEHostCore(
                    configuration: configuration, usesExtendedCommands: extended,
                    usesExtendedAdvertising: usesExtendedAdvertising)))
    }

    /// Opens the host on `transport`: initialises the controller and starts the host. On a
    /// failure the transport is closed. `clock` times every wait of the host and its driver.
    public static func start(
        transport: any HCITransport, configuration: Configuration = Configuration(),
        clock: any BluetoothClock = SystemClock(), logger: Logger = .disabled
    ) async throws(LEHostError) -> LEHost {
        let driver = HCIControllerDriver(
            transport: transport, commandTimeout: configuration.commandTimeout, clock: clock, logger: logger.child("hci"))
        let info: ControllerInfo
        let l2cap: UserSpaceL2CAP
        do {
            info = try await driver.initialize(ControllerInitialization(leEventMask: leEventMask))
            let buffers = try ACLBufferSize(
                packetLength: Int(info.aclBuffers.packetLength), packetCount: Int(info.aclBuffers.packetCount),
                isShared: info.aclBuffers.shared)
            l2cap = UserSpaceL2CAP(
                bufferSize: buffers, maximumQueuedFrames: configuration.maximumQueuedFrames,
                maximumBufferedSDUs: configuration.maximumBufferedSDUs,
                securityManager: SecurityManagerResponder(), parameterPolicy: configuration.parameterRequests,
                logger: logger.child("l2cap"))
        } catch let error as HCIError {
            await driver.close(reason: "initialisation failed: \(error)")
            throw .hci(error)
        } catch let error as L2CAPError {
            await driver.close(reason: "initialisation failed: \(error)")
            throw .l2cap(error)
        } catch {
            await driver.close(reason: "initialisation failed: \(error)")
            throw .closed("\(error)")
        }
        let host = LEHost(driver: driver, l2cap: l2cap, info: info, configuration: configuration, clock: clock, logger: logger)
        await host.run()
        logger.info(
            "LE host on \(info.address): \(host.usesExtendedCommands ? "extended" : "legacy") scanning and initiating")
        return host
    }

    /// What went wrong without failing anything so far.
    public nonisolated var statistics: Statistics { shared.withLock { $0.core.statistics } }

    /// The connections that are up.
    public var activeConnections: [LEConnection] {
        shared.withLock { $0.connections.values.sorted { $0.handle < $1.handle } }
    }

    /// Whether the host is advertising (or accepting connections between advertising runs).
    public var isAdvertising: Bool { shared.withLock { $0.core.isAdvertising } }

    /// Closes the transport: pending operations fail, channels fail with
    /// `L2CAPError.transportClosed`, the scan stream finishes. Idempotent.
    public func close(reason: String = "closed by the host") async {
        await driver.close(reason: reason)
        step { core, _ in core.close(reason: reason) }
        outputPump?.cancel()
    }

    func checkOpen() throws(LEHostError) {
        if let reason = shared.withLock({ $0.core.closedReason }) { throw .closed(reason) }
    }

    // MARK: - Running the core

    private func run() {
        driver.route { [weak self] inbound in self?.inbound(inbound) }
        let l2cap = l2cap
        let driver = driver
        let logger = logger
        outputPump = Task { [weak self] in
            for await output in l2cap.outputs {
                switch output {
                case .acl(let packet):
                    do throws(HCIError) {
                        try await driver.sendACL(packet)
                    } catch {
                        if case .transportClosed = error {
                            // The host is closing: the link ends with the transport.
                            logger.debug("L2CAP's \(output) not sent: \(error)")
                            continue
                        }
                        logger.warning("could not perform L2CAP's \(output): \(error)")
                        self?.shared.withLock { $0.core.count(.failedCommand) }
                    }
                case .updateConnectionParameters(let handle, let request):
                    // L2CAP accepted the peer's request (we are central): apply it.
                    let parameters = LEConnectionParameters(
                        connectionIntervalMin: request.intervalMin, connectionIntervalMax: request.intervalMax,
                        maxLatency: request.peripheralLatency, supervisionTimeout: request.timeoutMultiplier)
                    self?.step { core, now in
                        core.control(LEConnectionUpdateCommand(connectionHandle: handle, connectionParameters: parameters), now: now)
                    }
                case .disconnect(let handle, let reason):
                    self?.step { core, now in core.control(DisconnectCommand(connectionHandle: handle, reason: reason), now: now) }
                }
            }
        }
    }

    /// A packet from the controller (in the driver's reader task, in arrival order).
    private nonisolated func inbound(_ inbound: HCIControllerDriver.Inbound) {
        switch inbound {
        case .packet(let packet):
            switch packet.type {
            case .acl:
                var reader = ByteReader(packet.bytes)
                do {
                    l2cap.receive(try ACLDataPacket(parsing: &reader))
                } catch {
                    logger.warning("malformed ACL data packet \(Hex.encode(packet.bytes)): \(error)")
                    shared.withLock { $0.core.count(.malformedACLPacket) }
                }
            case .event:
                let event: HCIEvent
                do {
                    event = try HCIEvent(bytes: packet.bytes)
                } catch {
                    logger.warning("malformed HCI event \(Hex.encode(packet.bytes)): \(error)")
                    shared.withLock { $0.core.count(.malformedEvent) }
                    return
                }
                l2cap.receive(event)
                switch event {
                case .leMeta, .disconnectionComplete, .encryptionChange, .dataBufferOverflow, .hardwareError:
                    step { core, now in core.receive(event, now: now) }
                case .unknown(let code, _) where code == .encryptionKeyRefreshComplete:
                    step { core, now in core.receive(event, now: now) }
                default:
                    break
                }
            default:
                logger.debug("ignored \(packet.type) packet from the controller")
            }
        case .ended(let reason):
            l2cap.shutDown("the controller's inbound stream ended")
            step { core, _ in core.close(reason: reason) }
        }
    }

    /// Runs one input of the core under the lock, re-arms the timer, then performs the actions.
    nonisolated func step(_ input: (inout LEHostCore, Duration) -> [LEHostCore.Action]) {
        let now = clock.now
        let actions = shared.withLock { shared -> [LEHostCore.Action] in
            let actions = input(&shared.core, now)
            rearmTimer(&shared, now: now)
            return actions
        }
        perform(actions)
    }

    private nonisolated func rearmTimer(_ shared: inout Shared, now: Duration) {
        let deadline = shared.core.nextDeadline
        guard deadline != shared.armedDeadline else { return }
        shared.timer?.cancel()
        shared.armedDeadline = deadline
        guard let deadline else {
            shared.timer = nil
            return
        }
        shared.timer = clock.schedule(after: max(.zero, deadline - now)) { [weak self] in
            self?.timerFired(for: deadline)
        }
    }

    private nonisolated func timerFired(for deadline: Duration) {
        let current = shared.withLock { shared -> Bool in
            guard shared.armedDeadline == deadline else { return false }
            shared.armedDeadline = nil
            shared.timer = nil
            return true
        }
        if current { step { core, now in core.expire(now: now) } }
    }

    /// Performs the core's actions, in order, outside the lock (finishing a stream may call its
    /// termination handler, which feeds the core).
    private nonisolated func perform(_ actions: [LEHostCore.Action]) {
        for action in actions {
            switch action {
            case .command(let token, let packet):
                driver.submit(packet) { [weak self] outcome in
                    self?.step { core, now in core.commandFinished(token, outcome, now: now) }
                }
            case .complete(let id, let result):
                shared.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: result)
            case .openLink(let completion):
                openLink(completion)
            case .linkDown(let handle, let reason):
                shared.withLock { $0.connections.removeValue(forKey: handle) }?.ended(reason)
            case .parametersUpdated(let handle, let parameters):
                shared.withLock { $0.connections[handle] }?.updated(parameters)
            case .linkEvent(let handle, let event):
                shared.withLock { $0.connections[handle] }?.linkChanged(event)
            case .encryption(let handle, let outcome, let keySize):
                // Credit-based channels that need encryption (EATT) are accepted from now on.
                l2cap.setEncryptionKeySize(keySize, handle: handle)
                if let connection = shared.withLock({ $0.connections[handle] }) {
                    connection.setEncryptionKeySize(keySize)
                    connection.reportEncryption(outcome)
                }
            case .scanEvents(let id, let events):
                guard let continuation = shared.withLock({ $0.scans[id] }) else { continue }
                var dropped = 0
                for event in events {
                    if case .dropped = continuation.yield(event) { dropped += 1 }
                }
                if dropped > 0 { shared.withLock { $0.core.count(.droppedScanEvents(dropped)) } }
            case .scanEnded(let id, let error):
                let continuation = shared.withLock { $0.scans.removeValue(forKey: id) }
                if let error { continuation?.finish(throwing: error) } else { continuation?.finish() }
            case .accepted(let handle):
                let (connection, stream) = shared.withLock { ($0.connections[handle], $0.advertising?.continuation) }
                guard let connection, let stream, case .enqueued = stream.yield(connection) else {
                    step { core, now in core.acceptedConnectionDropped(handle, now: now) }
                    continue
                }
            case .advertisingEnded:
                shared.withLock { shared in
                    defer { shared.advertising = nil }
                    return shared.advertising?.continuation
                }?.finish()
            case .longTermKeyRequest(let handle, let rand, let ediv):
                let (connection, provider) = shared.withLock { ($0.connections[handle], $0.longTermKeyProvider) }
                guard let connection, let provider else {
                    step { core, now in core.longTermKeyReply(handle: handle, key: nil, now: now) }
                    continue
                }
                Task { [weak self] in
                    let key = await provider(connection, rand, ediv)
                    self?.step { core, now in core.longTermKeyReply(handle: handle, key: key, now: now) }
                }
            case .hostEnded(let reason):
                l2cap.shutDown(reason)
                let (connections, timer) = shared.withLock { shared in
                    defer {
                        shared.connections.removeAll()
                        shared.timer = nil
                        shared.armedDeadline = nil
                    }
                    return (Array(shared.connections.values), shared.timer)
                }
                timer?.cancel()
                for connection in connections { connection.hostEnded() }
            case .log(let level, let message):
                logger.log(level, message)
            }
        }
    }

    /// Opens a new link on L2CAP, here, before the next packet from the controller is handled,
    /// so no ACL data of the link is missed.
    private nonisolated func openLink(_ completion: LEConnectionCompletion) {
        do throws(L2CAPError) {
            let channel = try l2cap.connectionOpened(handle: completion.handle, role: completion.role)
            let connection = LEConnection(
                handle: completion.handle, peerAddress: completion.peerAddress,
                peerAddressType: completion.peerAddressType, role: completion.role,
                parameters: completion.parameters, channel: channel)
            shared.withLock { $0.connections[completion.handle] = connection }
            step { core, now in core.linkOpened(completion.handle, now: now) }
        } catch {
            logger.error("L2CAP refused connection 0x\(String(completion.handle, radix: 16)): \(error)")
            step { core, now in core.linkRefused(completion.handle, now: now) }
        }
    }

    /// Submits `request` and waits for its result; `cancellable`: the calling task's
    /// cancellation is passed to the core (a connect then sends LE Create Connection Cancel).
    func submit(_ request: LEHostCore.Request, cancellable: Bool = false) async -> LEHostCore.Result {
        let id = shared.withLock { $0.nextRequest() }
        let body = {
            await withCheckedContinuation { (continuation: CheckedContinuation<LEHostCore.Result, Never>) in
                self.shared.withLock { $0.waiters[id] = continuation }
                self.step { core, now in core.request(request, id, now: now) }
                // Cancelled before the request reached the core (its handler then found nothing).
                if cancellable, Task.isCancelled { self.step { core, now in core.cancel(id, now: now) } }
            }
        }
        guard cancellable else { return await body() }
        return await withTaskCancellationHandler {
            await body()
        } onCancel: {
            self.step { core, now in core.cancel(id, now: now) }
        }
    }

    /// The connection a connect result names.
    func connection(_ result: LEHostCore.Result) throws(LEHostError) -> LEConnection {
        switch result {
        case .connected(let handle):
            guard let connection = shared.withLock({ $0.connections[handle] }) else { throw .notConnected(handle: handle) }
            return connection
        case .failed(let error): throw error
        default: throw .closed("unexpected result \(result)")
        }
    }

    // MARK: - Connecting

    /// Connects to `address` as central: LE Extended Create Connection when the host uses the
    /// extended commands, else LE Create Connection; waits for the matching LE (Enhanced)
    /// Connection Complete; after `timeout` (or when the calling task is cancelled) sends LE
    /// Create Connection Cancel and waits, bounded, for the cancelled completion. Connects queue
    /// behind a pending one (one LE Create Connection per controller).
    /// - Returns: the connection, its ATT channel open on L2CAP.
    public func connect(
        to address: BluetoothAddress, type: AddressType, timeout: Duration? = nil,
        parameters: LEConnectionParameters? = nil
    ) async throws(LEHostError) -> LEConnection {
        try connection(
            await submit(
                .connect([.init(address: address, type: type)], timeout: timeout, parameters: parameters), cancellable: true))
    }

    /// Connects to `address` as public or random device, whichever the initiator finds first:
    /// one LE Create Connection through the Filter Accept List holding both (Vol 6, Part B,
    /// §4.3.5, initiator filter policy 0x01), which this call clears and fills. Timeout and
    /// cancellation as ``connect(to:type:timeout:parameters:)``.
    public func connect(
        toEitherType address: BluetoothAddress, timeout: Duration? = nil, parameters: LEConnectionParameters? = nil
    ) async throws(LEHostError) -> LEConnection {
        try connection(
            await submit(
                .connect(
                    [.init(address: address, type: .public), .init(address: address, type: .random)], timeout: timeout,
                    parameters: parameters),
                cancellable: true))
    }

    /// Disconnects (HCI_Disconnect) and waits, bounded, for Disconnection Complete.
    /// - Returns: the reason reported by Disconnection Complete.
    @discardableResult
    public func disconnect(
        _ connection: LEConnection, reason: HCIStatus = .remoteUserTerminatedConnection
    ) async throws(LEHostError) -> HCIStatus {
        if let reason = connection.disconnectionReason { return reason }
        await flush(connection)
        switch await submit(.disconnect(handle: connection.handle, reason: reason)) {
        case .disconnected(let reason): return reason
        case .failed(let error):
            // Down before the request reached the controller: its reason.
            if let reason = connection.disconnectionReason { return reason }
            throw error
        default: throw .closed("unexpected result")
        }
    }

    /// Waits, bounded by `configuration.disconnectFlushTimeout`, until the controller has
    /// completed every ACL packet of `connection`, queued or held (Number Of Completed Packets):
    /// the link's queue is dropped at Disconnection Complete, and a controller may drop what it
    /// holds.
    private func flush(_ connection: LEConnection) async {
        guard connection.isConnected else { return }
        await l2cap.waitUntilSent(handle: connection.handle, timeout: configuration.disconnectFlushTimeout, clock: clock)
    }

    /// Asks for new connection parameters (HCI_LE_Connection_Update) and waits, bounded, for
    /// LE Connection Update Complete.
    public func updateParameters(
        _ connection: LEConnection, _ parameters: LEConnectionParameters
    ) async throws(LEHostError) -> LEConnection.Parameters {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        switch await submit(.updateParameters(handle: connection.handle, parameters)) {
        case .updated(let parameters): return parameters
        case .failed(let error): throw error
        default: throw .closed("unexpected result")
        }
    }

    /// Encrypts `connection` as central (HCI_LE_Enable_Encryption, §7.8.24) with a Long Term
    /// Key (least significant octet first) and the EDIV and Rand that name it, and waits,
    /// bounded by `configuration.encryptionTimeout`, for Encryption Change or Encryption Key
    /// Refresh Complete.
    public func encrypt(
        _ connection: LEConnection, longTermKey: [UInt8], ediv: UInt16, rand: UInt64
    ) async throws(LEHostError) -> LEEncryptionOutcome {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        switch await submit(.encrypt(handle: connection.handle, longTermKey: longTermKey, ediv: ediv, rand: rand)) {
        case .encryption(let outcome): return outcome
        case .failed(let error): throw error
        default: throw .closed("unexpected result")
        }
    }

    /// Asks for PHYs (HCI_LE_Set_PHY; an empty mask: no preference that way) and waits, bounded
    /// by `configuration.updateTimeout`, for LE PHY Update Complete.
    /// - Returns: the PHYs in use afterwards (TX, RX).
    /// - Throws: `.hci` when the controller refuses (Unknown HCI Command, Unsupported Feature) or
    ///   never answers (`.commandTimeout`; the credit is given back and the link goes on),
    ///   `.timeout` when the update never completes.
    public func setPHY(
        _ connection: LEConnection, tx: LEPHYMask, rx: LEPHYMask, options: LECodedPHYOptions = .noPreference
    ) async throws(LEHostError) -> (tx: LEPHY, rx: LEPHY) {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        switch await submit(.setPHY(handle: connection.handle, tx: tx, rx: rx, options: options)) {
        case .phy(let tx, let rx): return (tx, rx)
        case .failed(let error): throw error
        default: throw .closed("unexpected result")
        }
    }

    /// As peripheral, asks the central for new connection parameters with the L2CAP Connection
    /// Parameter Update Request (what every central understands, unlike the link layer's
    /// procedure) and waits, bounded, for its answer: true when it accepted — the parameters it
    /// applies then arrive with LE Connection Update Complete, in `linkEvents` — false when it
    /// rejected the request or did not understand it.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.20, §4.21
    public func requestConnectionParameters(
        _ connection: LEConnection, _ parameters: LEConnectionParameters
    ) async throws(LEHostError) -> Bool {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        let request = ConnectionParameterUpdateRequest(
            intervalMin: parameters.connectionIntervalMin, intervalMax: parameters.connectionIntervalMax,
            peripheralLatency: parameters.maxLatency, timeoutMultiplier: parameters.supervisionTimeout)
        do {
            return try await l2cap.requestConnectionParameters(request, handle: connection.handle)
        } catch {
            throw .l2cap(error)
        }
    }

    /// The SPSM of Enhanced ATT bearers (Vol 3, Part G, §5.4; Assigned Numbers).
    public static let eattSPSM: UInt16 = 0x0027

    /// Opens up to `count` (1…5) Enhanced ATT bearers on the link — L2CAP enhanced credit-based
    /// channels on SPSM 0x0027, which the peer accepts only on an encrypted link — and waits,
    /// bounded, for its answer: the channels it opened (possibly fewer than asked).
    /// - Throws: `.l2cap(.refused(…))` with the peer's result when it opened none
    ///   (Insufficient Encryption, SPSM Not Supported…), `.l2cap(.timeout)`, `.notConnected`.
    public func openEnhancedATTBearers(_ connection: LEConnection, count: Int) async throws(LEHostError) -> [CreditBasedATTChannel] {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        // Collision mitigation (Vol 3, Part G, §5.4): the central may retry at once; the
        // peripheral waits at least 100 ms and at least 2 × (latency + 1) × the interval.
        let parameters = connection.parameters
        let interval = Duration.microseconds(Int64(parameters.interval) * 1250)
        let peripheralWait = max(.milliseconds(100), interval * (2 * (Int(parameters.peripheralLatency) + 1)))
        do {
            return try await l2cap.openCreditBasedChannels(
                handle: connection.handle, spsm: Self.eattSPSM, count: count,
                collisionRetryDelay: connection.role == .central ? .zero : peripheralWait)
        } catch {
            throw .l2cap(error)
        }
    }

    /// Accepts Enhanced ATT bearers peers open on encrypted links (our GATT server), from
    /// connections made after this call; they come on `l2cap.acceptedCreditBasedChannels`.
    /// `nil`: refuses them (SPSM Not Supported).
    public nonisolated func acceptEnhancedATTBearers(_ maximum: Int?) {
        l2cap.setCreditBasedServer(
            spsm: Self.eattSPSM, maximum.map { EnhancedCreditBasedChannels.Server(requiresEncryption: true, maximumChannels: $0) })
    }

    /// The PHYs in use (HCI_LE_Read_PHY).
    public func readPHY(_ connection: LEConnection) async throws(LEHostError) -> (tx: LEPHY, rx: LEPHY) {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        switch await submit(.readPHY(handle: connection.handle)) {
        case .phy(let tx, let rx): return (tx, rx)
        case .failed(let error): throw error
        default: throw .closed("unexpected result")
        }
    }

    /// Asks the link layer for a larger data length (HCI_LE_Set_Data_Length: 27…251 octets;
    /// `time` defaults to what `octets` needs on LE 1M). What the peer and the controller agree on
    /// comes later, when anything changed, as `.dataLengthChanged` in `linkEvents`.
    public func setDataLength(_ connection: LEConnection, octets: UInt16, time: UInt16? = nil) async throws(LEHostError) {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        let time = time ?? LEHostCore.dataLengthTime(forOctets: octets)
        switch await submit(.setDataLength(handle: connection.handle, octets: octets, time: time)) {
        case .done: return
        case .failed(let error): throw error
        default: throw .closed("unexpected result")
        }
    }

    /// The link's RSSI in dBm (HCI_Read_RSSI; 127 where the controller cannot tell).
    public func readRSSI(_ connection: LEConnection) async throws(LEHostError) -> Int8 {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        switch await submit(.readRSSI(handle: connection.handle)) {
        case .rssi(let rssi): return rssi
        case .failed(let error): throw error
        default: throw .closed("unexpected result")
        }
    }

    // MARK: - Scanning

    /// Scans until the returned stream terminates — the consuming task is cancelled, or the
    /// stream and its iterator are released (iterate it in place: `for try await e in
    /// host.scan()`; breaking out then ends it) — which disables scanning. Legacy or extended
    /// scanning per `options.procedure` and the host's command set; reports merged per device by
    /// a `ScanAggregator`. One scan at a time: a second one finishes with `.scanInProgress`.
    /// The stream fails with `LEHostError` when the controller refuses to scan or the host closes.
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.10, §7.8.11, §7.8.64, §7.8.65
    public nonisolated func scan(_ options: LEScanParameters = LEScanParameters()) -> AsyncThrowingStream<ScanEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: ScanEvent.self, throwing: Error.self, bufferingPolicy: .bufferingNewest(max(1, options.bufferLimit)))
        let id = shared.withLock { shared in
            let id = shared.nextRequest()
            shared.scans[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            self?.shared.withLock { _ = $0.scans.removeValue(forKey: id) }
            self?.step { core, now in core.stopScan(id, now: now) }
        }
        step { core, now in core.request(.scan(options), id, now: now) }
        return stream
    }

    // MARK: - Advertising

    /// Starts advertising as `parameters` say and returns the connections centrals make to us
    /// (role peripheral, their ATT channel open on L2CAP), in order. The controller stops
    /// advertising when a central connects; the host advertises again while fewer than
    /// `maximumConnections` accepted connections are up, and after every disconnect.
    ///
    /// The stream finishes on `stopAdvertising()` or when the host closes; ending its iteration
    /// stops advertising. Accepted connections stay up until the caller (or the peer) ends them.
    /// - Throws: `.invalidArgument` for bad parameters or when already advertising, `.hci` when
    ///   the controller refuses a command.
    public func advertise(_ parameters: LEAdvertisingParameters) async throws(LEHostError) -> AsyncStream<LEConnection> {
        try checkOpen()
        if let why = parameters.invalidity { throw .invalidArgument(why) }
        let (stream, continuation) = AsyncStream.makeStream(of: LEConnection.self, bufferingPolicy: .bufferingOldest(8))
        let id = shared.withLock { shared -> LEHostCore.RequestID? in
            guard shared.advertising == nil else { return nil }
            let id = shared.nextRequest()
            shared.advertising = (id, continuation)
            return id
        }
        guard let id else { throw .invalidArgument("already advertising") }
        continuation.onTermination = { [weak self] _ in
            self?.step { core, now in core.advertisingStreamEnded(id, now: now) }
        }
        let result = await withCheckedContinuation { (waiter: CheckedContinuation<LEHostCore.Result, Never>) in
            shared.withLock { $0.waiters[id] = waiter }
            step { core, now in core.request(.advertise(parameters), id, now: now) }
        }
        switch result {
        case .done: return stream
        case .failed(let error):
            shared.withLock { shared in
                if shared.advertising?.id == id { shared.advertising = nil }
            }
            continuation.finish()
            throw error
        default: throw .closed("unexpected result")
        }
    }

    /// Stops advertising (LE Set (Extended) Advertising Enable off) and finishes the stream of
    /// connections. Connections already accepted stay up.
    public func stopAdvertising() async throws(LEHostError) {
        guard shared.withLock({ $0.core.isAdvertising }) else { return }
        switch await submit(.stopAdvertising) {
        case .failed(let error): throw error
        default: return
        }
    }
}
