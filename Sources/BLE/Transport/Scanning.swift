#if canImport(Glibc)
import Glibc
#endif
import Kernel
import Host
import Capture
import SystemSupport
import ATT
import Bluetooth
import HCI
import L2CAP
import Emulator
import Security
import Synchronization

/// Scanning on each transport: the user-space host's own scan, the kernel's raw HCI socket
/// (coexisting with bluetoothd), and the advertising reports of a replayed capture.
package protocol Scanner: Sendable {
    func scan(_ options: LEScanParameters) async throws -> AsyncThrowingStream<ScanEvent, any Error>
}

/// The user-space host over a raw HCI transport (`tcp:`, `unix:`, `serial:`, `hci-user:`,
/// and the simulator's virtual controller).
package final class UserSpaceCentral: Central, Scanner {
    package let host: LEHost
    package let recordsHCI: Bool
    /// What each new link is asked for.
    private let preferences = Mutex(LinkPreferences())
    /// Where what the controller could not do for a link is said.
    package let warning: @Sendable (String) -> Void

    package init(host: LEHost, recordsHCI: Bool, warning: @escaping @Sendable (String) -> Void = { _ in }) {
        self.host = host
        self.recordsHCI = recordsHCI
        self.warning = warning
    }

    package func setLinkPreferences(_ preferences: LinkPreferences) throws(BLEError) {
        try preferences.validate()
        self.preferences.withLock { $0 = preferences }
    }

    package static var linkControlRefusal: String { "" }

    /// The link preferences in force.
    package var linkPreferences: LinkPreferences { preferences.withLock { $0 } }

    package static func open(
        _ uri: TransportURI, timeout: Duration, record: String? = nil, warning: @escaping @Sendable (String) -> Void = { _ in },
        parameterRequests: ConnectionParameterRequestPolicy = .acceptValid
    ) async throws -> UserSpaceCentral {
        let transport: any HCITransport
        do {
            transport = try await uri.openRawTransport(connectTimeout: timeout)
        } catch {
            throw BLEError(transportFailure(uri, error), kind: "transport", exitCode: error.transportExitCode)
        }
        return try await start(
            transport, name: uri.description, record: record, warning: warning, parameterRequests: parameterRequests)
    }

    /// `URI: what failed`, the URI once, and what to check where the transport is a socket
    /// nobody answers.
    static func transportFailure(_ uri: TransportURI, _ error: any Error) -> String {
        let text = "\(error)"
        var message = text.hasPrefix(uri.description) ? text : "\(uri): \(text)"
        if case .system(_, let errno)? = error as? HCIError, errno == .connectionRefused || errno.rawValue == ENOENT {
            switch uri {
            case .tcp(let host, let port): message += "; is a controller listening on \(host):\(port)?"
            case .unix(let path): message += "; is a controller listening on \(path)?"
            default: break
            }
        }
        return message
    }

    /// Wraps `transport` in a recorder when `--record` asks for one (every HCI packet, both ways).
    package static func recording(_ transport: any HCITransport, _ path: String?) throws -> any HCITransport {
        guard let path else { return transport }
        do {
            return try RecordingHCITransport(wrapping: transport, path: path)
        } catch {
            transport.close(reason: "--record failed")
            throw BLEError("--record \(path): \(error)", kind: "record")
        }
    }

    /// `commandTimeout`: how long a command may wait for its Command Complete/Status (2 s for a
    /// real controller, as the host issue asks).
    package static func start(
        _ transport: any HCITransport, name: String, commandTimeout: Duration = .seconds(2), record: String? = nil,
        warning: @escaping @Sendable (String) -> Void = { _ in },
        parameterRequests: ConnectionParameterRequestPolicy = .acceptValid
    ) async throws -> UserSpaceCentral {
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = commandTimeout
        configuration.parameterRequests = parameterRequests
        let transport = try recording(transport, record)
        do {
            return UserSpaceCentral(
                host: try await LEHost.start(transport: transport, configuration: configuration), recordsHCI: record != nil,
                warning: warning)
        } catch {
            throw BLEError("\(name): the controller did not come up: \(error)", kind: "transport", exitCode: .unavailable)
        }
    }

    package func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel {
        try await link(to: peer, timeout: timeout).channel
    }

    /// The link with its HCI disconnection reason, ended with HCI Disconnect.
    package func link(to peer: PeerAddress, timeout: Duration) async throws -> CentralLink {
        let preferences = linkPreferences
        let connection: LEConnection
        do {
            connection = try await host.connect(
                to: peer.address, type: peer.type, timeout: timeout,
                parameters: try preferences.connectionParameters?.hciParameters())
        } catch let error as BLEError {
            throw error
        } catch {
            throw BLEError("connecting to \(peer): \(error)", kind: "connect")
        }
        return await link(connection, preferences: preferences)
    }

    /// One LE Create Connection through the Filter Accept List holding both address types.
    package func linkEitherType(
        to address: BluetoothAddress, timeout: Duration
    ) async throws -> (link: CentralLink, peer: PeerAddress)? {
        let preferences = linkPreferences
        let connection: LEConnection
        do {
            connection = try await host.connect(
                toEitherType: address, timeout: timeout, parameters: try preferences.connectionParameters?.hciParameters())
        } catch let error as BLEError {
            throw error
        } catch {
            throw BLEError("connecting to \(address) (public or random): \(error)", kind: "connect")
        }
        let type = connection.peerAddressType.addressType ?? .public
        return (await link(connection, preferences: preferences), PeerAddress(address: address, type: type))
    }

    /// The link of a connection we made: its HCI reason, HCI Disconnect, its link control (the
    /// PHY and data length `preferences` ask for applied first), and our Security Manager on its
    /// SMP channel from the start (a peripheral's Security Request is heard).
    private func link(_ connection: LEConnection, preferences: LinkPreferences) async -> CentralLink {
        let host = host
        var link = CentralLink(
            channel: connection.channel,
            ended: {
                for await reason in connection.disconnected { return reason }
                return connection.disconnectionReason
            },
            disconnect: { _ = try? await host.disconnect(connection, reason: .remoteUserTerminatedConnection) })
        link.encryptionKeySize = { connection.encryptionKeySize }
        link.parameters = { ConnectionParameters(connection.parameters) }
        let control = LinkControl(host: host, connection: connection)
        link.control = control
        link.openEnhancedBearers = { count in
            try await host.openEnhancedATTBearers(connection, count: count).map {
                EnhancedBearerChannel(channel: $0, mtu: $0.maximumSDUSize ?? Int(EnhancedCreditBasedChannels.minimumMTU))
            }
        }
        link.linkEvents = AsyncStream { continuation in
            let forwarding = Task {
                for await event in connection.linkEvents { continuation.yield(LinkEvent(event)) }
                continuation.finish()
            }
            continuation.onTermination = { _ in forwarding.cancel() }
        }
        if let pdus = try? await host.securityManagerPDUs(connection) {
            let io = SecurityManagerIO(
                incoming: pdus,
                send: { pdu in try host.sendSecurityManagerPDU(pdu, on: connection) },
                encrypt: { key in
                    let outcome = try await host.encrypt(connection, longTermKey: key.key, ediv: key.ediv, rand: key.rand)
                    return (outcome.status.rawValue, outcome.enabled)
                })
            let local = host.info.address
            let manager = SecurityManager(
                io: io,
                addresses: PairingInitiator.Addresses(
                    initiator: local, initiatorType: .public, responder: connection.peerAddress,
                    responderType: connection.peerAddressType.addressType ?? .public),
                identity: IdentityAddressInformation(addressType: .public, address: local))
            await manager.start()
            link.securityManager = manager
        }
        await control.apply(preferences, peer: "\(connection.peerAddress)", warning: warning)
        return link
    }

    package func scan(_ options: LEScanParameters) async throws -> AsyncThrowingStream<ScanEvent, any Error> {
        host.scan(options)
    }

    package func close() async { await host.close() }

    package var localAddress: BluetoothAddress? { host.info.address }
    package var controllerInfo: ControllerInfo? { host.info }

    /// The same host as peripheral: closing the adapter closes the host once.
    package func peripheralHost(warning: @escaping @Sendable (String) -> Void) throws -> (any PeripheralHost)? {
        UserSpacePeripheralHost(host: host, warning: warning)
    }
}

