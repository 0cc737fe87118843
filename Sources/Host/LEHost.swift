import ATT
import Bluetooth
import HCI
import L2CAP
import Security
import Synchronization

/// The user-space LE host on one controller: the `HCIControllerDriver` and `UserSpaceL2CAP`
/// wired together, with scanning, connecting, disconnecting and connection parameter handling.
///
/// `start(transport:)` initialises the controller (Reset, version, features, supported
/// commands, BD_ADDR, event masks including LE Meta and the LE subevents below, buffer sizes)
/// and starts three pumps, each one task for the host's lifetime (never one per packet):
/// controller → host (ACL to L2CAP, events to L2CAP and to this actor), L2CAP's outputs →
/// controller, and the host's own control commands (replies to the peer's parameter requests).
/// Malformed packets from the controller are logged and counted (`statistics`), never fatal.
///
/// Every wait is bounded: commands by the driver's command timeout, a connect by its timeout
/// (then LE Create Connection Cancel and a bounded wait for the cancelled completion),
/// disconnects and parameter updates by `Configuration`. One LE Create Connection is pending at
/// a time per controller (later connects queue behind it); any number of connections may be up.
/// Call `close()` when done: it closes the transport and ends the pumps.
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
        /// How long LE Enable Encryption may wait for Encryption Change (or Key Refresh).
        public var encryptionTimeout: Duration = .seconds(10)
        /// Bound on the wait for LE Connection Update Complete.
        public var updateTimeout: Duration = .seconds(10)
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

    let logger: Logger
    let counters = Mutex(Statistics())
    let scanIDs = Mutex<UInt64>(0)
    /// Scans whose stream ended and that are not yet stopped (or not yet started).
    let terminatedScans = Mutex<Set<UInt64>>([])

    enum ControlCommand: Sendable {
        case remoteParameterReply(handle: UInt16, LEConnectionParameters)
        case remoteParameterNegativeReply(handle: UInt16, HCIStatus)
        case disconnect(handle: UInt16, HCIStatus)
        /// LE Long Term Key Request Reply (`key`) or Negative Reply (nil).
        case longTermKeyReply(handle: UInt16, key: [UInt8]?)
    }

    let control: AsyncStream<ControlCommand>.Continuation
    private let controlCommands: AsyncStream<ControlCommand>
    private var pumps: [Task<Void, Never>] = []
    var closedReason: String?

    // Connections and waits (LEHost+Connect.swift).
    var connections: [UInt16: LEConnection] = [:]
    /// The devices the pending LE Create Connection may complete with (one, or the Filter
    /// Accept List's entries).
    var pendingConnect: [(address: BluetoothAddress, type: AddressType)]?
    var connectBusy = false
    var connectQueue: [CheckedContinuation<Void, Never>] = []
    var waiters: [UInt64: Waiter] = [:]
    var expectations: [Awaited: Signal?] = [:]
    /// Answers LE Long Term Key Request where we are peripheral (``setLongTermKeyProvider(_:)``).
    var longTermKeyProvider: LongTermKeyProvider?
    var nextWaiterID: UInt64 = 0

    // Scanning (LEHost+Scan.swift).
    var scan: ScanSession?
    var scanStop: Task<Void, Never>?
    /// The enabling commands of the scan being started: a stop waits for them (else it could
    /// disable before they enable, and the scan would stay on).
    var scanStarting: Task<HCIError?, Never>?

    // Advertising, the peripheral role (LEHost+Advertise.swift).
    var advertising: AdvertisingSession?

    /// Times the host's waits (connection timeouts), and the controller driver's command timeout.
    let clock: any BluetoothClock

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
        switch configuration.commandSet {
        case .legacy: usesExtendedCommands = false
        case .extended: usesExtendedCommands = true
        case .automatic:
            let commands = info.supportedCommands
            usesExtendedCommands =
                info.leFeatures?.contains(.leExtendedAdvertising) == true
                && commands?.supports(.leSetExtendedScanParameters) == true
                && commands?.supports(.leSetExtendedScanEnable) == true
                && commands?.supports(.leExtendedCreateConnectionV1) == true
        }
        (controlCommands, control) = AsyncStream.makeStream(of: ControlCommand.self)
    }

    /// Opens the host on `transport`: initialises the controller and starts the pumps. On a
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
                securityManager: SecurityManagerResponder(), logger: logger.child("l2cap"))
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
        await host.startPumps()
        logger.info(
            "LE host on \(info.address): \(host.usesExtendedCommands ? "extended" : "legacy") scanning and initiating")
        return host
    }

    /// What went wrong without failing anything so far.
    public nonisolated var statistics: Statistics { counters.withLock { $0 } }

    /// The connections that are up.
    public var activeConnections: [LEConnection] { connections.values.sorted { $0.handle < $1.handle } }

    /// Closes the transport: pending operations fail, channels fail with
    /// `L2CAPError.transportClosed`, the scan stream finishes, the pumps end. Idempotent.
    public func close(reason: String = "closed by the host") async {
        await driver.close(reason: reason)
        ended(reason)
    }

    // MARK: - Pumps

    private func startPumps() {
        let inbound = driver.inbound
        let l2cap = l2cap
        let driver = driver
        let logger = logger
        pumps.append(
            Task { [weak self] in
                for await packet in inbound {
                    switch packet.type {
                    case .acl:
                        var reader = ByteReader(packet.bytes)
                        do {
                            l2cap.receive(try ACLDataPacket(parsing: &reader))
                        } catch {
                            logger.warning("malformed ACL data packet \(Hex.encode(packet.bytes)): \(error)")
                            self?.counters.withLock { $0.malformedACLPackets += 1 }
                        }
                    case .event:
                        let event: HCIEvent
                        do {
                            event = try HCIEvent(bytes: packet.bytes)
                        } catch {
                            logger.warning("malformed HCI event \(Hex.encode(packet.bytes)): \(error)")
                            self?.counters.withLock { $0.malformedEvents += 1 }
                            continue
                        }
                        l2cap.receive(event)
                        switch event {
                        case .leMeta, .disconnectionComplete, .encryptionChange:
                            await self?.handle(event)
                        case .unknown(let code, _) where code == .encryptionKeyRefreshComplete:
                            await self?.handle(event)
                        case .dataBufferOverflow:
                            logger.error("controller: \(event)")
                            self?.counters.withLock { $0.dataBufferOverflows += 1 }
                        case .hardwareError:
                            logger.error("controller: \(event)")
                            self?.counters.withLock { $0.hardwareErrors += 1 }
                        default:
                            break
                        }
                    default:
                        logger.debug("ignored \(packet.type) packet from the controller")
                    }
                }
                l2cap.shutDown("the controller's inbound stream ended")
                await self?.ended("the transport closed")
            })
        pumps.append(
            Task { [weak self] in
                for await output in l2cap.outputs {
                    do throws(HCIError) {
                        switch output {
                        case .acl(let packet):
                            try await driver.sendACL(packet)
                        case .updateConnectionParameters(let handle, let request):
                            // L2CAP accepted the peer's request (we are central): apply it.
                            let parameters = LEConnectionParameters(
                                connectionIntervalMin: request.intervalMin, connectionIntervalMax: request.intervalMax,
                                maxLatency: request.peripheralLatency, supervisionTimeout: request.timeoutMultiplier)
                            _ = try await driver.sendAccepted(
                                LEConnectionUpdateCommand(connectionHandle: handle, connectionParameters: parameters))
                        case .disconnect(let handle, let reason):
                            _ = try await driver.sendAccepted(
                                DisconnectCommand(connectionHandle: handle, reason: reason))
                        }
                    } catch {
                        if case .transportClosed = error {
                            // The host is closing: the link ends with the transport.
                            logger.debug("L2CAP's \(output) not sent: \(error)")
                            continue
                        }
                        logger.warning("could not perform L2CAP's \(output): \(error)")
                        self?.counters.withLock { $0.failedCommands += 1 }
                    }
                }
            })
        let commands = controlCommands
        pumps.append(
            Task { [weak self] in
                for await command in commands {
                    do throws(HCIError) {
                        switch command {
                        case .remoteParameterReply(let handle, let parameters):
                            _ = try await driver.send(
                                LERemoteConnectionParameterRequestReplyCommand(
                                    connectionHandle: handle, connectionParameters: parameters))
                        case .remoteParameterNegativeReply(let handle, let reason):
                            _ = try await driver.send(
                                LERemoteConnectionParameterRequestNegativeReplyCommand(
                                    connectionHandle: handle, reason: reason))
                        case .disconnect(let handle, let reason):
                            _ = try await driver.sendAccepted(
                                DisconnectCommand(connectionHandle: handle, reason: reason))
                        case .longTermKeyReply(let handle, let key?):
                            _ = try await driver.send(LELongTermKeyRequestReplyCommand(connectionHandle: handle, longTermKey: key))
                        case .longTermKeyReply(let handle, nil):
                            _ = try await driver.send(LELongTermKeyRequestNegativeReplyCommand(connectionHandle: handle))
                        }
                    } catch {
                        if case .transportClosed = error {
                            logger.debug("\(command) not sent: \(error)")
                            continue
                        }
                        logger.warning("could not perform \(command): \(error)")
                        self?.counters.withLock { $0.failedCommands += 1 }
                    }
                }
            })
    }

    /// The transport is gone (or the host closed): fail everything that waits.
    func ended(_ reason: String) {
        guard closedReason == nil else { return }
        closedReason = reason
        l2cap.shutDown(reason)
        control.finish()
        for (id, waiter) in waiters {
            waiters[id] = nil
            waiter.timer.cancel()
            waiter.continuation.resume(returning: .closed(reason))
        }
        for waiting in connectQueue { waiting.resume() }
        connectQueue.removeAll()
        if let scan {
            scan.continuation.finish(throwing: LEHostError.closed(reason))
            self.scan = nil
        }
        advertisingEnded()
        for connection in connections.values { connection.hostEnded() }
        connections.removeAll()
        logger.debug("LE host ended: \(reason)")
    }

    func checkOpen() throws(LEHostError) {
        if let closedReason { throw .closed(closedReason) }
    }

    // MARK: - Events

    func handle(_ event: HCIEvent) {
        switch event {
        case .disconnectionComplete(let complete):
            disconnected(complete)
        case .encryptionChange(let change):
            encryptionChanged(change)
        case .unknown:
            if let refresh = EncryptionKeyRefreshCompleteEvent(event) { keyRefreshed(refresh) }
        case .leMeta(let meta):
            switch meta {
            case .advertisingReport, .extendedAdvertisingReport, .directedAdvertisingReport:
                scanReport(meta)
            case .connectionComplete(let complete):
                connectionCompleted(ConnectionCompletion(complete))
            case .enhancedConnectionComplete(let complete):
                connectionCompleted(ConnectionCompletion(complete))
            case .connectionUpdateComplete(let complete):
                connectionUpdated(complete)
            case .remoteConnectionParameterRequest(let request):
                remoteParameterRequest(request)
            case .dataLengthChange(let change):
                connections[change.connectionHandle]?.linkChanged(
                    .dataLengthChanged(
                        maxTXOctets: change.maxTXOctets, maxTXTime: change.maxTXTime, maxRXOctets: change.maxRXOctets,
                        maxRXTime: change.maxRXTime))
            case .phyUpdateComplete(let update):
                if update.status == .success {
                    connections[update.connectionHandle]?.linkChanged(.phyUpdated(tx: update.txPHY, rx: update.rxPHY))
                }
            case .unknown:
                if let request = LELongTermKeyRequestEvent(meta) { longTermKeyRequested(request) }
            default:
                logger.debug("LE event: \(meta)")
            }
        default:
            break
        }
    }

    private func remoteParameterRequest(_ request: LERemoteConnectionParameterRequestEvent) {
        let handle = request.connectionHandle
        if let why = ConnectionParameterPolicy.invalidity(request) {
            logger.info("connection 0x\(String(handle, radix: 16)): refused the peer's parameters (\(why))")
            counters.withLock { $0.refusedParameterRequests += 1 }
            control.yield(.remoteParameterNegativeReply(handle: handle, .unacceptableConnectionParameters))
        } else {
            logger.debug("connection 0x\(String(handle, radix: 16)): accepted the peer's parameters")
            counters.withLock { $0.acceptedParameterRequests += 1 }
            control.yield(
                .remoteParameterReply(
                    handle: handle,
                    LEConnectionParameters(
                        connectionIntervalMin: request.intervalMin, connectionIntervalMax: request.intervalMax,
                        maxLatency: request.maxLatency, supervisionTimeout: request.timeout)))
        }
    }
}
