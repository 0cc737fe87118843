import BLE
import Foundation
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 37 item 6: `services --values` keeps the tree when a value needs a pairing that cannot
/// happen (the simulated thermometer displays a passkey; off a terminal nobody types it).
@Suite("gattclient services --values when pairing cannot happen")
struct ServicesValuesSecurityTests {
    static func run(_ arguments: [String]) async -> CapturedRun {
        await captureRun { out, err in runGATTClient(arguments, standardOutput: out, standardError: err) }
    }

    @Test("each refused value says why, the rest is printed, exit 0; --strict exits 1")
    func treeSurvives() async throws {
        let bonds = NSTemporaryDirectory() + "values-bonds-\(UInt64.random(in: 0...UInt64.max))"
        defer { removeTree(bonds) }
        let base = ["--no-cache", "--bonds", bonds, "--transport", "sim:thermometer"]
        let text = await Self.run(base + ["services", "C4:7E:11:09:2A:1C/random", "--values"])
        #expect(text.code == 0, "\(text.stderr)")
        #expect(text.stdout.contains("the link's security could not be raised"), "\(text.stdout)")
        #expect(text.stdout.contains("Health Thermometer"), "the whole tree: \(text.stdout)")
        #expect(text.stdout.contains("Device Name") || text.stdout.contains("2A00"), "values read before and after: \(text.stdout)")
        #expect(text.stderr.contains("not read: the link's security could not be raised"), "\(text.stderr)")
        let json = await Self.run(base + ["--json", "services", "C4:7E:11:09:2A:1C/random", "--values"])
        #expect(json.code == 0, "\(json.stderr)")
        #expect(json.stdout.contains("\"securityError\""), "\(json.stdout)")
        let strict = await Self.run(base + ["--strict", "services", "C4:7E:11:09:2A:1C/random", "--values"])
        #expect(strict.code == 1, "\(strict.stderr)")
        #expect(strict.stdout.contains("Health Thermometer"), "printed before failing")
    }
}
