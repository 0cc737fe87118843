import BLE
import Foundation
import Testing
import TestSupport
@testable import GATTClientCLI

/// Sessions of ours recorded against the Bumble peers and the simulated devices
/// (Fixtures/recorded, made by scripts/record_fixtures.sh): each replays offline through
/// `--transport replay:FILE` with the command that made it and gives the same output.
@Suite struct RecordedFixtureTests {
    struct Entry: CustomTestStringConvertible, Sendable {
        var name: String
        var arguments: [String]
        var testDescription: String { name }
    }

    static let directory = Paths.packageRoot.appendingPathComponent("Fixtures/recorded")

    static let entries: [Entry] = {
        guard let manifest = try? String(contentsOf: directory.appendingPathComponent("MANIFEST"), encoding: .utf8) else { return [] }
        return manifest.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            let fields = line.split(separator: "|", maxSplits: 2).map(String.init)
            guard fields.count == 3 else { return nil }
            return Entry(name: fields[0], arguments: fields[2].split(separator: " ").map(String.init))
        }
    }()

    /// Output lines as JSON values without the fields that depend on the wall clock. Readings of
    /// different sensors come from different subscriptions, whose interleaving follows task
    /// scheduling when a replay delivers them in one burst; each sensor's own order is kept (a
    /// stable sort by sensor).
    static func normalized(_ text: String) -> [String] {
        let lines = text.split(separator: "\n").map { line in
            guard var object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return String(line) }
            object["time"] = nil
            object["seconds"] = nil
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
        func sensor(_ line: String) -> String {
            guard let range = line.range(of: "\"sensor\":\"") else { return "" }
            return String(line[range.upperBound...].prefix { $0 != "\"" })
        }
        return lines.enumerated().sorted { (sensor($0.element), $0.offset) < (sensor($1.element), $1.offset) }.map(\.element)
    }

    @Test func theManifestListsEverySession() {
        #expect(Self.entries.count >= 10)
        for entry in Self.entries {
            #expect(FileManager.default.fileExists(atPath: Self.directory.appendingPathComponent("\(entry.name).btsnoop").path), "\(entry.name)")
        }
    }

    @Test(arguments: entries)
    func replaysWithTheSameOutput(entry: Entry) async throws {
        let capture = Self.directory.appendingPathComponent("\(entry.name).btsnoop").path
        let expected = try String(contentsOf: Self.directory.appendingPathComponent("\(entry.name).out"), encoding: .utf8)
        let result = await runInProcess(["--json", "--transport", "replay:" + capture] + entry.arguments)
        #expect(Self.normalized(result.stdout) == Self.normalized(expected), "\(entry.name): \(result.stderr)")
    }
}

/// Runs the CLI in process (``captureRun(_:)``), every connection of its GATT commands through
/// `central` when one is given.
func runInProcess(_ arguments: [String], through central: (any Central)? = nil) async -> CapturedRun {
    await captureRun { out, err in
        if let central { return runGATTClient(arguments, through: central, standardOutput: out, standardError: err) }
        return runGATTClient(arguments, standardOutput: out, standardError: err)
    }
}
