import Foundation
import Bluetooth
import HCI
import Testing
@testable import GATTClientCLI
import TestSupport

/// Paths of the package's fixtures and of the shared material beside the package.
enum Paths {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func fixture(_ name: String) -> String { packageRoot.appendingPathComponent("Fixtures/\(name)").path }
    static let sharedCaptures = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/captures")
    static var sharedPresent: Bool {
        FileManager.default.fileExists(atPath: sharedCaptures.appendingPathComponent("oracle").path)
            && (FileManager.default.isExecutableFile(atPath: "/usr/bin/zcat") || FileManager.default.isExecutableFile(atPath: "/bin/zcat"))
    }
}

/// Runs `dump` in process and returns its output lines.
func dump(_ path: String, json: Bool = true, configure: (inout DumpOptions) -> Void = { _ in }) throws -> (lines: [String], damage: String?) {
    var options = DumpOptions(path: path)
    configure(&options)
    var output = BufferedOutput.capturing()
    let damage = try DumpCommand(options: options, json: json).run(output: &output)
    return (output.capturedLines, damage)
}

func jsonObjects(_ lines: [String]) throws -> [[String: Any]] {
    try lines.filter { !$0.isEmpty }.map { line in
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw CocoaError(.coderReadCorrupt)
        }
        return object
    }
}

/// The comparison of `tshark_att.py --diff`: records matched by (kind, frame, ordinal within the
/// frame); only keys our records carry are compared, except `ws`, `info`, `time`, `gatt`;
/// records of a kind we emit that are missing on our side, or extra, are differences.
func oracleDifferences(ours: [[String: Any]], oracle: [[String: Any]]) -> [String] {
    func keyed(_ records: [[String: Any]]) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        var ordinals: [String: Int] = [:]
        for record in records {
            guard let kind = record["kind"] as? String, let frame = record["frame"] as? Int else { continue }
            let base = "\(kind)#\(frame)"
            let ordinal = ordinals[base, default: 0]
            ordinals[base] = ordinal + 1
            out["\(base).\(ordinal)"] = record
        }
        return out
    }
    let mine = keyed(ours)
    let theirs = keyed(oracle)
    let kinds = Set(ours.compactMap { $0["kind"] as? String })
    var differences: [String] = []
    for (key, record) in mine.sorted(by: { $0.key < $1.key }) {
        guard let expected = theirs[key] else {
            differences.append("extra \(key)")
            continue
        }
        for (field, value) in record where !["ws", "info", "time", "t", "gatt"].contains(field) {
            let other = expected[field] ?? NSNull()
            if !sameJSON(value, other) {
                differences.append("\(key) \(field): ours \(value) oracle \(other)")
            }
        }
    }
    for key in theirs.keys.sorted() where kinds.contains(String(key.prefix { $0 != "#" })) && mine[key] == nil {
        differences.append("missing \(key)")
    }
    return differences
}

/// JSON values compared as JSON: numbers and booleans by value, containers element by element.
func sameJSON(_ a: Any, _ b: Any) -> Bool {
    switch (a, b) {
    case (is NSNull, is NSNull): return true
    case (let x as String, let y as String): return x == y
    case (let x as [Any], let y as [Any]): return x.count == y.count && zip(x, y).allSatisfy { sameJSON($0, $1) }
    case (let x as [String: Any], let y as [String: Any]):
        return x.count == y.count && x.allSatisfy { key, value in y[key].map { sameJSON(value, $0) } ?? false }
    case (let x as NSNumber, let y as NSNumber): return x == y
    default:
        if let x = a as? Bool, let y = b as? Bool { return x == y }
        if let x = a as? Double, let y = b as? Double { return x == y }
        return false
    }
}

@Suite struct DumpOracleFixtureTests {
    @Test func bumbleSessionMatchesWiresharkFieldByField() throws {
        let ours = try jsonObjects(try dump(Paths.fixture("bumble-sensortag-session.btsnoop")).lines)
        let oracleText = try String(contentsOfFile: Paths.fixture("bumble-sensortag-session.btsnoop.oracle.jsonl"), encoding: .utf8)
        let oracle = try jsonObjects(oracleText.components(separatedBy: "\n"))
        #expect(ours.count == 49)
        #expect(ours.filter { $0["kind"] as? String == "att" }.count == 47)
        #expect(oracleDifferences(ours: ours, oracle: oracle) == [])
    }

