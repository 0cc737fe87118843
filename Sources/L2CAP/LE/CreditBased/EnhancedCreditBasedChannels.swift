import Bluetooth

/// The enhanced credit-based flow control channels of one LE connection, as a sans-I/O state
/// machine: opening up to five at once (L2CAP_CREDIT_BASED_CONNECTION_REQ/RSP) as initiator and
/// as acceptor for registered SPSMs, reconfiguring them (L2CAP_CREDIT_BASED_RECONFIGURE_REQ/RSP),
/// closing them (L2CAP_DISCONNECTION_REQ/RSP), SDUs cut into K-frames sent only with the peer's
/// credits (L2CAP_FLOW_CONTROL_CREDIT_IND), K-frames reassembled into SDUs with our credits
/// given back as they are used.
///
/// What the peer does wrong closes the channel it did it on, as §3.4.3 and §10.2 require: a
/// K-frame without a credit, over our MPS, an SDU over our MTU or longer than its SDU Length,
/// credits above 65535. Its signaling requests are answered with the result that names the fault.
///
/// The caller (``LEL2CAPConnection``) hands over the signaling packets that concern these channels
/// (``handles(_:)``) and the frames on dynamic CIDs, and gives identifiers for our requests.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §3.4.3 (K-frames), §4.6, §4.7, §4.24–§4.28, §10.2
public struct EnhancedCreditBasedChannels: Sendable {
    /// The smallest MTU and MPS of an enhanced credit-based channel (§4.25).
    public static let minimumMTU: UInt16 = 64
    public static let minimumMPS: UInt16 = 64
    /// The dynamic CIDs of LE-U (§2.1).
    public static let dynamicCIDs: ClosedRange<UInt16> = 0x0040...0x007F
    /// Octets of the SDU Length field in the first K-frame of an SDU.
    static let sduLengthSize = 2

    /// What this side offers on the channels it opens or accepts.
    public struct Configuration: Hashable, Sendable {
        /// Our receive MTU: the largest SDU we take.
        public var mtu: UInt16
        /// Our receive MPS: the largest K-frame payload we take.
        public var mps: UInt16
        /// Credits given at opening, and the level they are brought back to.
        public var initialCredits: UInt16
        /// SDUs waiting for credits per channel before `send` refuses more.
        public var maximumQueuedSDUs: Int
        /// The SPSMs a peer may open channels on.
        public var servers: [UInt16: Server]

        public init(
            mtu: UInt16 = 517, mps: UInt16 = 247, initialCredits: UInt16 = 10, maximumQueuedSDUs: Int = 64,
            servers: [UInt16: Server] = [:]
        ) {
            self.mtu = mtu
            self.mps = mps
            self.initialCredits = initialCredits
            self.maximumQueuedSDUs = maximumQueuedSDUs
            self.servers = servers
        }
    }

    /// An SPSM we accept channels on.
    public struct Server: Hashable, Sendable {
        /// Refuse (Insufficient Encryption) while the link is not encrypted (EATT, Vol 3 Part G §5.4).
        public var requiresEncryption: Bool
        /// How many channels of this SPSM a peer may have open at once.
        public var maximumChannels: Int

        public init(requiresEncryption: Bool, maximumChannels: Int = 5) {
            self.requiresEncryption = requiresEncryption
            self.maximumChannels = maximumChannels
        }
    }

    /// One open channel.
    public struct Channel: Hashable, Sendable, CustomStringConvertible {
        public let spsm: UInt16
        public let localCID: UInt16
        public let remoteCID: UInt16
        /// The peer's MTU and MPS: the largest SDU and K-frame payload we may send.
        public internal(set) var remoteMTU: UInt16
        public internal(set) var remoteMPS: UInt16
        /// Our MTU and MPS on this channel.
        public internal(set) var localMTU: UInt16
        public internal(set) var localMPS: UInt16
        /// Credits the peer gave us, not yet used (each K-frame sent takes one).
        public internal(set) var txCredits: Int
        /// Credits we gave the peer, not yet used.
        public internal(set) var rxCredits: Int
        /// Whether we asked for it (else the peer did).
        public let opener: Opener

