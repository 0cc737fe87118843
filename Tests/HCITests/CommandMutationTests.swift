import Bluetooth
import Testing

@testable import HCI
import TestSupport

@Suite("HCI command mutated input", .cpuBound)
struct CommandMutationTests {
    /// Each parameter octet of each vector replaced by edge values: decoding either succeeds or
    /// throws `.malformed`, and whatever decodes re-encodes to something that decodes the same.
    @Test(arguments: CommandTestVectors.all)
    func mutatedParametersNeverTrap(_ vector: CommandVector) throws {
        let bytes = vector.bytes
        for index in 3..<bytes.count {
            for value: UInt8 in [0x00, 0x01, 0x02, 0x05, 0x0F, 0x7F, 0x80, 0xEF, 0xF0, 0xFF] {
                var mutated = bytes
                mutated[index] = value
                var reader = ByteReader(mutated)
                let decoded: AnyHCICommand
                do {
                    decoded = try AnyHCICommand(parsing: &reader)
                } catch {
                    guard case .malformed = error else {
                        Issue.record("\(vector.name)[\(index)] = \(value): \(error)")
                        continue
                    }
                    continue
                }
                let packet = try decoded.packet()
                var again = ByteReader(packet.encode())
                #expect(try AnyHCICommand(parsing: &again) == decoded, "\(vector.name)[\(index)] = \(value)")
            }
        }
    }

    /// Parameter_Total_Length mutated to every value: framing errors only, never a trap.
    @Test(arguments: CommandTestVectors.all)
    func everyTotalLength(_ vector: CommandVector) {
        var bytes = vector.bytes
        for length in 0...255 where length != Int(vector.bytes[2]) {
            bytes[2] = UInt8(length)
            var reader = ByteReader(bytes)
            do {
                let decoded = try AnyHCICommand(parsing: &reader)
                Issue.record("\(vector.name) with length \(length) decoded as \(decoded)")
            } catch {
                guard case .malformed(let context, _, _) = error else {
                    Issue.record("\(vector.name) length \(length): \(error)")
                    continue
                }
                // Disagreement with the bytes present is a framing error, not a command error.
                #expect(context == "HCI command packet", "\(vector.name) length \(length)")
            }
        }
    }
}