    /// The synthetic capture holds every ATT PDU and report shape. Two differences are
    /// Wireshark's, not ours, and are pinned here so that any other difference fails.
    @Test func syntheticCaptureMatchesWiresharkExceptItsKnownGaps() throws {
        let ours = try jsonObjects(try dump(Paths.fixture("synthetic-att-adv.btsnoop")).lines)
        let oracleText = try String(contentsOfFile: Paths.fixture("synthetic-att-adv.btsnoop.oracle.jsonl"), encoding: .utf8)
        let oracle = try jsonObjects(oracleText.components(separatedBy: "\n"))
        #expect(oracleDifferences(ours: ours, oracle: oracle) == [
            // tshark_att.py emits no record for LE Directed Advertising Reports (and Wireshark
            // 4.0 labels their two addresses the other way round from Core 5.4 §7.7.65.11).
            "extra adv_report#13.0",
            "extra adv_report#13.1",
            // Wireshark 4.0 does not list the handles of a Read Multiple Variable Request.
            "att#45.0 handles: ours [3, 14] oracle []",
            // Wireshark 4.0 does not know L2CAP_CREDIT_BASED_CONNECTION_REQ (0x17), so it does not
            // see the Enhanced ATT channels it opens; these four PDUs are ATT on those channels.
            "extra att#77.0", "extra att#79.0", "extra att#80.0", "extra att#81.0",
        ])
        // Enhanced ATT: channels learnt from LE signaling, SDUs rebuilt from K-frames.
        let eatt = ours.filter { ($0["cid"] as? Int ?? 4) != 4 }
        #expect(eatt.map { $0["cid"] as? Int } == [0x80, 0x40, 0x41, 0x81])
        #expect(eatt.map { $0["op"] as? String } == ["READ_REQ", "READ_RSP", "HANDLE_VALUE_NTF", "WRITE_CMD"])
        #expect(eatt[1]["value"] as? String == Hex.encode(Array("CC2650 SensorTag, EATT bearer one".utf8)), "one SDU over two K-frames")
        // Every kind of report and PDU is there.
        let ops = Set(ours.compactMap { $0["op"] as? String })
        #expect(ops.count == 32, "31 PDUs and one unknown opcode")
        #expect(ours.contains { $0["malformed"] as? Bool == true && $0["frame"] as? Int == 11 })
        #expect(ours.contains { $0["frame"] as? Int == 73 && $0["op"] as? String == "READ_BLOB_RSP" }, "reassembled from three fragments")
    }
}

@Suite(.cpuBound, .enabled(if: Paths.sharedPresent, "skipped: ../shared/captures (beside the package) or zcat is absent"))
struct DumpOracleSharedCaptureTests {
    @Test(arguments: ["horizon-treadmill-ftms.btsnoop", "revcar-acl-only.btsnoop", "smartpen-reads-extadv.btsnoop",
                      "android-pixel6-extadv-scan.btsnoop"])
    func matchesWiresharkOnEveryRecord(name: String) async throws {
        let ours = try jsonObjects(try dump(Paths.sharedCaptures.appendingPathComponent(name).path).lines)
        let (code, data) = try await ChildProcess.run(
            ["zcat", Paths.sharedCaptures.appendingPathComponent("oracle/\(name).oracle.jsonl.gz").path])
        #expect(code == 0)
        let oracle = try jsonObjects(String(decoding: data, as: UTF8.self).components(separatedBy: "\n"))
            .filter { ["att", "adv_report"].contains($0["kind"] as? String ?? "") }
        let summary = try #require(try jsonObjects(String(decoding: data, as: UTF8.self).components(separatedBy: "\n"))
            .first { $0["kind"] as? String == "summary" })
        let counts = try #require(summary["counts"] as? [String: Int])
        #expect(ours.filter { $0["kind"] as? String == "att" }.count == counts["att"])
        #expect(ours.filter { $0["kind"] as? String == "adv_report" }.count == counts["adv_report"])
        #expect(oracleDifferences(ours: ours, oracle: oracle) == [])
    }

    /// Issue 20, item 5: every HCI command and event in the shared captures has its spec name, as
    /// btmon shows it; characteristic declarations in Read By Type responses are decoded.
    @Test func everyHCICommandAndEventIsNamed() throws {
        var seen: Set<String> = []
        for name in ["horizon-treadmill-ftms.btsnoop", "smartpen-reads-extadv.btsnoop", "android-pixel6-extadv-scan.btsnoop"] {
            let (lines, _) = try dump(Paths.sharedCaptures.appendingPathComponent(name).path, json: false)
            for line in lines where line.contains("Unknown command") || line.contains("Event 0x") || line.contains("LE subevent 0x") {
                Issue.record("\(name): \(line)")
            }
            for expected in [
                "Write Extended Inquiry Response", "Host Buffer Size", "Write Simple Pairing Mode", "LE Read Resolving List Size",
                "Create Connection (0x0405)",
            ] where lines.contains(where: { $0.contains(expected) }) {
                seen.insert(expected)
            }
            if name == "horizon-treadmill-ftms.btsnoop" {
                #expect(lines.contains {
                    $0.contains("[Generic Access: declarations 0x0003 Device Name (2A00), value 0x0004, [read];")
                })
            }
        }
        #expect(seen.count == 5, "\(seen)")
    }

    @Test func linkLayerCaptureIsRefusedClearly() {
        #expect(throws: HCIError.self) {
            try dump(Paths.sharedCaptures.appendingPathComponent("ubertooth-ll-le-sc-pairing.pcapng").path)
        }
        do {
            _ = try dump(Paths.sharedCaptures.appendingPathComponent("ubertooth-ll-le-sc-pairing.pcapng").path)
        } catch {
            #expect("\(error)".contains("link type 256 (BLUETOOTH_LE_LL_WITH_PHDR) is not supported"))
        }
    }
}

