import ATT
import Bluetooth
import HCI
import L2CAP

/// `replay:FILE`: a recorded session as the peer of one ATT bearer.
///
/// The capture's PDUs on the bearer become an ``ATTTrace`` (record numbers as positions) run
/// by a ``ScriptedATTChannel``: what the capture's host sent (host → controller) is what our
/// side must send, what it received is what the peer plays back.
///
/// - ``ScriptedATTChannel/MatchMode/strict``: each SDU our side sends must equal the next
///   recorded one; on a match the recorded PDUs that follow from the peer (responses,
///   notifications, indications, its own requests) are delivered in order. A mismatch fails
///   the channel with ``ReplayError`` `.mismatch`, naming the record and both PDUs in hex.
/// - ``ScriptedATTChannel/MatchMode/anyOrder`` (`--replay-match any`): each SDU is matched
///   with the first unused recorded one holding the same bytes, and answered by what followed
///   it in the capture; an SDU no unused recorded one equals fails with `.noMatch`, naming
///   the closest unused recorded PDU with the same opcode.
///
/// A failure is thrown by `send(_:)` and ends `incoming` with the same ``ReplayError``, so a
/// bearer over this channel closes with that message whichever side notices first.
///
/// `maximumSDUSize` defaults to the Client Rx MTU the recorded client offered in its
/// Exchange MTU Request, so `ATTConnection.exchangeMTU(_:)` offers the recorded value and the
/// exchange replays whatever MTU our client would have asked for.
public final class ReplayATTChannel: ATTChannel {
    /// What error translation needs, shared with the forwarding task.
    private struct Context: Sendable {
        let name: String
        let lastRecordFromUs: Int?

        func translate(_ error: any Error, _ script: ScriptedATTChannel) -> any Error {
            guard let channelError = error as? ATTChannelError else { return error }
            switch channelError.kind {
            case .scriptMismatch(_, let expected, let actual):
                // After a strict failure the expected entry is the first unused one from us.
                guard let entry = script.remainingEntries.first(where: { $0.direction == .hostToPeer }),
                    entry.bytes == expected
                else { return error }
                return ReplayError(capture: name, .mismatch(record: entry.line, expected: expected, actual: actual))
            case .scriptExhausted(let actual):
                return ReplayError(capture: name, .exhausted(lastRecord: lastRecordFromUs, actual: actual))
            case .scriptNoMatch(let actual):
                return ReplayError(capture: name, .noMatch(actual: actual, closest: Self.closest(to: actual, script)))
            default:
                return error
            }
        }

        /// The unused entry from our side with the same opcode sharing the longest prefix
        /// with `sdu` (the earliest on a tie).
        static func closest(to sdu: [UInt8], _ script: ScriptedATTChannel) -> ATTTrace.Entry? {
            var best: (entry: ATTTrace.Entry, shared: Int)?
            for entry in script.remainingEntries where entry.direction == .hostToPeer {
                guard let opcode = entry.bytes.first, opcode == sdu.first else { continue }
                let shared = zip(entry.bytes, sdu).prefix { $0 == $1 }.count
                if best == nil || shared > best!.shared { best = (entry, shared) }
            }
            return best?.entry
        }
    }

    /// The capture's name (its file name).
    public let captureName: String
    /// The bearer replayed.
    public let bearer: ReplayBearer
    /// The bearer's PDUs as a script (entry `line` = capture record number).
    public let trace: ATTTrace
    public let matchMode: ScriptedATTChannel.MatchMode
    /// The Client Rx MTU of the recorded Exchange MTU Request from our side, if any.
    public let recordedClientMTU: Int?

    private let script: ScriptedATTChannel
    private let context: Context
    private let sduLimit: Int?
    public let incoming: AsyncThrowingStream<[UInt8], Error>

