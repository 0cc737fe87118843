import ATT
import Bluetooth
import HCI
import L2CAP

/// A virtual LE controller: speaks HCI with one host over an ``HCITransport`` (commands in;
/// events and ACL data out) and reaches the ``VirtualPeripheral``s of a ``VirtualLink``.
///
/// It implements what an LE host needs: Reset, the informational and buffer-size commands,
/// event masks (honoured: a masked event is never sent), random address, scanning (legacy and
/// extended; passive and active, with scan responses after ADV_IND and ADV_SCAN_IND;
/// duplicate filtering), LE (Extended) Create Connection and its cancel (pending until the
/// peer is seen advertising connectably), Disconnect, LE Connection Update, advertising by our
/// host (legacy, and one extended set with legacy PDUs; a central on another controller of the
/// same link connects to it), and ACL data with flow control (Number Of Completed Packets for
/// each host packet) and controller→host fragmentation to the LE buffer size (27 octets). Any
/// other command is answered with Command Complete, status Unknown HCI Command (0x01), never
/// silence.
///
/// Advertising events happen every `advertisingInterval` of the injected clock, so tests drive
/// time with ``ManualClock``. Start it with ``start()`` or use ``attach(to:clock:configuration:logger:)``;
/// it runs until its transport closes (``stop()`` closes it).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §4 (flow control), §5.4 (packets), §7 (commands)
public actor VirtualController {
    /// What the controller reports about itself.
    public struct Configuration: Sendable {
        public var address: BluetoothAddress
        /// LE ACL buffers: 27 octets × `aclBufferCount`.
        public var aclBufferLength: UInt16
        public var aclBufferCount: UInt8
        /// Time between two advertising events of every peripheral.
        public var advertisingInterval: Duration
        /// Whether the extended advertising, scanning and initiating commands (and the LE
        /// Extended Advertising feature bit) are offered.
        public var extendedAdvertising: Bool
        /// Commands this controller takes and never answers (neither Command Complete nor
        /// Command Status): a controller such as Bumble's, which leaves LE Set PHY unanswered.
        public var unansweredCommands: Set<HCIOpcode> = []
        public init(
            address: BluetoothAddress = BluetoothAddress("00:1B:DC:E0:5A:01")!,
            aclBufferLength: UInt16 = 27, aclBufferCount: UInt8 = 4,
            advertisingInterval: Duration = .milliseconds(100), extendedAdvertising: Bool = true
        ) {
            self.extendedAdvertising = extendedAdvertising
            self.address = address
            self.aclBufferLength = aclBufferLength
            self.aclBufferCount = aclBufferCount
            self.advertisingInterval = advertisingInterval
        }
    }

    /// The other end of a connection.
    enum Remote {
        /// We are central: the peripheral we connected to.
        case peripheral(any VirtualPeripheral)
        /// We are peripheral (our host advertised): the central's side of the link.
        case central(VirtualLinkConnection)
    }

    struct Connection {
        var remote: Remote
        var parameters: VirtualLinkConnection.Parameters
        /// Encrypted (LL encryption procedure done; payloads are not actually encrypted).
        var encrypted = false
        /// The PHYs in use (TX, RX).
        var txPHY = LEPHY.le1M
        var rxPHY = LEPHY.le1M
        /// The data length in force: our largest TX payload and time, and the peer's (what we receive).
        var maxTXOctets: UInt16 = 27
        var maxTXTime: UInt16 = 328
        var maxRXOctets: UInt16 = 27
        var maxRXTime: UInt16 = 328
        /// As central, until our host has heard LE Connection Complete: what the peripheral sent
        /// meanwhile (held so that no data reaches the host before the connection does), and a
        /// disconnect it asked for. `nil` once the host knows the connection.
        var pending: Pending?

        struct Pending {
            var frames: [(channelID: UInt16, payload: [UInt8])] = []
            var disconnect: HCIStatus?
        }

        var peripheral: (any VirtualPeripheral)? {
            if case .peripheral(let peripheral) = remote { return peripheral }
            return nil
        }

        var rssi: Int8 {
            if case .peripheral(let peripheral) = remote { return peripheral.rssi }
            return -55
        }

        /// Hands a frame from our host to the remote side.
        func deliver(_ frame: L2CAPBasicFrame) async {
            switch remote {
            case .peripheral(let peripheral): await peripheral.received(frame)
            case .central(let link): await link.send(channelID: frame.channelID, payload: Array(frame.payload))
            }
        }

        /// Tells the remote side the link is gone; `reason` as it sees it.
        func remoteDisconnected(_ reason: HCIStatus) async {
            switch remote {
            case .peripheral(let peripheral): await peripheral.disconnected(reason: reason)
            case .central(let link): await link.disconnect(reason: reason)
            }
        }
    }

    struct ReportKey: Hashable {
        var address: BluetoothAddress
        var type: AddressType
        var eventType: UInt8
    }

    let transport: any HCITransport
    public let link: VirtualLink
    let clock: any BluetoothClock
    let configuration: Configuration
    let logger: Logger

    // Host-visible state (reset by HCI_Reset).
    var eventMask = SetEventMaskCommand.defaultMask
    var leEventMask = VirtualController.defaultLEEventMask
    var randomAddress: BluetoothAddress?
    var scanParameters = LESetScanParametersCommand(
        leScanType: .passive, leScanInterval: 0x0010, leScanWindow: 0x0010, ownAddressType: .public,
        scanningFilterPolicy: .acceptAll)
    var scanning = false
    var filterDuplicates = false
    var reported: Set<ReportKey> = []
    /// Reports as LE Extended Advertising Reports (scanning started by the extended commands).
    var extendedReports = false
    var scanTimeout: ScheduledTimer?
    /// Whether the legacy or the extended advertising/scanning commands are in use since reset
    /// (a host may not mix them: Vol 4 Part E §3.1.1).
    var commandKind: Bool?
    /// The pending connection came from LE Extended Create Connection.
    var initiatingExtended = false
    var initiating: LECreateConnectionCommand?
    /// The Filter Accept List (Vol 6, Part B, §4.3.1): the devices an initiator with filter policy
    /// 0x01 connects to.
    var filterAcceptList: [FilterAcceptListEntry] = []
    var connections: [UInt16: Connection] = [:]
    /// LE Long Term Key Requests our host has not answered yet, by handle.
    var keyRequests: [UInt16: (continuation: CheckedContinuation<[UInt8]?, Never>, timer: ScheduledTimer)] = [:]
    var nextHandle: UInt16 = 0x0040
    var reassembler = L2CAPReassembler()

    // Advertising (peripheral role).
    var advertisingParameters = LESetAdvertisingParametersCommand(
        advertisingIntervalMin: 0x0800, advertisingIntervalMax: 0x0800)
    var advertisingData: [UInt8] = []
    var scanResponseData: [UInt8] = []
    /// On the link while our host advertises.
    var advertiser: HostAdvertiser?
    /// The one extended advertising set.
    var advertisingSet: AdvertisingSet?

    // Advertising-event timer.
    var tick: ScheduledTimer?
    var generation = 0
    var runTask: Task<Void, Never>?

    /// LE event mask after reset: the five lowest bits (Core 5.4 Vol 4 Part E §7.8.1).
    public static let defaultLEEventMask = HCIEventMask(rawValue: 0x1F)

    public init(
        transport: any HCITransport, link: VirtualLink, clock: any BluetoothClock = SystemClock(),
        configuration: Configuration = Configuration(), logger: Logger = .disabled
    ) {
        self.transport = transport
        self.link = link
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
    }

    /// A controller serving the controller end of a new in-memory pair; returns the controller
    /// (started) and the host end, which is what the host's driver opens.
    public static func attach(
        to link: VirtualLink, clock: any BluetoothClock = SystemClock(), configuration: Configuration = Configuration(),
        logger: Logger = .disabled
    ) async -> (controller: VirtualController, hostTransport: InMemoryTransport) {
        let (host, controllerEnd) = InMemoryTransport.makePair()
        let controller = VirtualController(
            transport: controllerEnd, link: link, clock: clock, configuration: configuration, logger: logger)
        await controller.start()
        return (controller, host)
    }

    /// Starts reading the host's packets (one reader task, ended by the transport closing).
    public func start() {
        guard runTask == nil else { return }
        let packets = transport.packets
        // The task keeps the controller alive while its transport is open, as a controller
        // chip runs while plugged in; closing the transport (or `stop()`) ends it.
        runTask = Task {
            do {
                for try await packet in packets {
                    await self.receive(type: packet.type, bytes: packet.bytes)
                }
            } catch {
                // The transport closed: the host went away.
            }
            await self.transportClosed()
        }
    }

    /// Closes the transport and drops every connection.
    public func stop() async {
        transport.close(reason: "virtual controller stopped")
        await transportClosed()
    }

    /// Handles of the open connections.
    public var connectionHandles: [UInt16] { connections.keys.sorted() }

    /// Whether a scan is running (for tests).
    public var isScanning: Bool { scanning }

    // MARK: Host → controller

    /// One packet from the host (for tests that bypass the transport).
    public func receive(type: HCIPacketType, bytes: [UInt8]) async {
        switch type {
        case .command:
            let packet: HCICommandPacket
            do {
                packet = try HCICommandPacket(bytes: bytes)
            } catch {
                logger.warning("virtual controller: malformed command packet dropped: \(error)")
                return
            }
            await execute(packet)
        case .acl:
            await receiveACL(bytes)
        default:
            logger.warning("virtual controller: \(type) packet from the host ignored")
        }
    }

    func receiveACL(_ bytes: [UInt8]) async {
        var reader = ByteReader(bytes)
        let packet: ACLDataPacket
        do {
            packet = try ACLDataPacket(parsing: &reader)
        } catch {
            logger.warning("virtual controller: malformed ACL packet dropped: \(error)")
            return
        }
        guard packet.data.count <= Int(configuration.aclBufferLength) else {
            // The host broke the buffer size it read: the packet cannot be stored.
            await emit(.dataBufferOverflow(DataBufferOverflowEvent(linkType: 0x01)))
            return
        }
        guard let connection = connections[packet.handle] else {
            logger.warning("virtual controller: ACL for unknown handle \(packet.handle) dropped")
            return
        }
        // The packet has been "transmitted": its buffer is free again.
        await emit(
            .numberOfCompletedPackets(
                NumberOfCompletedPacketsEvent(entries: [.init(connectionHandle: packet.handle, numCompletedPackets: 1)])
            ))
        let output = reassembler.receive(
            handle: packet.handle, packetBoundary: packet.packetBoundary.rawValue, data: packet.data[...])
        if let drop = output.drop {
            logger.warning("virtual controller: L2CAP frame dropped on \(drop.handle): \(drop.reason)")
        }
        if let frame = output.frame {
            await connection.deliver(frame)
        }
    }

    // MARK: Controller → host

    /// Sends `event` unless the host masked it.
    func emit(_ event: HCIEvent) async {
        guard isUnmasked(event) else { return }
        do {
            let bytes = try event.encoded()
            try await transport.send(.event, bytes)
        } catch {
            logger.debug("virtual controller: event not delivered: \(error)")
        }
    }

    func isUnmasked(_ event: HCIEvent) -> Bool {
        switch event {
        case .commandComplete, .commandStatus, .numberOfCompletedPackets:
            return true  // not maskable
        case .leMeta(let meta):
            guard eventMask.rawValue >> 61 & 1 == 1 else { return false }
            let bit = UInt64(meta.subeventCode.rawValue) &- 1
            return bit < 64 && leEventMask.rawValue >> bit & 1 == 1
        default:
            let bit = UInt64(event.eventCode.rawValue) &- 1
            return bit < 64 && eventMask.rawValue >> bit & 1 == 1
        }
    }

    /// Sends one L2CAP basic frame to the host, fragmented to the LE buffer length: the first
    /// fragment with Packet_Boundary_Flag 0b10, the rest 0b01.
    func sendFrame(handle: UInt16, channelID: UInt16, payload: [UInt8]) async {
        let frame = L2CAPBasicFrame(channelID: channelID, payload: payload[...]).encode()
        let size = Int(configuration.aclBufferLength)
        var start = 0
        while start < frame.count {
            let end = min(start + size, frame.count)
            let packet = ACLDataPacket(
                handle: handle, packetBoundary: start == 0 ? .firstFlushable : .continuingFragment,
                data: Array(frame[start..<end]))
            var writer = ByteWriter(capacity: packet.encodedLength)
            do {
                try packet.write(to: &writer)
                try await transport.send(.acl, writer.bytes)
            } catch {
                logger.debug("virtual controller: ACL not delivered: \(error)")
                return
            }
            start = end
        }
    }

    // MARK: Peripheral side

    func peripheralSend(handle: UInt16, channelID: UInt16, payload: [UInt8]) async -> Bool {
        guard var connection = connections[handle] else { return false }
        if var pending = connection.pending {
            guard pending.disconnect == nil else { return false }
            pending.frames.append((channelID, payload))
            connection.pending = pending
            connections[handle] = connection
            return true
        }
        await sendFrame(handle: handle, channelID: channelID, payload: payload)
        return true
    }

    func peripheralDisconnect(handle: UInt16, reason: HCIStatus) async {
        guard var connection = connections[handle] else { return }
        if var pending = connection.pending {
            // Our host has not heard of the connection yet: it ends right after it does.
            if pending.disconnect == nil { pending.disconnect = reason }
            connection.pending = pending
            connections[handle] = connection
            return
        }
        connections[handle] = nil
        dropKeyRequest(handle: handle)
        reassembler.reset(handle: handle)
        await emit(
            .disconnectionComplete(
                DisconnectionCompleteEvent(status: .success, connectionHandle: handle, reason: reason)))
        await connection.remoteDisconnected(.connectionTerminatedByLocalHost)
    }

    func parameters(of handle: UInt16) -> VirtualLinkConnection.Parameters? {
        connections[handle]?.parameters
    }

    func transportClosed() async {
        generation += 1
        tick?.cancel()
        tick = nil
        scanning = false
        initiating = nil
        stopAdvertising()
        let dropped = connections
        connections = [:]
        for handle in keyRequests.keys { dropKeyRequest(handle: handle) }
        for (_, connection) in dropped {
            await connection.remoteDisconnected(.connectionTimeout)
        }
    }
}