extension KernelCentral: Scanner {
    /// Legacy scanning through the kernel's raw HCI socket (``KernelScanner``); bluetoothd may
    /// keep running. `--record` writes what crosses the socket as an H4 btsnoop.
    package func scan(_ options: LEScanParameters) async throws -> AsyncThrowingStream<ScanEvent, any Error> {
        let recorder: Mutex<BTSnoopFileWriter?>
        do {
            recorder = Mutex(try scanRecording.map { path throws(HCIError) in try BTSnoopFileWriter(path: path, datalink: .h4) })
        } catch {
            throw BLEError("--record \(scanRecording ?? ""): \(error)", kind: "record")
        }
        var observer: KernelScanner.PacketObserver?
        if scanRecording != nil {
            observer = { type, bytes, sent in
                recorder.withLock { writer in
                    try? writer?.append(type, bytes, direction: sent ? .sent : .received, timestamp: CaptureTime.now())
                }
            }
        }
        do throws(KernelBluetoothError) {
            return try KernelScanner.scan(
                adapter: index, options: options, observer: observer,
                ended: {
                    recorder.withLock { writer in
                        try? writer?.close()
                        writer = nil
                    }
                })
        } catch {
            recorder.withLock { writer in
                try? writer?.close()
                writer = nil
            }
            throw BLEError.kernel(error, doing: "scanning on hci\(index)")
        }
    }
}

