import ATT
import Bluetooth
import HCI
import L2CAP

/// Why a capture cannot be replayed, or where a replay diverged from it.
///
/// Every message names the capture and, where a PDU is involved, the capture record number
/// (Wireshark's frame number) and the PDUs in hex.
public struct ReplayError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        /// The file could not be read, or is not a capture (`CaptureFile`/`CaptureReader`).
        case capture(HCIError)
        /// The capture holds no ATT PDU at all (`records` records read).
        case noATT(records: Int, advertisingReports: Int)
        /// No ATT bearer has the requested connection handle, CID and peer address;
        /// `available` lists the bearers the capture does hold.
        case noSuchBearer(
            connectionHandle: UInt16?, channelID: UInt16?, peerAddress: BluetoothAddress?, available: [ReplayBearer])
        /// An ATT PDU whose direction the capture does not record (pcap link type 187): our
        /// side and the peer's cannot be told apart.
        case unknownDirection(record: Int)
        /// Strict replay: our side sent `actual` where the recording has `expected` at `record`.
        case mismatch(record: Int, expected: [UInt8], actual: [UInt8])
        /// Strict replay: our side sent `actual` after the recording's last PDU from our side
        /// (at `lastRecord`, nil when the recording has none).
        case exhausted(lastRecord: Int?, actual: [UInt8])
        /// Any-order replay: no unused recorded PDU from our side equals `actual`. `closest` is
        /// the unused one with the same opcode sharing the longest prefix with it, if any.
        case noMatch(actual: [UInt8], closest: ATTTrace.Entry?)
    }

    /// The capture's file name (or the name given with the bytes).
    public var capture: String
    public var kind: Kind

    public init(capture: String, _ kind: Kind) {
        self.capture = capture
        self.kind = kind
    }

    public var description: String {
        switch kind {
        case .capture(let error):
            return "\(capture): \(error)"
        case .noATT(let records, let reports):
            return "\(capture): no ATT PDU in the capture (\(records) records, \(reports) advertising reports):"
                + " nothing to replay as a GATT peer"
        case .noSuchBearer(let handle, let cid, let address, let available):
            var wanted = handle.map { "connection handle " + replayHex($0) } ?? "any connection"
            if let address { wanted += " to \(address)" }
            if let cid { wanted += ", CID " + replayHex(cid) }
            let list = available.map(\.description).joined(separator: "; ")
            return "\(capture): no ATT bearer on \(wanted); the capture has: \(list.isEmpty ? "none" : list)"
        case .unknownDirection(let record):
            return "\(capture) record \(record): the capture does not record which way the ATT PDU went,"
                + " so it cannot be replayed (use a btsnoop H4 or monitor capture)"
        case .mismatch(let record, let expected, let actual):
            return "replay mismatch at \(capture) record \(record): expected > \(Hex.encode(expected)),"
                + " host sent > \(Hex.encode(actual))"
        case .exhausted(let lastRecord, let actual):
            let after = lastRecord.map { " after record \($0)" } ?? ""
            return "replay of \(capture): no further recorded PDU from our side\(after),"
                + " host sent > \(Hex.encode(actual))"
        case .noMatch(let actual, let closest):
            let opcode = actual.first.map { replayHex($0, digits: 2) } ?? "(empty)"
            var text = "replay of \(capture) (any order): no unused recorded PDU equals > \(Hex.encode(actual))"
            if let closest {
                text += "; closest unused with opcode \(opcode): record \(closest.line) > \(Hex.encode(closest.bytes))"
            } else {
                text += "; no unused recorded PDU has opcode \(opcode)"
            }
            return text
        }
    }
}

/// `0x` and `digits` lower-case hex digits.
func replayHex(_ value: some BinaryInteger, digits: Int = 4) -> String {
    let text = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, digits - text.count)) + text
}
