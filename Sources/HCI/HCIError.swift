import Bluetooth

/// Every failure the HCI module reports: malformed input from a controller or a file, a command
/// the controller refused, and local/system failures are distinct cases.
public enum HCIError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Bytes that do not form what `context` says they should (peer or file malformed).
    /// `offset` is within the structure named by `context`.
    case malformed(context: String, reason: MalformedReason, offset: Int)
    /// A stream or file used a packet indicator / type we do not know.
    case unknownPacketType(UInt8)
    /// The controller answered a command with a failure status.
    case commandFailed(opcode: HCIOpcode, status: HCIStatus)
    /// The controller did not answer a command in time.
    case commandTimeout(opcode: HCIOpcode)
    /// A capture file that cannot be read: wrong magic, unsupported link type, damage.
    case captureFile(String)
    /// A system call failed; `operation` says which and on what.
    case system(operation: String, errno: Errno)
    /// The transport closed; everything pending fails with this.
    case transportClosed(String)
    /// A `--transport` URI that does not parse; `reason` says which part is wrong.
    case invalidTransportURI(uri: String, reason: String)
    /// A well-formed transport URI that cannot be opened as a raw HCI transport (the kernel's own
    /// host path `hciN`, the simulator, replay: refused by whoever opens URIs), or a transport
    /// unavailable on this system.
    case unsupportedTransport(uri: String, reason: String)
    /// A value the caller asked us to encode cannot be expressed on the wire (local failure:
    /// too many entries, data over a length limit, a UUID that does not fit its list's width).
    case invalidArgument(context: String, reason: String)

    public enum MalformedReason: Hashable, Sendable, CustomStringConvertible {
        case truncated(needed: Int, available: Int)
        case trailingBytes(count: Int)
        /// A length or count field disagrees with the bytes or with the spec.
        case invalidLength(field: String, value: Int)
        /// A field holds a value the spec forbids here.
        case invalidValue(field: String, value: Int)

        public var description: String {
            switch self {
            case .truncated(let needed, let available): return "truncated: needed \(needed) octet(s), \(available) left"
            case .trailingBytes(let count): return "\(count) trailing octet(s)"
            case .invalidLength(let field, let value): return "invalid \(field) \(value)"
            case .invalidValue(let field, let value): return "invalid \(field) 0x\(String(value, radix: 16))"
            }
        }
    }

    /// Wraps a cursor error as malformed input of `context`.
    public init(_ error: ByteReaderError, context: String) {
        switch error.kind {
        case .truncated(let needed, let available):
            self = .malformed(context: context, reason: .truncated(needed: needed, available: available), offset: error.offset)
        case .trailingBytes(let count):
            self = .malformed(context: context, reason: .trailingBytes(count: count), offset: error.offset)
        }
    }

    public var description: String {
        switch self {
        case .malformed(let context, let reason, let offset): return "malformed \(context) at offset \(offset): \(reason)"
        case .unknownPacketType(let type): return "unknown HCI packet type 0x\(String(type, radix: 16))"
        case .commandFailed(let opcode, let status): return "\(opcode) failed: \(status)"
        case .commandTimeout(let opcode): return "controller did not answer \(opcode)"
        case .captureFile(let message): return message
        case .system(let operation, let errno): return "\(operation): \(errno)"
        case .transportClosed(let why): return "transport closed: \(why)"
        case .invalidTransportURI(let uri, let reason): return "invalid transport '\(uri)': \(reason)"
        case .unsupportedTransport(let uri, let reason): return "transport '\(uri)': \(reason)"
        case .invalidArgument(let context, let reason): return "cannot encode \(context): \(reason)"
        }
    }
}
