import Bluetooth
import HCI
import L2CAP

/// LE Connection Complete and LE Enhanced Connection Complete [v1/v2], as one.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.1, §7.7.65.10
public struct LEConnectionCompletion: Hashable, Sendable {
    public var status: HCIStatus
    public var handle: UInt16
    public var role: LERole
    public var peerAddressType: LEAddressType
    public var peerAddress: BluetoothAddress
    public var parameters: LEConnection.Parameters

    public init(
        status: HCIStatus, handle: UInt16, role: LERole, peerAddressType: LEAddressType, peerAddress: BluetoothAddress,
        parameters: LEConnection.Parameters
    ) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.parameters = parameters
    }

    public init(_ event: LEConnectionCompleteEvent) {
        self.init(
            status: event.status, handle: event.connectionHandle, role: event.role, peerAddressType: event.peerAddressType,
            peerAddress: event.peerAddress,
            parameters: .init(
                interval: event.connectionInterval, peripheralLatency: event.peripheralLatency,
                supervisionTimeout: event.supervisionTimeout))
    }

    /// The enhanced event's local and peer resolvable private addresses are not kept.
    public init(_ event: LEEnhancedConnectionCompleteEvent) {
        self.init(
            status: event.status, handle: event.connectionHandle, role: event.role, peerAddressType: event.peerAddressType,
            peerAddress: event.peerAddress,
            parameters: .init(
                interval: event.connectionInterval, peripheralLatency: event.peripheralLatency,
                supervisionTimeout: event.supervisionTimeout))
    }
}

/// The user-space LE host's logic, sans-I/O: scanning, connecting (one LE Create Connection at
/// a time, the others queued), disconnecting, parameter updates, encryption, advertising and
/// the replies the host owes the controller. `LEHost` is the thin actor that runs it.
///
/// Inputs: requests from the API (``request(_:_:now:)``, ``cancel(_:now:)``,
/// ``stopScan(_:now:)``, …), HCI events (``receive(_:now:)``), the outcome of each command it
/// asked for (``commandFinished(_:_:now:)``), what became of the links it asked to open
/// (``linkOpened(_:now:)``, ``linkRefused(_:now:)``), time (``expire(now:)``) and the end of the
/// transport (``close(reason:)``). Outputs: ``Action``s, in the order they are to be performed.
///
/// Every wait is bounded by `LEHost.Configuration`: a connect by its timeout (then LE Create
/// Connection Cancel and the cancel timeout), disconnects, parameter updates and encryption by
/// theirs, counted from the command's Command Status. Times are `Duration`s since any origin.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.5–§7.8.13, §7.8.18, §7.8.24, §7.8.31–§7.8.32,
///   §7.8.53–§7.8.56, §7.8.64–§7.8.66
public struct LEHostCore: Sendable {
    /// One request of the API, to match its completion.
    public struct RequestID: Hashable, Sendable, Comparable, CustomStringConvertible {
        public let rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
        public var description: String { "request #\(rawValue)" }
    }

