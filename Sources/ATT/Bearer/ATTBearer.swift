/// The ATT bearer as a sans-I/O state machine, both roles at once: it sends our requests,
/// commands, notifications and indications, and receives the peer's (ATT is symmetric; one
/// bearer may be client and server).
///
/// Inputs are the mutating methods (`send(request:)`, `receive(_:)`, `timerFired(_:)`,
/// `indicationDelivered()`, `respond(_:)`, `close(reason:)`); outputs are ``Action`` values the
/// driver (``ATTConnection``) performs in order. No I/O, no clock: timers are actions too.
///
/// Rules (Vol 3 Part F §3.3):
/// - One outstanding request and one outstanding indication per bearer. Further ones wait in
///   FIFO queues bounded by ``Configuration/requestQueueLimit`` and
///   ``Configuration/indicationQueueLimit``; a send into a full queue throws
///   `ATTError.requestInProgress`. The 30 s timer of a queued PDU starts when it is sent.
/// - Each response is matched to the outstanding request: a response of another kind, or an
///   Error Response naming another request opcode, fails that request with
///   `ATTError.protocolError`; a response with no request outstanding is reported
///   (``Action/reportError(_:)``) and dropped.
/// - A request or indication unanswered for 30 s fails with `ATTError.timeout`, and the bearer
///   closes: everything else fails with `ATTError.bearerClosed` and every later send throws
///   (§3.3.3: no more ATT PDUs on this bearer).
/// - Notifications and indications are delivered in arrival order; a received indication is
///   confirmed only when the driver reports, with ``indicationDelivered()``, that the
///   application has been handed it. An indication arriving while our confirmation of the
///   previous one is still due is delivered (and confirmed in turn) and reported.
/// - Every ``Action/reportError(_:)`` is a violation by the peer that the bearer tolerates:
///   ``ATTConnection`` hands each to its violation handler, so a tool can warn or fail.
/// - Every PDU we send is checked against ATT_MTU (thrown `ATTError.pduTooLarge`, never
///   truncated). Received PDUs longer than ATT_MTU are malformed: a request is answered with
///   Error Response Invalid PDU (0x04); a response fails the outstanding request; anything else
///   is reported and dropped.
/// - Incoming requests go to the server role (``Action/deliverRequest(_:)``) when
///   ``Configuration/acceptsRequests`` is set, after `ATTPDU.validate()` (a zero handle or an
///   inverted range is answered Invalid Handle by the bearer), and are answered Request Not
///   Supported otherwise,
///   as is every request opcode Core 5.4 does not define; unknown commands are ignored. A
///   request arriving before the previous one is answered breaks the sequential protocol
///   (§3.3.2) and closes the bearer, as BlueZ does.
/// - ATT_MTU exchange (§3.4.2): see ``exchangeMTU(clientRxMTU:)`` and the server side in
///   `receive(_:)`. ATT_MTU is set once per bearer by the first exchange whose two Rx MTUs are
///   both at least 23; it is min(client Rx MTU, server Rx MTU). A later Exchange MTU Request
///   from the peer (the spec lets a client send it only once) is still answered with our Rx
///   MTU, so the peer does not time out, but ATT_MTU no longer changes (Nordic's SoftDevice
///   refuses a second exchange locally; BlueZ answers every one).
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.3
public struct ATTBearer: Sendable {
    /// The LE default ATT_MTU.
    public static let defaultMTU = 23

    public struct Configuration: Hashable, Sendable {
        /// Our Rx MTU: offered in our Exchange MTU Request and in our Exchange MTU Response
        /// (the spec wants both the same). 23...65535.
        public var rxMTU: Int
        /// Requests waiting behind the outstanding one; a send beyond throws.
        public var requestQueueLimit: Int
        /// Indications waiting behind the outstanding one; a send beyond throws.
        public var indicationQueueLimit: Int
        /// The transaction timeout, 30 s by the spec (§3.3.3).
        public var transactionTimeout: Duration
        /// Whether a server role takes incoming requests and commands. When false, requests are
        /// answered Request Not Supported and commands are ignored.
        public var acceptsRequests: Bool
        /// An Enhanced ATT bearer (an L2CAP enhanced credit-based channel): ATT_MTU is this
        /// from the start — the smaller of the two L2CAP MTUs — and never exchanged: we send no
        /// Exchange MTU Request, and the peer's is answered Request Not Supported.
        /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.2.8, §3.4.2; Part G, §5.3.1
        public var enhancedMTU: Int?

        public init(
            rxMTU: Int = 517,
            requestQueueLimit: Int = 64,
            indicationQueueLimit: Int = 64,
            transactionTimeout: Duration = .seconds(30),
            acceptsRequests: Bool = false,
            enhancedMTU: Int? = nil
        ) {
            self.rxMTU = rxMTU
            self.requestQueueLimit = requestQueueLimit
            self.indicationQueueLimit = indicationQueueLimit
            self.transactionTimeout = transactionTimeout
            self.acceptsRequests = acceptsRequests
            self.enhancedMTU = enhancedMTU
        }
    }

    /// Names one of our requests or indications, from send to completion.
    public struct TransactionID: Hashable, Sendable, Comparable, CustomStringConvertible {
        public var rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
        public var description: String { "#\(rawValue)" }
    }

    /// The timers the bearer asks the driver to run.
    public enum Timer: Hashable, Sendable {
        /// The transaction timer of our outstanding request.
        case request(TransactionID)
        /// The transaction timer of our outstanding indication.
        case indication(TransactionID)
    }

