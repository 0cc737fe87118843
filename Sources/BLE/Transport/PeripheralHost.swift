import Kernel
import Host
import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import L2CAP
import Synchronization

/// A central that connected to our advertising.
package struct AcceptedCentral: Sendable {
    /// Its ATT channel (fixed CID 0x0004).
    package let channel: any ATTChannel
    package let peer: String
    /// Its address and type, where the transport says (the kernel may not know the type).
    package let address: PeerAddress?
    /// Ends the connection, asks for parameters (what the emulated firmware uses).
    package let link: any GATTPeripheralLink
    package let parameters: VirtualLinkConnection.Parameters
    /// Waits for the end of the connection; returns the reason (nil when only the channel
    /// closed, as on the kernel path).
    package let ended: @Sendable () async -> HCIStatus?
    /// The user-space host's connection, for our Security Manager (nil on the kernel path).
    package var connection: LEConnection?
    package var host: LEHost?

    /// Asks the central for new parameters over L2CAP (user space); nil on the kernel path.
    package var requestParameters: (@Sendable (LEConnectionParameters) async throws -> Bool)? {
        guard let connection, let host else { return nil }
        return { try await host.requestConnectionParameters(connection, $0) }
    }
}

/// What `gattclient peripheral` needs from a transport: advertising and accepting centrals.
package protocol PeripheralHost: Sendable {
    /// The address centrals connect to.
    var address: BluetoothAddress { get }
    /// Starts advertising; the stream yields each central that connects.
    func advertise(_ parameters: LEAdvertisingParameters) async throws -> AsyncStream<AcceptedCentral>
    /// Stops advertising and accepting; the transport stays open.
    func stopAdvertising() async
    /// Stops advertising and releases the transport.
    func close() async
    /// The Enhanced ATT bearers centrals open on encrypted links, where our host accepts them
    /// (user space); nil elsewhere.
    var enhancedBearers: AsyncStream<CreditBasedATTChannel>? { get }
}

extension PeripheralHost {
    package var enhancedBearers: AsyncStream<CreditBasedATTChannel>? { nil }
}

/// Opens the peripheral side of the transport `--transport` names (default: the first kernel
/// adapter).
package func openPeripheralHost(_ uri: String?, options: AdapterOptions) async throws -> any PeripheralHost {
    let parsed = try TransportURI.parsed(uri, options: options)
    if let level = options.security, level != "low", case .kernel = parsed {} else if let level = options.security, level != "low" {
        throw BLEError(
            "--security \(level) is not available for our peripheral on \(parsed): our host pairs when a central asks "
                + "(--io-capability, --passkey, --confirm) and enforces each attribute's permissions (readEncrypted, "
                + "readAuthenticated, …), but does not require a level of the whole link; on the kernel path "
                + "(--transport hci0 or hci:N) the kernel does", kind: "transport", exitCode: .unavailable)
    }
    switch parsed {
    case .kernel(let index):
        if let path = options.record {
            throw BLEError(
                "peripheral --record \(path): on the kernel transport the kernel owns HCI; record with "
                    + "`gattclient --record \(path) monitor hci\(index)` beside it", kind: "usage", exitCode: .usage)
        }
        return try KernelPeripheralHost(
            index: index, security: options.security.flatMap { L2CAPSecurityLevel($0) }, warning: options.warning)
    case .replay:
        throw BLEError("peripheral: a replayed capture cannot accept connections", kind: "usage", exitCode: .usage)
    case .userChannel, .tcp, .unix, .serial:
        let transport: any HCITransport
        do {
            transport = try await parsed.openRawTransport(connectTimeout: options.timeout)
        } catch {
            // The URI once, and what to check (as the central's transports say it).
            throw BLEError(UserSpaceCentral.transportFailure(parsed, error), kind: "transport", exitCode: error.transportExitCode)
        }
        return try await UserSpacePeripheralHost.start(
            try UserSpaceCentral.recording(transport, options.record), name: parsed.description, warning: options.warning)
    case .simulator(let names):
        // Our host's controller on a virtual link with the named emulated devices (none unless
        // named): centrals of the same process (tests) reach it through `simulation.link`.
        let simulation: Simulation
        do {
            simulation = try await Simulation.start(
                devices: names.isEmpty ? [] : try Simulation.devices(named: names), copies: try Simulation.copies(named: names),
                display: options.warning)
        } catch {
            throw BLEError("\(parsed): \(error)", kind: "usage", exitCode: .usage)
        }
        return try await UserSpacePeripheralHost.start(
            try UserSpaceCentral.recording(simulation.hostTransport, options.record), name: parsed.description,
            commandTimeout: SimulatedCentral.commandTimeout, simulation: simulation, warning: options.warning)
    }
}

