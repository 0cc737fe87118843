import Bluetooth
import Testing
import TestSupport

@testable import HCI

/// LE Enable Encryption (§7.8.24) and Encryption Key Refresh Complete (§7.7.39).
@Suite struct EncryptionCommandTests {
    static let command = LEEnableEncryptionCommand(
        connectionHandle: 0x0040, randomNumber: 0x0102_0304_0506_0708, encryptedDiversifier: 0xBEEF,
        longTermKey: Array(0..<16))
    static let bytes = leBytes(
        "19 20 1c  40 00  08 07 06 05 04 03 02 01  ef be  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f")

    @Test func encodesDecodesAndHidesTheKey() throws {
        #expect(try HCICommandPacket(Self.command).encode() == Self.bytes)
        var reader = ByteReader(Self.bytes)
        guard case .leEnableEncryption(let decoded) = try AnyHCICommand(parsing: &reader) else {
            Issue.record("not decoded as LE Enable Encryption")
            return
        }
        #expect(decoded == Self.command)
        #expect(!Self.command.description.contains("0001020304"), "the key is not shown")
        for length in 3..<Self.bytes.count {
            var prefix = ByteReader(Array(Self.bytes.prefix(length)))
            #expect(throws: HCIError.self) { try AnyHCICommand(parsing: &prefix) }
        }
    }

    @Test func aShortKeyCannotBeSent() {
        var bad = Self.command
        bad.longTermKey = [1, 2, 3]
        #expect(throws: HCIError.self) { try HCICommandPacket(bad) }
    }

    @Test func keyRefreshCompleteIsReadFromTheRawEvent() throws {
        let event = try HCIEvent(bytes: leBytes("30 03 00 40 00"))
        #expect(EncryptionKeyRefreshCompleteEvent(event) == EncryptionKeyRefreshCompleteEvent(status: .success, connectionHandle: 0x40))
        #expect(EncryptionKeyRefreshCompleteEvent(try HCIEvent(bytes: leBytes("30 02 00 40"))) == nil)
        #expect(EncryptionKeyRefreshCompleteEvent(try HCIEvent(bytes: leBytes("08 04 00 40 00 01"))) == nil)
    }
}
