import Bluetooth
import Testing
@testable import ATT

/// One malformed PDU and the one error it must give.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    let name: String
    let hex: String
    let mtu: Int?
    let error: ATTError

    init(_ name: String, _ hex: String, mtu: Int? = nil, _ opcode: ATTOpcode, _ field: String, _ offset: Int,
         _ reason: ATTError.MalformedReason) {
        self.name = name
        self.hex = hex
        self.mtu = mtu
        self.error = .malformed(opcode: opcode, field: field, offset: offset, reason: reason)
    }

    var testDescription: String { name }
}

@Suite("ATT PDU malformed table")
struct ATTPDUMalformedTests {
    static let cases: [MalformedCase] = [
        // Length fields of list responses.
        .init("Read By Type Response, Length 0", "0900", .readByTypeResponse, "Length", 1, .invalidLength(0)),
        .init("Read By Type Response, Length 1", "090103", .readByTypeResponse, "Length", 1, .invalidLength(1)),
        .init("Read By Group Type Response, Length 3", "1103010005", .readByGroupTypeResponse, "Length", 1, .invalidLength(3)),
        // Partial entries.
        .init("Read By Type Response, partial second entry", "0904" + "03000102" + "0500",
              .readByTypeResponse, "Attribute Data List", 6, .truncated(needed: 4, available: 2)),
        .init("Read By Type Response, Length larger than the data", "0907" + "0300010203",
              .readByTypeResponse, "Attribute Data List", 2, .truncated(needed: 7, available: 5)),
        .init("Read By Group Type Response, partial entry", "1106" + "010005000018" + "0600",
              .readByGroupTypeResponse, "Attribute Data List", 8, .truncated(needed: 6, available: 2)),
        .init("Find By Type Value Response, partial entry", "07" + "01000500" + "06",
              .findByTypeValueResponse, "Handles Information List", 5, .truncated(needed: 4, available: 1)),
        .init("Find Information Response, format 1 with a 128-bit entry", "0501" + "1000" + sensorTagUUIDHex,
              .findInformationResponse, "Information Data", 18, .truncated(needed: 4, available: 2)),
        .init("Find Information Response, format 2 with 16-bit entries", "0502" + "01000028" + "02000328",
              .findInformationResponse, "Information Data", 2, .truncated(needed: 18, available: 8)),
        .init("Multiple Handle Value Notification, value shorter than its length", "23" + "0300" + "0500" + "0102",
              .multipleHandleValueNotification, "Attribute Value", 5, .truncated(needed: 5, available: 2)),
        .init("Read Multiple Variable Response, dangling octet", "21" + "02000102" + "05",
              .readMultipleVariableResponse, "Value Length", 5, .truncated(needed: 2, available: 1)),
        .init("Read Multiple Request, odd handle list", "0e030005", .readMultipleRequest, "Set Of Handles", 3,
              .truncated(needed: 2, available: 1)),
        .init("Signed Write Command, short signature", "d207000102", .signedWriteCommand, "Authentication Signature", 3,
              .truncated(needed: 12, available: 2)),
        // Find Information format.
        .init("Find Information Response, format 0", "0500" + "01000028", .findInformationResponse, "Format", 1, .invalidFormat(0)),
        .init("Find Information Response, format 3", "0503" + "01000028", .findInformationResponse, "Format", 1, .invalidFormat(3)),
        // Zero handles in server PDUs.
        .init("Find Information Response, handle 0", "0501" + "00000028", .findInformationResponse, "Handle", 2, .zeroHandle),
        .init("Find By Type Value Response, found handle 0", "07" + "00000500", .findByTypeValueResponse,
              "Found Attribute Handle", 1, .zeroHandle),
        .init("Read By Type Response, second handle 0", "0903" + "030001" + "000002", .readByTypeResponse,
              "Attribute Handle", 5, .zeroHandle),
        .init("Read By Group Type Response, handle 0", "1106" + "000005000018", .readByGroupTypeResponse,
              "Attribute Handle", 2, .zeroHandle),
        .init("Handle Value Notification, handle 0", "1b000001", .handleValueNotification, "Attribute Handle", 1, .zeroHandle),
        .init("Handle Value Indication, handle 0", "1d0000", .handleValueIndication, "Attribute Handle", 1, .zeroHandle),
        .init("Prepare Write Response, handle 0", "17000000000102", .prepareWriteResponse, "Attribute Handle", 1, .zeroHandle),
        .init("Multiple Handle Value Notification, second handle 0", "23" + "0300010001" + "00000100ff",
              .multipleHandleValueNotification, "Attribute Handle", 6, .zeroHandle),
        // Bad ranges in responses.
        .init("Find By Type Value Response, end below found handle", "07" + "05000100", .findByTypeValueResponse,
              "Group End Handle", 1, .invalidRange(start: 5, end: 1)),
        .init("Read By Group Type Response, end below handle", "1106" + "050001000018", .readByGroupTypeResponse,
              "End Group Handle", 2, .invalidRange(start: 5, end: 1)),
        // Empty lists.
        .init("Read By Type Response, no entry", "0907", .readByTypeResponse, "Attribute Data List", 2, .emptyList),
        .init("Read By Group Type Response, no entry", "1106", .readByGroupTypeResponse, "Attribute Data List", 2, .emptyList),
        .init("Find Information Response, no entry", "0501", .findInformationResponse, "Information Data", 2, .emptyList),
        .init("Find By Type Value Response, no entry", "07", .findByTypeValueResponse, "Handles Information List", 1, .emptyList),
        .init("Read Multiple Variable Response, no tuple", "21", .readMultipleVariableResponse, "Length Value Tuple List", 1,
              .emptyList),
        .init("Multiple Handle Value Notification, no tuple", "23", .multipleHandleValueNotification,
              "Handle Length Value Tuple List", 1, .emptyList),
        // Attribute type sizes.
        .init("Read By Type Request, 4-octet type", "080100ffff00280000", .readByTypeRequest, "Attribute Type", 5, .invalidLength(4)),
        .init("Read By Group Type Request, 3-octet type", "100100ffff002800", .readByGroupTypeRequest, "Attribute Group Type", 5,
              .invalidLength(3)),
        .init("Read By Type Request, 17-octet type", "080100ffff" + sensorTagUUIDHex + "00", .readByTypeRequest, "Attribute Type",
              5, .invalidLength(17)),
        // Trailing octets after fixed-length PDUs.
        .init("Read Request, trailing octet", "0a0300ff", .readRequest, "Attribute Handle", 3, .trailingBytes(count: 1)),
        .init("Exchange MTU Response, trailing octet (test-gattrib /gattrib/send)", "03020304", .exchangeMTUResponse,
              "Server Rx MTU", 3, .trailingBytes(count: 1)),
        .init("Error Response, trailing octet", "010a03000a00", .errorResponse, "Error Code", 5, .trailingBytes(count: 1)),
        .init("Write Response, trailing octet", "1300", .writeResponse, "Opcode", 1, .trailingBytes(count: 1)),
        .init("Execute Write Request, trailing octet", "180100", .executeWriteRequest, "Flags", 2, .trailingBytes(count: 1)),
        .init("Handle Value Confirmation, trailing octets", "1e0102", .handleValueConfirmation, "Opcode", 1,
              .trailingBytes(count: 2)),
        .init("Find Information Request, trailing octet", "040100ffff00", .findInformationRequest, "Ending Handle", 5,
              .trailingBytes(count: 1)),
        // Over ATT_MTU.
        .init("Read Response of 24 octets at ATT_MTU 23", "0b" + String(repeating: "ff", count: 23), mtu: 23,
              .readResponse, "PDU", 23, .exceedsMTU(length: 24, mtu: 23)),
        .init("Notification of 24 octets at ATT_MTU 23", "1b0300" + String(repeating: "00", count: 21), mtu: 23,
              .handleValueNotification, "PDU", 23, .exceedsMTU(length: 24, mtu: 23)),
        .init("Unknown opcode over ATT_MTU", "bf" + String(repeating: "00", count: 30), mtu: 23,
              ATTOpcode(0xBF), "PDU", 23, .exceedsMTU(length: 31, mtu: 23)),
    ]

