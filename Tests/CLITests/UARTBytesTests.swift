import Foundation
import Testing
import TestSupport

@testable import GATTClientCLI

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 37 item 4: `uart` sends standard input to RX byte for byte (off a terminal): invalid
/// UTF-8, CRLF and a last line without a newline arrive as they were (the simulated Bluefruit
/// echoes RX on TX, so the notifications under --json carry back exactly what was sent).
@Suite("gattclient uart: standard input byte for byte", .serialized, .timeLimit(.minutes(2)))
struct UARTBytesTests {
    static func echoed(_ input: [UInt8], _ flags: [String] = []) async throws -> (octets: [UInt8], code: Int32?) {
        let arguments = [InterruptTests.binary, "--no-cache", "--json", "--transport", "sim", "uart", "E8:7F:3A:21:9C:05/random", "--linger", "2"] + flags
        let child = try ChildProcess(arguments, stdinPipe: true)
        defer { child.kill() }
        _ = input.withUnsafeBytes { write(child.standardInput, $0.baseAddress, $0.count) }
        child.closeStandardInput()
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(child.standardOutput, &chunk, chunk.count)
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        let code = await child.wait(timeout: 30)
        var echoed: [UInt8] = []
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["kind"] as? String == "notification", let hex = object["value"] as? String
            else { continue }
            echoed += stride(from: 0, to: hex.count, by: 2).map {
                UInt8(hex[hex.index(hex.startIndex, offsetBy: $0)..<hex.index(hex.startIndex, offsetBy: $0 + 2)], radix: 16)!
            }
        }
        return (echoed, code)
    }

    @Test("a pipe's octets reach RX unchanged; --text adds --eol to each line")
    func byteForByte() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: InterruptTests.binary), "no gattclient at \(InterruptTests.binary)")
        let input: [UInt8] = Array("line one\r\n".utf8) + [0xFF, 0xFE, 0x41] + Array("\r\nno newline at the end".utf8)
        let raw = try await Self.echoed(input)
        #expect(raw.code == 0)
        #expect(raw.octets == input, "\(Array(raw.octets)) != \(input)")
        // A fast pipe: more Write Commands at once than the link queues; they wait for room.
        let big = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let fast = try await Self.echoed(big)
        #expect(fast.code == 0)
        #expect(fast.octets == big, "\(fast.octets.count) of \(big.count) octets echoed")
        let text = try await Self.echoed(Array("a\nb".utf8), ["--text", "--eol", "crlf"])
        #expect(text.code == 0)
        #expect(text.octets == Array("a\r\nb\r\n".utf8))
    }
}
