import ATT
import Bluetooth
import HCI
import L2CAP
import Synchronization

/// An LE connection made by `LEHost`: its handle, peer, role, current parameters, its ATT
/// channel (fixed CID 0x0004 over user-space L2CAP) and, once it ends, the disconnection reason.
///
/// When the link drops, `channel` fails at once with `L2CAPError.disconnected` carrying the
/// reason, `disconnectionReason` is set and `disconnected` yields the reason and finishes.
public final class LEConnection: Sendable, CustomStringConvertible {
    /// Connection_Interval (1.25 ms units), Peripheral_Latency, Supervision_Timeout (10 ms units).
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.1, §7.7.65.3
    public struct Parameters: Hashable, Sendable, CustomStringConvertible {
        public var interval: UInt16
        public var peripheralLatency: UInt16
        public var supervisionTimeout: UInt16

        public init(interval: UInt16, peripheralLatency: UInt16, supervisionTimeout: UInt16) {
            self.interval = interval
            self.peripheralLatency = peripheralLatency
            self.supervisionTimeout = supervisionTimeout
        }

        public var description: String {
            "interval \(Double(interval) * 1.25) ms, latency \(peripheralLatency), "
                + "timeout \(Int(supervisionTimeout) * 10) ms"
        }
    }

    public let handle: UInt16
    public let peerAddress: BluetoothAddress
    /// Peer_Address_Type from the connection complete event.
    public let peerAddressType: LEAddressType
    public let role: LERole
    /// The ATT bearer's channel on this connection.
    public let channel: UserSpaceATTChannel
    /// Yields the disconnection reason once, then finishes (one consumer).
    public let disconnected: AsyncStream<HCIStatus>
    /// Yields the parameters after each successful LE Connection Update Complete (whoever asked
    /// for it: this host, or the peer through L2CAP or the link layer); keeps the newest 8 for a
    /// slow consumer; finishes when the link ends (one consumer).
    public let parameterUpdates: AsyncStream<Parameters>
    /// What changed on the link, as it comes: parameter updates, data length and PHY changes
    /// (Vol 4, Part E, §7.7.65.3, §7.7.65.7, §7.7.65.12); keeps the newest 32 for a slow consumer;
    /// finishes when the link ends (one consumer).
    public let linkEvents: AsyncStream<LinkEvent>
    private let linkContinuation: AsyncStream<LinkEvent>.Continuation

    /// A change of the link the controller reported.
    public enum LinkEvent: Hashable, Sendable {
        /// LE Connection Update Complete with success.
        case parametersUpdated(Parameters)
        /// LE Data Length Change: the largest payload (octets) and time (µs) each way.
        case dataLengthChanged(maxTXOctets: UInt16, maxTXTime: UInt16, maxRXOctets: UInt16, maxRXTime: UInt16)
        /// LE PHY Update Complete with success.
        case phyUpdated(tx: LEPHY, rx: LEPHY)
    }

    /// Every Encryption Change and Encryption Key Refresh Complete of the link, as they come (the
    /// peripheral's Security Manager learns here that the central encrypted).
    public let encryptionChanges: AsyncStream<LEEncryptionOutcome>
    private let encryptionContinuation: AsyncStream<LEEncryptionOutcome>.Continuation

    /// The largest payload (octets) and air time (µs) the link layer sends and receives per
    /// packet: 27 octets and 328 µs each way until LE Data Length Change says otherwise.
    /// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §4.5.10; Vol 4, Part E, §7.7.65.7
    public struct DataLength: Hashable, Sendable, CustomStringConvertible {
        public var maxTXOctets: UInt16
        public var maxTXTime: UInt16
        public var maxRXOctets: UInt16
        public var maxRXTime: UInt16

        public init(maxTXOctets: UInt16, maxTXTime: UInt16, maxRXOctets: UInt16, maxRXTime: UInt16) {
            self.maxTXOctets = maxTXOctets
            self.maxTXTime = maxTXTime
            self.maxRXOctets = maxRXOctets
            self.maxRXTime = maxRXTime
        }

        /// What every link starts with (the Core's minimum).
        public static let initial = DataLength(maxTXOctets: 27, maxTXTime: 328, maxRXOctets: 27, maxRXTime: 328)

        public var description: String {
            "TX \(maxTXOctets) octets/\(maxTXTime) µs, RX \(maxRXOctets) octets/\(maxRXTime) µs"
        }
    }

