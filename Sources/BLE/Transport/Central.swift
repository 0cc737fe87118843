import Kernel
import Capture
import ATT
import Bluetooth
import HCI
import L2CAP
import Emulator
import Security
import Synchronization
import SystemSupport

/// What the GATT commands need from a transport: an ATT channel to a peripheral.
package protocol Central: Sendable {
    /// Connects to `peer` and opens its ATT channel, within `timeout`.
    func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel
    /// Releases the transport.
    func close() async
    /// Connects to `peer` and gives the whole link (``CentralLink``); the default sees the
    /// link's end through the ATT channel only.
    func link(to peer: PeerAddress, timeout: Duration) async throws -> CentralLink
    /// Connects to `address` whatever its type, in one attempt (the Filter Accept List holding
    /// both); nil where the transport cannot, and the caller tries public, then random.
    func linkEitherType(to address: BluetoothAddress, timeout: Duration) async throws -> (link: CentralLink, peer: PeerAddress)?
    /// The controller's own address, where the transport knows it.
    var localAddress: BluetoothAddress? { get }
    /// The peripheral side of the same controller (advertising, accepting centrals), or nil
    /// where the transport cannot advertise (a replayed capture).
    func peripheralHost(warning: @escaping @Sendable (String) -> Void) throws -> (any PeripheralHost)?
    /// Whether `--record` is already writing this transport's HCI traffic (the user-space host),
    /// so the session does not also record at the ATT level.
    var recordsHCI: Bool { get }
    /// What the controller said it is when our host started it; nil where the host is not ours.
    var controllerInfo: ControllerInfo? { get }
    /// What every later link is asked for (connection parameters, PHY, data length); a usage
    /// error where the transport cannot ask (the kernel path, a replay) and `preferences` asks
    /// anything.
    func setLinkPreferences(_ preferences: LinkPreferences) throws(BLEError)
    /// Why this transport cannot control the link (the refusal's reason).
    static var linkControlRefusal: String { get }
    /// What every later link is asked for (``setLinkPreferences(_:)``).
    var linkPreferences: LinkPreferences { get }
}

extension Central {
    package var recordsHCI: Bool { false }
    package var controllerInfo: ControllerInfo? { nil }
    package var localAddress: BluetoothAddress? { nil }
    package func setLinkPreferences(_ preferences: LinkPreferences) throws(BLEError) {
        guard preferences.isEmpty else {
            throw BLEError(
                "connection parameters, PHY and data length are set by our host in user space (tcp:, unix:, serial:, "
                    + "hci-user:, sim); \(Self.linkControlRefusal)", kind: "usage", exitCode: .usage)
        }
    }
    /// Why this transport cannot control the link.
    package static var linkControlRefusal: String { "this transport does not control the link" }
    package var linkPreferences: LinkPreferences { LinkPreferences() }
    package func linkEitherType(
        to address: BluetoothAddress, timeout: Duration
    ) async throws -> (link: CentralLink, peer: PeerAddress)? { nil }
    package func peripheralHost(warning: @escaping @Sendable (String) -> Void) throws -> (any PeripheralHost)? { nil }

    /// The link as a plain ``connect(to:timeout:)`` gives it: the channel unwrapped (a batch
    /// receiving channel keeps its batches), its end seen as the end of the ATT bearer (no HCI
    /// reason), ended by closing the channel.
    package func link(to peer: PeerAddress, timeout: Duration) async throws -> CentralLink {
        let channel = try await connect(to: peer, timeout: timeout)
        return CentralLink(channel: channel, ended: nil, disconnect: { await channel.close() })
    }
}

/// A connection a ``Central`` made: its ATT channel, its end, and how to end it.
package struct CentralLink: Sendable {
    /// The ATT channel (fixed CID 0x0004, or the kernel's L2CAP socket).
    package var channel: any ATTChannel
    /// Waits for the link's end and gives the HCI reason (Vol 4, Part E, §7.7.5 Disconnection
    /// Complete); nil where the transport sees only the channel's end (the kernel path, a
    /// replay): then the end of the ATT bearer is the link's.
    package var ended: (@Sendable () async -> HCIStatus?)?
    /// Ends the link (HCI Disconnect with Remote User Terminated Connection, or closing the socket).
    package var disconnect: @Sendable () async -> Void

    /// The link's Security Manager, where we run SMP ourselves (the user-space host); nil on
    /// the kernel path, where the kernel pairs.
    package var securityManager: SecurityManager?
    /// The link's encryption key size while it is encrypted, where the transport knows it.
    package var encryptionKeySize: (@Sendable () -> Int?)?
    /// The kernel path, where the kernel pairs: raising the socket's `BT_SECURITY`.
    package var kernelSecurity: KernelLinkSecurity?
    /// The connection parameters in force, where the transport shows them (nil: the kernel
    /// path, a replay).
    package var parameters: (@Sendable () -> ConnectionParameters)?
    /// The link's changes as the controller reports them (one consumer), where the transport
    /// shows them.
    package var linkEvents: AsyncStream<LinkEvent>?
    /// RSSI, parameter updates, PHY and data length, where our host made the link.
    package var control: LinkControl?
    /// Opens up to N Enhanced ATT bearers (L2CAP enhanced credit-based channels on SPSM
    /// 0x0027) on the link, where our host made it (or a replay recorded them).
    package var openEnhancedBearers: (@Sendable (Int) async throws -> [EnhancedBearerChannel])?
    /// The link's encryption is the recording's (a replay): Enhanced ATT needs no pairing here.
    package var encryptionRecorded = false

    package init(
        channel: any ATTChannel, ended: (@Sendable () async -> HCIStatus?)?,
        disconnect: @escaping @Sendable () async -> Void
    ) {
        self.channel = channel
        self.ended = ended
        self.disconnect = disconnect
    }
}