    @Test("each entry gives its one error", arguments: cases)
    func malformed(_ entry: MalformedCase) {
        let bytes = Hex.decode(entry.hex)!
        #expect(throws: entry.error) { try ATTPDU(decoding: bytes, mtu: entry.mtu) }
        // The error is a malformed one, whatever the entry point.
        #expect(entry.error.malformedReason != nil)
    }

    @Test("the same PDU decodes at a large enough ATT_MTU")
    func mtuBoundary() throws {
        let bytes = [UInt8(0x0B)] + [UInt8](repeating: 0xFF, count: 22)
        #expect(try ATTPDU(decoding: bytes, mtu: 23) == .readResponse(ReadResponse(value: Array(bytes.dropFirst()))))
        #expect(throws: ATTError.malformed(opcode: .readResponse, field: "PDU", offset: 22,
                                           reason: .exceedsMTU(length: 23, mtu: 22))) {
            try ReadResponse(decoding: bytes, mtu: 22)
        }
    }

    @Test("a typed decoder rejects another opcode")
    func wrongOpcode() {
        #expect(throws: ATTError.malformed(opcode: .readRequest, field: "Opcode", offset: 0, reason: .wrongOpcode(0x0B))) {
            try ReadRequest(decoding: [0x0B, 0x03, 0x00])
        }
    }

    @Test("a server answers an undecodable request with Invalid PDU and ignores a bad command")
    func undecodable() {
        #expect(ATTPDU.errorResponse(forUndecodable: [0x0E, 0x03, 0x00, 0x05][...])
            == ErrorResponse(requestOpcode: .readMultipleRequest, handle: 0, errorCode: .invalidPDU))
        #expect(ATTPDU.errorResponse(forUndecodable: [0xD2, 0x07, 0x00][...]) == nil)
        #expect(ATTPDU.errorResponse(forUndecodable: [0x09, 0x00][...]) == nil)
        #expect(ATTPDU.errorResponse(forUndecodable: [][...]) == nil)
    }

    @Test("errors describe themselves")
    func descriptions() {
        let error = ATTError.malformed(opcode: .readByTypeResponse, field: "Length", offset: 1, reason: .invalidLength(0))
        #expect(error.description == "malformed ATT_READ_BY_TYPE_RSP at offset 1 (Length): invalid length 0")
        #expect(ATTError.peerError(request: .readRequest, handle: 3, code: .readNotPermitted).description
            == "ATT_READ_REQ on handle 0x0003 failed: Read Not Permitted (0x02)")
        #expect(ATTError.pduTooLarge(opcode: .writeRequest, length: 24, mtu: 23).description
            == "ATT_WRITE_REQ of 24 octets exceeds ATT_MTU 23")
        #expect(ATTError.timeout(request: .readRequest).description == "no answer to ATT_READ_REQ within 30 s")
    }
}
