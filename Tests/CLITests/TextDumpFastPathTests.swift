import Bluetooth
import Capture
import Testing

@testable import GATTClientCLI
import TestSupport

/// Issue 25: the text dump's line heads and control-character check, written through one
/// reserved region and eight octets at a time, against the piece-by-piece formatting they
/// replace.
@Suite("Text dump: line heads and control characters", .cpuBound)
struct TextDumpFastPathTests {
    /// What the line head was made of before: `#N` padded to 8, the signed seconds, `.`, six
    /// digits of the fraction's magnitude right-aligned in 12, the direction.
    static func expectedHead(number: Int, delta: Int64, direction: CaptureDirection) -> String {
        var frame = "#\(number)"
        if frame.count < 8 { frame += String(repeating: " ", count: 8 - frame.count) }
        let fraction = String((delta % 1_000_000).magnitude)
        var time = "\(delta / 1_000_000)." + String(repeating: "0", count: 6 - fraction.count) + fraction
        if time.count < 12 { time = String(repeating: " ", count: 12 - time.count) + time }
        let arrow = direction == .sent ? " < " : direction == .received ? " > " : " = "
        return frame + time + arrow
    }

    @Test func lineHeadsMatchThePieceByPieceText() {
        var visitor = TextDumpVisitor(options: DumpOptions(path: "-"), output: .capturing())
        let origin: Int64 = 1_700_000_000_123_456
        let deltas: [Int64] = [0, 1, 999_999, 1_000_000, -1, -500_000, -1_000_000, -1_234_567, 12_345_678_901, 99_999_999_999_999, -99_999_999_999_999]
        let numbers = [1, 9, 10, 1_234_567, 12_345_678, 123_456_789_012]
        for (index, delta) in deltas.enumerated() {
            for (numberIndex, number) in numbers.enumerated() {
                let direction: CaptureDirection = [.sent, .received, .unknown][(index + numberIndex) % 3]
                let record = CaptureRecord(number: number, timestamp: origin + delta, direction: direction, kind: .empty, bytes: [])
                // The first record sets the origin.
                if visitor.origin == nil {
                    visitor.writePrefix(CaptureRecord(number: 1, timestamp: origin, direction: .sent, kind: .empty, bytes: []))
                }
                visitor.output.buffer.removeAll()
                visitor.writePrefix(record)
                #expect(String(decoding: visitor.output.buffer, as: UTF8.self) == Self.expectedHead(number: number, delta: delta, direction: direction))
            }
        }
    }

    @Test func theWordAtATimeCheckFindsEveryControlCharacterAnywhere() {
        for length in 0..<40 {
            for position in 0..<max(length, 1) {
                for octet: UInt8 in [0x00, 0x01, 0x0A, 0x1F, 0x20, 0x7E, 0x7F, 0x80, 0x9F, 0xFF] {
                    var text = [UInt8](repeating: 0x41, count: length)
                    if length > 0 { text[position] = octet }
                    let expected = text.contains { $0 < 0x20 || $0 == 0x7F }
                    #expect(text.withUnsafeBufferPointer(containsControl) == expected, "\(length) \(position) \(octet)")
                }
            }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0x1E...0xFF, using: &generator) }
            #expect(text.withUnsafeBufferPointer(containsControl) == text.contains { $0 < 0x20 || $0 == 0x7F })
        }
    }
}
