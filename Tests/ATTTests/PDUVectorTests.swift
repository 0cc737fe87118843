import Bluetooth
import Testing
@testable import ATT

/// One valid PDU: its octets, its decoded value, and its layout for the truncation sweep.
struct PDUVector: Sendable, CustomTestStringConvertible {
    /// How the octets after the fixed fields are structured.
    enum Tail: Sendable {
        /// Nothing: the PDU ends after the fixed fields.
        case none
        /// A value of any length (any longer prefix is itself a valid PDU).
        case value
        /// Whole entries of `size` octets, at least one.
        case list(field: String, size: Int)
        /// A 16-octet attribute type after a 2-octet prefix already in the fixed fields.
        case attributeType128(field: String)
        /// Value then the 12-octet signature.
        case signature
        /// Read Multiple Variable Response tuples.
        case lengthValueTuples
        /// Multiple Handle Value Notification tuples.
        case handleLengthValueTuples
    }

    let name: String
    let hex: String
    let pdu: ATTPDU
    /// Fixed fields in order, opcode first: (spec field name, octets).
    let fields: [(String, Int)]
    let tail: Tail

    init(_ name: String, _ hex: String, _ pdu: ATTPDU, fields: [(String, Int)] = [], tail: Tail = .none) {
        self.name = name
        self.hex = hex
        self.pdu = pdu
        self.fields = [("Opcode", 1)] + fields
        self.tail = tail
    }

    var bytes: [UInt8] { Hex.decode(hex)! }
    var testDescription: String { name }
}

/// A SensorTag-style 128-bit UUID, F000AA01-0451-4000-B000-000000000000.
let sensorTagUUID = BluetoothUUID.bit128(0xF000_AA01_0451_4000_B000_0000_0000_0000)
/// Its little-endian wire octets.
let sensorTagUUIDHex = "000000000000" + "00b0" + "0040" + "5104" + "01aa00f0"