extension ReplayCentral: Scanner {
    /// The capture's advertising reports, merged as a live scan would merge them.
    package func scan(_ options: LEScanParameters) async throws -> AsyncThrowingStream<ScanEvent, any Error> {
        let reports: [ReplayAdvertisingReport]
        do {
            reports = try ReplayCapture.advertisingReports(path: path)
        } catch {
            throw BLEError("replay: \(error)", kind: "replay")
        }
        var aggregator = ScanAggregator(mode: options.reportMode, maximumDevices: options.maximumDevices)
        var events: [ScanEvent] = []
        for report in reports {
            let meta: LEMetaEvent
            switch report.item.report {
            case .legacy(let legacy): meta = .advertisingReport(LEAdvertisingReportEvent(reports: [legacy]))
            case .directed(let directed): meta = .directedAdvertisingReport(LEDirectedAdvertisingReportEvent(reports: [directed]))
            case .extended(let extended): meta = .extendedAdvertisingReport(LEExtendedAdvertisingReportEvent(reports: [extended]))
            }
            events += aggregator.receive(meta)
        }
        return AsyncThrowingStream { continuation in
            for event in events { continuation.yield(event) }
            continuation.finish()
        }
    }
}

/// `sim[:sensortag,bluefruit]`: our unchanged user-space host over the in-process virtual
/// controller, with the emulated devices on its virtual link.
package final class SimulatedCentral: Central, Scanner {
    package let simulation: Simulation
    package let central: UserSpaceCentral

    private init(simulation: Simulation, central: UserSpaceCentral) {
        self.simulation = simulation
        self.central = central
    }

    package var recordsHCI: Bool { central.recordsHCI }
    package var controllerInfo: ControllerInfo? { central.host.info }

    package func setLinkPreferences(_ preferences: LinkPreferences) throws(BLEError) {
        try central.setLinkPreferences(preferences)
    }

    package var linkPreferences: LinkPreferences { central.linkPreferences }

    package static var linkControlRefusal: String { "" }

    /// The HCI command timeout towards the in-process virtual controller.
    package static let commandTimeout = Duration.seconds(30)

    /// - Parameter display: what an emulated device shows its user (the thermometer's passkey).
    package static func open(
        _ uri: TransportURI, record: String? = nil, display: @escaping @Sendable (String) -> Void = { _ in },
        parameterRequests: ConnectionParameterRequestPolicy = .acceptValid
    ) async throws -> SimulatedCentral {
        let simulation: Simulation
        do {
            guard case .simulator(let names) = uri else {
                throw BLEError("\(uri) is not a simulator URI", kind: "usage", exitCode: .usage)
            }
            simulation = try await Simulation.start(
                devices: try Simulation.devices(named: names), copies: try Simulation.copies(named: names), display: display)
        } catch let error as Simulation.SimulationError {
            throw BLEError("\(uri): \(error)", kind: "usage", exitCode: .usage)
        }
        // The virtual controller answers in microseconds; the bound only matters on a machine so
        // loaded that the in-process controller task is not scheduled for seconds (seen under
        // AddressSanitizer with the suite's Bumble peers starting on two cores: over 15 s).
        let central = try await UserSpaceCentral.start(
            simulation.hostTransport, name: uri.description, commandTimeout: Self.commandTimeout, record: record,
            warning: display, parameterRequests: parameterRequests)
        return SimulatedCentral(simulation: simulation, central: central)
    }

    package func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel {
        try await central.connect(to: peer, timeout: timeout)
    }

    package func link(to peer: PeerAddress, timeout: Duration) async throws -> CentralLink {
        try await central.link(to: peer, timeout: timeout)
    }

    package var localAddress: BluetoothAddress? { central.localAddress }

    package func linkEitherType(
        to address: BluetoothAddress, timeout: Duration
    ) async throws -> (link: CentralLink, peer: PeerAddress)? {
        try await central.linkEitherType(to: address, timeout: timeout)
    }

    package func peripheralHost(warning: @escaping @Sendable (String) -> Void) throws -> (any PeripheralHost)? {
        try central.peripheralHost(warning: warning)
    }

    package func scan(_ options: LEScanParameters) async throws -> AsyncThrowingStream<ScanEvent, any Error> {
        try await central.scan(options)
    }

    package func close() async {
        await central.close()
        await simulation.stop()
    }
}