        public enum Opener: Hashable, Sendable { case local, remote }

        public var description: String {
            "channel 0x\(String(localCID, radix: 16)) ↔ 0x\(String(remoteCID, radix: 16)) (SPSM 0x\(String(spsm, radix: 16)), "
                + "MTU \(remoteMTU), MPS \(remoteMPS), \(txCredits) credits)"
        }
    }

    /// Why a channel closed.
    public enum CloseReason: Hashable, Sendable, CustomStringConvertible {
        /// We asked (L2CAP_DISCONNECTION_REQ answered).
        case local
        /// The peer asked.
        case remote
        /// The peer broke the rules on it; we disconnected it.
        case violation(String)
        /// The peer did not answer our Disconnection Request in time.
        case unanswered

        public var description: String {
            switch self {
            case .local: "closed by us"
            case .remote: "closed by the peer"
            case .violation(let why): "closed: \(why)"
            case .unanswered: "closed (no answer to our Disconnection Request)"
            }
        }
    }

    public enum Action: Hashable, Sendable {
        /// A frame to transmit: a C-frame on CID 0x0005 or a K-frame on a dynamic CID.
        case send(L2CAPBasicFrame)
        /// Our request `identifier` for `requested` channels on `spsm` was answered (or given up):
        /// the channels opened (possibly fewer, possibly none) and the result.
        case opened(identifier: UInt8, spsm: UInt16, requested: Int, channels: [Channel], result: CreditBasedConnectionResult)
        /// The peer opened a channel on a registered SPSM.
        case accepted(Channel)
        /// A whole SDU arrived on the channel with this local CID.
        case sdu(localCID: UInt16, [UInt8])
        /// A channel closed; what was queued on it is dropped.
        case closed(localCID: UInt16, CloseReason)
        /// The peer changed its MTU/MPS on these channels (or answered our reconfiguration).
        case reconfigured(localCIDs: [UInt16], result: CreditBasedReconfigureResult)
        /// Our request `identifier` and the peer's met (Vol 3, Part G, §5.4): each refused some of
        /// the other's channels for want of resources while its own request was out. Comes just
        /// before that request's `.opened`; the central may retry the `missing` channels at once,
        /// the peripheral after a wait.
        case collision(identifier: UInt8, spsm: UInt16, missing: Int)
        /// Something the peer sent that was refused or ignored, for the log.
        case report(String)
    }

    private struct State {
        var channel: Channel
        /// K-frames waiting for credits, in order (SDUs already cut), each marked when it starts an SDU.
        var pending: [(payload: [UInt8], first: Bool)] = []
        var pendingSDUs = 0
        /// SDU being reassembled and its announced length.
        var partial: [UInt8] = []
        var expected: Int?
        /// Our Disconnection Request is on its way: nothing more is sent or delivered.
        var closing = false
    }

    private enum Request {
        case connect(spsm: UInt16, localCIDs: [UInt16])
        case disconnect(localCID: UInt16)
        case reconfigure(localCIDs: [UInt16], mtu: UInt16, mps: UInt16)
    }

    public var configuration: Configuration
    /// The link's encryption key size while it is encrypted (the host sets it), nil while not.
    public var encryptionKeySize: Int?
    /// How many K-frames may go out now (the room left in the connection's outgoing queue; the
    /// caller sets it before each call): frames beyond wait here, with their credits, for
    /// ``pumpAll(into:)``.
    public var transmitRoom = Int.max
    private var channels: [UInt16: State] = [:]
    private var requests: [UInt8: Request] = [:]
    /// The last identifier this side used (1…255, never 0).
    private var lastIdentifier: UInt8 = 0
    /// CIDs set aside for a request not answered yet.
    private var reserved: Set<UInt16> = []
    /// Our connect requests during which we refused the peer's channels on the same SPSM for
    /// want of resources: a refusal of ours for the same reason makes a collision.
    private var collisionSuspects: Set<UInt8> = []

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The open channels, by local CID.
    public var openChannels: [Channel] { channels.values.filter { !$0.closing }.map(\.channel).sorted { $0.localCID < $1.localCID } }

