import Bluetooth
import HCI

/// L2CAP on one LE connection in user space, as a sans-I/O state machine: received ACL data
/// packets go through the reassembler, and each B-frame is dispatched by CID — ATT (0x0004)
/// upward, LE signaling (0x0005) answered here, SMP (0x0006) by the Security Manager channel the
/// host supplies (``LESecurityManagerChannel``), anything else dropped and reported. Outgoing frames are returned as actions; fragmentation and credits are the
/// business of `ACLFlowControl`.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §2.1 (fixed channels), §3.1 (B-frame), §7.2
public struct LEL2CAPConnection: Sendable {
    public enum Action: Hashable, Sendable {
        /// An ATT PDU from the peer, for the bearer.
        case deliverATT([UInt8])
        /// An SMP PDU from the peer, for the host's Security Manager of this connection.
        case deliverSMP([UInt8])
        /// A frame to send to the peer (a signaling or SMP answer).
        case send(L2CAPBasicFrame)
        /// The host should issue HCI_LE_Connection_Update with these parameters (Interval
        /// Min/Max, Peripheral Latency as Max_Latency, Timeout Multiplier as Supervision_Timeout).
        case updateConnectionParameters(ConnectionParameterUpdateRequest)
        /// Our Connection Parameter Update Request was answered: accepted (0x0000), rejected
        /// (0x0001), or not understood (Command Reject: `accepted` false).
        case parameterRequestAnswered(accepted: Bool)
        /// What the enhanced credit-based channels did (their frames are `.send` already).
        case creditBased(EnhancedCreditBasedChannels.Action)
        /// Input that was dropped, ignored, refused or rejected.
        case report(LEL2CAPReport)
    }

    /// The identifier of our pending Connection Parameter Update Request.
    private var pendingParameterRequest: UInt8?
    /// The enhanced credit-based channels (EATT bearers) of this connection.
    public internal(set) var creditBased: EnhancedCreditBasedChannels

    /// A fresh signaling identifier (shared with the credit-based channels' requests).
    mutating func nextIdentifier() -> UInt8 {
        var identifier = creditBased.nextIdentifier()
        while identifier == pendingParameterRequest { identifier = creditBased.nextIdentifier() }
        return identifier
    }

    /// Whether a Connection Parameter Update Request of ours waits for its answer.
    public var hasPendingParameterRequest: Bool { pendingParameterRequest != nil }

    /// As peripheral, asks the central for new connection parameters (L2CAP Connection
    /// Parameter Update Request); the answer comes as `.parameterRequestAnswered`.
    /// - Throws: `.invalidArgument` as central (the central updates with HCI), for invalid
    ///   parameters, or while another such request waits.
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.20, §4.21
    public mutating func requestConnectionParameters(_ request: ConnectionParameterUpdateRequest) throws(L2CAPError) -> L2CAPBasicFrame {
        let context = "Connection Parameter Update Request"
        guard role == .peripheral else {
            throw L2CAPError.invalidArgument(context: context, reason: "only the peripheral sends it (the central uses LE Connection Update)")
        }
        if let why = request.invalidity { throw L2CAPError.invalidArgument(context: context, reason: why) }
        guard pendingParameterRequest == nil else {
            throw L2CAPError.invalidArgument(context: context, reason: "one is already waiting for its answer")
        }
        let identifier = nextIdentifier()
        let packet = try L2CAPSignalingPacket(identifier: identifier, command: .connectionParameterUpdateRequest(request))
        pendingParameterRequest = identifier
        return L2CAPBasicFrame(channelID: L2CAPBasicFrame.leSignalingCID, payload: try packet.encode()[...])
    }

    /// Forgets our pending parameter request (it timed out).
    public mutating func abandonParameterRequest() { pendingParameterRequest = nil }

    /// The answer to a request of ours, when `payload` is one (a response or Command Reject with
    /// its identifier); nil otherwise.
    private mutating func answerToOurRequest(_ payload: ArraySlice<UInt8>) -> Action? {
        guard let pending = pendingParameterRequest, payload.count >= 4,
            payload[payload.startIndex + 1] == pending,
            let packet = try? L2CAPSignalingPacket(bytes: payload)
        else { return nil }
        switch try? packet.command() {
        case .connectionParameterUpdateResponse(let response)?:
            pendingParameterRequest = nil
            return .parameterRequestAnswered(accepted: response.result == .accepted)
        case .commandReject?:
            pendingParameterRequest = nil
            return .parameterRequestAnswered(accepted: false)
        default:
            return nil
        }
    }

    public let handle: UInt16
    public let role: LERole
    private var reassembler: L2CAPReassembler
    private let signaling: LESignalingResponder
    private let securityManager: (any LESecurityManagerChannel)?
    /// The host runs a Security Manager on this connection (pairing): SMP goes up to it rather
    /// than to the shared responder.
    public var deliversSecurityManager = false

