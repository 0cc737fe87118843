import Foundation
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 37 item 10 on sim: Enhanced ATT needs an encrypted link; the simulated SensorTag cannot
/// pair (Pairing Not Supported), so `--eatt` is refused by the peer — said, and the command goes on
/// with the unenhanced bearer; `--eatt-required` fails.
@Suite("gattclient --eatt when the peer cannot encrypt")
struct EATTFallbackTests {
    static func run(_ arguments: [String]) async -> CapturedRun {
        await captureRun { out, err in runGATTClient(arguments, standardOutput: out, standardError: err) }
    }

    @Test func fallsBackUnlessRequired() async throws {
        let bonds = NSTemporaryDirectory() + "eatt-bonds-\(UInt64.random(in: 0...UInt64.max))"
        defer { removeTree(bonds) }
        let base = ["--no-cache", "--bonds", bonds, "--transport", "sim", "--eatt", "2"]
        let read = await Self.run(base + ["read", "54:6C:0E:9A:3B:01", "2a19"])
        #expect(read.code == 0, "\(read.stderr)")
        #expect(read.stderr.contains("Enhanced ATT needs an encrypted link") && read.stderr.contains("unenhanced"), "\(read.stderr)")
        let required = await Self.run(base + ["--eatt-required", "read", "54:6C:0E:9A:3B:01", "2a19"])
        #expect(required.code == 1, "\(required.stderr)")
    }
}