    public func channel(_ localCID: UInt16) -> Channel? { channels[localCID]?.channel }

    /// A fresh identifier for a request or indication of this side: the next after the last,
    /// never 0, never one a request of ours still waits on (§4).
    public mutating func nextIdentifier() -> UInt8 {
        repeat {
            lastIdentifier = lastIdentifier == 255 ? 1 : lastIdentifier + 1
        } while requests[lastIdentifier] != nil
        return lastIdentifier
    }

    /// Whether a request of ours with this identifier waits for its answer.
    public func isPending(_ identifier: UInt8) -> Bool { requests[identifier] != nil }

    /// Whether `packet` is ours to handle: a credit-based request, a response to one of our
    /// requests, a credit indication or a disconnection for one of our channels.
    public func handles(_ packet: L2CAPSignalingPacket) -> Bool {
        switch packet.code {
        case .creditBasedConnectionRequest, .creditBasedReconfigureRequest: return true
        case .creditBasedConnectionResponse, .creditBasedReconfigureResponse, .disconnectionResponse, .commandReject:
            return requests[packet.identifier] != nil
        case .flowControlCreditIndication:
            guard case .flowControlCreditIndication(let indication)? = try? packet.command() else { return false }
            return channels.values.contains { $0.channel.remoteCID == indication.cid }
        case .disconnectionRequest:
            guard case .disconnectionRequest(let request)? = try? packet.command() else { return false }
            return channels[request.destinationCID] != nil
        default: return false
        }
    }

    // MARK: - Our requests

    /// Asks to open `count` (1…5) channels on `spsm`; the answer comes as `.opened`.
    /// - Throws: `.invalidArgument` for a count outside 1…5 or when no CID is free.
    @discardableResult
    public mutating func connect(spsm: UInt16, count: Int, into actions: inout [Action]) throws(L2CAPError) -> UInt8 {
        let context = "L2CAP_CREDIT_BASED_CONNECTION_REQ"
        guard (1...5).contains(count) else { throw L2CAPError.invalidArgument(context: context, reason: "\(count) channels, 1 to 5") }
        let free = Self.dynamicCIDs.filter { channels[$0] == nil && !reserved.contains($0) }.prefix(count)
        guard free.count == count else { throw L2CAPError.invalidArgument(context: context, reason: "no free dynamic CID") }
        let cids = Array(free)
        let request = CreditBasedConnectionRequest(
            spsm: spsm, mtu: configuration.mtu, mps: configuration.mps, initialCredits: configuration.initialCredits,
            sourceCIDs: cids)
        let identifier = nextIdentifier()
        try signal(.creditBasedConnectionRequest(request), identifier: identifier, into: &actions)
        reserved.formUnion(cids)
        requests[identifier] = .connect(spsm: spsm, localCIDs: cids)
        return identifier
    }

    /// Closes a channel: L2CAP_DISCONNECTION_REQ; `.closed(.local)` once answered (or
    /// ``abandon(_:into:)`` when it never is). Nothing more is sent or delivered on it.
    @discardableResult
    public mutating func disconnect(localCID: UInt16, into actions: inout [Action]) throws(L2CAPError) -> UInt8 {
        guard var state = channels[localCID], !state.closing else {
            throw L2CAPError.invalidArgument(context: "L2CAP_DISCONNECTION_REQ", reason: "no open channel 0x\(String(localCID, radix: 16))")
        }
        let identifier = nextIdentifier()
        try signal(
            .disconnectionRequest(DisconnectionRequest(destinationCID: state.channel.remoteCID, sourceCID: localCID)),
            identifier: identifier, into: &actions)
        state.closing = true
        state.pending.removeAll()
        channels[localCID] = state
        requests[identifier] = .disconnect(localCID: localCID)
        return identifier
    }

