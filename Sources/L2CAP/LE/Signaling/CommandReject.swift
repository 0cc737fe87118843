import Bluetooth

/// L2CAP_COMMAND_REJECT_RSP: Reason and its reason-specific Data.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.1
public enum CommandReject: L2CAPSignalingCommandBody, CustomStringConvertible {
    /// Reason 0x0000, no data.
    case commandNotUnderstood
    /// Reason 0x0001, Data: the actual MTUsig.
    case signalingMTUExceeded(actualMTU: UInt16)
    /// Reason 0x0002, Data: the requested CIDs. `localCID` is the CID on the device sending the
    /// reject (the rejected request's Destination CID), `remoteCID` the one on the device that
    /// sent the request (its Source CID).
    case invalidCIDInRequest(localCID: UInt16, remoteCID: UInt16)
    /// A reason this module does not know, with its data kept as received.
    case other(reason: CommandRejectReason, data: [UInt8])

    public static let code = L2CAPSignalingCode.commandReject
    static let context = "L2CAP_COMMAND_REJECT_RSP"

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        let reason = CommandRejectReason(rawValue: try reader.l2capUInt16(c))
        switch reason {
        case .commandNotUnderstood:
            self = .commandNotUnderstood
        case .signalingMTUExceeded:
            self = .signalingMTUExceeded(actualMTU: try reader.l2capUInt16(c))
        case .invalidCIDInRequest:
            let local = try reader.l2capUInt16(c)
            self = .invalidCIDInRequest(localCID: local, remoteCID: try reader.l2capUInt16(c))
        default:
            self = .other(reason: reason, data: Array(reader.readRemaining()))
        }
        try reader.l2capExpectEnd(c)
    }

    public var reason: CommandRejectReason {
        switch self {
        case .commandNotUnderstood: return .commandNotUnderstood
        case .signalingMTUExceeded: return .signalingMTUExceeded
        case .invalidCIDInRequest: return .invalidCIDInRequest
        case .other(let reason, _): return reason
        }
    }

    public var encodedLength: Int {
        switch self {
        case .commandNotUnderstood: return 2
        case .signalingMTUExceeded: return 4
        case .invalidCIDInRequest: return 6
        case .other(_, let data): return 2 + data.count
        }
    }

    /// Throws when `.other` carries one of the known reasons (use the typed case).
    public func write(to writer: inout ByteWriter) throws(L2CAPError) {
        switch self {
        case .commandNotUnderstood:
            writer.writeUInt16LE(CommandRejectReason.commandNotUnderstood.rawValue)
        case .signalingMTUExceeded(let mtu):
            writer.writeUInt16LE(CommandRejectReason.signalingMTUExceeded.rawValue)
            writer.writeUInt16LE(mtu)
        case .invalidCIDInRequest(let local, let remote):
            writer.writeUInt16LE(CommandRejectReason.invalidCIDInRequest.rawValue)
            writer.writeUInt16LE(local)
            writer.writeUInt16LE(remote)
        case .other(let reason, let data):
            guard reason.rawValue > 0x0002 else {
                throw L2CAPError.invalidArgument(
                    context: Self.context, reason: "reason \(l2capHex(reason.rawValue, 4)) has a typed case")
            }
            writer.writeUInt16LE(reason.rawValue)
            writer.writeBytes(data)
        }
    }

    public var description: String {
        switch self {
        case .commandNotUnderstood: return "Command Reject: command not understood"
        case .signalingMTUExceeded(let mtu): return "Command Reject: signaling MTU exceeded (MTUsig \(mtu))"
        case .invalidCIDInRequest(let local, let remote):
            return "Command Reject: invalid CID in request (local \(l2capHex(local, 4)), remote \(l2capHex(remote, 4)))"
        case .other(let reason, let data):
            return "Command Reject: reason \(l2capHex(reason.rawValue, 4)) \(Hex.encode(data))"
        }
    }
}
