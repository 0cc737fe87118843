import Host
import ATT
import Bluetooth
import GATT
import HCI
import L2CAP
import Security

/// What an emulated device's firmware hears from its GATT peripheral.
public enum GATTPeripheralEvent: Hashable, Sendable {
    /// A central connected.
    case connected(VirtualLinkConnection.Parameters)
    /// A client wrote `value` to the attribute at `handle` (already stored).
    case valueWritten(handle: UInt16, value: [UInt8])
    /// A client changed its Client Characteristic Configuration of the value at `valueHandle`.
    case subscriptionChanged(valueHandle: UInt16, ClientCharacteristicConfiguration)
    /// The central changed the connection parameters.
    case parametersChanged(VirtualLinkConnection.Parameters)
    /// The connection ended.
    case disconnected(HCIStatus)
}

/// The connection under a ``GATTPeripheral`` served over an ATT channel of a real host (see
/// ``GATTPeripheral/connected(channel:link:parameters:)``): how the firmware ends it and asks
/// for other connection parameters.
public protocol GATTPeripheralLink: Sendable {
    func disconnect(reason: HCIStatus) async
    func requestConnectionParameters(_ request: ConnectionParameterUpdateRequest) async
}

/// The firmware behind a ``GATTPeripheral``: it may refuse writes before they are stored
/// (`checkWrite`, synchronous and pure: an application error such as TI's 0x80) and reacts to
/// events. `handle(_:peripheral:)` runs before the request's response leaves, so a
/// write's effects (a sensor timer, an echo) are in place when the client sees the response.
public protocol GATTPeripheralFirmware: Sendable {
    func checkWrite(handle: UInt16, value: [UInt8]) -> ATTErrorCode?
    func handle(_ event: GATTPeripheralEvent, peripheral: GATTPeripheral) async
}

