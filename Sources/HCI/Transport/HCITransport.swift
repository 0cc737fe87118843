import Bluetooth

/// One HCI packet as transports carry it: the H4 packet indicator and the packet that follows it
/// (header and parameters/data, without the indicator).
public typealias HCITransportPacket = (type: HCIPacketType, bytes: [UInt8])

/// A byte path to a controller that carries whole HCI packets: H4 over TCP, a unix socket or a
/// UART, the kernel HCI user channel, or an in-memory pair for tests.
///
/// Contract, for every implementation:
/// - `packets` delivers the controller's packets in arrival order, to one consumer. It ends by
///   throwing `HCIError.transportClosed(reason)` when the transport closes for any reason (local
///   `close`, the peer going away, a read error, a stream out of step), so a consumer waiting
///   on it is always released.
/// - `send` writes one packet whole or throws; after the transport closed it throws
///   `HCIError.transportClosed`. Concurrent sends never interleave their bytes. A write the
///   controller does not accept within the transport's write timeout fails, it never hangs.
/// - `close` is idempotent and returns promptly; the transport must be closed to release its
///   descriptor.
public protocol HCITransport: AnyObject, Sendable {
    /// Packets from the controller, in order.
    var packets: AsyncThrowingStream<HCITransportPacket, any Error> { get }

    /// Sends one packet to the controller. `bytes` is the packet after its H4 indicator.
    func send(_ type: HCIPacketType, _ bytes: [UInt8]) async throws(HCIError)

    /// Closes the transport: pending and later operations fail with
    /// `HCIError.transportClosed(reason)`.
    func close(reason: String)
}

extension HCITransport {
    /// Closes with the reason "closed by the host".
    public func close() { close(reason: "closed by the host") }
}