/// Our user-space host as peripheral: `LEHost.advertise` on a raw HCI transport.
package final class UserSpacePeripheralHost: PeripheralHost {
    package let host: LEHost
    package let simulation: Simulation?
    /// Where a refused parameter request is reported.
    package let warning: @Sendable (String) -> Void

    package init(host: LEHost, simulation: Simulation? = nil, warning: @escaping @Sendable (String) -> Void = { _ in }) {
        self.host = host
        self.simulation = simulation
        self.warning = warning
    }

    package static func start(
        _ transport: any HCITransport, name: String, commandTimeout: Duration = .seconds(2), simulation: Simulation? = nil,
        logger: Logger = .disabled, warning: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> UserSpacePeripheralHost {
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = commandTimeout
        do {
            let host = try await LEHost.start(transport: transport, configuration: configuration, logger: logger)
            return UserSpacePeripheralHost(host: host, simulation: simulation, warning: warning)
        } catch {
            await simulation?.stop()
            throw BLEError("\(name): the controller did not come up: \(error)", kind: "transport", exitCode: .unavailable)
        }
    }

    package var address: BluetoothAddress { host.info.address }

    /// Our GATT server accepts up to 5 Enhanced ATT bearers per encrypted link (SPSM 0x0027).
    package var enhancedBearers: AsyncStream<CreditBasedATTChannel>? {
        host.acceptEnhancedATTBearers(5)
        return host.l2cap.acceptedCreditBasedChannels
    }

    package func advertise(_ parameters: LEAdvertisingParameters) async throws -> AsyncStream<AcceptedCentral> {
        let connections: AsyncStream<LEConnection>
        do {
            connections = try await host.advertise(parameters)
        } catch {
            throw BLEError("advertising: \(error)", kind: "adapter")
        }
        let host = host
        return AsyncStream { continuation in
            let task = Task {
                for await connection in connections {
                    let parameters = connection.parameters
                    continuation.yield(
                        AcceptedCentral(
                            channel: connection.channel, peer: "\(connection.peerAddress) (\(connection.peerAddressType))",
                            address: connection.peerAddressType.addressType.map {
                                PeerAddress(address: connection.peerAddress, type: $0)
                            },
                            link: HostPeripheralLink(host: host, connection: connection, warning: self.warning),
                            parameters: .init(
                                interval: parameters.interval, latency: parameters.peripheralLatency,
                                supervisionTimeout: parameters.supervisionTimeout),
                            ended: {
                                for await reason in connection.disconnected { return reason }
                                return connection.disconnectionReason
                            }, connection: connection, host: host))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    package func stopAdvertising() async {
        try? await host.stopAdvertising()
    }

    package func close() async {
        try? await host.stopAdvertising()
        await host.close()
        await simulation?.stop()
    }
}

/// The emulated firmware's view of an `LEHost` connection: a disconnect is HCI_Disconnect, a
/// parameter request the L2CAP Connection Parameter Update Request to the central (what every
/// central understands, Vol 3 Part A §4.20), in its own task so a write's response is not held.
package struct HostPeripheralLink: GATTPeripheralLink {
    package let host: LEHost
    package let connection: LEConnection
    package let warning: @Sendable (String) -> Void

    package func disconnect(reason: HCIStatus) async {
        _ = try? await host.disconnect(connection, reason: reason)
    }

    package func requestConnectionParameters(_ request: ConnectionParameterUpdateRequest) async {
        let parameters = LEConnectionParameters(
            connectionIntervalMin: request.intervalMin, connectionIntervalMax: request.intervalMax,
            maxLatency: request.peripheralLatency, supervisionTimeout: request.timeoutMultiplier)
        let host = host
        let connection = connection
        let warning = warning
        Task {
            do {
                if try await !host.requestConnectionParameters(connection, parameters) {
                    warning("warning: peripheral: connection parameter request refused by the central")
                }
            } catch {
                warning("warning: peripheral: connection parameter request refused: \(error)")
            }
        }
    }
}

/// The kernel path: bluetoothd-free advertising and the centrals it accepts, from
/// ``KernelAdvertiser``.
package final class KernelPeripheralHost: PeripheralHost {
    package let index: UInt16
    package let adapter: KernelAdapter
    package let security: L2CAPSecurityLevel?
    /// Where a failed accept is reported.
    package let warning: @Sendable (String) -> Void
    private let listener = Mutex<KernelATTListener?>(nil)

    package init(index: UInt16, security: L2CAPSecurityLevel?, warning: @escaping @Sendable (String) -> Void = { _ in }) throws {
        self.index = index
        self.security = security
        self.warning = warning
        do {
            adapter = try KernelHCI.adapter(index: index)
        } catch {
            throw BLEError.kernel(error, doing: "hci\(index)")
        }
    }

    package var address: BluetoothAddress { adapter.address }

    package func advertise(_ parameters: LEAdvertisingParameters) async throws -> AsyncStream<AcceptedCentral> {
        if let why = parameters.invalidity { throw BLEError("advertising: \(why)", kind: "usage", exitCode: .usage) }
        let listening: KernelATTListener
        do {
            listening = try await KernelAdvertiser.start(
                adapter: index, address: adapter.address, parameters: parameters, security: security)
        } catch let error as KernelBluetoothError {
            throw BLEError.kernel(error, doing: "advertising on hci\(index)")
        }
        listener.withLock { $0 = listening }
        return AsyncStream { continuation in
            let task = Task {
                while !Task.isCancelled {
                    let channel: KernelATTChannel
                    do {
                        channel = try await listening.accept()
                    } catch {
                        self.warning("warning: peripheral: accepting on hci\(self.index): \(error)")
                        break
                    }
                    // Its end (the peer gone, or closed) awaited beside the bearer reading it.
                    let ended = EndSignal()
                    let watched = ObservedATTChannel(channel, onEnd: { _ in ended.finish() })
                    let peer = channel.peer.map { "\($0)" } ?? "unknown"
                    continuation.yield(
                        AcceptedCentral(
                            channel: watched, peer: peer,
                            address: channel.peer.map { PeerAddress(address: $0, type: channel.peerAddressType ?? .public) },
                            link: KernelPeripheralLink(channel: channel),
                            parameters: .init(interval: 0, latency: 0, supervisionTimeout: 0),
                            ended: {
                                await ended.wait()
                                return nil
                            }))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    package func stopAdvertising() async {
        if let listening = listener.withLock({ $0 }) { await listening.close() }
        KernelAdvertiser.stop(adapter: index)
    }

    package func close() async { await stopAdvertising() }
}

/// On the kernel path the link is the kernel's: closing the socket ends it (the kernel
/// disconnects once no socket uses the link); parameter requests are the kernel's business.
package struct KernelPeripheralLink: GATTPeripheralLink {
    package let channel: KernelATTChannel

    package func disconnect(reason: HCIStatus) async { await channel.close() }

    package func requestConnectionParameters(_ request: ConnectionParameterUpdateRequest) async {}
}

/// Resumes its waiters once, when something ended.
package final class EndSignal: Sendable {
    private let state = Mutex<(ended: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    package func finish() {
        let waiters = state.withLock { state in
            state.ended = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state -> Bool in
                if state.ended { return true }
                state.waiters.append(continuation)
                return false
            }
            if ended { continuation.resume() }
        }
    }
}

