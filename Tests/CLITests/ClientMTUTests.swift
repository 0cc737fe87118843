import Foundation
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 37 item 18: `--mtu N` for the client — the ATT_MTU offered in Exchange MTU, so a
/// peripheral's small-MTU paths can be tried; read one way only.
@Suite("gattclient --mtu for the client")
struct ClientMTUTests {
    static func run(_ arguments: [String]) async -> CapturedRun {
        await captureRun { out, err in runGATTClient(arguments, standardOutput: out, standardError: err) }
    }

    @Test func offersTheMTUAsked() async throws {
        let small = await Self.run(["--no-cache", "--transport", "sim", "--mtu", "23", "-v", "read", "54:6C:0E:9A:3B:01", "2a00"])
        #expect(small.code == 0, "\(small.stderr)")
        #expect(small.stderr.contains("client rx mtu 23") && small.stderr.contains("ATT_MTU 23"), "\(small.stderr)")
        #expect(small.stdout.contains("CC2650 SensorTag"), "the whole value through a 23-octet MTU: \(small.stdout)")
        for bad in ["22", "518", "0517", "x"] {
            #expect(throws: UsageError.self, "\(bad)") { _ = try parse(["--mtu", bad, "read", "54:6C:0E:9A:3B:01", "2a00"]) }
        }
        #expect(throws: UsageError.self) { _ = try parse(["--mtu", "23", "peripheral", "sensortag"]) }
        guard case .peripheral(let options) = try parse(["peripheral", "sensortag", "--mtu", "247"]).command else {
            Issue.record("not a peripheral")
            return
        }
        #expect(options.mtu == 247)
    }
}
