import ATT
import Bluetooth

/// Write Long Characteristic Values: the value queued in parts of ATT_MTU − 5 octets with
/// Prepare Write Requests at increasing offsets, then written with Execute Write Request
/// (flags 0x01). Each Prepare Write Response must echo its request; a differing echo or an
/// error cancels the queue (Execute Write Request, flags 0x00, as BlueZ does) and the
/// procedure then fails with that first problem. Result: the number of octets written.
/// Also serves Write Long Characteristic Descriptors (§4.12.4).
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.9.4
public struct WriteLongCharacteristicValues: GATTClientProcedure {
    public typealias Result = Int

    public let handle: UInt16
    public let value: [UInt8]
    /// Where the value goes in the attribute.
    public let offset: UInt16
    public private(set) var mtu: Int

    /// Follows the bearer's ATT_MTU when it changes during the procedure (a peer-initiated
    /// exchange may raise it between two requests).
    public mutating func updateMTU(_ mtu: Int) { self.mtu = mtu }
    private var exchange: QueuedWriteExchange?
    private var finished = false

    public init(handle: UInt16, value: [UInt8], offset: UInt16 = 0, mtu: Int = GATTLimits.defaultMTU) {
        self.handle = handle
        self.value = value
        self.offset = offset
        self.mtu = mtu
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard exchange == nil, !finished else { return .misuse(finished ? .finished : .waiting(.prepareWriteRequest)) }
        if let error = checkMTU(mtu) {
            finished = true
            return .fail(error)
        }
        let maximum = GATTLimits.maximumAttributeValueLength - Int(offset)
        guard maximum >= 0, value.count <= maximum else {
            finished = true
            return .fail(.valueTooLong(length: value.count, maximum: max(0, maximum)))
        }
        var exchange = QueuedWriteExchange(
            parts: QueuedWriteExchange.parts(handle: handle, value: value, offset: offset, mtu: mtu), mtu: mtu)
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
