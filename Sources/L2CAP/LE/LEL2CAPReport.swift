import HCI

/// Something an LE connection received that was not simply delivered or answered: dropped,
/// ignored, refused or rejected input, for the log and for tests.
public enum LEL2CAPReport: Hashable, Sendable, CustomStringConvertible {
    /// Why a signaling command was rejected or ignored.
    public enum SignalingReason: Hashable, Sendable, CustomStringConvertible {
        /// A Code LE does not use, or a Data field that does not fit its Code.
        case malformed(L2CAPError)
        /// The C-frame is longer than MTUsig.
        case overSignalingMTU(Int)
        /// A response or Command Reject to a request we never sent.
        case unsolicitedResponse
        /// The command names a channel this host does not have.
        case unknownChannel(UInt16)
        /// A Connection Parameter Update Request reached the Peripheral.
        case peripheralRole

        public var description: String {
            switch self {
            case .malformed(let error): return error.description
            case .overSignalingMTU(let length): return "C-frame of \(length) octets over MTUsig"
            case .unsolicitedResponse: return "no request of ours is pending"
            case .unknownChannel(let cid): return "no channel \(l2capHex(cid, 4))"
            case .peripheralRole: return "only the Central accepts it"
            }
        }
    }

    /// The reassembler dropped a partial frame or a fragment.
    case reassemblyDrop(L2CAPReassembler.DropReason)
    /// An ACL data packet for another connection handle reached this connection.
    case otherHandle(UInt16)
    /// An ACL data packet for a handle with no open connection, dropped.
    case unknownConnection
    /// A B-frame on a channel this host does not serve, dropped.
    case unsupportedChannel(cid: UInt16, length: Int)
    /// A C-frame that is not a well-formed command header, dropped unanswered.
    case malformedSignaling(L2CAPError)
    /// A signaling command answered with Command Reject or a refusal result.
    case rejectedSignaling(code: L2CAPSignalingCode, identifier: UInt8, reason: SignalingReason)
    /// A signaling command dropped unanswered.
    case ignoredSignaling(code: L2CAPSignalingCode, identifier: UInt8, reason: SignalingReason)
    /// A Connection Parameter Update Request answered "rejected".
    case rejectedConnectionParameters(ConnectionParameterUpdateRequest, reason: String)
    /// A request for `count` credit-based channels on `spsm`, refused (SPSM not supported).
    case refusedChannel(spsm: UInt16, count: Int)
    /// What the Security Manager channel's responder reported (a refused pairing, an ignored
    /// command), in its words.
    case securityManager(String)
    /// A response could not be queued for sending.
    case responseNotSent(cid: UInt16, error: L2CAPError)

    public var description: String {
        switch self {
        case .reassemblyDrop(let reason): return "reassembly dropped a frame: \(reason)"
        case .otherHandle(let handle): return "ACL data for handle \(l2capHex(handle, 4)) on the wrong connection"
        case .unknownConnection: return "ACL data for a handle with no open connection"
        case .unsupportedChannel(let cid, let length):
            return "dropped \(length) octets on unsupported CID \(l2capHex(cid, 4))"
        case .malformedSignaling(let error): return "dropped signaling C-frame: \(error)"
        case .rejectedSignaling(let code, let identifier, let reason):
            return "rejected \(code) id \(identifier): \(reason)"
        case .ignoredSignaling(let code, let identifier, let reason):
            return "ignored \(code) id \(identifier): \(reason)"
        case .rejectedConnectionParameters(let request, let reason): return "rejected \(request): \(reason)"
        case .refusedChannel(let spsm, let count):
            return "refused \(count) credit-based channel(s) on SPSM \(l2capHex(spsm, 4))"
        case .securityManager(let report): return report
        case .responseNotSent(let cid, let error): return "response on CID \(l2capHex(cid, 4)) not sent: \(error)"
        }
    }
}