enum PDUVectors {
    static let all: [PDUVector] = [
        PDUVector("Error Response", "0108010" + "00a",
                  .errorResponse(ErrorResponse(requestOpcode: .readByTypeRequest, handle: 1, errorCode: .attributeNotFound)),
                  fields: [("Request Opcode In Error", 1), ("Attribute Handle In Error", 2), ("Error Code", 1)]),
        PDUVector("Error Response, application code", "01122a0080",
                  .errorResponse(ErrorResponse(requestOpcode: .writeRequest, handle: 0x2A, errorCode: ATTErrorCode(0x80))),
                  fields: [("Request Opcode In Error", 1), ("Attribute Handle In Error", 2), ("Error Code", 1)]),
        PDUVector("Exchange MTU Request", "020002", .exchangeMTURequest(ExchangeMTURequest(clientRxMTU: 512)),
                  fields: [("Client Rx MTU", 2)]),
        PDUVector("Exchange MTU Response", "031700", .exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: 23)),
                  fields: [("Server Rx MTU", 2)]),
        PDUVector("Find Information Request", "040100ffff",
                  .findInformationRequest(FindInformationRequest(startingHandle: 1, endingHandle: 0xFFFF)),
                  fields: [("Starting Handle", 2), ("Ending Handle", 2)]),
        PDUVector("Find Information Response, 16-bit, three entries", "0501" + "01000028" + "02000328" + "0300002a",
                  .findInformationResponse(FindInformationResponse(format: .uuid16, entries: [
                      .init(handle: 1, uuid: 0x2800), .init(handle: 2, uuid: 0x2803), .init(handle: 3, uuid: 0x2A00),
                  ])),
                  fields: [("Format", 1)], tail: .list(field: "Information Data", size: 4)),
        PDUVector("Find Information Response, 128-bit, two entries",
                  "0502" + "1000" + sensorTagUUIDHex + "1100" + "fb349b5f80000080001000000229" + "0000",
                  .findInformationResponse(FindInformationResponse(format: .uuid128, entries: [
                      .init(handle: 0x10, uuid: sensorTagUUID),
                      .init(handle: 0x11, uuid: .bit128(0x0000_2902_0000_1000_8000_0080_5F9B_34FB)),
                  ])),
                  fields: [("Format", 1)], tail: .list(field: "Information Data", size: 18)),
        PDUVector("Find By Type Value Request", "060100ffff00280f18",
                  .findByTypeValueRequest(FindByTypeValueRequest(startingHandle: 1, endingHandle: 0xFFFF,
                                                                 attributeType: 0x2800, attributeValue: [0x0F, 0x18])),
                  fields: [("Starting Handle", 2), ("Ending Handle", 2), ("Attribute Type", 2)], tail: .value),
        PDUVector("Find By Type Value Response, three entries", "07" + "01000500" + "06000900" + "0a000a00",
                  .findByTypeValueResponse(FindByTypeValueResponse(entries: [
                      .init(foundAttributeHandle: 1, groupEndHandle: 5), .init(foundAttributeHandle: 6, groupEndHandle: 9),
                      .init(foundAttributeHandle: 10, groupEndHandle: 10),
                  ])),
                  tail: .list(field: "Handles Information List", size: 4)),
        PDUVector("Read By Type Request, 16-bit", "080100ffff0328",
                  .readByTypeRequest(ReadByTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeType: 0x2803)),
                  fields: [("Starting Handle", 2), ("Ending Handle", 2), ("Attribute Type", 2)]),
        PDUVector("Read By Type Request, 128-bit", "080100ffff" + sensorTagUUIDHex,
                  .readByTypeRequest(ReadByTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeType: sensorTagUUID)),
                  fields: [("Starting Handle", 2), ("Ending Handle", 2), ("Attribute Type", 2)],
                  tail: .attributeType128(field: "Attribute Type")),
        PDUVector("Read By Type Response, two characteristic declarations", "0907" + "020002030000" + "2a" + "040002050001" + "2a",
                  .readByTypeResponse(ReadByTypeResponse(entries: [
                      .init(handle: 2, value: [0x02, 0x03, 0x00, 0x00, 0x2A]), .init(handle: 4, value: [0x02, 0x05, 0x00, 0x01, 0x2A]),
                  ])),
                  fields: [("Length", 1)], tail: .list(field: "Attribute Data List", size: 7)),
        PDUVector("Read By Type Response, three one-octet values", "0903" + "030001" + "050002" + "070003",
                  .readByTypeResponse(ReadByTypeResponse(entries: [
                      .init(handle: 3, value: [1]), .init(handle: 5, value: [2]), .init(handle: 7, value: [3]),
                  ])),
                  fields: [("Length", 1)], tail: .list(field: "Attribute Data List", size: 3)),
        PDUVector("Read By Type Response, empty values", "0902" + "0300" + "0400",
                  .readByTypeResponse(ReadByTypeResponse(entries: [.init(handle: 3, value: []), .init(handle: 4, value: [])])),
                  fields: [("Length", 1)], tail: .list(field: "Attribute Data List", size: 2)),
        PDUVector("Read Request", "0a0300", .readRequest(ReadRequest(handle: 3)), fields: [("Attribute Handle", 2)]),
        PDUVector("Read Response", "0b414243", .readResponse(ReadResponse(value: [0x41, 0x42, 0x43])), tail: .value),
        PDUVector("Read Response, empty", "0b", .readResponse(ReadResponse(value: [])), tail: .value),
        PDUVector("Read Blob Request", "0c03001600", .readBlobRequest(ReadBlobRequest(handle: 3, offset: 22)),
                  fields: [("Attribute Handle", 2), ("Value Offset", 2)]),
        PDUVector("Read Blob Response", "0d0102", .readBlobResponse(ReadBlobResponse(value: [1, 2])), tail: .value),
        PDUVector("Read Multiple Request, three handles", "0e030005000700",
                  .readMultipleRequest(ReadMultipleRequest(handles: [3, 5, 7])), tail: .list(field: "Set Of Handles", size: 2)),
        PDUVector("Read Multiple Response", "0f010203", .readMultipleResponse(ReadMultipleResponse(values: [1, 2, 3])), tail: .value),
        PDUVector("Read By Group Type Request", "100100ffff0028",
                  .readByGroupTypeRequest(ReadByGroupTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeGroupType: 0x2800)),
                  fields: [("Starting Handle", 2), ("Ending Handle", 2), ("Attribute Group Type", 2)]),
        PDUVector("Read By Group Type Response, three 16-bit services", "1106" + "010005000018" + "060009000118" + "0a00ffff0f18",
                  .readByGroupTypeResponse(ReadByGroupTypeResponse(entries: [
                      .init(handle: 1, endGroupHandle: 5, value: [0x00, 0x18]), .init(handle: 6, endGroupHandle: 9, value: [0x01, 0x18]),
                      .init(handle: 10, endGroupHandle: 0xFFFF, value: [0x0F, 0x18]),
                  ])),
                  fields: [("Length", 1)], tail: .list(field: "Attribute Data List", size: 6)),
        PDUVector("Read By Group Type Response, two 128-bit services",
                  "1114" + "20002800" + sensorTagUUIDHex + "29003000" + sensorTagUUIDHex,
                  .readByGroupTypeResponse(ReadByGroupTypeResponse(entries: [
                      .init(handle: 0x20, endGroupHandle: 0x28, value: sensorTagUUID.littleEndianBytes),
                      .init(handle: 0x29, endGroupHandle: 0x30, value: sensorTagUUID.littleEndianBytes),
                  ])),
                  fields: [("Length", 1)], tail: .list(field: "Attribute Data List", size: 20)),
        PDUVector("Write Request", "1203000100", .writeRequest(WriteRequest(handle: 3, value: [1, 0])),
                  fields: [("Attribute Handle", 2)], tail: .value),
        PDUVector("Write Response", "13", .writeResponse(WriteResponse())),
        PDUVector("Write Command", "5203000102", .writeCommand(WriteCommand(handle: 3, value: [1, 2])),
                  fields: [("Attribute Handle", 2)], tail: .value),
        PDUVector("Signed Write Command (TP/GAW/CL/BV-02-C)", "d20700010203" + "00000000" + "311f0acd1c3a5b0a",
                  .signedWriteCommand(SignedWriteCommand(handle: 7, value: [1, 2, 3], signCounter: 0, mac: 0x0A5B_3A1C_CD0A_1F31)),
                  fields: [("Attribute Handle", 2)], tail: .signature),
        PDUVector("Prepare Write Request", "16030000000102030405",
                  .prepareWriteRequest(PrepareWriteRequest(handle: 3, offset: 0, value: [1, 2, 3, 4, 5])),
                  fields: [("Attribute Handle", 2), ("Value Offset", 2)], tail: .value),
        PDUVector("Prepare Write Response", "1703001200aabb",
                  .prepareWriteResponse(PrepareWriteResponse(handle: 3, offset: 18, value: [0xAA, 0xBB])),
                  fields: [("Attribute Handle", 2), ("Value Offset", 2)], tail: .value),
        PDUVector("Execute Write Request, write", "1801", .executeWriteRequest(ExecuteWriteRequest(flags: .writeAll)),
                  fields: [("Flags", 1)]),
        PDUVector("Execute Write Request, cancel", "1800", .executeWriteRequest(ExecuteWriteRequest(flags: .cancelAll)),
                  fields: [("Flags", 1)]),
        PDUVector("Execute Write Response", "19", .executeWriteResponse(ExecuteWriteResponse())),
        PDUVector("Handle Value Notification", "1b25000102", .handleValueNotification(HandleValueNotification(handle: 0x25, value: [1, 2])),
                  fields: [("Attribute Handle", 2)], tail: .value),
        PDUVector("Handle Value Indication", "1d030001", .handleValueIndication(HandleValueIndication(handle: 3, value: [1])),
                  fields: [("Attribute Handle", 2)], tail: .value),
        PDUVector("Handle Value Confirmation", "1e", .handleValueConfirmation(HandleValueConfirmation())),
        PDUVector("Read Multiple Variable Request", "2003000500",
                  .readMultipleVariableRequest(ReadMultipleVariableRequest(handles: [3, 5])), tail: .list(field: "Set Of Handles", size: 2)),
        PDUVector("Read Multiple Variable Response, three tuples", "21" + "02000102" + "0000" + "0300414243",
                  .readMultipleVariableResponse(ReadMultipleVariableResponse(entries: [
                      .init(value: [1, 2]), .init(value: []), .init(value: [0x41, 0x42, 0x43]),
                  ])),
                  tail: .lengthValueTuples),
        PDUVector("Read Multiple Variable Response, last value truncated", "21" + "02000102" + "05004142",
                  .readMultipleVariableResponse(ReadMultipleVariableResponse(entries: [
                      .init(value: [1, 2]), .init(length: 5, value: [0x41, 0x42]),
                  ])),
                  tail: .lengthValueTuples),
        PDUVector("Multiple Handle Value Notification, three tuples", "23" + "030002000102" + "05000000" + "07000100ff",
                  .multipleHandleValueNotification(MultipleHandleValueNotification(entries: [
                      .init(handle: 3, value: [1, 2]), .init(handle: 5, value: []), .init(handle: 7, value: [0xFF]),
                  ])),
                  tail: .handleLengthValueTuples),
        PDUVector("Unknown request 0xbf", "bf0102", .unknown(opcode: ATTOpcode(0xBF), parameters: [1, 2]), tail: .value),
        PDUVector("Unknown command 0x7f", "7f", .unknown(opcode: ATTOpcode(0x7F), parameters: []), tail: .value),
    ]
}

