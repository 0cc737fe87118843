import Bluetooth
import HCI

/// User-space LE L2CAP for every connection of one controller, as a sans-I/O state machine:
/// one `LEL2CAPConnection` per handle, sharing one `ACLFlowControl`.
///
/// Inputs: connections opened, ACL data packets and HCI events from the controller, ATT SDUs to
/// send. Outputs: `Action`s, in the order they must be performed. Every ACL data packet to
/// write comes out as `.transmit`, only while the controller has buffers for it.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A and Vol 4, Part E, §4.1.1
public struct LEL2CAPMultiplexer: Sendable {
    public enum Action: Hashable, Sendable {
        /// Write this ACL data packet to the controller (a credit is already taken).
        case transmit(ACLDataPacket)
        /// An ATT PDU from the peer on this connection.
        case deliverATT(handle: UInt16, sdu: [UInt8])
        /// An SMP PDU from the peer, for the host's Security Manager of this connection.
        case deliverSMP(handle: UInt16, pdu: [UInt8])
        /// Issue HCI_LE_Connection_Update on this connection with these parameters.
        case updateConnectionParameters(handle: UInt16, ConnectionParameterUpdateRequest)
        /// The central answered our Connection Parameter Update Request on this connection.
        case parameterRequestAnswered(handle: UInt16, accepted: Bool)
        /// What this connection's enhanced credit-based channels did (their frames are queued).
        case creditBased(handle: UInt16, EnhancedCreditBasedChannels.Action)
        /// Input on this connection that was dropped, ignored, refused or rejected.
        case report(handle: UInt16, LEL2CAPReport)
        /// Number Of Completed Packets entries that returned no credit.
        case ignoredCompletions([ACLFlowControl.IgnoredCompletion])
        /// The connection is gone: its credits are back, its queue dropped (`removal` says what).
        case connectionClosed(handle: UInt16, reason: HCIStatus, removal: ACLFlowControl.Removal)
    }

    public private(set) var flowControl: ACLFlowControl
    private var connections: [UInt16: LEL2CAPConnection] = [:]
    private let maximumFrameLength: Int
    private let securityManager: (any LESecurityManagerChannel)?
    /// What a peer's Connection Parameter Update Request may ask for, on links made after it is set.
    public var parameterPolicy = ConnectionParameterRequestPolicy.acceptValid
    /// What enhanced credit-based channels offer and accept, on links made after it is set.
    public var creditBasedConfiguration = EnhancedCreditBasedChannels.Configuration()
    private var scratch: [LEL2CAPConnection.Action] = []

    /// - Parameters:
    ///   - maximumQueuedFrames: outgoing PDUs waiting per connection before sends are refused.
    ///   - maximumFrameLength: largest L2CAP Length accepted from a peer.
    ///   - securityManager: answers SMP (CID 0x0006) on every connection; nil drops it.
    public init(
        bufferSize: ACLBufferSize, maximumQueuedFrames: Int = 64, maximumFrameLength: Int = 65_535,
        securityManager: (any LESecurityManagerChannel)? = nil
    ) {
        flowControl = ACLFlowControl(bufferSize: bufferSize, maximumQueuedFrames: maximumQueuedFrames)
        self.maximumFrameLength = maximumFrameLength
        self.securityManager = securityManager
    }

    public func isOpen(handle: UInt16) -> Bool { connections[handle] != nil }

    public var openHandles: [UInt16] { Array(connections.keys).sorted() }

    /// Starts L2CAP on a new connection (after LE Connection Complete with status success).
    public mutating func connectionOpened(handle: UInt16, role: LERole) throws(L2CAPError) {
        guard handle <= 0x0EFF else {
            throw L2CAPError.invalidArgument(
                context: "LE connection", reason: "handle \(l2capHex(handle, 4)) over 0x0eff")
        }
        guard connections[handle] == nil else { throw L2CAPError.connectionExists(handle: handle) }
        try flowControl.addConnection(handle: handle)
        connections[handle] = LEL2CAPConnection(
            handle: handle, role: role, maximumFrameLength: maximumFrameLength, securityManager: securityManager,
            parameterPolicy: parameterPolicy, creditBased: creditBasedConfiguration)
    }

    /// Hands the connection's SMP (CID 0x0006) to the host's Security Manager from now on
    /// (``Action/deliverSMP(handle:pdu:)``) instead of the shared responder.
    public mutating func deliverSecurityManager(handle: UInt16) throws(L2CAPError) {
        guard connections[handle] != nil else { throw L2CAPError.unknownConnection(handle: handle) }
        connections[handle]?.deliversSecurityManager = true
    }

