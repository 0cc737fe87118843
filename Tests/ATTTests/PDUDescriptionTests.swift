import Bluetooth
import Testing
@testable import ATT

@Suite("ATT PDU one-line descriptions")
struct ATTPDUDescriptionTests {
    static let cases: [(String, String)] = [
        ("100100ffff0028", "ATT Read By Group Type Request (0x10) handles 0x0001-0xffff type 2800 (Primary Service)"),
        ("0108010" + "00a", "ATT Error Response (0x01) Read By Type Request (0x08) handle 0x0001: Attribute Not Found (0x0a)"),
        ("020002", "ATT Exchange MTU Request (0x02) client rx mtu 512"),
        ("031700", "ATT Exchange MTU Response (0x03) server rx mtu 23"),
        ("0501" + "01000028" + "02000329", "ATT Find Information Response (0x05) format 16-bit: 0x0001 2800 (Primary Service), 0x0002 2903 (Server Characteristic Configuration)"),
        ("060100ffff00280f18", "ATT Find By Type Value Request (0x06) handles 0x0001-0xffff type 2800 (Primary Service) value 0f18"),
        ("07" + "01000500" + "06000900", "ATT Find By Type Value Response (0x07) 0x0001-0x0005, 0x0006-0x0009"),
        ("080100ffff0328", "ATT Read By Type Request (0x08) handles 0x0001-0xffff type 2803 (Characteristic)"),
        ("080100ffff" + sensorTagUUIDHex, "ATT Read By Type Request (0x08) handles 0x0001-0xffff type f000aa01-0451-4000-b000-000000000000"),
        ("0907" + "02000203000" + "02a", "ATT Read By Type Response (0x09) length 7: 0x0002 020300002a"),
        ("1106" + "010005000018" + "060009000f18", "ATT Read By Group Type Response (0x11) length 6: 0x0001-0x0005 1800, 0x0006-0x0009 180f"),
        ("0a0300", "ATT Read Request (0x0a) handle 0x0003"),
        ("0b", "ATT Read Response (0x0b) value (empty)"),
        ("0c03001600", "ATT Read Blob Request (0x0c) handle 0x0003 offset 22"),
        ("0e03000500", "ATT Read Multiple Request (0x0e) handles 0x0003, 0x0005"),
        ("1203000100", "ATT Write Request (0x12) handle 0x0003 value 0100"),
        ("13", "ATT Write Response (0x13)"),
        ("d20700010203" + "00000000" + "311f0acd1c3a5b0a", "ATT Signed Write Command (0xd2) handle 0x0007 value 010203 sign counter 0 mac 311f0acd1c3a5b0a"),
        ("1801", "ATT Execute Write Request (0x18) flags 0x01 (write all)"),
        ("1b25000102", "ATT Handle Value Notification (0x1b) handle 0x0025 value 0102"),
        ("21" + "02000102" + "05004142", "ATT Read Multiple Variable Response (0x21) length 2 value 0102, length 5 value 4142 (truncated)"),
        ("23" + "030002000102" + "05000000", "ATT Multiple Handle Value Notification (0x23) 0x0003 value 0102, 0x0005 value (empty)"),
        ("bf0102", "ATT Unknown (0xbf) parameters 0102"),
    ]

    @Test("btmon-like lines", arguments: cases)
    func line(_ hex: String, _ text: String) throws {
        #expect(try ATTPDU(decoding: Hex.decode(hex)!).description == text)
    }

    @Test("long values are shortened with their length")
    func longValue() throws {
        let pdu = ATTPDU.readResponse(ReadResponse(value: [UInt8](repeating: 0xAB, count: 40)))
        #expect(pdu.description == "ATT Read Response (0x0b) value " + String(repeating: "ab", count: 32) + "... (40 octets)")
    }

    @Test("every vector has a description naming its opcode", arguments: PDUVectors.all)
    func everyVector(_ vector: PDUVector) {
        #expect(vector.pdu.description.hasPrefix("ATT " + vector.pdu.opcode.title + " (0x"))
    }
}
