import TestSupport
import Bluetooth
import L2CAP
import Testing

@testable import Security

@Suite struct LESecurityManagerTests {
    static let responder = SecurityManagerResponder()
    /// Pairing Request: NoInputNoOutput, no OOB, bonding + SC, 16-octet keys, EncKey|IdKey both ways.
    static let pairingRequest = leBytes("01 03 00 09 10 03 03")

    @Test func pairingRequestDecodesAndReencodes() throws {
        var reader = ByteReader(Self.pairingRequest)
        let request = try PairingRequest(parsing: &reader)
        #expect(
            request
                == PairingRequest(
                    ioCapability: 3, oobDataFlag: 0, authenticationRequirements: 0x09, maximumEncryptionKeySize: 16,
                    initiatorKeyDistribution: 3, responderKeyDistribution: 3))
        var writer = ByteWriter()
        request.write(to: &writer)
        #expect(writer.bytes == Self.pairingRequest)
    }

    @Test func securityRequestAndPairingFailedDecodeAndReencode() throws {
        var reader = ByteReader(leBytes("0b 0d"))
        let security = try SecurityRequest(parsing: &reader)
        #expect(security.authenticationRequirements == 0x0D)
        var writer = ByteWriter()
        security.write(to: &writer)
        #expect(writer.bytes == leBytes("0b 0d"))

        var failedReader = ByteReader(leBytes("05 05"))
        let failed = try PairingFailed(parsing: &failedReader)
        #expect(failed.reason == .pairingNotSupported)
        #expect(failed.encode() == leBytes("05 05"))
    }

    @Test func everyStrictPrefixIsRejected() {
        for length in 0..<Self.pairingRequest.count {
            var reader = ByteReader(Self.pairingRequest[..<length])
            #expect(throws: L2CAPError.self, "prefix of \(length)") { try PairingRequest(parsing: &reader) }
        }
        var security = ByteReader(leBytes("0b"))
        #expect(
            throws: L2CAPError.malformed(
                context: "SMP Security Request", reason: .truncated(needed: 1, available: 0), offset: 1)
        ) {
            try SecurityRequest(parsing: &security)
        }
        var failed = ByteReader(leBytes("05"))
        #expect(throws: L2CAPError.self) { try PairingFailed(parsing: &failed) }
    }

    @Test func wrongCodesAreRejected() {
        var reader = ByteReader(leBytes("02 03 00 09 10 03 03"))
        #expect(
            throws: L2CAPError.malformed(
                context: "SMP Pairing Request", reason: .invalidValue(field: "Code", value: 2), offset: 0)
        ) {
            try PairingRequest(parsing: &reader)
        }
    }

    /// Request, the Pairing Failed bytes sent back.
    static let answers: [(String, String, String)] = [
        ("Pairing Request", "01 03 00 09 10 03 03", "05 05"),
        ("Pairing Request, legacy, no bonding", "01 00 00 00 07 00 00", "05 05"),
        ("Security Request", "0b 01", "05 05"),
        ("Security Request, MITM + SC", "0b 0d", "05 05"),
        ("Pairing Request too short", "01 03 00 09 10 03", "05 0a"),
        ("Pairing Request too long", "01 03 00 09 10 03 03 00", "05 0a"),
        ("Security Request without AuthReq", "0b", "05 0a"),
        ("Security Request too long", "0b 01 01", "05 0a"),
    ]

    @Test(arguments: 0..<answers.count)
    func pairingIsRefused(index: Int) {
        let (name, request, answer) = Self.answers[index]
        guard case .pairingFailed(let failed, let code, let error) = Self.responder.receive(leBytes(request)[...])
        else {
            Issue.record("\(name): no Pairing Failed")
            return
        }
        #expect(failed.encode() == leBytes(answer), "\(name)")
        #expect(code == SecurityManagerCode(rawValue: leBytes(request)[0]))
        #expect((error == nil) == (failed.reason == .pairingNotSupported))
    }

    @Test(arguments: [UInt8(0x00), 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x0E, 0x0F, 0xFF])
    func everythingElseIsIgnored(code: UInt8) {
        #expect(Self.responder.receive([code, 0x00, 0x01][...]) == .ignored(SecurityManagerCode(rawValue: code)))
    }

    @Test func anEmptyPDUIsIgnored() {
        #expect(Self.responder.receive([][...]) == .empty)
    }
}