    /// One command the core asked for, to match its outcome.
    public struct CommandToken: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        public var description: String { "host command #\(rawValue)" }
    }

    /// A device a connect may complete with.
    public struct Candidate: Hashable, Sendable {
        public var address: BluetoothAddress
        public var type: AddressType
        public init(address: BluetoothAddress, type: AddressType) {
            self.address = address
            self.type = type
        }
    }

    /// What the API asks for.
    public enum Request: Hashable, Sendable {
        /// Connect as central to one candidate, or through the Filter Accept List to any of them.
        case connect([Candidate], timeout: Duration?, parameters: LEConnectionParameters?)
        case disconnect(handle: UInt16, reason: HCIStatus)
        case updateParameters(handle: UInt16, LEConnectionParameters)
        case encrypt(handle: UInt16, longTermKey: [UInt8], ediv: UInt16, rand: UInt64)
        /// Scan until ``LEHostCore/stopScan(_:now:)``: results come as `.scanEvents`, the end as `.scanEnded`.
        case scan(LEScanParameters)
        /// Advertise; accepted connections come as `.accepted`.
        case advertise(LEAdvertisingParameters)
        case stopAdvertising
        /// HCI_LE_Set_PHY: the PHYs preferred each way (empty: no preference that way), then LE
        /// PHY Update Complete; ends `.phy`.
        case setPHY(handle: UInt16, tx: LEPHYMask, rx: LEPHYMask, options: LECodedPHYOptions)
        /// HCI_LE_Read_PHY; ends `.phy`.
        case readPHY(handle: UInt16)
        /// HCI_LE_Set_Data_Length: the largest TX payload (octets) and time (µs) wanted; ends
        /// `.done` (LE Data Length Change follows when the link layer changed anything).
        case setDataLength(handle: UInt16, octets: UInt16, time: UInt16)
        /// HCI_Read_RSSI; ends `.rssi`.
        case readRSSI(handle: UInt16)
    }

    /// How a request ended.
    public enum Result: Hashable, Sendable {
        /// A connect: the link (already reported by `.openLink` and opened).
        case connected(handle: UInt16)
        /// A disconnect: the reason Disconnection Complete reported.
        case disconnected(HCIStatus)
        case updated(LEConnection.Parameters)
        case encryption(LEEncryptionOutcome)
        /// The PHYs in use each way (LE Read PHY, LE PHY Update Complete).
        case phy(tx: LEPHY, rx: LEPHY)
        /// The link's RSSI in dBm (HCI_Read_RSSI; 127: not available).
        case rssi(Int8)
        /// Advertising started or stopped, the data length asked for.
        case done
        case failed(LEHostError)
    }

    /// What the runner must do, in order.
    public enum Action: Hashable, Sendable {
        /// Send this command; report its outcome to ``LEHostCore/commandFinished(_:_:now:)``.
        case command(CommandToken, HCICommandPacket)
        /// The request is over.
        case complete(RequestID, Result)
        /// A link is up: open it on L2CAP, then report ``LEHostCore/linkOpened(_:now:)`` or
        /// ``LEHostCore/linkRefused(_:now:)`` before anything else of the controller is handled.
        case openLink(LEConnectionCompletion)
        /// The link is down (Disconnection Complete).
        case linkDown(handle: UInt16, reason: HCIStatus)
        case parametersUpdated(handle: UInt16, LEConnection.Parameters)
        case linkEvent(handle: UInt16, LEConnection.LinkEvent)
        /// Encryption changed or its key was refreshed; `keySize` is the link's key size now
        /// (nil: not encrypted).
        case encryption(handle: UInt16, LEEncryptionOutcome, keySize: Int?)
        /// Devices and reports of a running scan.
        case scanEvents(RequestID, [ScanEvent])
        /// The scan is over (nil: stopped as asked).
        case scanEnded(RequestID, LEHostError?)
        /// A central connected to our advertising; the link is open: hand it over (report
        /// ``LEHostCore/acceptedConnectionDropped(_:now:)`` when nobody takes it).
        case accepted(handle: UInt16)
        /// Advertising is over: no more connections will be accepted.
        case advertisingEnded
        /// LE Long Term Key Request on a link where we are peripheral: answer with
        /// ``LEHostCore/longTermKeyReply(handle:key:now:)``.
        case longTermKeyRequest(handle: UInt16, rand: UInt64, ediv: UInt16)
        /// The host is closed: every link and channel ends with it.
        case hostEnded(String)
        case log(Logger.Level, String)
    }

    /// Faults the runner sees and the core counts.
    public enum Fault: Hashable, Sendable {
        case malformedACLPacket
        case malformedEvent
        case droppedScanEvents(Int)
        case failedCommand
    }

    public let configuration: LEHost.Configuration
    public let usesExtendedCommands: Bool
    public let usesExtendedAdvertising: Bool
    public internal(set) var statistics = LEHost.Statistics()
    /// Why the host closed, nil while it is open.
    public internal(set) var closedReason: String?

    // Links.
    struct Link {
        var completion: LEConnectionCompletion
        var parameters: LEConnection.Parameters
        /// Opened on L2CAP (`linkOpened`); false while the runner opens it.
        var open = false
        var acceptedByAdvertising = false
        var encryptionKeySize: Int?
        /// The PHYs in use (TX, RX): LE 1M until LE PHY Update Complete says otherwise.
        var phy: (tx: LEPHY, rx: LEPHY) = (.le1M, .le1M)
    }
    var links: [UInt16: Link] = [:]

    // Connecting.
    enum Ending: Hashable, Sendable {
        case timedOut
        case cancelled
    }

    enum ConnectPhase: Hashable, Sendable {
        case queued
        case filtering(next: Int)
        case creating(retried: Bool)
        case pausingScan
        case waiting(deadline: Duration)
        case cancelling(Ending)
        case awaitingCancelled(deadline: Duration, Ending)
        case opening(handle: UInt16)
        case resumingScan(Result)
    }

    struct ConnectAttempt {
        let id: RequestID
        let candidates: [Candidate]
        let timeout: Duration
        let parameters: LEConnectionParameters
        var phase = ConnectPhase.queued
        var pausedScan = false
        var cancelRequested = false
        /// A completion that came before the Create Connection's Command Status was handled.
        var early: LEConnectionCompletion?
        var address: BluetoothAddress { candidates[0].address }
        var usesFilter: Bool { candidates.count > 1 }
    }
    var attempt: ConnectAttempt?
    var attemptQueue: [ConnectAttempt] = []

    // Procedures on one link.
    enum ProcedureKind: Hashable, Sendable {
        case disconnect
        case update
        case encrypt
        /// LE Set PHY, until LE PHY Update Complete.
        case phy
        /// LE Set Data Length, until LE Data Length Change or, when the link layer changed
        /// nothing (no event comes then), a short wait.
        case dataLength
    }

    struct Procedure {
        let kind: ProcedureKind
        let handle: UInt16
        /// For an update: what was asked (a completion with other parameters is another
        /// update's, such as the one answering a peripheral's request).
        var requested: LEConnectionParameters? = nil
        /// Set once the command is accepted (or refused as already under way, for a disconnect).
        var deadline: Duration?
    }
    var procedures: [RequestID: Procedure] = [:]

    // Scanning.
    enum ScanPhase: Hashable, Sendable {
        case starting(step: Int)
        case running
        case paused
        case resuming
    }

    struct Scan {
        let id: RequestID
        let options: LEScanParameters
        let extended: Bool
        var aggregator: ScanAggregator
        var phase = ScanPhase.starting(step: 0)
        /// Its stream ended while it was being started: disable once enabled.
        var stopRequested = false
    }
    var scan: Scan?
    /// Disables in flight: a new scan starts after them (else a late disable would stop it).
    var scanDisables = 0
    var scanWaiting: [(RequestID, LEScanParameters)] = []

    // Advertising.
    struct Advertising {
        let id: RequestID
        let parameters: LEAdvertisingParameters
        /// Configuration commands still to send, then the enable; empty once advertising.
        var setup: [HCICommandPacket]
        var started = false
        /// Connections accepted in this session that are still up.
        var accepted: Set<UInt16> = []
        var resuming = false
    }
    var advertising: Advertising?

    // Commands.
    enum Purpose: Hashable, Sendable {
        case connect(RequestID)
        case procedure(RequestID)
        case scanStart(RequestID)
        case scanDisable
        case scanResume(RequestID)
        case advertiseSetup(RequestID)
        case advertisingResume(RequestID)
        case advertisingStop(RequestID?)
        /// A command answered by Command Complete whose return parameters end the request.
        case query(RequestID)
        /// A reply or a clean-up: failures are logged and counted.
        case control(String)
    }
    var commands: [CommandToken: Purpose] = [:]
    var lastToken: UInt64 = 0

    /// The advertising set used with the extended commands.
    public static let advertisingSetHandle: UInt8 = 0

    public init(configuration: LEHost.Configuration, usesExtendedCommands: Bool, usesExtendedAdvertising: Bool) {
        self.configuration = configuration
        self.usesExtendedCommands = usesExtendedCommands
        self.usesExtendedAdvertising = usesExtendedAdvertising
    }

    /// The earliest time ``expire(now:)`` has something to do, or nil.
    public var nextDeadline: Duration? {
        var earliest: Duration?
        func consider(_ time: Duration?) {
            guard let time else { return }
            earliest = min(earliest ?? time, time)
        }
        switch attempt?.phase {
        case .waiting(let deadline)?, .awaitingCancelled(let deadline, _)?: consider(deadline)
        default: break
        }
        for procedure in procedures.values { consider(procedure.deadline) }
        return earliest
    }

    /// Links up (opened on L2CAP or being opened).
    public var linkCount: Int { links.count }
    /// Whether advertising is on (or connections are accepted between advertising runs).
    public var isAdvertising: Bool { advertising != nil }

    // MARK: - Inputs: the API

    /// Starts `request`; its end comes as `.complete(id, …)` (a scan's as `.scanEnded`).
    public mutating func request(_ request: Request, _ id: RequestID, now: Duration) -> [Action] {
        var actions: [Action] = []
        if let closedReason {
            if case .scan = request {
                actions.append(.scanEnded(id, .closed(closedReason)))
            } else {
                actions.append(.complete(id, .failed(.closed(closedReason))))
            }
            return actions
        }
        switch request {
        case .connect(let candidates, let timeout, let parameters):
            startConnect(id, candidates, timeout: timeout, parameters: parameters, now: now, into: &actions)
        case .disconnect(let handle, let reason):
            guard links[handle] != nil else {
                actions.append(.complete(id, .failed(.notConnected(handle: handle))))
                break
            }
            procedures[id] = Procedure(kind: .disconnect, handle: handle)
            send(DisconnectCommand(connectionHandle: handle, reason: reason), .procedure(id), now: now, into: &actions)
        case .updateParameters(let handle, let parameters):
            if let why = ConnectionParameterPolicy.invalidity(parameters) {
                actions.append(.complete(id, .failed(.invalidArgument("connection parameters: \(why)"))))
                break
            }
            guard links[handle]?.open == true else {
                actions.append(.complete(id, .failed(.notConnected(handle: handle))))
                break
            }
            procedures[id] = Procedure(kind: .update, handle: handle, requested: parameters)
            send(
                LEConnectionUpdateCommand(connectionHandle: handle, connectionParameters: parameters), .procedure(id),
                now: now, into: &actions)
        case .encrypt(let handle, let key, let ediv, let rand):
            guard let link = links[handle], link.open else {
                actions.append(.complete(id, .failed(.notConnected(handle: handle))))
                break
            }
            guard link.completion.role == .central else {
                actions.append(
                    .complete(
                        id,
                        .failed(.invalidArgument("only the central starts encryption (the peripheral answers the LTK request)"))))
                break
            }
            procedures[id] = Procedure(kind: .encrypt, handle: handle)
            send(
                LEEnableEncryptionCommand(connectionHandle: handle, randomNumber: rand, encryptedDiversifier: ediv, longTermKey: key),
                .procedure(id), now: now, into: &actions)
        case .scan(let options):
            startScan(id, options, now: now, into: &actions)
        case .advertise(let parameters):
            startAdvertising(id, parameters, now: now, into: &actions)
        case .stopAdvertising:
            stopAdvertising(id, now: now, into: &actions)
        case .setPHY, .readPHY, .setDataLength, .readRSSI:
            controlLink(request, id, now: now, into: &actions)
        }
        return actions
    }

    /// The caller of a connect gave up (its task was cancelled): a queued connect ends at once,
    /// an attempt under way is cancelled (LE Create Connection Cancel). Other requests run on.
    public mutating func cancel(_ id: RequestID, now: Duration) -> [Action] {
        var actions: [Action] = []
        if let index = attemptQueue.firstIndex(where: { $0.id == id }) {
            let queued = attemptQueue.remove(at: index)
            actions.append(.complete(id, .failed(.connectCancelled(address: queued.address))))
            return actions
        }
        guard var current = attempt, current.id == id else { return actions }
        switch current.phase {
        case .waiting:
            actions.append(.log(.info, "connecting to \(current.address): cancelled; cancelling"))
            current.phase = .cancelling(.cancelled)
            attempt = current
            send(LECreateConnectionCancelCommand(), .connect(id), now: now, into: &actions)
        case .queued, .filtering, .creating, .pausingScan:
            current.cancelRequested = true
            attempt = current
        case .cancelling, .awaitingCancelled, .opening, .resumingScan:
            break
        }
        return actions
    }

    /// The consumer of a scan stopped it (its stream ended).
    public mutating func stopScan(_ id: RequestID, now: Duration) -> [Action] {
        var actions: [Action] = []
        scanWaiting.removeAll { $0.0 == id }
        guard var current = scan, current.id == id else { return actions }
        if case .starting = current.phase {
            current.stopRequested = true
            scan = current
            return actions
        }
        scan = nil
        disableScanning(extended: current.extended, now: now, into: &actions)
        return actions
    }

    /// The stream of accepted connections ended: advertising stops.
    public mutating func advertisingStreamEnded(_ id: RequestID, now: Duration) -> [Action] {
        var actions: [Action] = []
        guard advertising?.id == id, closedReason == nil else { return actions }
        stopAdvertising(nil, now: now, into: &actions)
        return actions
    }

    /// Answers an LE Long Term Key Request: the key, or nil for a negative reply.
    public mutating func longTermKeyReply(handle: UInt16, key: [UInt8]?, now: Duration) -> [Action] {
        var actions: [Action] = []
        guard closedReason == nil else { return actions }
        if let key {
            send(
                LELongTermKeyRequestReplyCommand(connectionHandle: handle, longTermKey: key),
                .control("LE Long Term Key Request Reply"), now: now, into: &actions)
        } else {
            send(
                LELongTermKeyRequestNegativeReplyCommand(connectionHandle: handle),
                .control("LE Long Term Key Request Negative Reply"), now: now, into: &actions)
        }
        return actions
    }

    /// A command of a layer above (L2CAP's parameter update or disconnect): sent, failures counted.
    public mutating func control<C: HCICommand>(_ command: C, now: Duration) -> [Action] {
        var actions: [Action] = []
        guard closedReason == nil else { return actions }
        send(command, .control("\(C.opcode)"), now: now, into: &actions)
        return actions
    }

    /// Counts a fault the runner saw.
    public mutating func count(_ fault: Fault) {
        switch fault {
        case .malformedACLPacket: statistics.malformedACLPackets += 1
        case .malformedEvent: statistics.malformedEvents += 1
        case .droppedScanEvents(let count): statistics.droppedScanEvents += count
        case .failedCommand: statistics.failedCommands += 1
        }
    }

    // MARK: - Inputs: links opened by the runner

    /// The link of an `.openLink` is open on L2CAP.
    public mutating func linkOpened(_ handle: UInt16, now: Duration) -> [Action] {
        var actions: [Action] = []
        guard var link = links[handle], !link.open else { return actions }
        link.open = true
        links[handle] = link
        if link.acceptedByAdvertising {
            guard var session = advertising else {
                // Advertising stopped while the link was being opened: nobody takes it.
                return actions + acceptedConnectionDropped(handle, now: now)
            }
            actions.append(.log(.info, "\(Self.describe(link)) accepted: \(link.parameters)"))
            session.accepted.insert(handle)
            advertising = session
            actions.append(.accepted(handle: handle))
            if session.accepted.count < session.parameters.maximumConnections {
                resumeAdvertising(now: now, into: &actions)
            }
            return actions
        }
        actions.append(.log(.info, "\(Self.describe(link)) up: \(link.parameters)"))
        if var current = attempt, current.phase == .opening(handle: handle) {
            current.phase = .queued
            attempt = current
            finishConnect(.connected(handle: handle), now: now, into: &actions)
        }
        return actions
    }

    /// L2CAP could not open the link of an `.openLink`: it is disconnected.
    public mutating func linkRefused(_ handle: UInt16, now: Duration) -> [Action] {
        var actions: [Action] = []
        guard let link = links.removeValue(forKey: handle) else { return actions }
        actions.append(.log(.error, "L2CAP refused connection 0x\(String(handle, radix: 16))"))
        send(
            DisconnectCommand(connectionHandle: handle, reason: .remoteUserTerminatedConnection),
            .control("Disconnect of a refused link"), now: now, into: &actions)
        if link.acceptedByAdvertising {
            resumeAdvertising(now: now, into: &actions)
        } else if let current = attempt, current.phase == .opening(handle: handle) {
            finishConnect(.failed(.connectionFailed(address: current.address, status: .unspecifiedError)), now: now, into: &actions)
        }
        return actions
    }

    /// Nobody took an accepted connection: it is disconnected.
    public mutating func acceptedConnectionDropped(_ handle: UInt16, now: Duration) -> [Action] {
        var actions: [Action] = []
        actions.append(.log(.warning, "connection 0x\(String(handle, radix: 16)): nobody takes the connections; disconnecting"))
        advertising?.accepted.remove(handle)
        send(
            DisconnectCommand(connectionHandle: handle, reason: .remoteUserTerminatedConnection),
            .control("Disconnect of a connection nobody takes"), now: now, into: &actions)
        return actions
    }

    // MARK: - Inputs: the controller

    /// An HCI event for the host (LE Meta, Disconnection Complete, Encryption Change, Encryption
    /// Key Refresh Complete, Data Buffer Overflow, Hardware Error; others are ignored).
    public mutating func receive(_ event: HCIEvent, now: Duration) -> [Action] {
        var actions: [Action] = []
        guard closedReason == nil else { return actions }
        switch event {
        case .disconnectionComplete(let complete):
            disconnected(complete, now: now, into: &actions)
        case .encryptionChange(let change):
            encryptionChanged(change, into: &actions)
        case .dataBufferOverflow:
            statistics.dataBufferOverflows += 1
            actions.append(.log(.error, "controller: \(event)"))
        case .hardwareError:
            statistics.hardwareErrors += 1
            actions.append(.log(.error, "controller: \(event)"))
        case .unknown:
            if let refresh = EncryptionKeyRefreshCompleteEvent(event) { keyRefreshed(refresh, into: &actions) }
        case .leMeta(let meta):
            switch meta {
            case .advertisingReport, .extendedAdvertisingReport, .directedAdvertisingReport:
                scanReport(meta, into: &actions)
            case .connectionComplete(let complete):
                connectionCompleted(LEConnectionCompletion(complete), now: now, into: &actions)
            case .enhancedConnectionComplete(let complete):
                connectionCompleted(LEConnectionCompletion(complete), now: now, into: &actions)
            case .connectionUpdateComplete(let complete):
                connectionUpdated(complete, into: &actions)
            case .remoteConnectionParameterRequest(let request):
                remoteParameterRequest(request, now: now, into: &actions)
            case .dataLengthChange(let change):
                if links[change.connectionHandle]?.open == true {
                    actions.append(
                        .linkEvent(
                            handle: change.connectionHandle,
                            .dataLengthChanged(
                                maxTXOctets: change.maxTXOctets, maxTXTime: change.maxTXTime,
                                maxRXOctets: change.maxRXOctets, maxRXTime: change.maxRXTime)))
                }
                // After the link event: the caller finds the new data length in place.
                for (id, procedure) in procedures.sorted(by: { $0.key < $1.key })
                where procedure.handle == change.connectionHandle && procedure.kind == .dataLength && procedure.deadline != nil {
                    procedures[id] = nil
                    actions.append(.complete(id, .done))
                }
            case .phyUpdateComplete(let update):
                phyUpdated(update, into: &actions)
            case .unknown:
                if let request = LELongTermKeyRequestEvent(meta) { longTermKeyRequested(request, now: now, into: &actions) }
            default:
                actions.append(.log(.debug, "LE event: \(meta)"))
            }
        default:
            break
        }
        return actions
    }

    /// A command the core asked for is over.
    public mutating func commandFinished(
        _ token: CommandToken, _ outcome: HCICommandFlow.Outcome, now: Duration
    ) -> [Action] {
        var actions: [Action] = []
        guard let purpose = commands.removeValue(forKey: token) else { return actions }
        switch purpose {
        case .connect(let id):
            connectCommandFinished(id, outcome, now: now, into: &actions)
        case .procedure(let id):
            procedureCommandFinished(id, outcome, now: now, into: &actions)
        case .scanStart(let id):
            scanStartFinished(id, outcome, now: now, into: &actions)
        case .scanDisable:
            scanDisables -= 1
            if let error = Self.failure(outcome), closedReason == nil {
                controlFailed("disabling scanning", error, into: &actions)
            } else if closedReason == nil {
                actions.append(.log(.debug, "scanning stopped"))
            }
            if scanDisables == 0, !scanWaiting.isEmpty, closedReason == nil {
                let (id, options) = scanWaiting.removeFirst()
                startScan(id, options, now: now, into: &actions)
            }
        case .scanResume(let attemptID):
            scanResumed(outcome, into: &actions)
            if var current = attempt, current.id == attemptID, case .resumingScan(let result) = current.phase {
                current.pausedScan = false
                attempt = current
                finishConnect(result, now: now, into: &actions)
            }
        case .advertiseSetup(let id):
            advertiseSetupFinished(id, outcome, now: now, into: &actions)
        case .advertisingResume(let id):
            advertising?.resuming = false
            if let error = Self.failure(outcome) {
                // Already advertising (a second resume): Command Disallowed, harmless.
                if case .commandFailed(_, .commandDisallowed) = error {
                } else if case .transportClosed = error {
                } else {
                    controlFailed("advertising again", error, into: &actions)
                }
            } else if advertising?.id == id {
                // (Stopped while the enable was on its way: the stop's disable follows it, in order.)
                actions.append(.log(.debug, "advertising again"))
            }
        case .advertisingStop(let id):
            var error = Self.failure(outcome)
            // Disabling what the controller already stopped (a connection was made) is fine.
            if case .commandFailed(_, .commandDisallowed)? = error { error = nil }
            if let id { actions.append(.complete(id, error.map { .failed(.hci($0)) } ?? .done)) }
        case .query(let id):
            actions.append(.complete(id, Self.queryResult(outcome)))
        case .control(let what):
            if let error = Self.failure(outcome) { controlFailed(what, error, into: &actions) }
        }
        return actions
    }

    /// Time has passed: waits past their deadline end.
    public mutating func expire(now: Duration) -> [Action] {
        var actions: [Action] = []
        guard closedReason == nil else { return actions }
        if var current = attempt {
            switch current.phase {
            case .waiting(let deadline) where deadline <= now:
                actions.append(.log(.info, "connecting to \(current.address): timed out; cancelling"))
                current.phase = .cancelling(.timedOut)
                attempt = current
                send(LECreateConnectionCancelCommand(), .connect(current.id), now: now, into: &actions)
            case .awaitingCancelled(let deadline, _) where deadline <= now:
                finishConnect(
                    .failed(.timeout("the cancelled LE Connection Complete for \(current.address)")), now: now, into: &actions)
            default:
                break
            }
        }
        for (id, procedure) in procedures.sorted(by: { $0.key < $1.key }) {
            guard let deadline = procedure.deadline, deadline <= now else { continue }
            procedures[id] = nil
            let handle = "handle 0x\(String(procedure.handle, radix: 16))"
            let what: String
            switch procedure.kind {
            case .disconnect: what = "Disconnection Complete for \(handle)"
            case .update: what = "LE Connection Update Complete for \(handle)"
            case .encrypt: what = "Encryption Change for \(handle)"
            case .phy: what = "LE PHY Update Complete for \(handle)"
            case .dataLength:
                // No LE Data Length Change: the link layer kept the data length.
                actions.append(.complete(id, .done))
                continue
            }
            actions.append(.complete(id, .failed(.timeout(what))))
        }
        return actions
    }

    /// The transport closed or the host is closing: everything that waits fails, every link and
    /// stream ends. Idempotent.
    public mutating func close(reason: String) -> [Action] {
        var actions: [Action] = []
        guard closedReason == nil else { return actions }
        closedReason = reason
        var failed: [RequestID] = attempt.map { [$0.id] } ?? []
        failed += attemptQueue.map(\.id)
        failed += procedures.keys
        // A stop whose disable had not been answered.
        for purpose in commands.values { if case .advertisingStop(let id?) = purpose { failed.append(id) } }
        if let session = advertising, !session.started { failed.append(session.id) }
        for id in failed.sorted() { actions.append(.complete(id, .failed(.closed(reason)))) }
        attempt = nil
        attemptQueue.removeAll()
        procedures.removeAll()
        if let current = scan { actions.append(.scanEnded(current.id, .closed(reason))) }
        for (id, _) in scanWaiting { actions.append(.scanEnded(id, .closed(reason))) }
        scan = nil
        scanWaiting.removeAll()
        if advertising != nil { actions.append(.advertisingEnded) }
        advertising = nil
        links.removeAll()
        commands.removeAll()
        actions.append(.hostEnded(reason))
        actions.append(.log(.debug, "LE host ended: \(reason)"))
        return actions
    }

    // MARK: - Commands

    /// A failure of `outcome`: a refusal, a timeout, a closed transport, a failed Command Complete.
    static func failure(_ outcome: HCICommandFlow.Outcome) -> HCIError? {
        switch outcome {
        case .failed(let error): return error
        case .accepted: return nil
        case .complete(let event):
            if let status = event.status, status != .success { return .commandFailed(opcode: event.opcode, status: status) }
            return nil
        }
    }

    mutating func send<C: HCICommand>(_ command: C, _ purpose: Purpose, now: Duration, into actions: inout [Action]) {
        lastToken += 1
        let token = CommandToken(rawValue: lastToken)
        commands[token] = purpose
        do throws(HCIError) {
            actions.append(.command(token, try HCICommandPacket(command)))
        } catch {
            actions += commandFinished(token, .failed(error), now: now)
        }
    }

    mutating func send(_ packet: HCICommandPacket, _ purpose: Purpose, into actions: inout [Action]) {
        lastToken += 1
        let token = CommandToken(rawValue: lastToken)
        commands[token] = purpose
        actions.append(.command(token, packet))
    }

    mutating func controlFailed(_ what: String, _ error: HCIError, into actions: inout [Action]) {
        if case .transportClosed = error {
            // The host is closing: the link ends with the transport.
            actions.append(.log(.debug, "\(what) not sent: \(error)"))
            return
        }
        actions.append(.log(.warning, "could not perform \(what): \(error)"))
        statistics.failedCommands += 1
    }

    static func describe(_ link: Link) -> String {
        let completion = link.completion
        return
            "LE connection 0x\(String(completion.handle, radix: 16, uppercase: true)) to \(completion.peerAddress) (\(completion.peerAddressType)) as \(completion.role)"
    }

    // MARK: - Events of links

    private mutating func disconnected(_ complete: DisconnectionCompleteEvent, now: Duration, into actions: inout [Action]) {
        let handle = complete.connectionHandle
        if complete.status == .success, let link = links.removeValue(forKey: handle) {
            if link.open {
                actions.append(.linkDown(handle: handle, reason: complete.reason))
                actions.append(.log(.info, "\(Self.describe(link)) down: \(complete.reason)"))
            }
            if link.acceptedByAdvertising {
                // (Also one nobody took: it was dropped from `accepted` already.)
                advertising?.accepted.remove(handle)
                resumeAdvertising(now: now, into: &actions)
            }
        }
        for (id, procedure) in procedures.sorted(by: { $0.key < $1.key }) where procedure.handle == handle {
            switch procedure.kind {
            case .disconnect:
                procedures[id] = nil
                if complete.status == .success {
                    actions.append(.complete(id, .disconnected(complete.reason)))
                } else {
                    actions.append(
                        .complete(id, .failed(.hci(.commandFailed(opcode: DisconnectCommand.opcode, status: complete.status)))))
                }
            case .update, .encrypt, .phy, .dataLength:
                guard complete.status == .success else { continue }
                procedures[id] = nil
                actions.append(.complete(id, .failed(.l2cap(.disconnected(handle: handle, reason: complete.reason)))))
            }
        }
    }

    private mutating func connectionUpdated(_ complete: LEConnectionUpdateCompleteEvent, into actions: inout [Action]) {
        let handle = complete.connectionHandle
        var parameters: LEConnection.Parameters?
        if complete.status == .success, var link = links[handle] {
            let updated = LEConnection.Parameters(
                interval: complete.connectionInterval, peripheralLatency: complete.peripheralLatency,
                supervisionTimeout: complete.supervisionTimeout)
            link.parameters = updated
            links[handle] = link
            parameters = updated
            if link.open {
                actions.append(.parametersUpdated(handle: handle, updated))
                actions.append(.log(.debug, "\(Self.describe(link)): \(updated)"))
            }
        }
        for (id, procedure) in procedures.sorted(by: { $0.key < $1.key })
        where procedure.handle == handle && procedure.kind == .update {
            // Two updates can be under way on a link (ours and one answering the peer's request):
            // a successful completion is ours when it has what we asked for.
            if complete.status == .success, let asked = procedure.requested,
                !(asked.connectionIntervalMin...asked.connectionIntervalMax).contains(complete.connectionInterval)
                    || asked.maxLatency != complete.peripheralLatency || asked.supervisionTimeout != complete.supervisionTimeout
            {
                continue
            }
            procedures[id] = nil
            if complete.status == .success, let parameters {
                actions.append(.complete(id, .updated(parameters)))
            } else {
                actions.append(
                    .complete(
                        id, .failed(.hci(.commandFailed(opcode: LEConnectionUpdateCommand.opcode, status: complete.status)))))
            }
        }
    }

    private mutating func encryptionChanged(_ change: EncryptionChangeEvent, into actions: inout [Action]) {
        let handle = change.connectionHandle
        let outcome = LEEncryptionOutcome(
            status: change.status, enabled: change.status == .success && change.encryptionEnabled != 0,
            keySize: change.encryptionKeySize.map(Int.init))
        if var link = links[handle] {
            if change.status == .success {
                link.encryptionKeySize = outcome.enabled ? (outcome.keySize ?? link.encryptionKeySize ?? 16) : nil
                links[handle] = link
            }
            if link.open { actions.append(.encryption(handle: handle, outcome, keySize: link.encryptionKeySize)) }
        }
        encryptionEnded(handle, outcome, into: &actions)
    }

    private mutating func keyRefreshed(_ refresh: EncryptionKeyRefreshCompleteEvent, into actions: inout [Action]) {
        let handle = refresh.connectionHandle
        let link = links[handle]
        let outcome = LEEncryptionOutcome(status: refresh.status, enabled: link?.encryptionKeySize != nil, keySize: nil)
        if let link, link.open { actions.append(.encryption(handle: handle, outcome, keySize: link.encryptionKeySize)) }
        encryptionEnded(handle, outcome, into: &actions)
    }

    private mutating func encryptionEnded(_ handle: UInt16, _ outcome: LEEncryptionOutcome, into actions: inout [Action]) {
        for (id, procedure) in procedures.sorted(by: { $0.key < $1.key })
        where procedure.handle == handle && procedure.kind == .encrypt {
            procedures[id] = nil
            actions.append(.complete(id, .encryption(outcome)))
        }
    }

    private mutating func remoteParameterRequest(
        _ request: LERemoteConnectionParameterRequestEvent, now: Duration, into actions: inout [Action]
    ) {
        let handle = request.connectionHandle
        let asked = ConnectionParameterUpdateRequest(
            intervalMin: request.intervalMin, intervalMax: request.intervalMax, peripheralLatency: request.maxLatency,
            timeoutMultiplier: request.timeout)
        switch configuration.parameterRequests.decide(asked) {
        case .failure(let refusal):
            actions.append(.log(.info, "connection 0x\(String(handle, radix: 16)): refused the peer's parameters (\(refusal.reason))"))
            statistics.refusedParameterRequests += 1
            send(
                LERemoteConnectionParameterRequestNegativeReplyCommand(
                    connectionHandle: handle, reason: .unacceptableConnectionParameters),
                .control("LE Remote Connection Parameter Request Negative Reply"), now: now, into: &actions)
        case .success(let applied):
            actions.append(.log(.debug, "connection 0x\(String(handle, radix: 16)): accepted the peer's parameters"))
            statistics.acceptedParameterRequests += 1
            send(
                LERemoteConnectionParameterRequestReplyCommand(
                    connectionHandle: handle,
                    connectionParameters: LEConnectionParameters(
                        connectionIntervalMin: applied.intervalMin, connectionIntervalMax: applied.intervalMax,
                        maxLatency: applied.peripheralLatency, supervisionTimeout: applied.timeoutMultiplier)),
                .control("LE Remote Connection Parameter Request Reply"), now: now, into: &actions)
        }
    }

    private mutating func longTermKeyRequested(_ request: LELongTermKeyRequestEvent, now: Duration, into actions: inout [Action]) {
        let handle = request.connectionHandle
        if links[handle]?.open == true {
            actions.append(.longTermKeyRequest(handle: handle, rand: request.randomNumber, ediv: request.encryptedDiversifier))
        } else {
            send(
                LELongTermKeyRequestNegativeReplyCommand(connectionHandle: handle),
                .control("LE Long Term Key Request Negative Reply"), now: now, into: &actions)
        }
    }

    // MARK: - Procedures on a link

    private mutating func procedureCommandFinished(
        _ id: RequestID, _ outcome: HCICommandFlow.Outcome, now: Duration, into actions: inout [Action]
    ) {
        guard var procedure = procedures[id] else { return }  // already over (its event came first)
        if procedure.kind == .dataLength {
            // Answered by Command Complete; then LE Data Length Change, if anything changed.
            if case .failed(let error) = Self.queryResult(outcome) {
                procedures[id] = nil
                actions.append(.complete(id, .failed(error)))
            } else {
                procedure.deadline = now + Self.dataLengthChangeWait
                procedures[id] = procedure
            }
            return
        }
        let timeout: Duration
        switch procedure.kind {
        case .disconnect: timeout = configuration.disconnectTimeout
        case .update: timeout = configuration.updateTimeout
        case .encrypt: timeout = configuration.encryptionTimeout
        case .phy: timeout = configuration.updateTimeout
        case .dataLength: timeout = Self.dataLengthChangeWait
        }
        if let error = Self.acceptance(outcome) {
            // A disconnect already under way (the ATT channel's close asks for one too): the
            // controller refuses this one; its Disconnection Complete is still awaited.
            if procedure.kind == .disconnect, case .commandFailed(_, let status) = error,
                status == .commandDisallowed || status == .unknownConnectionIdentifier
            {
                if links[procedure.handle] == nil {
                    procedures[id] = nil
                    actions.append(.complete(id, .failed(.notConnected(handle: procedure.handle))))
                    return
                }
            } else {
                procedures[id] = nil
                actions.append(.complete(id, .failed(.hci(error))))
                return
            }
        }
        procedure.deadline = now + timeout
        procedures[id] = procedure
    }

    /// The failure of a command answered by Command Status: a refusal, or a Command Complete
    /// (some controllers refuse that way; a successful one is a malformed answer).
    static func acceptance(_ outcome: HCICommandFlow.Outcome) -> HCIError? {
        switch outcome {
        case .accepted: return nil
        case .failed(let error): return error
        case .complete(let event):
            if let status = event.status, status != .success { return .commandFailed(opcode: event.opcode, status: status) }
            return .malformed(
                context: "HCI_Command_Complete for \(event.opcode)",
                reason: .invalidValue(field: "Command_Opcode", value: Int(event.opcode.rawValue)), offset: 1)
        }
    }
}
