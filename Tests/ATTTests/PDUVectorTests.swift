import Bluetooth
import Testing
@testable import ATT

@Suite("ATT PDU vectors")
struct ATTPDUVectorTests {
    @Test func readByGroupTypeRequestRoundTrip() throws {
        let bytes: [UInt8] = [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]
        let pdu = try ATTPDU(decoding: bytes, mtu: 23)
        #expect(pdu == .readByGroupTypeRequest(ReadByGroupTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeGroupType: .bit16(0x2800))))
        #expect(try pdu.encode(mtu: 23) == bytes)
    }
}
