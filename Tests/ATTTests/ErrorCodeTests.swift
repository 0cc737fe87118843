import Bluetooth
import Testing
@testable import ATT

@Suite("ATT error codes")
struct ATTErrorCodeTests {
    /// Wireshark's names as tshark_att.py prints them (`ATT_ERRORS` there).
    static let wiresharkNames: [UInt8: String] = [
        0x01: "INVALID_HANDLE", 0x02: "READ_NOT_PERMITTED",
        0x03: "WRITE_NOT_PERMITTED", 0x04: "INVALID_PDU",
        0x05: "INSUFFICIENT_AUTHENTICATION", 0x06: "REQUEST_NOT_SUPPORTED",
        0x07: "INVALID_OFFSET", 0x08: "INSUFFICIENT_AUTHORIZATION",
        0x09: "PREPARE_QUEUE_FULL", 0x0A: "ATTRIBUTE_NOT_FOUND",
        0x0B: "ATTRIBUTE_NOT_LONG", 0x0C: "INSUFFICIENT_ENCRYPTION_KEY_SIZE",
        0x0D: "INVALID_ATTRIBUTE_VALUE_LENGTH", 0x0E: "UNLIKELY_ERROR",
        0x0F: "INSUFFICIENT_ENCRYPTION", 0x10: "UNSUPPORTED_GROUP_TYPE",
        0x11: "INSUFFICIENT_RESOURCES", 0x12: "DATABASE_OUT_OF_SYNC",
        0x13: "VALUE_NOT_ALLOWED", 0xFC: "WRITE_REQUEST_REJECTED",
        0xFD: "CCCD_IMPROPERLY_CONFIGURED", 0xFE: "PROCEDURE_ALREADY_IN_PROGRESS",
        0xFF: "OUT_OF_RANGE",
    ]

    @Test("names match the oracle for all 256 codes (null where it has none)")
    func names() {
        for raw in 0...255 {
            #expect(ATTErrorCode(UInt8(raw)).name == Self.wiresharkNames[UInt8(raw)], "0x\(String(raw, radix: 16))")
        }
        #expect(ATTErrorCode.allNamed.count == Self.wiresharkNames.count)
        #expect(ATTErrorCode.allNamed.allSatisfy { $0.name != nil })
    }

    @Test("named constants carry the Core 5.4 values")
    func constants() {
        #expect(ATTErrorCode(rawValue: 0x0A) == .attributeNotFound)
        #expect(ATTErrorCode.invalidHandle.rawValue == 0x01)
        #expect(ATTErrorCode.encryptionKeySizeTooShort.rawValue == 0x0C)
        #expect(ATTErrorCode.databaseOutOfSync.rawValue == 0x12)
        #expect(ATTErrorCode.valueNotAllowed.rawValue == 0x13)
        #expect(ATTErrorCode.writeRequestRejected.rawValue == 0xFC)
        #expect(ATTErrorCode.cccdImproperlyConfigured.rawValue == 0xFD)
        #expect(ATTErrorCode.procedureAlreadyInProgress.rawValue == 0xFE)
        #expect(ATTErrorCode.outOfRange.rawValue == 0xFF)
    }

    @Test("ranges and human descriptions")
    func ranges() {
        #expect(ATTErrorCode.attributeNotFound.description == "Attribute Not Found (0x0a)")
        #expect(ATTErrorCode.cccdImproperlyConfigured.description
            == "Client Characteristic Configuration Descriptor Improperly Configured (0xfd)")
        for raw in 0x80...0x9F {
            let code = ATTErrorCode(UInt8(raw))
            #expect(code.isApplicationError && !code.isReserved && code.name == nil)
            #expect(code.description == "Application Error (0x\(String(raw, radix: 16)))")
        }
        #expect(ATTErrorCode(0x14).isReserved && ATTErrorCode(0x14).description == "Reserved (0x14)")
        #expect(ATTErrorCode(0x00).isReserved)
        #expect(ATTErrorCode(0xA0).isReserved)
        #expect(ATTErrorCode(0xE0).isCommonProfileError && !ATTErrorCode(0xE0).isReserved)
        #expect(ATTErrorCode(0xE0).description == "Common Profile and Service Error (0xe0)")
        #expect(!ATTErrorCode.outOfRange.isReserved && ATTErrorCode.outOfRange.isCommonProfileError)
    }

    @Test("vendor codes survive an Error Response round trip", arguments: [0x80, 0x9F, 0xA5, 0xE3] as [UInt8])
    func vendorCodes(_ raw: UInt8) throws {
        let bytes: [UInt8] = [0x01, 0x12, 0x21, 0x00, raw]
        let pdu = try ErrorResponse(decoding: bytes)
        #expect(pdu.errorCode.rawValue == raw)
        #expect(try pdu.encode(mtu: 23) == bytes)
    }
}

@Suite("ATT error codes: peer errors")
struct ATTErrorCodePeerErrorTests {
    @Test("an Error Response becomes a peer error with its context")
    func peerError() throws {
        let response = try ErrorResponse(decoding: [0x01, 0x0A, 0x21, 0x00, 0x02])
        #expect(ATTError(response) == .peerError(request: .readRequest, handle: 0x21, code: .readNotPermitted))
    }
}