    private enum State: Sendable {
        case open
        case closed(reason: String)
    }

    /// A request or indication of ours, encoded.
    struct Transaction: Sendable {
        var id: TransactionID
        var opcode: ATTOpcode
        var bytes: [UInt8]
    }

    private var state: State = .open
    var configuration: Configuration
    /// The current ATT_MTU.
    public private(set) var mtu: Int = ATTBearer.defaultMTU
    /// True once an exchange set ATT_MTU; it never changes afterwards.
    var mtuEstablished = false
    /// True once we sent (or queued) our Exchange MTU Request.
    var exchangeMTURequested = false
    private var lastID: UInt64 = 0

    var outstandingRequest: Transaction?
    var requestQueue: [Transaction] = []
    var outstandingIndication: Transaction?
    var indicationQueue: [Transaction] = []
    /// The opcode of the peer's request handed to the server role and not yet answered.
    var incomingRequest: ATTOpcode?
    /// Peer indications delivered to the driver whose confirmation is not sent yet.
    var unconfirmedIndications = 0

    /// A `configuration.rxMTU` outside 23...65535 is clamped into that range.
    public init(configuration: Configuration = Configuration()) {
        var configuration = configuration
        configuration.rxMTU = min(max(configuration.rxMTU, ATTBearer.defaultMTU), Int(UInt16.max))
        self.configuration = configuration
        if let enhanced = configuration.enhancedMTU {
            mtu = min(max(enhanced, ATTBearer.defaultMTU), Int(UInt16.max))
            mtuEstablished = true
            exchangeMTURequested = true
        }
    }

    /// Whether this is an Enhanced ATT bearer (``Configuration/enhancedMTU``).
    public var isEnhanced: Bool { configuration.enhancedMTU != nil }

    // MARK: State queries

    /// Whether the bearer still carries ATT PDUs.
    public var isOpen: Bool {
        if case .open = state { return true }
        return false
    }

    /// Why the bearer closed, nil while open.
    public var closeReason: String? {
        if case .closed(let reason) = state { return reason }
        return nil
    }

    /// Our Rx MTU (``Configuration/rxMTU``).
    public var rxMTU: Int { configuration.rxMTU }

    /// Whether incoming requests and commands go to a server role.
    public var acceptsRequests: Bool {
        get { configuration.acceptsRequests }
        set { configuration.acceptsRequests = newValue }
    }

    /// Our requests sent or queued and not completed.
    public var pendingRequestCount: Int { requestQueue.count + (outstandingRequest == nil ? 0 : 1) }
    /// Our indications sent or queued and not confirmed.
    public var pendingIndicationCount: Int { indicationQueue.count + (outstandingIndication == nil ? 0 : 1) }
    /// Requests of ours put on the wire so far, Exchange MTU included.
    public internal(set) var requestsSent = 0

    // MARK: Helpers shared by the extensions

    mutating func makeID() -> TransactionID {
        lastID += 1
        return TransactionID(rawValue: lastID)
    }

    /// Throws `bearerClosed` once the bearer is closed.
    func checkOpen() throws(ATTError) {
        if case .closed(let reason) = state { throw ATTError.bearerClosed(reason: reason) }
    }

    /// Encodes `pdu` within the current ATT_MTU, or throws.
    func encodeChecked(_ pdu: ATTPDU) throws(ATTError) -> [UInt8] {
        let bytes = try pdu.encode(mtu: mtu)
        guard bytes.count <= mtu else {
            throw ATTError.pduTooLarge(opcode: pdu.opcode, length: bytes.count, mtu: mtu)
        }
        return bytes
    }

    /// Sets ATT_MTU from an exchange, once per bearer.
    mutating func applyExchange(clientRxMTU: UInt16, serverRxMTU: UInt16) -> [Action] {
        guard !mtuEstablished else { return [] }
        guard clientRxMTU >= ATTBearer.defaultMTU, serverRxMTU >= ATTBearer.defaultMTU else {
            // §3.4.2.2: an Rx MTU below the default leaves ATT_MTU at the default.
            return []
        }
        mtuEstablished = true
        let negotiated = ExchangeMTURequest.negotiatedMTU(clientRxMTU: clientRxMTU, serverRxMTU: serverRxMTU)
        guard negotiated != mtu else { return [] }
        mtu = negotiated
        return [.mtuChanged(negotiated)]
    }

    /// Closes the bearer: fails everything pending with `bearerClosed(reason)`.
    mutating func shutDown(reason: String) -> [Action] {
        guard case .open = state else { return [] }
        state = .closed(reason: reason)
        let error = ATTError.bearerClosed(reason: reason)
        var actions: [Action] = []
        if let request = outstandingRequest {
            actions.append(.cancelTimer(.request(request.id)))
            actions.append(.failTransaction(request.id, error))
        }
        for request in requestQueue {
            actions.append(.failTransaction(request.id, error))
        }
        if let indication = outstandingIndication {
            actions.append(.cancelTimer(.indication(indication.id)))
            actions.append(.failTransaction(indication.id, error))
        }
        for indication in indicationQueue {
            actions.append(.failTransaction(indication.id, error))
        }
        outstandingRequest = nil
        requestQueue = []
        outstandingIndication = nil
        indicationQueue = []
        incomingRequest = nil
        unconfirmedIndications = 0
        actions.append(.close(reason: reason))
        return actions
    }
}