@Suite("ATT PDU byte vectors")
struct ATTPDUVectorTests {
    @Test("decode and re-encode", arguments: PDUVectors.all)
    func roundTrip(_ vector: PDUVector) throws {
        let bytes = vector.bytes
        let pdu = try ATTPDU(decoding: bytes, mtu: 517)
        #expect(pdu == vector.pdu)
        #expect(pdu.opcode.rawValue == bytes[0])
        #expect(pdu.encodedLength == bytes.count)
        #expect(try pdu.encode(mtu: 517) == bytes)
        #expect(try vector.pdu.encode(mtu: bytes.count) == bytes)
        // The typed entry point agrees with the enum.
        if let body = vector.pdu.body {
            #expect(body.encoded == bytes)
            #expect(body.pdu == pdu)
            let typed = try decodeTyped(like: body, bytes)
            #expect(typed == pdu)
        }
    }

    private func decodeTyped<T: ATTPDUCodable>(like sample: T, _ bytes: [UInt8]) throws(ATTError) -> ATTPDU {
        try T(decoding: bytes, mtu: nil).pdu
    }

    @Test("every Core 5.4 opcode has a vector")
    func everyOpcodeCovered() {
        let covered = Set(PDUVectors.all.map(\.pdu.opcode))
        for opcode in ATTOpcode.allKnown {
            #expect(covered.contains(opcode), "no vector for \(opcode)")
        }
    }

