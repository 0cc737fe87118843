import Bluetooth
import Foundation
import Testing
@testable import ATT

/// Wireshark's view of real captures (`captures/oracle/*.jsonl.gz`, made by tshark_att.py):
/// every ATT record's PDU decodes, re-encodes byte for byte, and the fields we decode agree
/// with the fields Wireshark decoded from the same octets.
enum OracleRecords {
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/captures/oracle")

    static var files: [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".jsonl.gz") }.sorted().map { directory.appendingPathComponent($0) }
    }

    static var isPresent: Bool { !files.isEmpty && FileManager.default.isExecutableFile(atPath: "/usr/bin/gzip") }

    /// The ATT records of one file (decompressed by gzip, bounded by the file's size).
    static func attRecords(_ file: URL) throws -> [[String: Any]] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gzip")
        process.arguments = ["-dc", file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var records: [[String: Any]] = []
        for line in data.split(separator: UInt8(ascii: "\n")) {
            guard let record = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                  record["kind"] as? String == "att" else { continue }
            records.append(record)
        }
        return records
    }
}

@Suite("ATT vectors: Wireshark oracle records",
       .enabled(if: OracleRecords.isPresent,
                "skipped: ../shared/captures/oracle (from the package root) or /usr/bin/gzip is absent"))
struct ATTVectorsOracleTests {
    @Test("every ATT PDU of every capture agrees with Wireshark")
    func allRecords() throws {
        var total = 0
        var strictRejections: [String] = []
        for file in OracleRecords.files {
            for record in try OracleRecords.attRecords(file) {
                total += 1
                let where_ = "\(file.lastPathComponent) frame \(record["frame"] ?? "?")"
                let bytes = try #require(Hex.decode(record["pdu"] as? String ?? ""), "\(where_)")
                if record["malformed"] as? Bool == true {
                    #expect(throws: ATTError.self, "\(where_)") { try ATTPDU(decoding: bytes) }
                    continue
                }
                let pdu: ATTPDU
                do { pdu = try ATTPDU(decoding: bytes) } catch {
                    strictRejections.append("\(where_): \(error)")
                    continue
                }
                #expect(pdu.encoded == bytes, "\(where_)")
                #expect(pdu.opcode.wiresharkName == record["op"] as? String, "\(where_)")
                let ours = Self.fields(of: pdu)
                for (key, value) in ours {
                    guard let theirs = record[key] else {
                        Issue.record("\(where_): we decode \(key), Wireshark does not")
                        continue
                    }
                    #expect(Self.same(value, theirs), "\(where_): \(key) ours \(value) theirs \(theirs)")
                }
                for key in ["handle", "start_handle", "end_handle", "uuid", "value", "error", "mtu", "offset", "flags",
                            "length", "format", "handles", "entries"] where record[key] != nil && ours[key] == nil {
                    Issue.record("\(where_): Wireshark decodes \(key), we do not")
                }
            }
        }
        #expect(total > 6_000)
        // Where we are stricter than Wireshark, which ignores octets after a PDU's last field:
        // one controller-to-host "Read Request" of 178 octets in the smart pen capture (a
        // Read Request is 3 octets, Vol 3 Part F §3.4.4.3). Nothing else may be rejected.
        #expect(strictRejections == [
            "smartpen-reads-extadv.btsnoop.oracle.jsonl.gz frame 132: malformed ATT_READ_REQ at offset 3 (Attribute Handle): "
                + "175 trailing octet(s)",
        ])
    }

    /// JSON values compared loosely: numbers as Int, dictionaries and arrays element-wise.
    static func same(_ ours: Any, _ theirs: Any) -> Bool {
        switch (ours, theirs) {
        case (let a as Int, let b as NSNumber): return a == b.intValue
        case (let a as String, let b as String): return a == b
        case (is NSNull, is NSNull): return true
        case (let a as [String: Any], let b as [String: Any]):
            // Compare the keys we produce; Wireshark may add context-only keys.
            return a.allSatisfy { key, value in b[key].map { same(value, $0) } ?? false }
        case (let a as [Any], let b as [Any]):
            return a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        default: return false
        }
    }

    /// Our decode in the oracle's schema (only the keys the oracle README defines).
    static func fields(of pdu: ATTPDU) -> [String: Any] {
        func uuid(_ u: BluetoothUUID) -> String { u.text(uppercase: false) }
        func hex(_ b: [UInt8]) -> String { Hex.encode(b) }
        func range(_ s: UInt16, _ e: UInt16) -> [String: Any] { ["start_handle": Int(s), "end_handle": Int(e)] }
        switch pdu {
        case .errorResponse(let p):
            return ["error": ["request_opcode": Int(p.requestOpcode.rawValue), "handle": Int(p.handle),
                              "code": Int(p.errorCode.rawValue), "name": p.errorCode.name.map { $0 as Any } ?? NSNull()]]
        case .exchangeMTURequest(let p): return ["mtu": Int(p.clientRxMTU)]
        case .exchangeMTUResponse(let p): return ["mtu": Int(p.serverRxMTU)]
        case .findInformationRequest(let p): return range(p.startingHandle, p.endingHandle)
        case .findInformationResponse(let p):
            return ["format": Int(p.format.rawValue),
                    "entries": p.entries.map { ["handle": Int($0.handle), "uuid": uuid($0.uuid)] as [String: Any] }]
        case .findByTypeValueRequest(let p):
            return range(p.startingHandle, p.endingHandle).merging(
                ["uuid": uuid(.bit16(p.attributeType)), "value": hex(p.attributeValue)]) { a, _ in a }
        case .readByTypeRequest(let p):
            return range(p.startingHandle, p.endingHandle).merging(["uuid": uuid(p.attributeType)]) { a, _ in a }
        case .readByGroupTypeRequest(let p):
            return range(p.startingHandle, p.endingHandle).merging(["uuid": uuid(p.attributeGroupType)]) { a, _ in a }
        case .readByTypeResponse(let p):
            return ["length": p.length, "entries": p.entries.map { ["handle": Int($0.handle), "value": hex($0.value)] as [String: Any] }]
        case .readByGroupTypeResponse(let p):
            return ["length": p.length, "entries": p.entries.map { entry -> [String: Any] in
                var out: [String: Any] = ["handle": Int(entry.handle), "end_handle": Int(entry.endGroupHandle)]
                if let u = BluetoothUUID(littleEndian: entry.value) { out["uuid"] = uuid(u) }
                return out
            }]
        case .readRequest(let p): return ["handle": Int(p.handle)]
        case .readBlobRequest(let p): return ["handle": Int(p.handle), "offset": Int(p.offset)]
        case .readResponse(let p): return ["value": hex(p.value)]
        case .readBlobResponse(let p): return ["value": hex(p.value)]
        case .readMultipleResponse(let p): return ["value": hex(p.values)]
        case .readMultipleRequest(let p): return ["handles": p.handles.map { Int($0) }]
        case .readMultipleVariableRequest(let p): return ["handles": p.handles.map { Int($0) }]
        case .writeRequest(let p): return ["handle": Int(p.handle), "value": hex(p.value)]
        case .writeCommand(let p): return ["handle": Int(p.handle), "value": hex(p.value)]
        case .signedWriteCommand(let p):
            return ["handle": Int(p.handle), "value": hex(p.value), "sign_counter": Int(p.signCounter)]
        case .prepareWriteRequest(let p): return ["handle": Int(p.handle), "offset": Int(p.offset), "value": hex(p.value)]
        case .prepareWriteResponse(let p): return ["handle": Int(p.handle), "offset": Int(p.offset), "value": hex(p.value)]
        case .executeWriteRequest(let p): return ["flags": Int(p.flags.rawValue)]
        case .handleValueNotification(let p): return ["handle": Int(p.handle), "value": hex(p.value)]
        case .handleValueIndication(let p): return ["handle": Int(p.handle), "value": hex(p.value)]
        case .findByTypeValueResponse, .writeResponse, .executeWriteResponse, .handleValueConfirmation,
             .readMultipleVariableResponse, .multipleHandleValueNotification, .unknown:
            return [:]
        }
    }
}