    /// Queues one SMP PDU on a connection and appends the packets that can go now.
    /// - Throws: `.unknownConnection`, `.queueFull`, `.invalidArgument` (empty or over 65 octets).
    public mutating func sendSMP(_ pdu: [UInt8], handle: UInt16, into actions: inout [Action]) throws(L2CAPError) {
        guard !pdu.isEmpty, pdu.count <= 65 else {
            throw L2CAPError.invalidArgument(context: "SMP PDU", reason: "\(pdu.count) octets, 1 to 65")
        }
        guard connections[handle] != nil else { throw L2CAPError.unknownConnection(handle: handle) }
        try flowControl.enqueue(
            pdu: Self.encodeFrame(channelID: L2CAPBasicFrame.securityManagerCID, payload: pdu[...]), handle: handle)
        drain(into: &actions)
    }

    /// As peripheral, sends an L2CAP Connection Parameter Update Request on a connection; the
    /// answer comes as `.parameterRequestAnswered`.
    /// - Throws: `.unknownConnection`, `.queueFull`, `.invalidArgument` (see
    ///   ``LEL2CAPConnection/requestConnectionParameters(_:)``).
    public mutating func requestConnectionParameters(
        _ request: ConnectionParameterUpdateRequest, handle: UInt16, into actions: inout [Action]
    ) throws(L2CAPError) {
        guard var connection = connections[handle] else { throw L2CAPError.unknownConnection(handle: handle) }
        let frame = try connection.requestConnectionParameters(request)
        do {
            try flowControl.enqueue(pdu: frame.encode(), handle: handle)
        } catch {
            connection.abandonParameterRequest()
            connections[handle] = connection
            throw error
        }
        connections[handle] = connection
        drain(into: &actions)
    }

    /// Runs `body` on a connection's enhanced credit-based channels: the frames it makes are
    /// queued (K-frames and signaling), the rest appended as `.creditBased`.
    /// - Throws: `.unknownConnection`, what `body` throws, `.queueFull` when the connection's
    ///   queue cannot take a frame (the frames before it stay queued).
    public mutating func withCreditBased<T>(
        handle: UInt16, into actions: inout [Action],
        _ body: (inout EnhancedCreditBasedChannels, inout [EnhancedCreditBasedChannels.Action]) throws(L2CAPError) -> T
    ) throws(L2CAPError) -> T {
        guard var connection = connections[handle] else { throw L2CAPError.unknownConnection(handle: handle) }
        connection.creditBased.transmitRoom = transmitRoom(handle)
        var connectionActions: [LEL2CAPConnection.Action] = []
        let result = try connection.withCreditBased(into: &connectionActions, body)
        connections[handle] = connection
        var failure: L2CAPError?
        for action in connectionActions {
            switch action {
            case .send(let frame):
                do {
                    try flowControl.enqueue(pdu: frame.encode(), handle: handle)
                } catch {
                    if failure == nil { failure = error }
                }
            case .creditBased(let channelAction):
                actions.append(.creditBased(handle: handle, channelAction))
            default:
                break
            }
        }
        drain(into: &actions)
        if let failure { throw failure }
        return result
    }

    /// K-frames a connection's credit-based channels may queue now: its outgoing queue's free
    /// room, less a few frames kept for signaling and ATT on the fixed channel.
    private func transmitRoom(_ handle: UInt16) -> Int {
        max(0, flowControl.maximumQueuedFrames - flowControl.queuedFrames(handle: handle) - 4)
    }

    /// The enhanced credit-based channels of a connection, as they are.
    public func creditBasedChannels(handle: UInt16) -> EnhancedCreditBasedChannels? { connections[handle]?.creditBased }

    /// Forgets the pending parameter request of a connection (it timed out).
    public mutating func abandonParameterRequest(handle: UInt16) {
        connections[handle]?.abandonParameterRequest()
    }

    /// Queues one ATT PDU on a connection and appends the packets that can go now.
    /// - Throws: `.unknownConnection`, `.queueFull`, `.invalidArgument` (empty or over 65535).
    public mutating func sendATT(_ sdu: [UInt8], handle: UInt16, into actions: inout [Action]) throws(L2CAPError) {
        guard !sdu.isEmpty, sdu.count <= Int(UInt16.max) else {
            throw L2CAPError.invalidArgument(context: "ATT SDU", reason: "\(sdu.count) octets, 1 to 65535")
        }
        guard connections[handle] != nil else { throw L2CAPError.unknownConnection(handle: handle) }
        try flowControl.enqueue(
            pdu: Self.encodeFrame(channelID: L2CAPBasicFrame.attributeProtocolCID, payload: sdu[...]), handle: handle)
        drain(into: &actions)
    }

