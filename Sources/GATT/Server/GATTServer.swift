import ATT
import Bluetooth

/// A GATT server as a sans-I/O state machine: an ``AttributeDatabase`` and, per connected
/// client (per ATT bearer), its security level, ATT_MTU, Client Characteristic Configuration
/// values, Client Supported Features, prepare queue and signing state.
///
/// Inputs: ``respond(to:from:)`` for every request or command a client sends (returns the
/// response, or `nil` for a command), ``updateValue(_:handle:)`` when the application changes
/// a characteristic (returns the notifications and indications to send), and
/// ``replaceDatabase(_:changed:)`` (returns the Service Changed indications). What the server
/// observed (writes, subscriptions) is queued for ``takeEvents()``.
///
/// Exchange MTU belongs to the ATT bearer, which also holds one indication outstanding per
/// bearer and enforces ATT_MTU on what is sent; ``setMTU(_:for:)`` tells the server the
/// bearer's ATT_MTU.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3 (server database) and §4 (server side of the
///   procedures); Vol 3, Part F, §3.4 (ATT requests)
public struct GATTServer: Sendable {
    /// One connected client (one ATT bearer).
    public struct ClientID: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public var description: String { "client \(rawValue)" }
    }

    /// Bounds and parameters of the server.
    public struct Configuration: Hashable, Sendable {
        /// Prepare Write Requests queued per client before Prepare Queue Full (0x09).
        public var preparedWriteLimit: Int
        /// Octets of prepared values queued per attribute and client before Prepare Queue Full.
        public var preparedOctetsPerAttribute: Int
        /// Our Rx MTU, for an Exchange MTU Request answered by the server itself (when no
        /// bearer takes it first).
        public var rxMTU: Int
        /// Events kept for ``takeEvents()``; beyond, the oldest are dropped.
        public var eventLimit: Int

        public init(
            preparedWriteLimit: Int = 64, preparedOctetsPerAttribute: Int = 512, rxMTU: Int = 517,
            eventLimit: Int = 1024
        ) {
            self.preparedWriteLimit = preparedWriteLimit
            self.preparedOctetsPerAttribute = preparedOctetsPerAttribute
            self.rxMTU = rxMTU
            self.eventLimit = eventLimit
        }
    }

    /// What the server observed, for the application.
    public enum Event: Hashable, Sendable {
        /// A client wrote a value (Write Request, Write Command, Signed Write, Execute Write).
        case valueWritten(ClientID, handle: UInt16, value: [UInt8])
        /// A client changed its Client Characteristic Configuration of the characteristic
        /// whose value is at `valueHandle`.
        case clientConfigurationChanged(ClientID, valueHandle: UInt16, ClientCharacteristicConfiguration)
        /// A Signed Write Command was dropped (`reason` says why); commands get no answer.
        case signedWriteRejected(ClientID, handle: UInt16, reason: String)
    }

    /// A PDU for one client: a Handle Value Notification or Indication.
    public struct Outbound: Hashable, Sendable {
        public var client: ClientID
        public var pdu: ATTPDU
        public init(client: ClientID, pdu: ATTPDU) {
            self.client = client
            self.pdu = pdu
        }
    }

    struct ClientState: Sendable {
        var mtu = ATTPDU.defaultLEMTU
        var security = SecurityLevel.none
        var authorized = false
        /// Client Characteristic Configuration values by descriptor handle (absent: the
        /// descriptor's initial value).
        var clientConfigurations: [UInt16: UInt16] = [:]
        var supportedFeatures: [UInt8]? = nil
        var prepareQueue: [PrepareWriteRequest] = []
        var signingKey: ConnectionSignatureResolvingKey? = nil
        var signingKeyAuthenticated = false
        var lastSignCounter: UInt32? = nil
        /// Robust caching (Vol 3 Part G §2.5.2.1): false after a database change until the
        /// client is told; `outOfSyncSent` once Database Out Of Sync has been answered.
        var changeAware = true
        var outOfSyncSent = false
    }

    public let configuration: Configuration
    public internal(set) var database: AttributeDatabase
    var clients: [ClientID: ClientState] = [:]
    private var nextClient = 1
    var events: [Event] = []

    public init(database: AttributeDatabase, configuration: Configuration = Configuration()) {
        self.database = database
        self.configuration = configuration
    }

    // MARK: Clients

    /// Registers a new client (a new bearer) and returns its identifier.
    public mutating func connect(mtu: Int = ATTPDU.defaultLEMTU, security: SecurityLevel = .none) -> ClientID {
        let id = ClientID(rawValue: nextClient)
        nextClient += 1
        var state = ClientState()
        state.mtu = max(ATTPDU.defaultLEMTU, mtu)
        state.security = security
        clients[id] = state
        return id
    }

    /// Forgets a client: its prepare queue, configurations and signing state.
    public mutating func disconnect(_ client: ClientID) {
        clients[client] = nil
    }

    /// The clients connected.
    public var connectedClients: [ClientID] { clients.keys.sorted { $0.rawValue < $1.rawValue } }

    /// The bearer's ATT_MTU for `client` (at least 23).
    public mutating func setMTU(_ mtu: Int, for client: ClientID) {
        clients[client, default: ClientState()].mtu = max(ATTPDU.defaultLEMTU, mtu)
    }

    /// The security of `client`'s link, after pairing or encryption changes.
    public mutating func setSecurity(_ security: SecurityLevel, for client: ClientID) {
        clients[client, default: ClientState()].security = security
    }

    /// The security level of `client`'s link (nil: no such client).
    public func security(of client: ClientID) -> SecurityLevel? { clients[client]?.security }

    /// Whether the application authorizes `client` for attributes that need authorization
    /// (`readAuthorized`, `writeAuthorized`); without it they answer Insufficient Authorization.
    public mutating func setAuthorized(_ authorized: Bool, for client: ClientID) {
        clients[client, default: ClientState()].authorized = authorized
    }

    /// The client's CSRK for Signed Write Commands (`authenticated`: distributed by an
    /// authenticated pairing), and the last SignCounter accepted (`nil`: none yet). Without a
    /// key every Signed Write Command is dropped.
    public mutating func setSigningKey(
        _ key: ConnectionSignatureResolvingKey?, authenticated: Bool = false, lastSignCounter: UInt32? = nil,
        for client: ClientID
    ) {
        clients[client, default: ClientState()].signingKey = key
        clients[client, default: ClientState()].signingKeyAuthenticated = authenticated
        clients[client, default: ClientState()].lastSignCounter = lastSignCounter
    }

    /// The last SignCounter accepted from `client`.
    public func lastSignCounter(of client: ClientID) -> UInt32? { clients[client]?.lastSignCounter }

    /// `client`'s Client Characteristic Configuration of the characteristic whose value is at
    /// `valueHandle` (empty when it has none).
    public func clientConfiguration(ofValue valueHandle: UInt16, for client: ClientID)
        -> ClientCharacteristicConfiguration
    {
        guard let handle = database.clientConfigurationHandle(ofValue: valueHandle),
            let attribute = database.attribute(at: handle)
        else { return [] }
        let value = currentValue(attribute, clients[client] ?? ClientState())
        return ClientCharacteristicConfiguration(
            rawValue: UInt16(value.first ?? 0) | UInt16(value.dropFirst().first ?? 0) << 8)
    }

    /// The events since the last call, in order (at most `configuration.eventLimit`: the
    /// newest).
    public mutating func takeEvents() -> [Event] {
        defer { events = [] }
        return events
    }

    mutating func record(_ event: Event) {
        if events.count >= max(1, configuration.eventLimit) {
            events.removeFirst(events.count - max(1, configuration.eventLimit) + 1)
        }
        events.append(event)
    }

    // MARK: Requests

    /// Answers one PDU from `client`: a request gets its response or an Error Response; a
    /// command, or a PDU a server does not take (responses, notifications), gets `nil`.
    public mutating func respond(to pdu: ATTPDU, from client: ClientID) -> ATTPDU? {
        if clients[client] == nil { clients[client] = ClientState() }
        // A PDU longer than the client's ATT_MTU is invalid (Vol 3 Part F §3.2.8): a request gets
        // Invalid PDU, a command is ignored. (The bearer refuses it first when there is one; this
        // keeps the sans-I/O server right when it is driven directly.)
        if pdu.encodedLength > clients[client]?.mtu ?? ATTPDU.defaultLEMTU {
            guard pdu.opcode.kind == .request else { return nil }
            return error(pdu.opcode, 0x0000, .invalidPDU)
        }
        if let refusal = pdu.validate() { return .errorResponse(refusal) }
        guard checkChangeAware(pdu, client) else {
            guard pdu.opcode.kind == .request else { return nil }
            return error(pdu.opcode, 0x0000, .databaseOutOfSync)
        }
        switch pdu {
        case .exchangeMTURequest(let request):
            let ours = max(ATTPDU.defaultLEMTU, min(configuration.rxMTU, 0xFFFF))
            setMTU(min(ours, Int(request.clientRxMTU)), for: client)
            return .exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: UInt16(ours)))
        case .findInformationRequest(let request): return findInformation(request, client)
        case .findByTypeValueRequest(let request): return findByTypeValue(request, client)
        case .readByTypeRequest(let request): return readByType(request, client)
        case .readByGroupTypeRequest(let request): return readByGroupType(request, client)
        case .readRequest(let request): return read(request, client)
        case .readBlobRequest(let request): return readBlob(request, client)
        case .readMultipleRequest(let request): return readMultiple(request, client)
        case .readMultipleVariableRequest(let request): return readMultipleVariable(request, client)
        case .writeRequest(let request): return write(request, client)
        case .writeCommand(let command):
            writeCommand(command, client)
            return nil
        case .signedWriteCommand(let command):
            signedWrite(command, client)
            return nil
        case .prepareWriteRequest(let request): return prepareWrite(request, client)
        case .executeWriteRequest(let request): return executeWrite(request, client)
        case .unknown:
            // validate() answered an unknown request; an unknown command is ignored (§3.4.9).
            return nil
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
            .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse, .readByGroupTypeResponse,
            .writeResponse, .prepareWriteResponse, .executeWriteResponse, .handleValueNotification,
            .handleValueIndication, .handleValueConfirmation, .readMultipleVariableResponse,
            .multipleHandleValueNotification:
            return nil
        }
    }

    // MARK: Robust caching

    /// Whether `client` may be served (Vol 3 Part G §2.5.2.1). A change-unaware client with
    /// robust caching gets Database Out Of Sync once; the next request (or a Read By Type of
    /// the Database Hash) makes it change-aware again. Commands from it are ignored until then.
    private mutating func checkChangeAware(_ pdu: ATTPDU, _ client: ClientID) -> Bool {
        guard let state = clients[client], !state.changeAware else { return true }
        if case .readByTypeRequest(let request) = pdu, request.attributeType == GATTUUID.databaseHash {
            makeChangeAware(client)
            return true
        }
        guard pdu.opcode.kind == .request, pdu.opcode != .exchangeMTURequest else {
            return pdu.opcode.kind != .command
        }
        if state.outOfSyncSent {
            makeChangeAware(client)
            return true
        }
        clients[client]?.outOfSyncSent = true
        return false
    }

    mutating func makeChangeAware(_ client: ClientID) {
        clients[client]?.changeAware = true
        clients[client]?.outOfSyncSent = false
    }

    // MARK: Helpers

    func error(_ opcode: ATTOpcode, _ handle: UInt16, _ code: ATTErrorCode) -> ATTPDU {
        .errorResponse(ErrorResponse(requestOpcode: opcode, handle: handle, errorCode: code))
    }

    func state(_ client: ClientID) -> ClientState { clients[client] ?? ClientState() }

    /// The value `client` sees at `attribute`: its own configuration for a Client
    /// Characteristic Configuration descriptor and Client Supported Features.
    func currentValue(_ attribute: ServerAttribute, _ client: ClientState) -> [UInt8] {
        if attribute.isClientConfiguration, let value = client.clientConfigurations[attribute.handle] {
            return [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
        }
        if attribute.kind == .characteristicValue, attribute.type == GATTUUID.clientSupportedFeatures,
            let value = client.supportedFeatures
        {
            return value
        }
        return attribute.value
    }
}