    /// Raises our MTU/MPS on channels (L2CAP_CREDIT_BASED_RECONFIGURE_REQ); the answer comes as
    /// `.reconfigured`. Neither may shrink (§4.27). Returns the request's identifier.
    @discardableResult
    public mutating func reconfigure(
        localCIDs: [UInt16], mtu: UInt16, mps: UInt16, into actions: inout [Action]
    ) throws(L2CAPError) -> UInt8 {
        let context = "L2CAP_CREDIT_BASED_RECONFIGURE_REQ"
        guard (1...5).contains(localCIDs.count), localCIDs.allSatisfy({ channels[$0].map { !$0.closing } ?? false }) else {
            throw L2CAPError.invalidArgument(context: context, reason: "1 to 5 open channels")
        }
        for cid in localCIDs {
            let channel = channels[cid]!.channel
            guard mtu >= channel.localMTU, mps >= Self.minimumMPS else {
                throw L2CAPError.invalidArgument(context: context, reason: "the MTU may not shrink, the MPS is at least 64")
            }
            if localCIDs.count > 1, mps < channel.localMPS {
                throw L2CAPError.invalidArgument(context: context, reason: "the MPS of several channels may not shrink")
            }
        }
        let identifier = nextIdentifier()
        try signal(
            .creditBasedReconfigureRequest(CreditBasedReconfigureRequest(mtu: mtu, mps: mps, destinationCIDs: localCIDs)),
            identifier: identifier, into: &actions)
        requests[identifier] = .reconfigure(localCIDs: localCIDs, mtu: mtu, mps: mps)
        return identifier
    }

    /// Our request with `identifier` was never answered (the RTX timer ran out): a connection is
    /// given up (`.opened` with no channel), a disconnection ends the channel anyway.
    public mutating func abandon(_ identifier: UInt8, into actions: inout [Action]) {
        guard let request = requests.removeValue(forKey: identifier) else { return }
        switch request {
        case .connect(let spsm, let cids):
            reserved.subtract(cids)
            collisionSuspects.remove(identifier)
            actions.append(.opened(identifier: identifier, spsm: spsm, requested: cids.count, channels: [], result: .noResourcesAvailable))
        case .disconnect(let cid):
            if channels.removeValue(forKey: cid) != nil { actions.append(.closed(localCID: cid, .unanswered)) }
        case .reconfigure(let cids, _, _):
            actions.append(.reconfigured(localCIDs: cids, result: .unacceptableParameters))
        }
    }

    // MARK: - Sending

    /// Cuts `sdu` into K-frames and sends those the peer's credits allow; the rest wait for credits.
    /// - Throws: `.channelClosed` for no such open channel, `.invalidArgument` for an SDU over the
    ///   peer's MTU or empty, `.queueFull` when `maximumQueuedSDUs` wait already.
    public mutating func send(_ sdu: [UInt8], localCID: UInt16, into actions: inout [Action]) throws(L2CAPError) {
        guard var state = channels[localCID], !state.closing else { throw L2CAPError.channelClosed(handle: localCID) }
        let channel = state.channel
        guard !sdu.isEmpty, sdu.count <= Int(channel.remoteMTU) else {
            throw L2CAPError.invalidArgument(context: "K-frame SDU", reason: "\(sdu.count) octets, 1 to the peer's MTU \(channel.remoteMTU)")
        }
        guard state.pendingSDUs < configuration.maximumQueuedSDUs else {
            throw L2CAPError.queueFull(handle: localCID, limit: configuration.maximumQueuedSDUs)
        }
        let mps = Int(channel.remoteMPS)
        // The first K-frame carries the SDU Length within the MPS (§3.4.3).
        var offset = 0
        var first = true
        while offset < sdu.count || first {
            let room = first ? mps - Self.sduLengthSize : mps
            let take = min(room, sdu.count - offset)
            var payload: [UInt8] = []
            payload.reserveCapacity(take + (first ? Self.sduLengthSize : 0))
            if first {
                payload.append(UInt8(sdu.count & 0xFF))
                payload.append(UInt8(sdu.count >> 8))
            }
            payload.append(contentsOf: sdu[offset..<(offset + take)])
            state.pending.append((payload, first))
            offset += take
            first = false
        }
        state.pendingSDUs += 1
        channels[localCID] = state
        pump(localCID, into: &actions)
    }

