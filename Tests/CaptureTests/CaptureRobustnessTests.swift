import Bluetooth
import Testing

@testable import HCI
@testable import Capture
import TestSupport

/// Deterministic pseudo-random numbers (SplitMix64) so failures reproduce.
struct CaptureTestRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Files from the other suites, corrupted at random: decoding must end in records plus at most
/// one damage report, never a trap, and every record's bytes must lie inside the file.
@Suite(.cpuBound) struct CaptureRobustnessTests {
    static func seedFiles() throws -> [[UInt8]] {
        var files = [
            try captureWrite(capturePackets, datalink: .h4),
            try captureWrite(capturePackets, datalink: .monitor),
        ]
        var pcap = CaptureFileBuilder(bigEndian: true)
        pcap.pcapHeader(linkType: 201)
        pcap.pcapRecord(seconds: 1, fraction: 2, data: capturePHDR(false, .command, captureReset))
        pcap.pcapRecord(seconds: 1, fraction: 3, data: capturePHDR(true, .acl, captureACL))
        files.append(pcap.bytes)
        var pcapng = CaptureFileBuilder(bigEndian: false)
        pcapng.sectionHeader()
        pcapng.interface(linkType: 201, options: [(9, [9])])
        pcapng.interface(linkType: 254)
        pcapng.enhancedPacket(interface: 0, ticks: 5, data: capturePHDR(true, .event, captureResetComplete))
        pcapng.enhancedPacket(interface: 1, ticks: 6, data: [0, 0, 0, 2] + captureReset)
        pcapng.simplePacket(data: capturePHDR(false, .acl, captureACL))
        files.append(pcapng.bytes)
        return files
    }

    @Test func corruptedFilesNeverTrap() throws {
        var random = CaptureTestRandom(state: 0x5EED)
        for seed in try Self.seedFiles() {
            for _ in 0..<1500 {
                var file = seed
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let index = Int.random(in: 0..<file.count, using: &random)
                    file[index] = UInt8.random(in: 0...255, using: &random)
                }
                if Bool.random(using: &random) { file.removeLast(Int.random(in: 0..<file.count, using: &random)) }
                guard var reader = try? CaptureReader(bytes: file) else { continue }
                var count = 0
                while let record = reader.next() {
                    count += 1
                    #expect(record.bytes.startIndex >= 0 && record.bytes.endIndex <= file.count)
                    #expect(record.originalLength >= record.bytes.count)
                    #expect(record.number == reader.recordCount)
                }
                #expect(count <= 16)
                if let damage = reader.damage {
                    #expect(damage.offset >= 0 && damage.offset < file.count)
                }
            }
        }
    }

    @Test func randomStreamsNeverTrapTheFramer() {
        var random = CaptureTestRandom(state: 0xF4A3)
        for _ in 0..<500 {
            var framer = H4Framer()
            var failed = false
            for _ in 0..<20 {
                let chunk = (0..<Int.random(in: 0...40, using: &random)).map { _ in
                    // Mostly valid indicators, so some packets complete.
                    Bool.random(using: &random) ? UInt8.random(in: 1...5, using: &random) : UInt8.random(in: 0...255, using: &random)
                }
                framer.append(chunk)
                do {
                    while let (type, packet) = try framer.nextPacket() {
                        #expect(packet.count >= H4.headerLength(of: type))
                        #expect(packet.count <= H4.maximumPacketLength(of: type))
                    }
                } catch {
                    #expect(error == .unknownPacketType(error.unknownIndicator ?? 0))
                    failed = true
                }
                if failed { break }
            }
            #expect(failed == framer.isFailed)
        }
    }
}

extension HCIError {
    var unknownIndicator: UInt8? {
        if case .unknownPacketType(let indicator) = self { return indicator }
        return nil
    }
}
