import Bluetooth

/// Follows the LE signaling channel of a connection (as seen in a capture or by a passive
/// observer) to learn which dynamic channels carry ATT (Enhanced ATT, SPSM 0x0027), and
/// reassembles the SDUs those channels carry in K-frames.
///
/// Only the L2CAP_CREDIT_BASED_CONNECTION_REQ/RSP pair opens channels here (EATT requires the
/// Enhanced Credit Based Flow Control mode); channels close with the connection.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.25–§4.26 (signaling), §3.4.3 (K-frames);
///   Vol 3, Part G, §5.4 (EATT on SPSM 0x0027)
public struct CreditBasedChannelTracker: Sendable {
    /// Which way a frame travelled relative to the observer's host.
    public enum Direction: UInt8, Hashable, Sendable {
        case outgoing, incoming
        var reversed: Direction { self == .outgoing ? .incoming : .outgoing }
    }

    /// The SPSM of the Enhanced ATT bearer.
    public static let eattSPSM: UInt16 = 0x0027

    public static let creditBasedConnectionRequest: UInt8 = 0x17
    public static let creditBasedConnectionResponse: UInt8 = 0x18

    private struct ChannelKey: Hashable, Sendable {
        var handle: UInt16
        var direction: Direction
        var cid: UInt16
    }

    private struct PendingRequest: Sendable {
        var spsm: UInt16
        var sourceCIDs: [UInt16]
    }

    private struct PendingKey: Hashable, Sendable {
        var handle: UInt16
        /// Direction the request travelled.
        var direction: Direction
        var identifier: UInt8
    }

    /// A partial SDU being reassembled on a channel.
    private struct PartialSDU: Sendable {
        var length: Int
        var bytes: [UInt8]
    }

    /// What a K-frame produced.
    public enum SDUOutput: Hashable, Sendable {
        /// Part of an SDU; more K-frames follow.
        case incomplete
        case sdu([UInt8])
        /// The K-frame did not fit the SDU it continues (or was too short to start one).
        case dropped(String)
    }

    private var pending: [PendingKey: PendingRequest] = [:]
    /// Open channels carrying ATT: (connection, direction of travel, CID in the frame header).
    private var attChannels: Set<ChannelKey> = []
    private var partials: [ChannelKey: PartialSDU] = [:]
    /// Bounds against a misbehaving peer or a damaged capture.
    public let maximumPendingRequests = 64
    public let maximumChannels = 256

    public init() {}

    /// Feeds one LE signaling (CID 0x0005) B-frame payload, which may hold several commands.
    public mutating func signaling(_ payload: ArraySlice<UInt8>, handle: UInt16, direction: Direction) {
        var reader = ByteReader(payload)
        while reader.remainingCount >= 4 {
            guard let code = try? reader.readUInt8(), let identifier = try? reader.readUInt8(),
                  let length = try? reader.readUInt16LE(), var data = try? reader.subReader(Int(length)) else { return }
            switch code {
            case Self.creditBasedConnectionRequest:
                // SPSM, MTU, MPS, Initial_Credits, then up to five Source_CIDs.
                guard let spsm = try? data.readUInt16LE(), (try? data.skip(6)) != nil,
                      data.remainingCount % 2 == 0, pending.count < maximumPendingRequests else { continue }
                var sources: [UInt16] = []
                while let cid = try? data.readUInt16LE() { sources.append(cid) }
                pending[PendingKey(handle: handle, direction: direction, identifier: identifier)] = PendingRequest(spsm: spsm, sourceCIDs: sources)
            case Self.creditBasedConnectionResponse:
                // MTU, MPS, Initial_Credits, Result, then Destination_CIDs (0x0000 = refused).
                guard let request = pending.removeValue(forKey: PendingKey(handle: handle, direction: direction.reversed, identifier: identifier)),
                      (try? data.skip(6)) != nil, let result = try? data.readUInt16LE(), data.remainingCount % 2 == 0 else { continue }
                var destinations: [UInt16] = []
                while let cid = try? data.readUInt16LE() { destinations.append(cid) }
                // Results 0x0000 (all successful) and the partial refusals 0x0004/0x0009/0x000A/0x000B
                // keep the channels whose Destination_CID is not zero.
                guard request.spsm == Self.eattSPSM, [0x0000, 0x0004, 0x0009, 0x000A, 0x000B].contains(result) else { continue }
                let requester = direction.reversed
                for (source, destination) in zip(request.sourceCIDs, destinations) where destination != 0 && attChannels.count + 2 <= maximumChannels {
                    // Frames travelling to the requester carry its Source_CID; frames travelling to
                    // the responder carry the responder's Destination_CID.
                    attChannels.insert(ChannelKey(handle: handle, direction: requester.reversed, cid: source))
                    attChannels.insert(ChannelKey(handle: handle, direction: requester, cid: destination))
                }
            default:
                continue
            }
        }
    }

    /// Whether frames on `cid` travelling in `direction` carry ATT over EATT.
    public func carriesATT(handle: UInt16, direction: Direction, cid: UInt16) -> Bool {
        attChannels.contains(ChannelKey(handle: handle, direction: direction, cid: cid))
    }

    /// Reassembles an SDU from a K-frame payload on an EATT channel.
    public mutating func kFrame(_ payload: ArraySlice<UInt8>, handle: UInt16, direction: Direction, cid: UInt16) -> SDUOutput {
        let key = ChannelKey(handle: handle, direction: direction, cid: cid)
        if var partial = partials.removeValue(forKey: key) {
            partial.bytes.append(contentsOf: payload)
            if partial.bytes.count == partial.length { return .sdu(partial.bytes) }
            if partial.bytes.count > partial.length {
                return .dropped("K-frames carry \(partial.bytes.count) octets, SDU Length says \(partial.length)")
            }
            partials[key] = partial
            return .incomplete
        }
        guard payload.count >= 2 else { return .dropped("K-frame of \(payload.count) octet(s) cannot start an SDU") }
        let length = Int(payload[payload.startIndex]) | Int(payload[payload.startIndex + 1]) << 8
        let body = payload.dropFirst(2)
        if body.count == length { return .sdu(Array(body)) }
        if body.count > length { return .dropped("K-frame carries \(body.count) octets, SDU Length says \(length)") }
        var bytes = Array(body)
        bytes.reserveCapacity(length)
        partials[key] = PartialSDU(length: length, bytes: bytes)
        return .incomplete
    }

    /// Forgets every channel and partial SDU of a connection.
    public mutating func reset(handle: UInt16) {
        attChannels = attChannels.filter { $0.handle != handle }
        partials = partials.filter { $0.key.handle != handle }
        pending = pending.filter { $0.key.handle != handle }
    }
}
