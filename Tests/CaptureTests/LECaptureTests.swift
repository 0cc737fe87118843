import Bluetooth
import Foundation
import HCI
import Testing

@testable import L2CAP
@testable import Capture
import TestSupport

/// The shared captures (`<package root>/../shared/captures`), when present.
enum LESharedCaptures {
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/captures")

    static var available: Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent("oracle").path)
    }

    struct Record {
        /// Controller to host (btsnoop flags bit 0).
        var received: Bool
        var h4: ArraySlice<UInt8>
    }

    struct CaptureError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// A minimal btsnoop reader, for tests only: "btsnoop\0", version 1, datalink 1002 (H4),
    /// then records of a 24-octet big-endian header and the H4 packet.
    static func records(_ name: String) throws -> [Record] {
        let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
        var reader = ByteReader(bytes)
        guard Array(try reader.readBytes(8)) == Array("btsnoop\0".utf8) else {
            throw CaptureError("\(name): not btsnoop")
        }
        guard try reader.readUInt32BE() == 1, try reader.readUInt32BE() == 1002 else {
            throw CaptureError("\(name): not btsnoop version 1 with H4")
        }
        var records: [Record] = []
        while !reader.isAtEnd {
            _ = try reader.readUInt32BE()  // original length
            let included = Int(try reader.readUInt32BE())
            let flags = try reader.readUInt32BE()
            _ = try reader.readUInt32BE()  // cumulative drops
            _ = try reader.readUInt64BE()  // timestamp
            records.append(Record(received: flags & 1 == 1, h4: try reader.readBytes(included)))
        }
        return records
    }

    /// The oracle's ATT records on CID 4: direction, connection handle, PDU hex.
    static func oracleATT(_ name: String) async throws -> [LECaptureATT] {
        let (code, data) = try await ChildProcess.run(
            ["zcat", directory.appendingPathComponent("oracle/\(name).oracle.jsonl.gz").path])
        guard code == 0 else { throw CaptureError("zcat failed for \(name)") }
        var result: [LECaptureATT] = []
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                object["kind"] as? String == "att", object["cid"] as? Int == 4,
                let dir = object["dir"] as? String, let conn = object["conn"] as? Int,
                let pdu = object["pdu"] as? String
            else { continue }
            result.append(LECaptureATT(received: dir == "controller_to_host", handle: UInt16(conn), pdu: pdu))
        }
        return result
    }
}

struct LECaptureATT: Hashable, CustomStringConvertible {
    var received: Bool
    var handle: UInt16
    var pdu: String
    var description: String { "\(received ? "<" : ">") \(handle) \(pdu)" }
}

/// Real sessions recorded by other hosts, replayed through our L2CAP: each direction of each
/// connection handle goes through its own `LEL2CAPConnection`, and the ATT PDUs that come out
/// must be Wireshark's, in order; our answers to the peer's signaling requests must be what the
/// recorded host sent.
@Suite(.cpuBound, .enabled(if: LESharedCaptures.available, "the shared captures (../shared/captures) are not present"))
struct LECaptureReplayTests {
    struct Replay {
        var att: [LECaptureATT] = []
        /// Per handle: the frames our central answered with, and the host's recorded ones.
        var ourAnswers: [UInt16: [L2CAPBasicFrame]] = [:]
        var recordedAnswers: [UInt16: [L2CAPBasicFrame]] = [:]
        var updates = 0
    }

    static func replay(_ name: String) throws -> Replay {
        var replay = Replay()
        var fromPeer: [UInt16: LEL2CAPConnection] = [:]
        var fromHost: [UInt16: LEL2CAPConnection] = [:]
        for record in try LESharedCaptures.records(name) where record.h4.first == 0x02 {
            var reader = ByteReader(record.h4.dropFirst())
            let packet = try ACLDataPacket(parsing: &reader)
            let handle = packet.handle
            var actions: [LEL2CAPConnection.Action] = []
            if record.received {
                fromPeer[handle, default: LEL2CAPConnection(handle: handle, role: .central)].receive(
                    packet, into: &actions)
            } else {
                fromHost[handle, default: LEL2CAPConnection(handle: handle, role: .peripheral)].receive(
                    packet, into: &actions)
            }
            for action in actions {
                switch action {
                case .deliverATT(let sdu):
                    replay.att.append(LECaptureATT(received: record.received, handle: handle, pdu: Hex.encode(sdu)))
                case .send(let frame) where record.received:
                    replay.ourAnswers[handle, default: []].append(frame)
                case .updateConnectionParameters where record.received:
                    replay.updates += 1
                default:
                    break
                }
            }
            // What the recorded host sent on the signaling channel.
            if !record.received, packet.packetBoundary.isStart, packet.data.count >= 4,
                packet.data[2] == 0x05, packet.data[3] == 0x00
            {
                replay.recordedAnswers[handle, default: []].append(
                    L2CAPBasicFrame(channelID: 5, payload: packet.data[4...]))
            }
        }
        return replay
    }

    @Test(arguments: ["horizon-treadmill-ftms.btsnoop", "revcar-acl-only.btsnoop"])
    func attPDUsMatchWireshark(name: String) async throws {
        let replay = try Self.replay(name)
        let oracle = try await LESharedCaptures.oracleATT(name)
        #expect(replay.att.count == oracle.count)
        #expect(replay.att == oracle)
        #expect(!oracle.isEmpty)
    }

    /// The smart pen capture also carries ACL data on handle 0x0edc (3804) that is not L2CAP at
    /// all (garbage lengths and CIDs); Wireshark still shows one of those packets as an ATT
    /// Read Request. The comparison covers the real LE connections (handles 2 and 3).
    @Test func smartPenATTPDUsMatchWiresharkOnTheLEConnections() async throws {
        let name = "smartpen-reads-extadv.btsnoop"
        let replay = try Self.replay(name)
        let oracle = try await LESharedCaptures.oracleATT(name).filter { $0.handle != 3804 }
        #expect(replay.att.filter { $0.handle != 3804 } == oracle)
        #expect(oracle.count > 4000)
    }

    @Test func ourAnswersToTheSmartPensParameterRequestsAreTheRecordedHosts() throws {
        let replay = try Self.replay("smartpen-reads-extadv.btsnoop")
        #expect(replay.updates == 2)
        for handle: UInt16 in [2, 3] {
            #expect(replay.ourAnswers[handle] == replay.recordedAnswers[handle], "handle \(handle)")
            #expect(replay.ourAnswers[handle]?.map { Hex.encode($0.payload) } == ["130102000000"])
        }
    }
}
