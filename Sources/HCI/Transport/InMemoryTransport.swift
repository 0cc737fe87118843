import Synchronization

/// Two connected in-memory transports: what one end sends, the other receives, in order. For
/// tests of host code (one end is the host's transport, the other plays the controller) and for
/// in-process controllers. Closing either end closes both: each end's `packets` then throws
/// `HCIError.transportClosed(reason)` once the packets already sent have been delivered.
public final class InMemoryTransport: HCITransport {
    public let packets: AsyncThrowingStream<HCITransportPacket, any Error>

    private let link: Link
    private let side: Int

    /// The state both ends share: whether the pair is closed, and each end's inbox.
    private final class Link: Sendable {
        let closedReason = Mutex<String?>(nil)
        let inboxes: [AsyncThrowingStream<HCITransportPacket, any Error>.Continuation]

        init(_ inboxes: [AsyncThrowingStream<HCITransportPacket, any Error>.Continuation]) {
            self.inboxes = inboxes
        }
    }

    private init(link: Link, side: Int, packets: AsyncThrowingStream<HCITransportPacket, any Error>) {
        self.link = link
        self.side = side
        self.packets = packets
    }

    /// A connected pair; by convention `host` is the host's end and `controller` the other.
    public static func makePair() -> (host: InMemoryTransport, controller: InMemoryTransport) {
        let (hostPackets, hostInbox) = AsyncThrowingStream.makeStream(
            of: HCITransportPacket.self, throwing: (any Error).self)
        let (controllerPackets, controllerInbox) = AsyncThrowingStream.makeStream(
            of: HCITransportPacket.self, throwing: (any Error).self)
        let link = Link([hostInbox, controllerInbox])
        return (
            InMemoryTransport(link: link, side: 0, packets: hostPackets),
            InMemoryTransport(link: link, side: 1, packets: controllerPackets)
        )
    }

    public func send(_ type: HCIPacketType, _ bytes: [UInt8]) async throws(HCIError) {
        // Checked and yielded under the lock, so nothing is yielded after the close finished the inbox.
        try link.closedReason.withLock { reason throws(HCIError) in
            if let reason { throw HCIError.transportClosed(reason) }
            link.inboxes[1 - side].yield((type, bytes))
        }
    }

    public func close(reason: String) {
        link.closedReason.withLock { current in
            guard current == nil else { return }
            current = reason
            for inbox in link.inboxes { inbox.finish(throwing: HCIError.transportClosed(reason)) }
        }
    }
}