/// An Enhanced ATT bearer's channel and its ATT_MTU (the smaller of the two L2CAP MTUs).
package struct EnhancedBearerChannel: Sendable {
    package var channel: any ATTChannel
    package var mtu: Int

    package init(channel: any ATTChannel, mtu: Int) {
        self.channel = channel
        self.mtu = mtu
    }
}

/// Security on a kernel link: the kernel encrypts with its key for the peer, else pairs (asking
/// the management channel's agent), when the ATT socket's `BT_SECURITY` is raised.
package struct KernelLinkSecurity: Sendable {
    /// The peer as the socket was connected to it.
    package var peer: PeerAddress
    /// Raises `BT_SECURITY` and waits, bounded, until the kernel settled it; the link's level then.
    package var raise: @Sendable (L2CAPSecurityLevel, Duration) async throws(KernelBluetoothError) -> L2CAPSecurityLevel
    /// Ends a waiting `raise` (the agent saw the pairing fail).
    package var abandon: @Sendable (KernelBluetoothError) -> Void
}

/// `--security medium|high|fips` where nothing could honour it: a replayed capture cannot pair
/// or encrypt (exit 64). The kernel path sets its socket's `BT_SECURITY` (the kernel pairs); the
/// user-space host and `sim` pair or encrypt with the bond before the first request.
/// `low` (no security) is honoured everywhere.
package func refuseUnhonouredSecurity(_ options: AdapterOptions, on transport: TransportURI) throws(BLEError) {
    guard let level = options.security, level != "low" else { return }
    if case .replay = transport {
        throw BLEError(
            "--security \(level): a replayed capture cannot pair or encrypt; drop --security to replay it",
            kind: "usage", exitCode: .usage)
    }
}

extension TransportURI {
    /// `uri` parsed (default `hci0`), a usage error otherwise, with `--security` checked.
    package static func parsed(_ uri: String?, options: AdapterOptions) throws(BLEError) -> TransportURI {
        let parsed: TransportURI
        do {
            parsed = try TransportURI(parsing: uri ?? "hci0")
        } catch {
            throw BLEError("\(error)", kind: "usage", exitCode: .usage)
        }
        try refuseUnhonouredSecurity(options, on: parsed)
        return parsed
    }
}

/// Opens the transport `--transport` names (default: the first kernel adapter).
package func openCentral(_ uri: String?, options: AdapterOptions) async throws -> any Central {
    let parsed = try TransportURI.parsed(uri, options: options)
    switch parsed {
    case .kernel(let index):
        var central = try KernelCentral(index: index, security: options.security.flatMap { L2CAPSecurityLevel($0) })
        central.scanRecording = options.record
        return central
    case .replay(let path):
        // A capture that is not there is an unavailable transport (exit 69), like a socket nobody serves.
        guard FileSystem.fileExists(atPath: path) else {
            throw BLEError("replay:\(path): no such capture file", kind: "transport", exitCode: .unavailable)
        }
        return ReplayCentral(path: path, matchAny: options.replayMatchAny, connection: options.replayConnection)
    case .userChannel, .tcp, .unix, .serial:
        return try await UserSpaceCentral.open(
            parsed, timeout: options.timeout, record: options.record, warning: options.warning,
            parameterRequests: options.parameterRequests)
    case .simulator:
        return try await SimulatedCentral.open(
            parsed, record: options.record, display: options.warning, parameterRequests: options.parameterRequests)
    }
}

