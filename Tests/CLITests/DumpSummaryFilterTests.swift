import Foundation
import Testing

@testable import GATTClientCLI

/// Issue 19 item 13: `dump --summary` counts what the filters show (it ignored them); `--record`
/// is refused where it would write nothing, and for a pcap name it would not honour.
@Suite struct DumpSummaryFilterTests {
    static let capture = Paths.packageRoot.appendingPathComponent("Fixtures/synthetic-att-adv.btsnoop").path

    static func summary(_ filters: [String]) async throws -> [String: Any] {
        let run = await runInProcess(["--json", "dump", "--summary"] + filters + [capture])
        #expect(run.code == 0, "\(run.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
    }

    @Test func theSummaryFollowsTheFilters() async throws {
        let all = try await Self.summary([])
        let att = try await Self.summary(["--att-only"])
        let adv = try await Self.summary(["--adv-only"])
        #expect(all["filter"] == nil)
        #expect(att["filter"] as? String == "--att-only")
        #expect(att["att"] as? Int == all["att"] as? Int)
        #expect(att["advReports"] as? Int == 0)
        // Issue 37 item 8: the records shown are those carrying the ATT PDUs (it said 0).
        #expect((att["records"] as? Int ?? 0) > 0 && (att["records"] as? Int ?? 0) <= (att["att"] as? Int ?? 0))
        #expect(adv["advReports"] as? Int == all["advReports"] as? Int)
        #expect(adv["att"] as? Int == 0)
        // --handle: the ATT PDUs that name the handle, as many as the filtered JSON dump shows.
        let handle = try await Self.summary(["--handle", "0x0003"])
        let lines = await runInProcess(["--json", "dump", "--handle", "0x0003", Self.capture])
        let shown = lines.stdout.split(separator: "\n").filter { $0.contains("\"btatt") || $0.contains("\"opcode\"") }.count
        #expect((handle["att"] as? Int ?? 0) > 0)
        #expect((handle["att"] as? Int ?? 0) < (all["att"] as? Int ?? 0))
        #expect(handle["att"] as? Int == shown, "summary \(handle["att"] ?? "nil"), dump lines \(shown)")
        let text = await runInProcess(["dump", "--summary", "--att-only", Self.capture])
        #expect(text.stdout.hasPrefix("\(Self.capture): \(att["records"] as? Int ?? -1) records shown by --att-only"), "\(text.stdout)")
    }

    /// Item 12: dump's records keep Wireshark's string `time` and add a numeric `t` (seconds
    /// since the first record); the summary is a `summary` line.
    @Test func dumpRecordsHaveANumericTime() async throws {
        let run = await runInProcess(["--json", "dump", Self.capture])
        let records = try run.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(!records.isEmpty)
        let timed = records.filter { $0["time"] != nil }
        #expect(!timed.isEmpty && timed.allSatisfy { $0["time"] is String && $0["t"] is Double })
        // The same instant as Wireshark's string (seconds since the capture's first record).
        #expect(timed.allSatisfy { abs(($0["t"] as? Double ?? -1) - (Double($0["time"] as? String ?? "") ?? -2)) < 1e-6 })
        let summary = try await Self.summary([])
        #expect(summary["kind"] as? String == "summary")
    }

    @Test func recordIsRefusedWhereItWouldWriteNothingOrTheWrongFormat() {
        #expect(throws: UsageError("--record keeps a live session's HCI traffic; dump reads a capture and has none to record (copy the file instead)")) {
            try parse(["--record", "/tmp/x.btsnoop", "dump", "a.btsnoop"])
        }
        #expect(throws: UsageError("--record writes btsnoop (what btmon, Wireshark and `gattclient dump` read), not pcap: name it /tmp/session.btsnoop")) {
            try parse(["--record", "/tmp/session.pcapng", "--transport", "sim", "scan"])
        }
        #expect(throws: UsageError.self) { try parse(["--record", "trace.PCAP", "scan"]) }
    }
}
