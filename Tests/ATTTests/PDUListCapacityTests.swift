import Bluetooth
import Testing

@testable import ATT

/// The two lists of length-prefixed tuples (Read Multiple Variable Response, Multiple Handle
/// Value Notification) count their tuples first, so the decoded list is allocated once.
@Suite("ATT PDU list capacity: length-prefixed tuples counted before decoding")
struct PDUListCapacityTests {
    static func count(_ bytes: [UInt8], headerLength: Int, lengthOffset: Int) -> Int {
        ByteReader(bytes).lengthPrefixedTupleCount(headerLength: headerLength, lengthOffset: lengthOffset)
    }

    @Test func countsWholeCutAndTruncatedTuples() {
        // Read Multiple Variable Response tuples: Length (2) then value.
        #expect(Self.count([], headerLength: 2, lengthOffset: 0) == 0)
        #expect(Self.count([0x02, 0x00, 0xAA, 0xBB], headerLength: 2, lengthOffset: 0) == 1)
        #expect(Self.count([0x01, 0x00, 0xAA, 0x00, 0x00, 0x03, 0x00, 0x01], headerLength: 2, lengthOffset: 0) == 3, "empty value, then a cut last tuple")
        #expect(Self.count([0x05], headerLength: 2, lengthOffset: 0) == 1, "a lone octet is one (malformed) tuple")
        // Multiple Handle Value Notification tuples: Handle (2), Length (2), value.
        #expect(Self.count([0x01, 0x00, 0x01, 0x00, 0x7F, 0x02, 0x00, 0x00, 0x00], headerLength: 4, lengthOffset: 2) == 2)
        #expect(Self.count([0x01, 0x00, 0xFF, 0xFF, 0x7F], headerLength: 4, lengthOffset: 2) == 1, "a length past the end ends the walk")
    }

    /// (That each list is allocated once is measured by `gattbench codec`'s allocation count.)
    @Test func decodedListsHoldEveryTuple() throws {
        var reader = ByteReader([0x21, 0x01, 0x00, 0xAA, 0x00, 0x00, 0x02, 0x00, 0xBB, 0xCC])
        let variable = try ReadMultipleVariableResponse(parsing: &reader)
        #expect(variable.entries.map(\.value) == [[0xAA], [], [0xBB, 0xCC]])
        reader = ByteReader([0x23, 0x06, 0x00, 0x01, 0x00, 0x64, 0x09, 0x00, 0x02, 0x00, 0x01, 0x02])
        let notification = try MultipleHandleValueNotification(parsing: &reader)
        #expect(notification.entries == [.init(handle: 6, value: [0x64]), .init(handle: 9, value: [0x01, 0x02])])
    }
}