/// The kernel path: the kernel owns HCI and L2CAP; ATT goes over an L2CAP LE socket on CID 4.
package struct KernelCentral: Central {
    package let index: UInt16
    package let adapter: KernelAdapter
    /// `BT_SECURITY` for the ATT socket (`--security`).
    package let security: L2CAPSecurityLevel?
    /// `--record` for `scan`: the HCI commands we send and the events the raw socket gives us.
    package var scanRecording: String?

    package init(index: UInt16, security: L2CAPSecurityLevel? = nil) throws {
        self.security = security
        do {
            adapter = try KernelHCI.adapter(index: index)
        } catch {
            throw BLEError.kernel(error, doing: "hci\(index)")
        }
        self.index = index
        // Without bluetoothd nobody powers the adapter on or switches LE on (a dual-mode
        // controller that is up may still have LE off): do it, or say what to run. Reading the
        // settings needs no privilege; changing them needs CAP_NET_ADMIN.
        do {
            let management = try ManagementSocket.open()
            defer { management.close() }
            _ = try management.prepareForLowEnergy(index: index)
        } catch {
            // An adapter that is up and whose settings cannot be read (an old kernel without the
            // management interface): go on as before and let the socket calls speak.
            if adapter.isUp, !Self.isAdapterState(error) { return }
            throw BLEError.kernel(error, doing: "preparing hci\(index) for LE")
        }
    }

    /// Errors that describe the adapter itself (not ready, no LE, blocked) rather than the
    /// management interface.
    package static func isAdapterState(_ error: KernelBluetoothError) -> Bool {
        switch error {
        case .adapterNotReady: return true
        case .managementFailed(_, _, let status): return [.notSupported, .rfkilled, .invalidIndex].contains(status)
        default: return false
        }
    }

    package func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel {
        do {
            return try await KernelATTChannel.connect(
                to: peer.address, type: peer.type, adapter: adapter.address, security: security, timeout: timeout)
        } catch {
            // The kernel's error names the operation and the peer ("connecting to ADDR (type): …").
            throw BLEError.kernel(error, doing: nil, kind: "connect")
        }
    }

    package func close() async {}

    /// The link with its ``KernelLinkSecurity``.
    package func link(to peer: PeerAddress, timeout: Duration) async throws -> CentralLink {
        let channel = try await connect(to: peer, timeout: timeout)
        var link = CentralLink(channel: channel, ended: nil, disconnect: { await channel.close() })
        if let socket = channel as? KernelATTChannel {
            link.kernelSecurity = KernelLinkSecurity(
                peer: peer,
                raise: { level, timeout throws(KernelBluetoothError) in try await socket.raiseSecurity(to: level, timeout: timeout) },
                abandon: { socket.abandonSecurityWait($0) })
        }
        return link
    }

    package var localAddress: BluetoothAddress? { adapter.address }

    package func peripheralHost(warning: @escaping @Sendable (String) -> Void) throws -> (any PeripheralHost)? {
        try KernelPeripheralHost(index: index, security: security, warning: warning)
    }

    package static var linkControlRefusal: String {
        "on hciN the kernel owns the link (its connection parameters come from the management interface's stored "
            + "parameters, and it hides PHY, data length and RSSI from the ATT socket): use hci-user:N for them"
    }
}

/// `replay:FILE`: the recorded peer side of one ATT bearer answers our requests — or, where the
/// recorded connection has Enhanced ATT bearers, of all its bearers together
/// (``ReplayBearerPool``: a request on any of ours answered from any recording of it, since
/// which bearer a procedure took depends on timing).
package struct ReplayCentral: Central {
    package let path: String
    package let matchAny: Bool
    /// The recorded connection handle to replay (`--replay-conn`); else the one to the peer, else
    /// the first.
    package var connection: UInt16? = nil

    package func link(to peer: PeerAddress, timeout: Duration) async throws -> CentralLink {
        let capture: ReplayCapture
        let handle: UInt16
        do {
            capture = try ReplayCapture(path: path)
            let named = connection == nil && capture.bearers.contains { $0.peerAddress == peer.address }
            handle = try capture.bearer(connectionHandle: connection, peerAddress: named ? peer.address : nil).connectionHandle
        } catch {
            throw BLEError("replay: \(error)", kind: "replay")
        }
        guard capture.bearers.contains(where: { $0.connectionHandle == handle && $0.enhancedMTU != nil }) else {
            let channel = try await connect(to: peer, timeout: timeout)
            var link = CentralLink(channel: channel, ended: nil, disconnect: { await channel.close() })
            link.openEnhancedBearers = { _ in
                throw BLEError("replay: the recorded connection has no Enhanced ATT bearer", kind: "usage", exitCode: .usage)
            }
            return link
        }
        let pool: ReplayBearerPool
        do {
            pool = try ReplayBearerPool(capture: capture, connectionHandle: handle)
        } catch {
            throw BLEError("replay: \(error)", kind: "replay")
        }
        let primary = pool.channel(0)
        var link = CentralLink(channel: primary, ended: nil, disconnect: { await primary.close() })
        link.encryptionRecorded = true
        link.openEnhancedBearers = { count in
            (1...min(count, pool.enhancedBearerCount)).map { index in
                EnhancedBearerChannel(channel: pool.channel(index), mtu: pool.bearers[index].enhancedMTU ?? 23)
            }
        }
        return link
    }

    package func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel {
        do {
            // The recorded bearer to that peer when the capture names peers; else its first bearer.
            let capture = try ReplayCapture(path: path)
            let named = connection == nil && capture.bearers.contains { $0.peerAddress == peer.address }
            return try ReplayATTChannel(
                capture: capture, connectionHandle: connection, peerAddress: named ? peer.address : nil,
                matching: matchAny ? .anyOrder : .strict)
        } catch {
            throw BLEError("replay: \(error)", kind: "replay")
        }
    }

    package func close() async {}

    package static var linkControlRefusal: String { "a replayed capture has no link to control" }
}

