import HCI
import Bluetooth
import L2CAP
import ATT

/// Where and why a capture file stopped decoding. Records before `recordNumber` were good.
public struct CaptureDamage: Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable, CustomStringConvertible {
        /// The file ends inside a record (or block) header.
        case truncatedHeader(needed: Int, available: Int)
        /// The file ends inside a record's packet bytes.
        case truncatedData(needed: Int, available: Int)
        /// A length field exceeds what the format or HCI allows.
        case lengthTooLarge(field: String, value: Int, maximum: Int)
        /// A record claims to include more bytes than the packet had.
        case includedExceedsOriginal(included: Int, original: Int)
        /// A pcapng block that breaks the block rules (length, trailer, options, section).
        case invalidBlock(String)
        /// A stream could not be read on (a read error, a followed file that shrank).
        case inputFailed(String)

        /// Whether the octets ran out (what more input could mend), not a broken field.
        public var isTruncation: Bool {
            switch self {
            case .truncatedHeader, .truncatedData: return true
            default: return false
            }
        }

        public var description: String {
            switch self {
            case .truncatedHeader(let needed, let available):
                return "file ends inside a record header (needed \(needed) octets, \(available) left)"
            case .truncatedData(let needed, let available):
                return "file ends inside a record (needed \(needed) octets of packet data, \(available) left)"
            case .lengthTooLarge(let field, let value, let maximum):
                return "\(field) \(value) exceeds the maximum \(maximum)"
            case .includedExceedsOriginal(let included, let original):
                return "included length \(included) exceeds original length \(original)"
            case .invalidBlock(let why), .inputFailed(let why):
                return why
            }
        }
    }

    /// 1-based number of the record that could not be decoded (for pcapng damage outside a
    /// packet block: the number the next packet would have had).
    public var recordNumber: Int
    /// File offset of the damaged record's (or block's) header.
    public var offset: Int
    public var reason: Reason

    public init(recordNumber: Int, offset: Int, reason: Reason) {
        self.recordNumber = recordNumber
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        "capture damaged at record \(recordNumber) (file offset \(offset)): \(reason)"
    }
}
