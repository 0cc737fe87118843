import ATT
import Synchronization

/// An enhanced credit-based channel of an LE connection whose L2CAP runs in user space, carrying
/// ATT as an Enhanced ATT bearer (SPSM 0x0027) or any other SDU protocol. Made by
/// ``UserSpaceL2CAP/openCreditBasedChannels(handle:spsm:count:timeout:)`` or accepted from a
/// peer (``UserSpaceL2CAP/acceptedCreditBasedChannels``).
///
/// `send` cuts the SDU into K-frames sent as the peer's credits allow (it returns once they are
/// queued); `incoming` yields whole SDUs. `close()` closes this channel only (L2CAP Disconnection
/// Request), not the link. The channel fails with `L2CAPError.disconnected` when the link drops,
/// and with `.channelClosed` when the peer closes it or broke the channel's rules.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §3.4.3, §10.2; Part G, §5.4 (EATT)
public final class CreditBasedATTChannel: ATTBatchReceivingChannel {
    public let handle: UInt16
    public let localCID: UInt16
    public let remoteCID: UInt16
    public let spsm: UInt16
    public let incoming: AsyncThrowingStream<[UInt8], Error>
    let queue: ATTSDUQueue
    let status: UserSpaceL2CAP.ChannelStatus
    /// The peer's MTU (it may grow with a reconfiguration) and ours.
    let mtus: Mutex<(remote: UInt16, local: UInt16)>
    /// Weak: the host keeps its channels (and a stream of accepted ones nobody may read), so a
    /// strong reference back would keep both alive forever. Set once, in `init`, never changed.
    nonisolated(unsafe) private weak var host: UserSpaceL2CAP?

    init(handle: UInt16, channel: EnhancedCreditBasedChannels.Channel, queue: ATTSDUQueue, host: UserSpaceL2CAP) {
        self.handle = handle
        localCID = channel.localCID
        remoteCID = channel.remoteCID
        spsm = channel.spsm
        self.queue = queue
        incoming = AsyncThrowingStream { try await queue.next() }
        status = UserSpaceL2CAP.ChannelStatus()
        mtus = Mutex((channel.remoteMTU, channel.localMTU))
        self.host = host
    }

    /// The largest SDU this channel carries each way: the smaller of the two MTUs (an EATT
    /// bearer's ATT_MTU, Vol 3 Part G §5.3.1 — no MTU exchange on it).
    public var maximumSDUSize: Int? { mtus.withLock { Int(min($0.remote, $0.local)) } }

    /// The peer's MTU: the largest SDU we may send.
    public var remoteMTU: Int { mtus.withLock { Int($0.remote) } }

    /// Why the channel can no longer send, once it cannot.
    public var closedError: L2CAPError? { status.error }

    public func receiveAll(into sdus: inout [[UInt8]]) async throws -> Bool {
        try await queue.receiveAll(into: &sdus)
    }

    /// Queues one SDU.
    /// - Throws: `L2CAPError` — `.queueFull`, `.channelClosed`, `.disconnected`,
    ///   `.transportClosed`, `.invalidArgument` (empty or over the peer's MTU).
    public func send(_ sdu: [UInt8]) async throws {
        guard let host else { throw status.error ?? L2CAPError.transportClosed("the L2CAP host is gone") }
        try host.sendCreditBased(sdu, on: self)
    }

    /// Closes this channel (L2CAP Disconnection Request); the link stays.
    public func close() async {
        host?.closeCreditBased(self)
    }
}