    /// K-frames waiting for credits (or room) on a channel.
    public func queuedFrames(_ localCID: UInt16) -> Int { channels[localCID]?.pending.count ?? 0 }

    /// Whether any channel has K-frames waiting.
    public var hasQueuedFrames: Bool { channels.values.contains { !$0.pending.isEmpty } }

    /// Sends what waits on every channel, as credits and ``transmitRoom`` allow (the outgoing
    /// queue drained).
    public mutating func pumpAll(into actions: inout [Action]) {
        for cid in channels.keys.sorted() where !(channels[cid]?.pending.isEmpty ?? true) {
            pump(cid, into: &actions)
        }
    }

    private mutating func pump(_ localCID: UInt16, into actions: inout [Action]) {
        guard var state = channels[localCID] else { return }
        var sent = 0
        while sent < state.pending.count, state.channel.txCredits > 0, transmitRoom > 0 {
            transmitRoom -= 1
            let frame = state.pending[sent]
            if frame.first { state.pendingSDUs -= 1 }
            actions.append(.send(L2CAPBasicFrame(channelID: state.channel.remoteCID, payload: frame.payload[...])))
            state.channel.txCredits -= 1
            sent += 1
        }
        if sent > 0 { state.pending.removeFirst(sent) }
        channels[localCID] = state
    }

    // MARK: - Receiving

    /// One signaling packet ``handles(_:)`` said is ours.
    public mutating func receive(_ packet: L2CAPSignalingPacket, into actions: inout [Action]) {
        let command: LESignalingCommand
        do {
            command = try packet.command()
        } catch {
            actions.append(.report("malformed \(packet.code): \(error)"))
            return
        }
        switch command {
        case .creditBasedConnectionRequest(let request):
            accept(request, identifier: packet.identifier, into: &actions)
        case .creditBasedConnectionResponse(let response):
            guard case .connect(let spsm, let cids)? = requests.removeValue(forKey: packet.identifier) else { return }
            opened(response, identifier: packet.identifier, spsm: spsm, localCIDs: cids, into: &actions)
        case .creditBasedReconfigureRequest(let request):
            reconfigured(request, identifier: packet.identifier, into: &actions)
        case .creditBasedReconfigureResponse(let response):
            guard case .reconfigure(let cids, let mtu, let mps)? = requests.removeValue(forKey: packet.identifier) else { return }
            if response.result == .successful {
                for cid in cids {
                    channels[cid]?.channel.localMTU = mtu
                    channels[cid]?.channel.localMPS = mps
                }
            }
            actions.append(.reconfigured(localCIDs: cids, result: response.result))
        case .flowControlCreditIndication(let indication):
            credited(indication, into: &actions)
        case .disconnectionRequest(let request):
            guard channels.removeValue(forKey: request.destinationCID) != nil else { return }
            reply(
                .disconnectionResponse(DisconnectionResponse(destinationCID: request.destinationCID, sourceCID: request.sourceCID)),
                identifier: packet.identifier, into: &actions)
            actions.append(.closed(localCID: request.destinationCID, .remote))
        case .disconnectionResponse:
            guard case .disconnect(let cid)? = requests.removeValue(forKey: packet.identifier) else { return }
            if channels.removeValue(forKey: cid) != nil { actions.append(.closed(localCID: cid, .local)) }
        case .commandReject(let reject):
            actions.append(.report("the peer rejected our request \(packet.identifier): \(reject)"))
            abandon(packet.identifier, into: &actions)
        default:
            return
        }
    }

