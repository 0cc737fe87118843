import SystemSupport
import Bluetooth
import Testing
@testable import ATT
import TestSupport

/// The shared GATT client vectors (BlueZ unit/test-gatt.c restated as PDU bytes): every PDU of
/// every case decodes at the ATT_MTU in force and re-encodes byte for byte.
enum GATTClientVectors {
    /// `<package root>/../shared/vectors/gatt-client-vectors.json`.
    static let path = TestFiles.sharedPath("vectors/gatt-client-vectors.json")

    static var isPresent: Bool { TestFiles.exists(path) }

    static func load() throws -> JSONValue {
        let bytes = try #require(TestFiles.read(path), "cannot read \(path)")
        return try JSONValue.parse(bytes)
    }
}

@Suite("ATT vectors: shared GATT client cases", .cpuBound,
       .enabled(if: GATTClientVectors.isPresent,
                "skipped: /work/shared (../shared from the package root) is absent, no gatt-client-vectors.json"))
struct ATTVectorsGATTClientTests {
    @Test("every PDU decodes and re-encodes identically; over-MTU responses are rejected")
    func allCases() throws {
        let root = try GATTClientVectors.load()
        let cases = try #require(root["cases"]?.array)
        #expect(cases.count == 99)
        var decoded = 0
        var rejectedOverMTU: [String] = []
        for testCase in cases {
            let id = testCase["id"]?.string ?? "?"
            // ATT_MTU is 23 until the Exchange MTU Response, then the smaller Rx MTU.
            var mtu = ATTPDU.defaultLEMTU
            var clientRxMTU: UInt16?
            for entry in testCase["pdus"]?.array ?? [] {
                guard let hex = entry["pdu"]?.string else { continue }  // markers
                let bytes = try #require(Hex.decode(hex), "\(id): bad hex")
                let op = entry["op"]?.string
                if entry["exceeds_att_mtu"]?.bool == true {
                    // Quirk 1 of the README: a 513-octet Read Response at ATT_MTU 512. Only
                    // BlueZ's harness (which reads at most ATT_MTU octets) accepted it.
                    let expected = ATTError.malformed(opcode: .readResponse, field: "PDU", offset: mtu,
                                                      reason: .exceedsMTU(length: bytes.count, mtu: mtu))
                    #expect(throws: expected, "\(id)") { try ATTPDU(decoding: bytes, mtu: mtu) }
                    rejectedOverMTU.append(id)
                    // What BlueZ actually read decodes.
                    let truncated = try #require(Hex.decode(entry["as_read_by_bluez"]?.string ?? ""))
                    let pdu = try ATTPDU(decoding: truncated, mtu: mtu)
                    #expect(try pdu.encode(mtu: mtu) == truncated)
                    continue
                }
                let pdu: ATTPDU
                do {
                    pdu = try ATTPDU(decoding: bytes, mtu: mtu)
                } catch {
                    Issue.record("\(id): \(hex) (\(op ?? "?")) failed: \(error)")
                    continue
                }
                decoded += 1
                #expect(pdu.opcode.wiresharkName == op, "\(id): \(hex)")
                #expect(pdu.opcode.isKnown, "\(id): \(hex)")
                let encoded = try pdu.encode(mtu: mtu)
                #expect(encoded == bytes, "\(id): \(hex) re-encodes differently")
                switch pdu {
                case .exchangeMTURequest(let request): clientRxMTU = request.clientRxMTU
                case .exchangeMTUResponse(let response):
                    let client = clientRxMTU ?? UInt16(ATTPDU.defaultLEMTU)
                    mtu = ExchangeMTURequest.negotiatedMTU(clientRxMTU: client, serverRxMTU: response.serverRxMTU)
                default: break
                }
            }
        }
        #expect(rejectedOverMTU == ["/TP/GAR/CL/BV-04-C/512B", "/TP/GAR/CL/BV-07-C/512B"])
        #expect(decoded == 2_313 - 2)
    }

    @Test("legacy GAttrib cases: the trailing-octet MTU response and the 1-octet handle are malformed")
    func gattribCases() throws {
        let root = try GATTClientVectors.load()
        let cases = try #require(root["gattrib_api_cases"]?["cases"]?.array)
        var seen = Set<String>()
        for testCase in cases {
            let entries = (testCase["pdus"]?.array ?? []) + (testCase["peer_sends"]?.array ?? [])
            for entry in entries {
                guard let hex = entry["pdu"]?.string, let bytes = Hex.decode(hex) else { continue }
                seen.insert(hex)
                switch hex {
                case "03020304":
                    let expected = ATTError.malformed(opcode: .exchangeMTUResponse, field: "Server Rx MTU", offset: 3,
                                                      reason: .trailingBytes(count: 1))
                    #expect(throws: expected) { try ATTPDU(decoding: bytes, mtu: 23) }
                case "1d14":
                    let expected = ATTError.malformed(opcode: .handleValueIndication, field: "Attribute Handle", offset: 1,
                                                      reason: .truncated(needed: 2, available: 1))
                    #expect(throws: expected) { try ATTPDU(decoding: bytes, mtu: 23) }
                default:
                    let pdu = try ATTPDU(decoding: bytes, mtu: 23)
                    #expect(pdu.opcode.wiresharkName == entry["op"]?.string, "\(hex)")
                    #expect(pdu.encoded == bytes)
                }
            }
        }
        #expect(seen.contains("03020304") && seen.contains("1d14"))
    }
}
