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

extension TransportURI {
    /// Opens the raw HCI transport this URI names. `connectTimeout` bounds connecting (TCP) and
    /// opening; `writeTimeout` bounds each send that the controller does not drain.
    ///
    /// `hciN` (the kernel's own host, reached through HCI and L2CAP sockets), `sim` and `replay`
    /// are not raw transports and throw `HCIError.unsupportedTransport` saying so.
    public func openRawTransport(
        connectTimeout: Duration = .seconds(5),
        writeTimeout: Duration = .seconds(2),
        logger: Logger = .disabled
    ) async throws(HCIError) -> any HCITransport {
        switch self {
        case .tcp(let host, let port):
            return try await SocketTransport.connectTCP(
                host: host, port: port, connectTimeout: connectTimeout, writeTimeout: writeTimeout, logger: logger)
        case .unix(let path):
            return try await SocketTransport.connectUnix(path: path, writeTimeout: writeTimeout, logger: logger)
        case .serial(let device, let baudRate):
            return try await SerialTransport.open(
                device: device, baudRate: baudRate, writeTimeout: writeTimeout, logger: logger)
        case .userChannel(let index):
            return try await UserChannelTransport.open(adapter: index, writeTimeout: writeTimeout, logger: logger)
        case .kernel(let index):
            throw .unsupportedTransport(
                uri: description,
                reason: "hci\(index) uses the kernel's own HCI and L2CAP sockets, not a raw HCI transport; "
                    + "use hci-user:\(index) to run the whole host in user space (adapter down, not managed by bluetoothd)"
            )
        case .simulator:
            throw .unsupportedTransport(
                uri: description,
                reason: "the simulator is served in-process by the Emulator module, not a raw HCI transport")
        case .replay:
            throw .unsupportedTransport(
                uri: description, reason: "replay plays a recorded ATT peer, not a raw HCI transport")
        }
    }
}
