import Foundation
import Capture
import Testing
@testable import GATTClientCLI
import TestSupport

/// Issue 25: `dump`'s output is byte-identical to what it was before captures streamed — every
/// variant on every fixture and shared capture (Fixtures/dump-identity.txt holds the old output's
/// FNV-1a 64, length and exit code), read through the default window and through a window of 97
/// octets (so every record boundary lands somewhere in a window's seam).
@Suite("dump: output identical to before streaming", .cpuBound)
struct DumpIdentityTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var hash: UInt64
        var length: Int
        var exitCode: Int
        var variant: String
        var file: String
        var testDescription: String { "\(variant) \(file)" }

        var path: String {
            file.hasPrefix("shared:")
                ? Paths.sharedCaptures.appendingPathComponent(String(file.dropFirst(7))).path
                : Paths.packageRoot.appendingPathComponent(file).path
        }
    }

    static let cases: [Case] = {
        let text = (try? String(contentsOfFile: Paths.fixture("dump-identity.txt"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 5, let hash = UInt64(fields[0], radix: 16), let length = Int(fields[1]),
                let code = Int(fields[2])
            else { return nil }
            return Case(hash: hash, length: length, exitCode: code, variant: fields[3], file: fields[4])
        }
    }()

    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    /// The variant's stdout (the path replaced by FILE) and exit code, in process.
    static func run(_ variant: String, path: String, windowSize: Int) -> (output: [UInt8], exitCode: Int) {
        var options = DumpOptions(path: path)
        var json = false
        switch variant {
        case "text": break
        case "json": json = true
        case "summary": options.summary = true
        case "jsummary": json = true; options.summary = true
        case "att": options.attOnly = true
        case "adv": options.advOnly = true
        case "conn": options.connection = 0x0040
        case "handle": options.attributeHandle = 0x0025
        case "jatt": json = true; options.attOnly = true
        default: Issue.record("unknown variant \(variant)")
        }
        var command = DumpCommand(options: options, json: json)
        command.windowSize = windowSize
        var output = BufferedOutput.capturing()
        let damage: String?
        do {
            damage = try command.run(output: &output)
        } catch {
            // What the command line prints for a capture that does not open (a JSON failure
            // record under --json).
            return runner(variant, path: path)
        }
        let text = String(decoding: output.captured, as: UTF8.self).replacingOccurrences(of: path, with: "FILE")
        return (Array(text.utf8), damage == nil ? 0 : 1)
    }

    /// `gattclient [--json] dump PATH` through the runner, stdout into a file.
    static func runner(_ variant: String, path: String) -> (output: [UInt8], exitCode: Int) {
        let flags: [String: [String]] = [
            "text": [], "json": ["--json"], "summary": ["--summary"], "jsummary": ["--json", "--summary"],
            "att": ["--att-only"], "adv": ["--adv-only"], "conn": ["--conn", "0x0040"], "handle": ["--handle", "0x0025"],
            "jatt": ["--json", "--att-only"],
        ]
        let arguments = ["dump", path] + (flags[variant] ?? [])
        let out = NSTemporaryDirectory() + "dump-identity-\(UInt64.random(in: 0...UInt64.max)).out"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let descriptor = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let null = open("/dev/null", O_WRONLY)
        let code = runGATTClient(arguments, standardOutput: descriptor, standardError: null)
        close(descriptor)
        close(null)
        let text = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").replacingOccurrences(of: path, with: "FILE")
        return (Array(text.utf8), Int(code))
    }

    @Test func theManifestCoversEveryFixtureAndVariant() {
        #expect(Self.cases.count >= 13 * 9)
        #expect(Set(Self.cases.map(\.variant)).count == 9)
    }

    @Test(arguments: cases)
    func sameOutputAsBefore(_ testCase: Case) throws {
        if testCase.file.hasPrefix("shared:"), !FileManager.default.fileExists(atPath: testCase.path) {
            print("skipped: \(testCase.file) (../shared/captures is not beside the package)")
            return
        }
        for window in [CaptureReader.windowSize, 97] {
            let (output, code) = Self.run(testCase.variant, path: testCase.path, windowSize: window)
            #expect(output.count == testCase.length, "window \(window)")
            #expect(Self.fnv1a(output) == testCase.hash, "window \(window)")
            #expect(code == testCase.exitCode, "window \(window)")
        }
    }
}
