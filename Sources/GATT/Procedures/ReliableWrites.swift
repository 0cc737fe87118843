import ATT
import Bluetooth

/// Reliable Writes: several values, possibly of different characteristics, queued with
/// Prepare Write Requests (each value in parts of ATT_MTU − 5 octets) and written together by
/// one Execute Write Request, so either all are written or none. Every Prepare Write Response
/// must echo its request exactly; otherwise, or on an error, the queue is cancelled (Execute
/// Write Request, flags 0x00) and the procedure fails with that first problem.
/// Result: the number of octets written, over all values.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.9.5
public struct ReliableWrites: GATTClientProcedure {
    public typealias Result = Int

    /// One value to write.
    public struct Write: Hashable, Sendable {
        public var handle: UInt16
        public var value: [UInt8]
        public var offset: UInt16

        public init(handle: UInt16, value: [UInt8], offset: UInt16 = 0) {
            self.handle = handle
            self.value = value
            self.offset = offset
        }
    }

    public let writes: [Write]
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var exchange: QueuedWriteExchange?
    private var finished = false

    public init(writes: [Write], mtu: Int = GATTLimits.defaultMTU) {
        self.writes = writes
        self.mtu = mtu
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard exchange == nil, !finished else { return .misuse(finished ? .finished : .waiting(.prepareWriteRequest)) }
        finished = true
        if let error = checkMTU(mtu) { return .fail(error) }
        guard !writes.isEmpty else { return .fail(.invalidParameter("nothing to write")) }
        var parts: [PrepareWriteRequest] = []
        for write in writes {
            let maximum = GATTLimits.maximumAttributeValueLength - Int(write.offset)
            guard maximum >= 0, write.value.count <= maximum else {
                return .fail(.valueTooLong(length: write.value.count, maximum: max(0, maximum)))
            }
            parts += QueuedWriteExchange.parts(handle: write.handle, value: write.value, offset: write.offset, mtu: mtu)
        }
        finished = false
        var exchange = QueuedWriteExchange(parts: parts, mtu: mtu)
        let action = exchange.start()
        self.exchange = exchange
        return action
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        guard var exchange else { return .misuse(finished ? .finished : .idle) }
        let action = exchange.receive(pdu)
        self.exchange = exchange
        return action
    }
}
