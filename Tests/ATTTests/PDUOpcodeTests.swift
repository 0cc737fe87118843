import Bluetooth
import Testing
@testable import ATT

@Suite("ATT PDU opcodes and unknown opcodes")
struct ATTPDUOpcodeTests {
    /// Wireshark's names as tshark_att.py prints them (`ATT_OPCODES` there).
    static let wiresharkNames: [UInt8: String] = [
        0x01: "ERROR_RSP", 0x02: "EXCHANGE_MTU_REQ", 0x03: "EXCHANGE_MTU_RSP",
        0x04: "FIND_INFORMATION_REQ", 0x05: "FIND_INFORMATION_RSP",
        0x06: "FIND_BY_TYPE_VALUE_REQ", 0x07: "FIND_BY_TYPE_VALUE_RSP",
        0x08: "READ_BY_TYPE_REQ", 0x09: "READ_BY_TYPE_RSP",
        0x0A: "READ_REQ", 0x0B: "READ_RSP", 0x0C: "READ_BLOB_REQ",
        0x0D: "READ_BLOB_RSP", 0x0E: "READ_MULTIPLE_REQ",
        0x0F: "READ_MULTIPLE_RSP", 0x10: "READ_BY_GROUP_TYPE_REQ",
        0x11: "READ_BY_GROUP_TYPE_RSP", 0x12: "WRITE_REQ", 0x13: "WRITE_RSP",
        0x16: "PREPARE_WRITE_REQ", 0x17: "PREPARE_WRITE_RSP",
        0x18: "EXECUTE_WRITE_REQ", 0x19: "EXECUTE_WRITE_RSP",
        0x1B: "HANDLE_VALUE_NTF", 0x1D: "HANDLE_VALUE_IND",
        0x1E: "HANDLE_VALUE_CFM", 0x20: "READ_MULTIPLE_VARIABLE_REQ",
        0x21: "READ_MULTIPLE_VARIABLE_RSP", 0x23: "MULTIPLE_HANDLE_VALUE_NTF",
        0x52: "WRITE_CMD", 0xD2: "SIGNED_WRITE_CMD",
    ]
    /// Opcodes the oracle marks `sender: server`.
    static let serverSent: Set<UInt8> = [0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x1B, 0x1D, 0x21, 0x23]

    @Test("names, spec names and sender match Wireshark for all 256 opcodes")
    func names() {
        for raw in 0...255 {
            let opcode = ATTOpcode(UInt8(raw))
            let name = Self.wiresharkNames[UInt8(raw)]
            #expect(opcode.wiresharkName == (name ?? "UNKNOWN"))
            #expect(opcode.isKnown == (name != nil))
            if let name {
                #expect(opcode.description == "ATT_" + name)
                #expect(opcode.isSentByServer == Self.serverSent.contains(UInt8(raw)))
            } else {
                #expect(opcode.description == "ATT opcode 0x" + String(raw, radix: 16).leftPad2)
                #expect(opcode.isSentByServer == nil)
            }
        }
        #expect(ATTOpcode.allKnown.count == Self.wiresharkNames.count)
        #expect(ATTOpcode.readByGroupTypeRequest.title == "Read By Group Type Request")
    }

    @Test("classification")
    func kinds() {
        let expected: [ATTOpcode: ATTOpcode.Kind] = [
            .errorResponse: .response, .exchangeMTURequest: .request, .readRequest: .request, .readResponse: .response,
            .writeCommand: .command, .signedWriteCommand: .command, .handleValueNotification: .notification,
            .multipleHandleValueNotification: .notification, .handleValueIndication: .indication,
            .handleValueConfirmation: .confirmation, .readMultipleVariableRequest: .request,
            .executeWriteResponse: .response,
        ]
        for (opcode, kind) in expected { #expect(opcode.kind == kind, "\(opcode)") }
        #expect(ATTOpcode(0x7F).kind == .command)
        #expect(ATTOpcode(0xBF).kind == nil)
        for opcode in ATTOpcode.allKnown {
            switch opcode.kind {
            case .request:
                let response = try! #require(opcode.responseOpcode)
                #expect(response.kind == .response)
                #expect(response.requestOpcode == opcode)
                #expect(response.rawValue == opcode.rawValue + 1)
            case .indication:
                #expect(opcode.responseOpcode == .handleValueConfirmation)
            default:
                #expect(opcode.responseOpcode == nil, "\(opcode)")
            }
        }
        #expect(ATTOpcode.errorResponse.requestOpcode == nil)
    }

    @Test("command and authentication signature flags")
    func flags() {
        #expect(ATTOpcode.writeCommand.isCommand)
        #expect(!ATTOpcode.writeCommand.hasAuthenticationSignature)
        #expect(ATTOpcode.writeCommand.method == ATTOpcode.writeRequest.method)
        #expect(ATTOpcode.signedWriteCommand.isCommand)
        #expect(ATTOpcode.signedWriteCommand.hasAuthenticationSignature)
        #expect(ATTOpcode.signedWriteCommand.method == 0x12)
        for opcode in ATTOpcode.allKnown where opcode != .writeCommand && opcode != .signedWriteCommand {
            #expect(!opcode.isCommand && !opcode.hasAuthenticationSignature, "\(opcode)")
        }
    }

    @Test("every unknown opcode decodes to .unknown and re-encodes", arguments: 0...255)
    func unknown(_ raw: Int) throws {
        let opcode = ATTOpcode(UInt8(raw))
        guard !opcode.isKnown else { return }
        let bytes: [UInt8] = [UInt8(raw), 0x01, 0x02]
        let pdu = try ATTPDU(decoding: bytes, mtu: 23)
        #expect(pdu == .unknown(opcode: opcode, parameters: [1, 2]))
        #expect(pdu.encoded == bytes)
        #expect(pdu.body == nil)
        if opcode.isCommand {
            // Command Flag set: a server ignores a command it does not support.
            #expect(opcode.unsupportedHandling == .ignore)
            #expect(pdu.validate() == nil)
        } else {
            // Otherwise it is answered as an unsupported request, handle 0x0000.
            let response = ErrorResponse(requestOpcode: opcode, handle: 0, errorCode: .requestNotSupported)
            #expect(opcode.unsupportedHandling == .respondRequestNotSupported(response))
            #expect(pdu.validate() == response)
        }
    }

    @Test("BlueZ robustness cases: unknown request 0xbf, unknown command 0xff")
    func bluezRobustness() throws {
        #expect(try ATTPDU(decoding: [0xBF]).validate()?.errorCode == .requestNotSupported)
        #expect(try ATTPDU(decoding: [0xFF]).validate() == nil)
        #expect(ATTOpcode(0xFF).hasAuthenticationSignature && ATTOpcode(0xFF).isCommand)
        // A request opcode with the signature flag is not a defined PDU.
        #expect(try ATTPDU(decoding: [0x92, 0x03, 0x00]) == .unknown(opcode: ATTOpcode(0x92), parameters: [3, 0]))
    }
}

extension String {
    var leftPad2: String { count < 2 ? "0" + self : self }
}