    /// Replays the capture at `path`: the first ATT bearer, or the first matching
    /// `connectionHandle`, `channelID` and `peerAddress` (see
    /// ``ReplayCapture/bearer(connectionHandle:channelID:peerAddress:)``). `maximumSDUSize`
    /// nil: the recorded client's Rx MTU.
    public convenience init(
        path: String, connectionHandle: UInt16? = nil, channelID: UInt16? = nil, peerAddress: BluetoothAddress? = nil,
        matching mode: ScriptedATTChannel.MatchMode = .strict, maximumSDUSize: Int? = nil
    ) throws(ReplayError) {
        try self.init(
            capture: ReplayCapture(path: path), connectionHandle: connectionHandle, channelID: channelID,
            peerAddress: peerAddress, matching: mode, maximumSDUSize: maximumSDUSize)
    }

    /// Replays one bearer of an already decoded capture.
    public init(
        capture: ReplayCapture, connectionHandle: UInt16? = nil, channelID: UInt16? = nil,
        peerAddress: BluetoothAddress? = nil, matching mode: ScriptedATTChannel.MatchMode = .strict,
        maximumSDUSize: Int? = nil
    ) throws(ReplayError) {
        let bearer = try capture.bearer(
            connectionHandle: connectionHandle, channelID: channelID, peerAddress: peerAddress)
        let trace = try capture.trace(of: bearer)
        captureName = capture.name
        self.bearer = bearer
        self.trace = trace
        matchMode = mode
        recordedClientMTU = Self.clientMTU(in: trace)
        sduLimit = maximumSDUSize ?? recordedClientMTU
        let context = Context(
            name: capture.name, lastRecordFromUs: trace.entries.last { $0.direction == .hostToPeer }?.line)
        self.context = context
        let script = ScriptedATTChannel(
            trace: trace, matching: mode, positionLabel: "\(capture.name) record", maximumSDUSize: sduLimit)
        self.script = script
        let (stream, continuation) = AsyncThrowingStream<[UInt8], Error>.makeStream(bufferingPolicy: .unbounded)
        incoming = stream
        // One forwarding task per channel (not per PDU): the script's stream, with its
        // failures translated into `ReplayError`. It ends when the script closes or fails.
        Task {
            do {
                for try await sdu in script.incoming {
                    continuation.yield(sdu)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: context.translate(error, script))
            }
        }
    }

    public var maximumSDUSize: Int? {
        sduLimit
    }

    public func send(_ sdu: [UInt8]) async throws {
        do {
            try await script.send(sdu)
        } catch {
            throw context.translate(error, script)
        }
    }

    public func close() async {
        await script.close()
    }

    // MARK: Progress

    /// True when every recorded PDU of the bearer has been used.
    public var isComplete: Bool { script.isComplete }

    /// The recorded PDUs not used (yet), in capture order: after a replay in any order, the
    /// recorded requests our side never made.
    public var remainingEntries: [ATTTrace.Entry] { script.remainingEntries }

    /// The first failure (a ``ReplayError`` for a divergence), if any.
    public var failure: (any Error)? {
        script.failure.map { context.translate($0, script) }
    }

    /// Every SDU our side sent that matched the recording, in order.
    public var sentSDUs: [[UInt8]] { script.sentSDUs }

    /// Returns once the PDU at capture record `record` (and, strictly, every one before it)
    /// has been used, or the replay failed or closed.
    public func waitUntilReached(record: Int) async {
        await script.waitUntilReached(line: record)
    }

    /// Returns once every recorded PDU has been used, or the replay failed or closed.
    public func waitUntilComplete() async {
        await script.waitUntilComplete()
    }

    /// The Client Rx MTU of the first Exchange MTU Request our side sent in `trace`.
    static func clientMTU(in trace: ATTTrace) -> Int? {
        for entry in trace.entries where entry.direction == .hostToPeer {
            guard entry.bytes.count == 3, entry.bytes[0] == ATTOpcode.exchangeMTURequest.rawValue else { continue }
            return Int(entry.bytes[1]) | Int(entry.bytes[2]) << 8
        }
        return nil
    }
}