    /// One K-frame on a dynamic CID. Returns false when no channel has that CID (the caller
    /// reports it).
    @discardableResult
    public mutating func receive(localCID: UInt16, payload: ArraySlice<UInt8>, into actions: inout [Action]) -> Bool {
        guard var state = channels[localCID] else { return false }
        if state.closing { return true }
        guard state.channel.rxCredits > 0 else {
            violate(localCID, "a K-frame without a credit", into: &actions)
            return true
        }
        state.channel.rxCredits -= 1
        guard payload.count <= Int(state.channel.localMPS) else {
            violate(localCID, "a K-frame of \(payload.count) octets over our MPS \(state.channel.localMPS)", into: &actions)
            return true
        }
        if let expected = state.expected {
            state.partial.append(contentsOf: payload)
            guard state.partial.count <= expected else {
                violate(localCID, "an SDU longer than its SDU Length \(expected)", into: &actions)
                return true
            }
        } else {
            guard payload.count >= Self.sduLengthSize else {
                violate(localCID, "a first K-frame without its SDU Length", into: &actions)
                return true
            }
            let length = Int(payload[payload.startIndex]) | Int(payload[payload.startIndex + 1]) << 8
            guard length <= Int(state.channel.localMTU) else {
                violate(localCID, "an SDU of \(length) octets over our MTU \(state.channel.localMTU)", into: &actions)
                return true
            }
            state.expected = length
            state.partial = Array(payload.dropFirst(Self.sduLengthSize))
            guard state.partial.count <= length else {
                violate(localCID, "an SDU longer than its SDU Length \(length)", into: &actions)
                return true
            }
        }
        if let expected = state.expected, state.partial.count == expected {
            actions.append(.sdu(localCID: localCID, state.partial))
            state.partial = []
            state.expected = nil
        }
        // Credits back once half are used: the peer never stalls on a channel we read.
        let initial = Int(configuration.initialCredits)
        if state.channel.rxCredits <= initial / 2 {
            let credits = initial - state.channel.rxCredits
            state.channel.rxCredits = initial
            let identifier = nextIdentifier()
            reply(
                .flowControlCreditIndication(FlowControlCreditIndication(cid: localCID, credits: UInt16(credits))),
                identifier: identifier, into: &actions)
        }
        channels[localCID] = state
        return true
    }

    /// The connection is gone: every channel ends without signaling.
    public mutating func reset() {
        channels.removeAll()
        requests.removeAll()
        reserved.removeAll()
        collisionSuspects.removeAll()
    }

    // MARK: - Internals

