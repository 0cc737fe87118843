import Bluetooth
import HCI

/// Every failure of user-space LE L2CAP: malformed input from a peer, a local request that cannot
/// be carried out, and the end of a connection are distinct cases.
public enum L2CAPError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Bytes from the peer that do not form what `context` says they should. `offset` is within
    /// the structure named by `context`.
    case malformed(context: String, reason: HCIError.MalformedReason, offset: Int)
    /// A value the caller asked us to encode or use cannot be expressed on the wire.
    case invalidArgument(context: String, reason: String)
    /// The controller's buffer size (LE Read Buffer Size, Read Buffer Size) cannot carry LE data.
    case invalidBufferSize(String)
    /// No LE connection with this handle is known (never opened, or already disconnected).
    case unknownConnection(handle: UInt16)
    /// A connection with this handle is already open.
    case connectionExists(handle: UInt16)
    /// The connection's outgoing queue holds `limit` frames already; the frame was not queued.
    case queueFull(handle: UInt16, limit: Int)
    /// The receiver did not keep up: `limit` SDUs were waiting and one more arrived. The channel
    /// is failed rather than lose an SDU silently.
    case receiveQueueOverflow(handle: UInt16, limit: Int)
    /// The link is gone: HCI_Disconnection_Complete with this Reason.
    case disconnected(handle: UInt16, reason: HCIStatus)
    /// The channel was closed locally.
    case channelClosed(handle: UInt16)
    /// The HCI transport under the whole host closed.
    case transportClosed(String)
    /// The peer did not answer a signaling request in time (the RTX timer, Vol 3, Part A, §6.2.1).
    case timeout(String)
    /// The peer opened none of the credit-based channels asked for, with this result.
    case refused(spsm: UInt16, result: CreditBasedConnectionResult)
    /// The peer broke a channel's rules (credits, MPS, MTU, SDU Length); the channel was closed.
    case protocolViolation(String)

    /// Wraps a cursor error as malformed input of `context`.
    public init(_ error: ByteReaderError, context: String) {
        switch error.kind {
        case .truncated(let needed, let available):
            self = .malformed(
                context: context, reason: .truncated(needed: needed, available: available), offset: error.offset)
        case .trailingBytes(let count):
            self = .malformed(context: context, reason: .trailingBytes(count: count), offset: error.offset)
        }
    }

    public var description: String {
        switch self {
        case .malformed(let context, let reason, let offset):
            return "malformed \(context) at offset \(offset): \(reason)"
        case .invalidArgument(let context, let reason): return "cannot encode \(context): \(reason)"
        case .invalidBufferSize(let why): return "unusable controller buffer size: \(why)"
        case .unknownConnection(let handle): return "no LE connection with handle \(l2capHex(handle, 4))"
        case .connectionExists(let handle): return "LE connection \(l2capHex(handle, 4)) is already open"
        case .queueFull(let handle, let limit):
            return "outgoing queue of connection \(l2capHex(handle, 4)) is full (\(limit) frames)"
        case .receiveQueueOverflow(let handle, let limit):
            return "receiver of connection \(l2capHex(handle, 4)) fell \(limit) SDUs behind"
        case .disconnected(let handle, let reason):
            return "connection \(l2capHex(handle, 4)) disconnected (reason \(l2capHex(reason.rawValue, 2)))"
        case .channelClosed(let handle): return "ATT channel on connection \(l2capHex(handle, 4)) is closed"
        case .transportClosed(let why): return "transport closed: \(why)"
        case .timeout(let what): return "no answer to \(what) in time"
        case .refused(let spsm, let result):
            return "the peer opened no channel on SPSM \(l2capHex(spsm, 4)) (\(result.name.map { $0 + ", " } ?? "result ")\(l2capHex(result.rawValue, 4)))"
        case .protocolViolation(let why): return "the peer broke the channel's rules: \(why)"
        }
    }
}

/// `0x` and `digits` lower-case hex digits.
package func l2capHex<T: BinaryInteger>(_ value: T, _ digits: Int) -> String {
    let text = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, digits - text.count)) + text
}

extension ByteReader {
    package mutating func l2capUInt8(_ context: String) throws(L2CAPError) -> UInt8 {
        do { return try readUInt8() } catch { throw L2CAPError(error, context: context) }
    }

    package mutating func l2capUInt16(_ context: String) throws(L2CAPError) -> UInt16 {
        do { return try readUInt16LE() } catch { throw L2CAPError(error, context: context) }
    }

    package func l2capExpectEnd(_ context: String) throws(L2CAPError) {
        do { try expectEnd() } catch { throw L2CAPError(error, context: context) }
    }
}