/// The host side of an emulated peripheral: a minimal LE L2CAP (fixed channels ATT 0x0004,
/// LE signaling 0x0005 answered by ``LESignalingResponder`` in the peripheral role, SMP 0x0006
/// answered Pairing Not Supported by ``SecurityManagerResponder``) and an ATT bearer served by
/// the GATT module's one server driver, ``GATTServerHost`` (Rx MTU `rxMTU`), with the firmware
/// as its application (its write checks and event handling).
///
/// The same object also serves an ATT channel of a real host (our `LEHost` accepting a
/// connection as peripheral): ``connected(channel:link:parameters:)``.
///
/// One central at a time, as the emulated devices allow.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §2.1 (fixed channels), §4; Vol 3, Part H, §3.5.5
public actor GATTPeripheral {
    private enum Link {
        /// The virtual link: L2CAP frames are ours to carry.
        case virtual(VirtualLinkConnection)
        /// A real host's connection: the bearer runs on its ATT channel.
        case external(any GATTPeripheralLink)
    }

    private struct Session {
        let link: Link
        let connection: ATTConnection
        let client: GATTServer.ClientID
        /// Our end of the in-memory channel under the bearer (virtual link only): SDUs the
        /// bearer sends appear here and go to the link; SDUs from the link are sent into it.
        let channel: InMemoryATTChannel?
        let forwarder: Task<Void, Never>?
    }

    /// How ``push(_:handle:indication:)`` delivered a value.
    public typealias PushOutcome = GATTServerHost.PushOutcome

    private let server: GATTServerHost
    private var rxMTU: Int
    private let clock: any BluetoothClock
    private let firmware: any GATTPeripheralFirmware
    private let logger: Logger
    private let signaling = LESignalingResponder(role: .peripheral)
    private let securityManager = SecurityManagerResponder()
    private var session: Session?
    private var applicationSet = false
    private var nextSignalingIdentifier: UInt8 = 1

    public init(
        database: AttributeDatabase, rxMTU: Int = ATTPDU.defaultLEMTU, firmware: any GATTPeripheralFirmware,
        clock: any BluetoothClock = SystemClock(), logger: Logger = .disabled
    ) {
        self.server = GATTServerHost(
            server: GATTServer(database: database, configuration: .init(rxMTU: rxMTU)), logger: logger)
        self.rxMTU = rxMTU
        self.firmware = firmware
        self.clock = clock
        self.logger = logger
    }

    /// The attribute database as it is now (values included).
    public var database: AttributeDatabase {
        get async { await server.database }
    }

    /// The value stored at `handle`.
    public func value(at handle: UInt16) async -> [UInt8]? { await server.database.attribute(at: handle)?.value }

    /// Whether a central is connected.
    public var isConnected: Bool { session != nil }

    /// The bearer's ATT_MTU (23 when not connected).
    public func mtu() async -> Int {
        guard let session else { return ATTPDU.defaultLEMTU }
        return await session.connection.mtu
    }

    /// Stores `value` at `handle` and notifies or indicates it to the central if subscribed.
    public func updateValue(_ value: [UInt8], handle: UInt16) async throws(GATTError) {
        try await server.updateValue(value, handle: handle)
    }

    /// Sets our Rx MTU (offered in Exchange MTU) for the next connection; refused (false)
    /// while a central is connected.
    @discardableResult
    public func setRxMTU(_ mtu: Int) async -> Bool {
        guard session == nil else { return false }
        let wanted = max(ATTPDU.defaultLEMTU, min(mtu, 0xFFFF))
        guard await server.setConfiguration(.init(rxMTU: wanted)) else { return false }
        rxMTU = wanted
        return true
    }

    /// Our Rx MTU.
    public var serverRxMTU: Int { rxMTU }

    /// The connected central's Client Characteristic Configuration of the value at
    /// `valueHandle` (empty when not connected or not configured).
    public func clientConfiguration(ofValue valueHandle: UInt16) async -> ClientCharacteristicConfiguration {
        guard let session else { return [] }
        return await server.clientConfiguration(ofValue: valueHandle, for: session.client)
    }

    /// Stores `value` at the characteristic value `handle` and sends it as `indication` (awaiting
    /// the confirmation) or notification when the connected central enabled that kind in its
    /// Client Characteristic Configuration; the value is cut to ATT_MTU − 3 octets.
    /// Throws `noAttribute`/`valueTooLong` as storing does, `.att` when sending fails.
    public func push(_ value: [UInt8], handle: UInt16, indication: Bool) async throws(GATTError) -> PushOutcome {
        try await server.push(value, handle: handle, indication: indication, to: session?.client)
    }

    /// Stores `value` at `handle` without telling anyone (firmware-internal state).
    public func setValue(_ value: [UInt8], handle: UInt16) async throws(GATTError) {
        try await server.setValue(value, handle: handle)
    }

    /// Ends the connection from the peripheral's side.
    public func disconnect() async {
        switch session?.link {
        case .virtual(let link): await link.disconnect(reason: .remoteUserTerminatedConnection)
        case .external(let link): await link.disconnect(reason: .remoteUserTerminatedConnection)
        case nil: return
        }
    }

    /// Sends an L2CAP Connection Parameter Update Request (what TI's firmware does shortly
    /// after connecting, and on a Connection Control CCC2 write).
    public func requestConnectionParameters(_ request: ConnectionParameterUpdateRequest) async {
        guard let sessionLink = session?.link else { return }
        guard case .virtual(let link) = sessionLink else {
            if case .external(let link) = sessionLink { await link.requestConnectionParameters(request) }
            return
        }
        let identifier = nextSignalingIdentifier
        nextSignalingIdentifier = nextSignalingIdentifier == 0xFF ? 1 : nextSignalingIdentifier + 1
        do {
            let packet = try L2CAPSignalingPacket(
                identifier: identifier, command: .connectionParameterUpdateRequest(request))
            await link.send(channelID: L2CAPBasicFrame.leSignalingCID, payload: try packet.encode())
        } catch {
            logger.warning("emulated peripheral: parameter update request not encoded: \(error)")
        }
    }

    // MARK: Link side

    public func connected(_ link: VirtualLinkConnection) async {
        if session != nil { await dropSession(reason: .connectionTerminatedByLocalHost, notify: false) }
        let (bearerEnd, ourEnd) = InMemoryATTChannel.pair()
        let (connection, client) = await serve(bearerEnd)
        let forwarder = Task {
            do {
                for try await sdu in ourEnd.incoming {
                    guard await link.send(channelID: L2CAPBasicFrame.attributeProtocolCID, payload: sdu) else { return }
                }
            } catch {
                // The channel failed: the session is being dropped.
            }
        }
        session = Session(
            link: .virtual(link), connection: connection, client: client, channel: ourEnd, forwarder: forwarder)
        let parameters = await link.parameters() ?? .init(interval: 0, latency: 0, supervisionTimeout: 0)
        await firmware.handle(.connected(parameters), peripheral: self)
    }

    /// A central connected through a real host: the bearer runs on `channel` (its ATT fixed
    /// channel; the host's L2CAP answers signaling and SMP), `link` ends the connection and asks
    /// for parameters. The firmware hears `.connected(parameters)`. Call
    /// ``disconnected(reason:)`` when the connection ends. Returns the server's client, for
    /// ``setSecurity(_:for:)``.
    @discardableResult
    public func connected(
        channel: any ATTChannel, link: any GATTPeripheralLink, parameters: VirtualLinkConnection.Parameters
    ) async -> GATTServer.ClientID {
        if session != nil { await dropSession(reason: .connectionTerminatedByLocalHost, notify: false) }
        let (connection, client) = await serve(channel)
        session = Session(link: .external(link), connection: connection, client: client, channel: nil, forwarder: nil)
        await firmware.handle(.connected(parameters), peripheral: self)
        return client
    }

    /// The link of the current session is encrypted at `level` (a device that pairs on the
    /// virtual link): the server grants the permissions that level meets.
    public func setLinkSecurity(_ level: SecurityLevel) async {
        guard let session else { return }
        await server.setSecurity(level, for: session.client)
    }

    /// Who hears of requests refused for the link's security (see
    /// `GATTServerHost.setSecurityRefusalHandler(_:)`).
    public func setSecurityRefusalHandler(_ handler: GATTServerHost.SecurityRefusalHandler?) async {
        await server.setSecurityRefusalHandler(handler)
    }

    /// Who holds a request refused for security while a pairing on its link completes (see
    /// `GATTServerHost.setSecuritySettling(_:)`).
    public func setSecuritySettling(_ handler: GATTServerHost.SecuritySettling?) async {
        await server.setSecuritySettling(handler)
    }

    /// The host encrypted `client`'s link at `level` (after pairing, or with a bond): the
    /// server grants the permissions that level meets (Vol 3 Part G §8.1). A client no longer
    /// served is ignored.
    public func setSecurity(_ level: SecurityLevel, for client: GATTServer.ClientID) async {
        await server.setSecurity(level, for: client)
    }

    public func received(_ frame: L2CAPBasicFrame) async {
        guard let session, case .virtual(let link) = session.link, let channel = session.channel else { return }
        switch frame.channelID {
        case L2CAPBasicFrame.attributeProtocolCID:
            do {
                try await channel.send(Array(frame.payload))
            } catch {
                logger.warning("emulated peripheral: ATT SDU not delivered: \(error)")
            }
        case L2CAPBasicFrame.leSignalingCID:
            let outcome = signaling.receive(frame.payload)
            if let report = outcome.report { logger.debug("emulated peripheral: signaling \(report)") }
            if let response = outcome.response {
                do {
                    await link.send(channelID: L2CAPBasicFrame.leSignalingCID, payload: try response.encode())
                } catch {
                    logger.warning("emulated peripheral: signaling response not encoded: \(error)")
                }
            }
        case L2CAPBasicFrame.securityManagerCID:
            if case .pairingFailed(let failed, _, _) = securityManager.receive(frame.payload) {
                await link.send(channelID: L2CAPBasicFrame.securityManagerCID, payload: failed.encode())
            }
        default:
            // No other channel exists: frames to unknown CIDs are discarded (Vol 3 Part A §2.1).
            logger.debug("emulated peripheral: frame for CID \(frame.channelID) discarded")
        }
    }

    public func disconnected(reason: HCIStatus) async {
        await dropSession(reason: reason, notify: true)
    }

    public func connectionParametersChanged(_ parameters: VirtualLinkConnection.Parameters) async {
        guard session != nil else { return }
        await firmware.handle(.parametersChanged(parameters), peripheral: self)
    }

    private func dropSession(reason: HCIStatus, notify: Bool) async {
        guard let session else { return }
        self.session = nil
        await server.detach(session.client)
        if let channel = session.channel {
            await channel.close()
        } else {
            await session.connection.close()
        }
        session.forwarder?.cancel()
        if notify { await firmware.handle(.disconnected(reason), peripheral: self) }
    }

    // MARK: Server

    /// Serves `channel` with the firmware as the server's application (set once).
    private func serve(_ channel: any ATTChannel) async -> (ATTConnection, GATTServer.ClientID) {
        if !applicationSet {
            applicationSet = true
            let firmware = firmware
            await server.setApplication(
                writeCheck: { handle, value in firmware.checkWrite(handle: handle, value: value) },
                eventHandler: { [weak self] event in await self?.firmwareHears(event) })
        }
        let served = await server.serve(channel, configuration: ATTBearer.Configuration(rxMTU: rxMTU), clock: clock)
        return (served.connection, served.client)
    }

    /// A server event, told to the firmware before the request's response leaves.
    private func firmwareHears(_ event: GATTServer.Event) async {
        switch event {
        case .valueWritten(_, let handle, let value):
            await firmware.handle(.valueWritten(handle: handle, value: value), peripheral: self)
        case .clientConfigurationChanged(_, let valueHandle, let configuration):
            await firmware.handle(.subscriptionChanged(valueHandle: valueHandle, configuration), peripheral: self)
        case .signedWriteRejected(_, let handle, let reason):
            logger.debug("emulated peripheral: signed write to \(handle) rejected: \(reason)")
        }
    }
}