@Suite struct DumpOutputTests {
    @Test func textDumpShowsEveryLayer() throws {
        let (lines, damage) = try dump(Paths.fixture("bumble-sensortag-session.btsnoop"), json: false)
        #expect(damage == nil)
        #expect(lines.filter { $0.hasPrefix("#") }.count == 110, "one line per record")
        #expect(lines.contains { $0.hasPrefix("#1 ") && $0.contains("HCI Command: Reset") })
        #expect(lines.contains { $0.contains("ATT conn 0x0001 Exchange MTU Request (0x02) client rx mtu 247") })
        #expect(lines.contains { $0.contains("report 0:") && $0.contains("F4:6C:0E:12:34:56") })
        #expect(lines.contains { $0.contains("Incomplete List of 16-bit Service UUIDs: 180F") })
    }

    @Test func summaryCountsEveryLayer() throws {
        let (lines, _) = try dump(Paths.fixture("synthetic-att-adv.btsnoop"), json: true) { $0.summary = true }
        let summary = try #require(try jsonObjects(lines).first)
        #expect(summary["records"] as? Int == 85)
        #expect(summary["att"] as? Int == 53)
        #expect(summary["advReports"] as? Int == 16)
        #expect(summary["advMalformed"] as? Int == 5)
        #expect((summary["attByOp"] as? [String: Int])?["ERROR_RSP"] == 4)
        #expect((summary["attErrors"] as? [String: Int])?["CCCD_IMPROPERLY_CONFIGURED"] == 1)
        #expect((summary["otherL2CAPChannels"] as? [String: Int])?["0x0005"] == 3)
    }

    @Test func filtersSelectRecords() throws {
        let attOnly = try jsonObjects(try dump(Paths.fixture("synthetic-att-adv.btsnoop")) { $0.attOnly = true }.lines)
        #expect(!attOnly.isEmpty && attOnly.allSatisfy { $0["kind"] as? String == "att" })
        let advOnly = try jsonObjects(try dump(Paths.fixture("synthetic-att-adv.btsnoop")) { $0.advOnly = true }.lines)
        #expect(advOnly.count == 16 && advOnly.allSatisfy { $0["kind"] as? String == "adv_report" })
        let otherConnection = try dump(Paths.fixture("synthetic-att-adv.btsnoop")) { $0.connection = 2 }.lines
        #expect(otherConnection.isEmpty)
        let handle = try jsonObjects(try dump(Paths.fixture("synthetic-att-adv.btsnoop")) { $0.attributeHandle = 0x0013 }.lines)
        // Requests whose range holds 0x0013, responses listing it, writes to it.
        #expect(handle.map { $0["frame"] as? Int } == [25, 27, 28, 29, 33, 35, 36, 47, 63, 64])
    }

    @Test func truncatedFileDecodesUpToTheDamage() async throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Paths.fixture("bumble-sensortag-session.btsnoop")))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("truncated-\(getpid()).btsnoop").path
        try bytes.prefix(1000).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (lines, damage) = try dump(path, json: false)
        let message = try #require(damage)
        #expect(message.contains("record"))
        #expect(lines.filter { $0.hasPrefix("#") }.count >= 20)
        #expect(await runGATTClientQuietly(["dump", path]) == 1)
    }

    @Test func exitCodes() async {
        #expect(await runGATTClientQuietly(["dump"]) == 64)
        #expect(await runGATTClientQuietly(["dump", "/nonexistent/capture.btsnoop"]) == 1)
        #expect(await runGATTClientQuietly(["frobnicate"]) == 64)
    }
}

/// Runs the CLI in process with its standard output and error sent to /dev/null, on a thread of
/// its own: `runGATTClient` blocks its caller while its async work runs on the concurrency pool,
/// which has only two threads here — blocking two of them at once would deadlock the suite.
func runGATTClientQuietly(_ arguments: [String]) async -> Int32 {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            let null = open("/dev/null", O_WRONLY)
            defer { close(null) }
            continuation.resume(returning: runGATTClient(arguments, standardOutput: null, standardError: null))
        }
    }
}