    /// `maximumFrameLength` bounds the L2CAP Length accepted from the peer (the largest ATT PDU
    /// is 517 octets; the default leaves room for any SDU up to the L2CAP maximum).
    public init(
        handle: UInt16, role: LERole, maximumFrameLength: Int = 65_535,
        signalingMTU: Int = LESignalingResponder.minimumSignalingMTU,
        securityManager: (any LESecurityManagerChannel)? = nil,
        parameterPolicy: ConnectionParameterRequestPolicy = .acceptValid,
        creditBased: EnhancedCreditBasedChannels.Configuration = .init()
    ) {
        self.creditBased = EnhancedCreditBasedChannels(configuration: creditBased)
        self.handle = handle
        self.securityManager = securityManager
        self.role = role
        self.reassembler = L2CAPReassembler(maximumLength: maximumFrameLength, maximumPartialFrames: 1)
        self.signaling = LESignalingResponder(role: role, signalingMTU: signalingMTU, parameterPolicy: parameterPolicy)
    }

    /// Whether a frame is partly received.
    public var hasPartialFrame: Bool { reassembler.partialFrameCount > 0 }

    /// Feeds one ACL data packet; appends what it led to.
    public mutating func receive(_ packet: ACLDataPacket, into actions: inout [Action]) {
        guard packet.handle == handle else {
            actions.append(.report(.otherHandle(packet.handle)))
            return
        }
        let output = reassembler.receive(
            handle: handle, packetBoundary: packet.packetBoundary.rawValue, data: packet.data[...])
        if let drop = output.drop { actions.append(.report(.reassemblyDrop(drop.reason))) }
        if let frame = output.frame { receive(frame, into: &actions) }
    }

    /// Feeds one ACL data packet; returns what it led to.
    public mutating func receive(_ packet: ACLDataPacket) -> [Action] {
        var actions: [Action] = []
        receive(packet, into: &actions)
        return actions
    }

    /// Dispatches one whole B-frame by its Channel ID.
    public mutating func receive(_ frame: L2CAPBasicFrame, into actions: inout [Action]) {
        switch frame.channelID {
        case L2CAPBasicFrame.attributeProtocolCID:
            actions.append(.deliverATT(Array(frame.payload)))
        case L2CAPBasicFrame.leSignalingCID:
            if let answer = answerToOurRequest(frame.payload) {
                actions.append(answer)
                return
            }
            if frame.payload.count <= LESignalingResponder.minimumSignalingMTU,
                let packet = try? L2CAPSignalingPacket(bytes: frame.payload), packet.identifier != 0,
                creditBased.handles(packet)
            {
                var channelActions: [EnhancedCreditBasedChannels.Action] = []
                creditBased.receive(packet, into: &channelActions)
                append(channelActions, into: &actions)
                return
            }
            let outcome = signaling.receive(frame.payload)
            if let response = outcome.response {
                var writer = ByteWriter(capacity: response.encodedLength)
                do {
                    try response.write(to: &writer)
                    actions.append(
                        .send(L2CAPBasicFrame(channelID: L2CAPBasicFrame.leSignalingCID, payload: writer.bytes[...])))
                } catch {
                    actions.append(.report(.responseNotSent(cid: L2CAPBasicFrame.leSignalingCID, error: error)))
                }
            }
            if let update = outcome.connectionParameterUpdate { actions.append(.updateConnectionParameters(update)) }
            if let report = outcome.report { actions.append(.report(report)) }
        case L2CAPBasicFrame.securityManagerCID:
            if deliversSecurityManager {
                actions.append(.deliverSMP(Array(frame.payload)))
                return
            }
            guard let securityManager else {
                actions.append(.report(.unsupportedChannel(cid: frame.channelID, length: frame.payload.count)))
                return
            }
            let outcome = securityManager.answer(frame.payload)
            if let answer = outcome.answer {
                actions.append(.send(L2CAPBasicFrame(channelID: L2CAPBasicFrame.securityManagerCID, payload: answer[...])))
            }
            if let report = outcome.report { actions.append(.report(.securityManager(report))) }
        case EnhancedCreditBasedChannels.dynamicCIDs:
            var channelActions: [EnhancedCreditBasedChannels.Action] = []
            if creditBased.receive(localCID: frame.channelID, payload: frame.payload, into: &channelActions) {
                append(channelActions, into: &actions)
            } else {
                actions.append(.report(.unsupportedChannel(cid: frame.channelID, length: frame.payload.count)))
            }
        default:
            actions.append(.report(.unsupportedChannel(cid: frame.channelID, length: frame.payload.count)))
        }
    }

    /// The credit-based channels' actions: frames to send, the rest as they are.
    private func append(_ channelActions: [EnhancedCreditBasedChannels.Action], into actions: inout [Action]) {
        for action in channelActions {
            if case .send(let frame) = action {
                actions.append(.send(frame))
            } else {
                actions.append(.creditBased(action))
            }
        }
    }

    // MARK: - Enhanced credit-based channels

    /// Runs `body` on the credit-based channels and appends what it did.
    public mutating func withCreditBased<T>(
        into actions: inout [Action], _ body: (inout EnhancedCreditBasedChannels, inout [EnhancedCreditBasedChannels.Action]) throws(L2CAPError) -> T
    ) throws(L2CAPError) -> T {
        var channelActions: [EnhancedCreditBasedChannels.Action] = []
        let result = try body(&creditBased, &channelActions)
        append(channelActions, into: &actions)
        return result
    }

    /// Forgets a partly received frame (on disconnection). Returns whether there was one.
    @discardableResult
    public mutating func reset() -> Bool {
        reassembler.reset(handle: handle)
    }
}
