import Bluetooth
import L2CAP
import Security
import Testing
import TestSupport

/// Every SMP command (Vol 3, Part H, §3.5–§3.6): decode and re-encode, every strict prefix
/// refused, a trailing octet refused.
@Suite("Security: every SMP command's codec")
struct SecurityManagerPDUTests {
    static let sixteen = "00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff"
    static let vectors: [(String, SecurityManagerCode)] = [
        ("01 04 00 2d 10 0f 0f", .pairingRequest),
        ("02 03 00 09 10 01 03", .pairingResponse),
        ("03 " + sixteen, .pairingConfirm),
        ("04 " + sixteen, .pairingRandom),
        ("05 0b", .pairingFailed),
        ("06 " + sixteen, .encryptionInformation),
        ("07 34 12 88 77 66 55 44 33 22 11", .centralIdentification),
        ("08 " + sixteen, .identityInformation),
        ("09 01 05 9c 21 3a 7f e8", .identityAddressInformation),
        ("0a " + sixteen, .signingInformation),
        ("0b 0d", .securityRequest),
        ("0c " + String(repeating: "01 ", count: 32) + String(repeating: "02 ", count: 32), .pairingPublicKey),
        ("0d " + sixteen, .pairingDHKeyCheck),
        ("0e 04", .pairingKeypressNotification),
    ]

    @Test(arguments: vectors)
    func decodesAndReencodes(_ vector: (String, SecurityManagerCode)) throws {
        let bytes = leBytes(vector.0)
        let pdu = try SecurityManagerPDU(decoding: bytes[...])
        #expect(pdu.code == vector.1)
        #expect(pdu.encoded() == bytes)
        for length in 0..<bytes.count {
            #expect(throws: L2CAPError.self, "prefix of \(length)") { try SecurityManagerPDU(decoding: bytes.prefix(length)) }
        }
        #expect(throws: L2CAPError.self) { try SecurityManagerPDU(decoding: (bytes + [0])[...]) }
    }

    @Test func fieldsComeOutInWireOrder() throws {
        guard case .centralIdentification(let identification) = try SecurityManagerPDU(
            decoding: leBytes("07 34 12 88 77 66 55 44 33 22 11")[...])
        else { throw L2CAPError.invalidArgument(context: "test", reason: "not Central Identification") }
        #expect(identification.ediv == 0x1234)
        #expect(identification.rand == 0x1122_3344_5566_7788)
        guard case .identityAddressInformation(let identity) = try SecurityManagerPDU(
            decoding: leBytes("09 01 05 9c 21 3a 7f e8")[...])
        else { throw L2CAPError.invalidArgument(context: "test", reason: "not Identity Address Information") }
        #expect(identity.addressType == .random)
        #expect(identity.address == BluetoothAddress("E8:7F:3A:21:9C:05"))
    }

    @Test func reservedCodesAndBadIdentityTypesAreRefused() {
        #expect(throws: L2CAPError.self) { try SecurityManagerPDU(decoding: leBytes("0f 00")[...]) }
        #expect(throws: L2CAPError.self) { try SecurityManagerPDU(decoding: leBytes("00")[...]) }
        #expect(throws: L2CAPError.self) { try SecurityManagerPDU(decoding: leBytes("09 02 05 9c 21 3a 7f e8")[...]) }
        #expect(throws: L2CAPError.self) { try SecurityManagerPDU(decoding: [][...]) }
    }

    @Test func valuesOfTheWrongLengthCannotBeMade() {
        #expect(throws: L2CAPError.self) { try PairingConfirm(value: [1, 2, 3]) }
        #expect(throws: L2CAPError.self) { try PairingPublicKey(x: [UInt8](repeating: 0, count: 31), y: []) }
    }
}