    private mutating func accept(_ request: CreditBasedConnectionRequest, identifier: UInt8, into actions: inout [Action]) {
        func refuse(_ result: CreditBasedConnectionResult, _ why: String) {
            reply(.creditBasedConnectionResponse(.refusingAll(request, result: result)), identifier: identifier, into: &actions)
            actions.append(.report("refused \(request.sourceCIDs.count) channel(s) on SPSM 0x\(String(request.spsm, radix: 16)): \(why)"))
        }
        guard let server = configuration.servers[request.spsm] else {
            refuse(.spsmNotSupported, "no server")
            return
        }
        if server.requiresEncryption, encryptionKeySize == nil {
            refuse(.insufficientEncryption, "the link is not encrypted")
            return
        }
        guard request.mtu >= Self.minimumMTU, request.mps >= Self.minimumMPS else {
            refuse(.unacceptableParameters, "MTU \(request.mtu) or MPS \(request.mps) under 64")
            return
        }
        var destinations: [UInt16] = []
        var result = CreditBasedConnectionResult.successful
        // The server's channels count both ways, with those our pending requests set aside.
        let pendingOurs = requests.values.reduce(0) { count, pending in
            if case .connect(let spsm, let cids) = pending, spsm == request.spsm { return count + cids.count }
            return count
        }
        let open = channels.values.filter { $0.channel.spsm == request.spsm }.count + pendingOurs
        var free = Self.dynamicCIDs.filter { channels[$0] == nil && !reserved.contains($0) }[...]
        for (index, source) in request.sourceCIDs.enumerated() {
            if !Self.dynamicCIDs.contains(source) {
                destinations.append(0)
                result = .invalidSourceCID
            } else if channels.values.contains(where: { $0.channel.remoteCID == source }) {
                destinations.append(0)
                result = .sourceCIDAlreadyAllocated
            } else if open + index >= server.maximumChannels || free.isEmpty {
                destinations.append(0)
                if result == .successful { result = .noResourcesAvailable }
            } else {
                let cid = free.removeFirst()
                destinations.append(cid)
                let channel = Channel(
                    spsm: request.spsm, localCID: cid, remoteCID: source, remoteMTU: request.mtu, remoteMPS: request.mps,
                    localMTU: configuration.mtu, localMPS: configuration.mps, txCredits: Int(request.initialCredits),
                    rxCredits: Int(configuration.initialCredits), opener: .remote)
                channels[cid] = State(channel: channel)
            }
        }
        if result == .noResourcesAvailable {
            for (identifier, pending) in requests {
                if case .connect(let spsm, _) = pending, spsm == request.spsm { collisionSuspects.insert(identifier) }
            }
        }
        let response = CreditBasedConnectionResponse(
            mtu: configuration.mtu, mps: configuration.mps, initialCredits: configuration.initialCredits, result: result,
            destinationCIDs: destinations)
        reply(.creditBasedConnectionResponse(response), identifier: identifier, into: &actions)
        for cid in destinations where cid != 0 {
            if let channel = channels[cid]?.channel { actions.append(.accepted(channel)) }
        }
    }

    private mutating func opened(
        _ response: CreditBasedConnectionResponse, identifier: UInt8, spsm: UInt16, localCIDs: [UInt16], into actions: inout [Action]
    ) {
        reserved.subtract(localCIDs)
        var opened: [Channel] = []
        // A response naming CIDs while refusing all, or with fewer entries than asked: only
        // the entries that carry a CID in the dynamic range, not already in use, count.
        let parametersValid = response.mtu >= Self.minimumMTU && response.mps >= Self.minimumMPS
        for (index, local) in localCIDs.enumerated() where index < response.destinationCIDs.count {
            let remote = response.destinationCIDs[index]
            guard remote != 0 else { continue }
            guard parametersValid, Self.dynamicCIDs.contains(remote),
                !channels.values.contains(where: { $0.channel.remoteCID == remote })
            else {
                actions.append(.report("the peer's response gave CID 0x\(String(remote, radix: 16)) with MTU \(response.mtu), MPS \(response.mps): refused"))
                continue
            }
            let channel = Channel(
                spsm: spsm, localCID: local, remoteCID: remote, remoteMTU: response.mtu, remoteMPS: response.mps,
                localMTU: configuration.mtu, localMPS: configuration.mps, txCredits: Int(response.initialCredits),
                rxCredits: Int(configuration.initialCredits), opener: .local)
            channels[local] = State(channel: channel)
            opened.append(channel)
        }
        if collisionSuspects.remove(identifier) != nil, response.result == .noResourcesAvailable, opened.count < localCIDs.count {
            actions.append(.collision(identifier: identifier, spsm: spsm, missing: localCIDs.count - opened.count))
        }
        actions.append(.opened(identifier: identifier, spsm: spsm, requested: localCIDs.count, channels: opened, result: response.result))
    }

