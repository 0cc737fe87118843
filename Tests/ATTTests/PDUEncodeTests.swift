import Bluetooth
import Testing
@testable import ATT

@Suite("ATT PDU encoding limits")
struct ATTPDUEncodeTests {
    @Test("a PDU over ATT_MTU throws, never truncates")
    func overMTU() throws {
        let fits = WriteRequest(handle: 3, value: [UInt8](repeating: 1, count: 20))
        #expect(try fits.encode(mtu: 23).count == 23)
        let tooLong = WriteRequest(handle: 3, value: [UInt8](repeating: 1, count: 21))
        #expect(throws: ATTError.pduTooLarge(opcode: .writeRequest, length: 24, mtu: 23)) { try tooLong.encode(mtu: 23) }
        #expect(throws: ATTError.pduTooLarge(opcode: .writeRequest, length: 24, mtu: 23)) { try tooLong.pdu.encode(mtu: 23) }
        let signed = SignedWriteCommand(handle: 3, value: [UInt8](repeating: 0, count: 9), signCounter: 1, mac: 2)
        #expect(throws: ATTError.pduTooLarge(opcode: .signedWriteCommand, length: 24, mtu: 23)) { try signed.encode(mtu: 23) }
        let unknown = ATTPDU.unknown(opcode: ATTOpcode(0xBF), parameters: [UInt8](repeating: 0, count: 23))
        #expect(throws: ATTError.pduTooLarge(opcode: ATTOpcode(0xBF), length: 24, mtu: 23)) { try unknown.encode(mtu: 23) }
    }

    @Test("lists that cannot be encoded faithfully are refused")
    func invalidParameters() {
        func reason(_ pdu: ATTPDU) -> String? {
            do {
                _ = try pdu.encode(mtu: 517)
                return nil
            } catch {
                if case .invalidParameters(let opcode, let reason) = error, opcode == pdu.opcode { return reason }
                return "unexpected \(error)"
            }
        }
        #expect(reason(.readByTypeResponse(ReadByTypeResponse(entries: []))) == "no entry")
        #expect(reason(.readByTypeResponse(ReadByTypeResponse(entries: [.init(handle: 1, value: [1]), .init(handle: 2, value: [1, 2])])))
            == "entries have values of different lengths")
        #expect(reason(.readByTypeResponse(ReadByTypeResponse(entries: [.init(handle: 1, value: [UInt8](repeating: 0, count: 254))])))
            == "entry length 256 exceeds 255")
        #expect(reason(.readByGroupTypeResponse(ReadByGroupTypeResponse(entries: [
            .init(handle: 1, endGroupHandle: 2, value: [0, 0x18]), .init(handle: 3, endGroupHandle: 4, value: [0]),
        ]))) == "entries have values of different lengths")
        #expect(reason(.findInformationResponse(FindInformationResponse(format: .uuid16, entries: [.init(handle: 1, uuid: sensorTagUUID)])))
            == "UUID \(sensorTagUUID) has no 16-bit form")
        #expect(reason(.findInformationResponse(FindInformationResponse(format: .uuid16, entries: []))) == "no entry")
        #expect(reason(.findByTypeValueResponse(FindByTypeValueResponse(entries: []))) == "no entry")
        #expect(reason(.readMultipleRequest(ReadMultipleRequest(handles: [3]))) == "needs two or more handles")
        #expect(reason(.readMultipleVariableRequest(ReadMultipleVariableRequest(handles: []))) == "needs two or more handles")
        #expect(reason(.readMultipleVariableResponse(ReadMultipleVariableResponse(entries: [
            .init(length: 5, value: [1]), .init(value: [2]),
        ]))) == "only the last value may be truncated")
        #expect(reason(.readMultipleVariableResponse(ReadMultipleVariableResponse(entries: [.init(length: 1, value: [1, 2])])))
            == "value 0 longer than its Length")
        #expect(reason(.multipleHandleValueNotification(MultipleHandleValueNotification(entries: []))) == "no entry")
        // Valid ones pass.
        #expect(reason(.readByTypeResponse(ReadByTypeResponse(entries: [.init(handle: 1, value: [1])]))) == nil)
        #expect(reason(.readMultipleVariableResponse(ReadMultipleVariableResponse(entries: [
            .init(value: [2]), .init(length: 5, value: [1]),
        ]))) == nil)
    }

    @Test("a 32-bit attribute type goes out in its 128-bit form")
    func uuid32() throws {
        let request = ReadByTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeType: .bit32(0x1234_5678))
        let bytes = try request.encode(mtu: 23)
        #expect(bytes.count == 21)
        let back = try ReadByTypeRequest(decoding: bytes)
        #expect(back.attributeType == .bit32(0x1234_5678))
        #expect(back.attributeType.byteWidth == 16)
    }

    @Test("write(to:) appends after what a writer already holds")
    func appends() {
        var writer = ByteWriter()
        writer.writeUInt8(0xAA)
        ATTPDU.readRequest(ReadRequest(handle: 0x0102)).write(to: &writer)
        #expect(writer.bytes == [0xAA, 0x0A, 0x02, 0x01])
    }
}
