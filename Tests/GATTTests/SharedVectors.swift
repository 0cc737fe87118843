import Bluetooth
import Foundation

/// The BlueZ-derived GATT client vectors of /work/shared/vectors (see its README), found as
/// `<package root>/../shared` from this file. Tests skip with `missingMessage` when absent.
enum SharedVectors {
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // GATTTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .deletingLastPathComponent()
        .appendingPathComponent("shared")

    static let clientFile = directory.appendingPathComponent("vectors/gatt-client-vectors.json")

    static var missingMessage: String {
        "shared GATT vectors not found at \(clientFile.path) (the ../shared folder beside the package is absent)"
    }

    struct PDU: Sendable {
        /// "c2s" (client, the code under test, to server) or "s2c".
        var dir: String
        var bytes: [UInt8]
        /// The PDU as BlueZ's client read it, when the script's PDU exceeds ATT_MTU (quirk 1).
        var asReadByBlueZ: [UInt8]?
        var phase: String
        var op: String
    }

    struct Case: @unchecked Sendable {
        // `arguments` and `expected` hold JSON values (String, NSNumber, arrays, dictionaries),
        // never mutated after loading.
        var id: String
        var procedure: String
        var context: String
        var arguments: [String: Any]
        var expected: [String: Any]
        var derivedResults: [[String: Any]]
        var pdus: [PDU]
        var clientMTU: Int
        /// The database name (`databases` key) the scripted server mimics, for full-client cases.
        var serverDatabase: String?

        /// PDUs of one phase, in order.
        func pdus(phase: String) -> [PDU] { pdus.filter { $0.phase == phase } }
    }

    /// Every case, or `nil` when the file is absent. Markers (no `pdu`) are left out.
    static func clientCases() throws -> [Case]? {
        guard FileManager.default.fileExists(atPath: clientFile.path) else { return nil }
        let data = try Data(contentsOf: clientFile)
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let cases = root["cases"] as? [[String: Any]]
        else { throw VectorError.layout("no cases") }
        return try cases.map { raw in
            let pdus: [PDU] = try ((raw["pdus"] as? [[String: Any]]) ?? []).compactMap { entry in
                guard let hex = entry["pdu"] as? String else { return nil }
                guard let bytes = Hex.decode(hex) else { throw VectorError.layout("bad hex \(hex)") }
                return PDU(
                    dir: entry["dir"] as? String ?? "", bytes: bytes,
                    asReadByBlueZ: (entry["as_read_by_bluez"] as? String).flatMap(Hex.decode),
                    phase: entry["phase"] as? String ?? "", op: entry["op"] as? String ?? "")
            }
            let mtu = (raw["att_mtu"] as? [String: Any]).flatMap { $0["client_rx_mtu"] as? Int } ?? 23
            return Case(
                id: raw["id"] as? String ?? "", procedure: raw["procedure"] as? String ?? "",
                context: raw["bluez_context"] as? String ?? "", arguments: raw["arguments"] as? [String: Any] ?? [:],
                expected: raw["expected"] as? [String: Any] ?? [:],
                derivedResults: raw["derived_results"] as? [[String: Any]] ?? [], pdus: pdus, clientMTU: mtu,
                serverDatabase: raw["server_database"] as? String)
        }
    }

    /// The services of every database in the client file (handles, primary flag, UUIDs; no
    /// characteristics), or `nil` when the file is absent.
    static func databases() throws -> [String: [GATTServiceRecord]]? {
        guard FileManager.default.fileExists(atPath: clientFile.path) else { return nil }
        let data = try Data(contentsOf: clientFile)
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let databases = root["databases"] as? [String: [String: Any]]
        else { throw VectorError.layout("no databases") }
        var out: [String: [GATTServiceRecord]] = [:]
        for (name, database) in databases {
            let services = database["services"] as? [[String: Any]] ?? []
            out[name] = try services.map { service in
                guard let start = service["handle"] as? Int, let end = service["end_handle"] as? Int,
                    let text = service["uuid"] as? String, let uuid = BluetoothUUID(text)
                else { throw VectorError.layout("service in \(name)") }
                return GATTServiceRecord(
                    uuid: uuid, startHandle: UInt16(start), endHandle: UInt16(end),
                    isPrimary: service["primary"] as? Bool ?? true)
            }
        }
        return out
    }

    struct GATTServiceRecord: Sendable {
        var uuid: BluetoothUUID
        var startHandle: UInt16
        var endHandle: UInt16
        var isPrimary: Bool
    }

    enum VectorError: Error { case layout(String) }
}