    /// Feeds one ACL data packet from the controller.
    public mutating func receive(_ packet: ACLDataPacket, into actions: inout [Action]) {
        let handle = packet.handle
        guard connections[handle] != nil else {
            actions.append(.report(handle: handle, .unknownConnection))
            return
        }
        // Reuses one buffer across packets: no allocation per packet once it has grown.
        var connectionActions: [LEL2CAPConnection.Action] = []
        swap(&connectionActions, &scratch)
        defer {
            connectionActions.removeAll(keepingCapacity: true)
            swap(&connectionActions, &scratch)
        }
        let room = transmitRoom(handle)
        connections[handle]?.creditBased.transmitRoom = room
        connections[handle]?.receive(packet, into: &connectionActions)
        var queuedResponse = false
        for action in connectionActions {
            switch action {
            case .deliverATT(let sdu):
                actions.append(.deliverATT(handle: handle, sdu: sdu))
            case .deliverSMP(let pdu):
                actions.append(.deliverSMP(handle: handle, pdu: pdu))
            case .send(let frame):
                do {
                    try flowControl.enqueue(pdu: frame.encode(), handle: handle)
                    queuedResponse = true
                } catch {
                    actions.append(.report(handle: handle, .responseNotSent(cid: frame.channelID, error: error)))
                }
            case .updateConnectionParameters(let request):
                actions.append(.updateConnectionParameters(handle: handle, request))
            case .parameterRequestAnswered(let accepted):
                actions.append(.parameterRequestAnswered(handle: handle, accepted: accepted))
            case .creditBased(let action):
                actions.append(.creditBased(handle: handle, action))
            case .report(let report):
                actions.append(.report(handle: handle, report))
            }
        }
        if queuedResponse { drain(into: &actions) }
    }

    /// Feeds an HCI event: Number Of Completed Packets and Disconnection Complete are used,
    /// every other event is left to the caller.
    public mutating func receive(_ event: HCIEvent, into actions: inout [Action]) {
        switch event {
        case .numberOfCompletedPackets(let completed):
            self.completed(completed, into: &actions)
        case .disconnectionComplete(let disconnection) where disconnection.status == .success:
            disconnected(handle: disconnection.connectionHandle, reason: disconnection.reason, into: &actions)
        default:
            break
        }
    }

    /// Applies HCI_Number_Of_Completed_Packets and appends the packets the credits free.
    public mutating func completed(_ event: NumberOfCompletedPacketsEvent, into actions: inout [Action]) {
        let completion = flowControl.completed(event)
        if !completion.ignored.isEmpty { actions.append(.ignoredCompletions(completion.ignored)) }
        if completion.returnedCredits > 0 { drain(into: &actions) }
        // K-frames that waited for room in a connection's queue go now.
        for handle in connections.keys.sorted() where connections[handle]?.creditBased.hasQueuedFrames == true {
            _ = try? withCreditBased(handle: handle, into: &actions) { channels, channelActions throws(L2CAPError) in
                channels.pumpAll(into: &channelActions)
            }
        }
    }

    /// Ends a connection (HCI_Disconnection_Complete): its partial frame and queue are dropped,
    /// its credits return, and other connections may send with them.
    public mutating func disconnected(handle: UInt16, reason: HCIStatus, into actions: inout [Action]) {
        guard connections.removeValue(forKey: handle) != nil, let removal = flowControl.removeConnection(handle: handle)
        else {
            return
        }
        actions.append(.connectionClosed(handle: handle, reason: reason, removal: removal))
        if removal.returnedCredits > 0 { drain(into: &actions) }
    }

    private mutating func drain(into actions: inout [Action]) {
        while let packet = flowControl.dequeue() { actions.append(.transmit(packet)) }
    }

    static func encodeFrame(channelID: UInt16, payload: ArraySlice<UInt8>) -> [UInt8] {
        var writer = ByteWriter(capacity: 4 + payload.count)
        writer.writeUInt16LE(UInt16(truncatingIfNeeded: payload.count))
        writer.writeUInt16LE(channelID)
        writer.writeBytes(payload)
        return writer.bytes
    }
}
