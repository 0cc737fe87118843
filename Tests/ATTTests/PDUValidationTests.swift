import Bluetooth
import Testing
@testable import ATT

struct ValidationCase: Sendable, CustomTestStringConvertible {
    let name: String
    let hex: String
    let response: ErrorResponse?
    var testDescription: String { name }
}

/// Requests that decode but that a server must refuse, and the Error Response it must send.
@Suite("ATT PDU server-side validation")
struct ATTPDUValidationTests {
    static func error(_ op: ATTOpcode, _ handle: UInt16, _ code: ATTErrorCode) -> ErrorResponse {
        ErrorResponse(requestOpcode: op, handle: handle, errorCode: code)
    }

    static let cases: [ValidationCase] = [
        .init(name: "Find Information, start 0", hex: "040000ffff", response: error(.findInformationRequest, 0, .invalidHandle)),
        .init(name: "Find Information, start > end", hex: "0405000300", response: error(.findInformationRequest, 5, .invalidHandle)),
        .init(name: "Find Information, start = end", hex: "0405000500", response: nil),
        .init(name: "Find By Type Value, start > end", hex: "0609000100" + "00280018",
              response: error(.findByTypeValueRequest, 9, .invalidHandle)),
        .init(name: "Read By Type, start 0", hex: "0800000500" + "0328", response: error(.readByTypeRequest, 0, .invalidHandle)),
        .init(name: "Read By Type, start > end", hex: "0810000f00" + "0328", response: error(.readByTypeRequest, 0x10, .invalidHandle)),
        .init(name: "Read By Type, whole range", hex: "080100ffff" + "0328", response: nil),
        .init(name: "Read By Group Type, start > end", hex: "10ffff0100" + "0028",
              response: error(.readByGroupTypeRequest, 0xFFFF, .invalidHandle)),
        .init(name: "Read, handle 0", hex: "0a0000", response: error(.readRequest, 0, .invalidHandle)),
        .init(name: "Read, handle 3", hex: "0a0300", response: nil),
        .init(name: "Read Blob, handle 0", hex: "0c00000100", response: error(.readBlobRequest, 0, .invalidHandle)),
        .init(name: "Write, handle 0", hex: "12000001", response: error(.writeRequest, 0, .invalidHandle)),
        .init(name: "Prepare Write, handle 0", hex: "1600000000", response: error(.prepareWriteRequest, 0, .invalidHandle)),
        .init(name: "Read Multiple, one handle", hex: "0e0300", response: error(.readMultipleRequest, 3, .invalidPDU)),
        .init(name: "Read Multiple, no handle", hex: "0e", response: error(.readMultipleRequest, 0, .invalidPDU)),
        .init(name: "Read Multiple, a zero handle", hex: "0e03000000", response: error(.readMultipleRequest, 0, .invalidHandle)),
        .init(name: "Read Multiple Variable, one handle", hex: "200300", response: error(.readMultipleVariableRequest, 3, .invalidPDU)),
        .init(name: "Execute Write, reserved flags", hex: "1802", response: error(.executeWriteRequest, 0, .invalidPDU)),
        .init(name: "Execute Write, cancel", hex: "1800", response: nil),
        .init(name: "Exchange MTU below 23", hex: "020a00", response: nil),
        .init(name: "Write Command, handle 0 (ignored, never answered)", hex: "52000001", response: nil),
        .init(name: "Notification (not a request)", hex: "1b030001", response: nil),
    ]

    @Test("each request gets the required answer", arguments: cases)
    func validate(_ entry: ValidationCase) throws {
        let pdu = try ATTPDU(decoding: Hex.decode(entry.hex)!, mtu: 23)
        #expect(pdu.validate() == entry.response)
    }
}