    private mutating func reconfigured(_ request: CreditBasedReconfigureRequest, identifier: UInt8, into actions: inout [Action]) {
        func answer(_ result: CreditBasedReconfigureResult) {
            reply(.creditBasedReconfigureResponse(CreditBasedReconfigureResponse(result: result)), identifier: identifier, into: &actions)
        }
        guard request.destinationCIDs.allSatisfy({ cid in channels.values.contains { $0.channel.remoteCID == cid } }) else {
            answer(.invalidDestinationCID)
            return
        }
        let locals = request.destinationCIDs.compactMap { cid in channels.values.first { $0.channel.remoteCID == cid }?.channel.localCID }
        guard request.mtu >= Self.minimumMTU, request.mps >= Self.minimumMPS else {
            answer(.unacceptableParameters)
            return
        }
        for cid in locals {
            let channel = channels[cid]!.channel
            if request.mtu < channel.remoteMTU {
                answer(.reductionInMTUNotAllowed)
                return
            }
            if locals.count > 1, request.mps < channel.remoteMPS {
                answer(.reductionInMPSNotAllowed)
                return
            }
        }
        for cid in locals {
            channels[cid]?.channel.remoteMTU = request.mtu
            channels[cid]?.channel.remoteMPS = request.mps
        }
        answer(.successful)
        actions.append(.reconfigured(localCIDs: locals, result: .successful))
    }

    private mutating func credited(_ indication: FlowControlCreditIndication, into actions: inout [Action]) {
        guard let cid = channels.first(where: { $0.value.channel.remoteCID == indication.cid })?.key else { return }
        let total = channels[cid]!.channel.txCredits + Int(indication.credits)
        guard total <= 65_535 else {
            violate(cid, "credits above 65535", into: &actions)
            return
        }
        channels[cid]?.channel.txCredits = total
        pump(cid, into: &actions)
    }

    /// The peer broke the rules on a channel: it is disconnected (§10.2): closed here at once,
    /// our Disconnection Request sent (its answer, if any, matched and dropped).
    private mutating func violate(_ localCID: UInt16, _ why: String, into actions: inout [Action]) {
        guard let state = channels.removeValue(forKey: localCID) else { return }
        actions.append(.closed(localCID: localCID, .violation(why)))
        let identifier = nextIdentifier()
        requests[identifier] = .disconnect(localCID: localCID)
        reply(
            .disconnectionRequest(DisconnectionRequest(destinationCID: state.channel.remoteCID, sourceCID: localCID)),
            identifier: identifier, into: &actions)
    }

    private func signal(_ command: LESignalingCommand, identifier: UInt8, into actions: inout [Action]) throws(L2CAPError) {
        let packet = try L2CAPSignalingPacket(identifier: identifier, command: command)
        actions.append(.send(L2CAPBasicFrame(channelID: L2CAPBasicFrame.leSignalingCID, payload: try packet.encode()[...])))
    }

    /// A response (with the request's identifier), an indication or a request that cannot fail to encode.
    private func reply(_ command: LESignalingCommand, identifier: UInt8, into actions: inout [Action]) {
        actions.append(.send(Self.signalingFrame(command, identifier: identifier)))
    }

    static func signalingFrame(_ command: LESignalingCommand, identifier: UInt8) -> L2CAPBasicFrame {
        var writer = ByteWriter(capacity: command.encodedLength)
        do { try command.write(to: &writer) } catch {
            preconditionFailure("\(command) cannot be encoded: \(error)")
        }
        var bytes = [command.code.rawValue, identifier, UInt8(writer.bytes.count & 0xFF), UInt8(writer.bytes.count >> 8)]
        bytes.append(contentsOf: writer.bytes)
        return L2CAPBasicFrame(channelID: L2CAPBasicFrame.leSignalingCID, payload: bytes[...])
    }
}