    @Test("decoding from a slice with a non-zero start index")
    func sliceDecoding() throws {
        let buffer: [UInt8] = [0xEE, 0xEE, 0x1B, 0x25, 0x00, 0x01, 0x02, 0xEE]
        let pdu = try ATTPDU(decoding: buffer[2..<7], mtu: 23)
        #expect(pdu == .handleValueNotification(HandleValueNotification(handle: 0x25, value: [1, 2])))
        guard case .handleValueNotification(let ntf) = pdu else { return }
        #expect(ntf.value.startIndex == 0)
    }

    @Test("a list response re-encodes with the Length field of its entries")
    func lengthFieldIsDerived() throws {
        let rsp = ReadByTypeResponse(entries: [.init(handle: 3, value: [1, 2, 3])])
        #expect(rsp.length == 5)
        #expect(try rsp.encode(mtu: 23) == [0x09, 0x05, 0x03, 0x00, 1, 2, 3])
        let group = ReadByGroupTypeResponse(entries: [.init(handle: 1, endGroupHandle: 4, value: [0x0A, 0x18])])
        #expect(group.length == 6)
    }

    @Test("Find Information Response picks its format from the UUIDs")
    func findInformationFormat() throws {
        let short = FindInformationResponse(entries: [.init(handle: 1, uuid: 0x2800)])
        #expect(short.format == .uuid16)
        let long = FindInformationResponse(entries: [.init(handle: 1, uuid: 0x2800), .init(handle: 2, uuid: sensorTagUUID)])
        #expect(long.format == .uuid128)
        let bytes = try long.encode(mtu: 100)
        #expect(bytes.count == 2 + 2 * 18)
        let back = try FindInformationResponse(decoding: bytes)
        #expect(back.entries.map(\.uuid) == [0x2800, sensorTagUUID])
    }

    @Test("Signed Write Command exposes its signature and signed message")
    func signedWrite() throws {
        let pdu = try SignedWriteCommand(decoding: Hex.decode("d20700010203" + "00000000" + "311f0acd1c3a5b0a")!)
        #expect(pdu.signature == Hex.decode("00000000311f0acd1c3a5b0a")!)
        #expect(pdu.signedMessage == Hex.decode("d2070001020300000000")!)
        #expect(pdu.value == [1, 2, 3])
    }

    @Test("negotiated ATT_MTU")
    func negotiatedMTU() {
        #expect(ExchangeMTURequest.negotiatedMTU(clientRxMTU: 517, serverRxMTU: 247) == 247)
        #expect(ExchangeMTURequest.negotiatedMTU(clientRxMTU: 512, serverRxMTU: 512) == 512)
        #expect(ExchangeMTURequest.negotiatedMTU(clientRxMTU: 517, serverRxMTU: 10) == 23)
    }
}