    private struct State {
        var parameters: Parameters
        var disconnectionReason: HCIStatus?
        var parameterUpdates = 0
        var encryptionKeySize: Int?
        var txPHY = LEPHY.le1M
        var rxPHY = LEPHY.le1M
        var dataLength = DataLength.initial
    }

    private let state: Mutex<State>
    private let disconnectedContinuation: AsyncStream<HCIStatus>.Continuation
    private let updatesContinuation: AsyncStream<Parameters>.Continuation

    init(
        handle: UInt16, peerAddress: BluetoothAddress, peerAddressType: LEAddressType, role: LERole,
        parameters: Parameters, channel: UserSpaceATTChannel
    ) {
        self.handle = handle
        self.peerAddress = peerAddress
        self.peerAddressType = peerAddressType
        self.role = role
        self.channel = channel
        state = Mutex(State(parameters: parameters))
        (disconnected, disconnectedContinuation) = AsyncStream.makeStream(
            of: HCIStatus.self, bufferingPolicy: .bufferingNewest(1))
        (parameterUpdates, updatesContinuation) = AsyncStream.makeStream(
            of: Parameters.self, bufferingPolicy: .bufferingNewest(8))
        (encryptionChanges, encryptionContinuation) = AsyncStream.makeStream(
            of: LEEncryptionOutcome.self, bufferingPolicy: .bufferingNewest(8))
        (linkEvents, linkContinuation) = AsyncStream.makeStream(of: LinkEvent.self, bufferingPolicy: .bufferingNewest(32))
    }

    func linkChanged(_ event: LinkEvent) {
        state.withLock { state in
            switch event {
            case .parametersUpdated: break
            case .dataLengthChanged(let txOctets, let txTime, let rxOctets, let rxTime):
                state.dataLength = DataLength(maxTXOctets: txOctets, maxTXTime: txTime, maxRXOctets: rxOctets, maxRXTime: rxTime)
            case .phyUpdated(let tx, let rx):
                state.txPHY = tx
                state.rxPHY = rx
            }
        }
        linkContinuation.yield(event)
    }

    /// The PHYs in use each way: LE 1M until LE PHY Update Complete changed them.
    public var phy: (tx: LEPHY, rx: LEPHY) { state.withLock { ($0.txPHY, $0.rxPHY) } }

    /// The data length in force (LE Data Length Change; 27 octets each way before any).
    public var dataLength: DataLength { state.withLock { $0.dataLength } }

    /// The parameters in force (updated by LE Connection Update Complete).
    public var parameters: Parameters { state.withLock { $0.parameters } }

    /// How many LE Connection Update Complete events changed the parameters.
    public var parameterUpdateCount: Int { state.withLock { $0.parameterUpdates } }

    /// The reason the link ended (Disconnection Complete), `nil` while it is up.
    public var disconnectionReason: HCIStatus? { state.withLock { $0.disconnectionReason } }

    public var isConnected: Bool { disconnectionReason == nil }

    /// The link's encryption key size in octets while it is encrypted (Encryption Change v2
    /// gives it; after v1 the size pairing negotiated, or 16), nil while it is not.
    public var encryptionKeySize: Int? { state.withLock { $0.encryptionKeySize } }

    func setEncryptionKeySize(_ keySize: Int?) {
        state.withLock { $0.encryptionKeySize = keySize }
    }

    func reportEncryption(_ outcome: LEEncryptionOutcome) { encryptionContinuation.yield(outcome) }

    func updated(_ parameters: Parameters) {
        state.withLock {
            $0.parameters = parameters
            $0.parameterUpdates += 1
        }
        updatesContinuation.yield(parameters)
        linkContinuation.yield(.parametersUpdated(parameters))
    }

    /// Records the end of the link; returns false when it was already recorded.
    @discardableResult
    func ended(_ reason: HCIStatus) -> Bool {
        let first = state.withLock { state -> Bool in
            guard state.disconnectionReason == nil else { return false }
            state.disconnectionReason = reason
            return true
        }
        if first {
            disconnectedContinuation.yield(reason)
            disconnectedContinuation.finish()
            updatesContinuation.finish()
            encryptionContinuation.finish()
            linkContinuation.finish()
        }
        return first
    }

    /// The host closed or its transport went: the streams finish without a reason (the channel
    /// fails with `L2CAPError.transportClosed`).
    func hostEnded() {
        disconnectedContinuation.finish()
        updatesContinuation.finish()
        encryptionContinuation.finish()
        linkContinuation.finish()
    }

    public var description: String {
        "LE connection 0x\(String(handle, radix: 16, uppercase: true)) to \(peerAddress) (\(peerAddressType)) as \(role)"
    }
}
