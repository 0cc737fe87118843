import Bluetooth
import Testing

@testable import HCI
@testable import Kernel

/// Hex to bytes for test vectors (spaces allowed).
func kernelHex(_ text: String) -> [UInt8] {
    guard let bytes = Hex.decode(text) else { fatalError("bad test vector \(text)") }
    return bytes
}

/// A Read Controller Information reply: 00:1A:7D:DA:71:13, version 0x09, manufacturer 0x000A,
/// supported 0x0001BFFF, current 0x000008C0 (BR/EDR, SSP, SC; neither LE nor powered), class 0x1C010C,
/// name "BlueZ 5.66", short name "bz".
let kernelControllerInfoReply: [UInt8] =
    kernelHex("13 71 DA 7D 1A 00  09  0A 00  FF BF 01 00  C0 08 00 00  0C 01 1C")
    + Array("BlueZ 5.66".utf8) + [UInt8](repeating: 0, count: 249 - 10)
    + Array("bz".utf8) + [UInt8](repeating: 0, count: 11 - 2)

let kernelControllerInfo = ManagementControllerInformation(
    address: BluetoothAddress("00:1A:7D:DA:71:13")!, bluetoothVersion: 0x09, manufacturer: 0x000A,
    supportedSettings: ManagementSettings(rawValue: 0x0001_BFFF), currentSettings: ManagementSettings(rawValue: 0x08C0),
    classOfDevice: 0x1C010C, name: "BlueZ 5.66", shortName: "bz")

@Suite("Kernel management protocol codec")
struct KernelManagementCodecTests {
    struct CommandVector: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let packet: @Sendable () throws -> ManagementCommandPacket
        let reparse: @Sendable (inout ByteReader) throws -> any Hashable & Sendable
        let expected: any Hashable & Sendable
        var testDescription: String { name }
    }

    static func vector<C: ManagementCommand>(_ name: String, _ hex: String, _ command: C, index: UInt16) -> CommandVector {
        CommandVector(
            name: name, bytes: kernelHex(hex), packet: { ManagementCommandPacket(command, index: index) },
            reparse: { reader in try C(parsingParameters: &reader) }, expected: command)
    }

    static let commands: [CommandVector] = [
        vector("Read Controller Information hci0", "04 00 00 00 00 00", ReadControllerInformationCommand(), index: 0),
        vector("Set Powered on hci0", "05 00 00 00 01 00 01", SetPoweredCommand(powered: true), index: 0),
        vector("Set Powered off hci2", "05 00 02 00 01 00 00", SetPoweredCommand(powered: false), index: 2),
        vector("Set Connectable on hci1", "07 00 01 00 01 00 01", SetConnectableCommand(connectable: true), index: 1),
        vector("Set Low Energy on hci0", "0D 00 00 00 01 00 01", SetLowEnergyCommand(enabled: true), index: 0),
        vector("Set Advertising connectable hci0", "29 00 00 00 01 00 02", SetAdvertisingCommand(mode: .connectable), index: 0),
        vector("Set Advertising off hci0", "29 00 00 00 01 00 00", SetAdvertisingCommand(mode: .off), index: 0),
    ]

    @Test("command encodes to the vector and decodes back", arguments: commands)
    func commandRoundTrip(_ vector: CommandVector) throws {
        let packet = try vector.packet()
        #expect(try packet.encoded() == vector.bytes)
        let parsed = try ManagementCommandPacket(bytes: vector.bytes)
        #expect(parsed == packet)
        var reader = ByteReader(parsed.parameters)
        #expect(AnyHashable(try vector.reparse(&reader)) == AnyHashable(vector.expected))
    }

    @Test("Command Complete for Set Powered decodes to Current_Settings")
    func commandCompleteSetPowered() throws {
        let bytes = kernelHex("01 00 00 00 07 00  05 00 00  C1 0A 00 00")
        let packet = try ManagementEventPacket(bytes: bytes)
        #expect(packet.code == .commandComplete)
        #expect(packet.index == 0)
        let expected = ManagementCommandCompleteEvent(opcode: .setPowered, status: .success, returnParameters: kernelHex("C1 0A 00 00"))
        #expect(try packet.decode() == .commandComplete(expected))
        var reader = ByteReader(expected.returnParameters)
        let settings = try SetPoweredCommand.parseResponse(&reader)
        #expect(settings == [.powered, .secureSimplePairing, .basicRateEDR, .lowEnergy, .secureConnections])
        #expect(settings.description == "powered ssp br/edr le secure-conn")
        // Re-encode.
        var writer = ByteWriter()
        expected.write(to: &writer)
        #expect(try ManagementEventPacket(code: .commandComplete, index: 0, parameters: writer.bytes[...]).encoded() == bytes)
    }

    @Test("Command Complete for Read Controller Information round-trips all 280 octets")
    func readControllerInformationReply() throws {
        #expect(kernelControllerInfoReply.count == ManagementControllerInformation.encodedLength)
        let event = kernelHex("01 00 00 00 1B 01  04 00 00") + kernelControllerInfoReply
        guard case .commandComplete(let complete) = try ManagementEventPacket(bytes: event).decode() else {
            Issue.record("not a Command Complete")
            return
        }
        #expect(complete.opcode == .readControllerInformation)
        var reader = ByteReader(complete.returnParameters)
        let information = try ReadControllerInformationCommand.parseResponse(&reader)
        #expect(information == kernelControllerInfo)
        #expect(information.supportedSettings.contains(.lowEnergy))
        #expect(!information.currentSettings.contains(.powered))
        var writer = ByteWriter()
        information.write(to: &writer)
        #expect(writer.bytes == kernelControllerInfoReply)
    }

    @Test("Command Status, New Settings, Index Added/Removed, Controller Error, unknown events")
    func otherEvents() throws {
        #expect(
            try ManagementEventPacket(bytes: kernelHex("02 00 00 00 03 00 0D 00 14")).decode()
                == .commandStatus(ManagementCommandStatusEvent(opcode: .setLowEnergy, status: .permissionDenied)))
        #expect(
            try ManagementEventPacket(bytes: kernelHex("06 00 01 00 04 00 C1 0A 00 00")).decode()
                == .newSettings(ManagementSettings(rawValue: 0x0AC1)))
        #expect(try ManagementEventPacket(bytes: kernelHex("04 00 03 00 00 00")).decode() == .indexAdded)
        #expect(try ManagementEventPacket(bytes: kernelHex("05 00 03 00 00 00")).decode() == .indexRemoved)
        #expect(try ManagementEventPacket(bytes: kernelHex("03 00 00 00 01 00 2A")).decode() == .controllerError(0x2A))
        #expect(
            try ManagementEventPacket(bytes: kernelHex("25 00 00 00 02 00 AB CD")).decode()
                == .other(code: ManagementEventCode(rawValue: 0x25), parameters: [0xAB, 0xCD]))
        let status = ManagementCommandStatusEvent(opcode: .setAdvertising, status: .busy)
        var writer = ByteWriter()
        status.write(to: &writer)
        #expect(writer.bytes == kernelHex("29 00 0A"))
    }

    @Test("every strict prefix of a management event throws the right error")
    func eventTruncationSweep() throws {
        let event = kernelHex("01 00 00 00 1B 01  04 00 00") + kernelControllerInfoReply
        for length in 0..<event.count {
            let prefix = Array(event.prefix(length))
            #expect(throws: HCIError.self) { try ManagementEventPacket(bytes: prefix) }
            do {
                _ = try ManagementEventPacket(bytes: prefix)
            } catch {
                if length < 6 {
                    guard case .malformed("MGMT event", .truncated, _) = error else {
                        Issue.record("prefix \(length): \(error)")
                        continue
                    }
                } else {
                    #expect(error == .malformed(context: "MGMT event", reason: .invalidLength(field: "Parameter_Length", value: 283), offset: 4))
                }
            }
        }
    }

    @Test("every strict prefix of Read Controller Information's reply is truncated")
    func controllerInformationTruncationSweep() {
        for length in 0..<kernelControllerInfoReply.count {
            var reader = ByteReader(Array(kernelControllerInfoReply.prefix(length)))
            do {
                _ = try ReadControllerInformationCommand.parseResponse(&reader)
                Issue.record("prefix \(length) decoded")
            } catch {
                guard case .malformed("MGMT Read Controller Information reply", .truncated, _) = error else {
                    Issue.record("prefix \(length): \(error)")
                    continue
                }
            }
        }
    }

    @Test("every strict prefix of a mode command's Current_Settings reply is truncated")
    func settingsTruncationSweep() {
        let reply = kernelHex("C1 0A 00 00")
        for length in 0..<reply.count {
            var reader = ByteReader(Array(reply.prefix(length)))
            #expect(throws: HCIError.malformed(context: "MGMT Set Powered reply", reason: .truncated(needed: 4, available: length), offset: 0)) {
                try SetPoweredCommand.parseResponse(&reader)
            }
        }
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        let name: String
        let decode: @Sendable () throws(HCIError) -> Void
        let expected: HCIError
        var testDescription: String { name }
    }

    static let malformed: [Malformed] = [
        Malformed(
            name: "Parameter_Length larger than the packet",
            decode: { () throws(HCIError) in _ = try ManagementEventPacket(bytes: kernelHex("06 00 00 00 05 00 C1 0A 00 00")) },
            expected: .malformed(context: "MGMT event", reason: .invalidLength(field: "Parameter_Length", value: 5), offset: 4)),
        Malformed(
            name: "Parameter_Length smaller than the packet",
            decode: { () throws(HCIError) in _ = try ManagementEventPacket(bytes: kernelHex("06 00 00 00 03 00 C1 0A 00 00")) },
            expected: .malformed(context: "MGMT event", reason: .invalidLength(field: "Parameter_Length", value: 3), offset: 4)),
        Malformed(
            name: "command Parameter_Length mismatch",
            decode: { () throws(HCIError) in _ = try ManagementCommandPacket(bytes: kernelHex("05 00 00 00 02 00 01")) },
            expected: .malformed(context: "MGMT command", reason: .invalidLength(field: "Parameter_Length", value: 2), offset: 4)),
        Malformed(
            name: "Command Status with a trailing octet",
            decode: { () throws(HCIError) in _ = try ManagementEventPacket(bytes: kernelHex("02 00 00 00 04 00 05 00 03 FF")).decode() },
            expected: .malformed(context: "MGMT Command Status Event", reason: .trailingBytes(count: 1), offset: 3)),
        Malformed(
            name: "Command Complete without its status",
            decode: { () throws(HCIError) in _ = try ManagementEventPacket(bytes: kernelHex("01 00 00 00 02 00 05 00")).decode() },
            expected: .malformed(context: "MGMT Command Complete Event", reason: .truncated(needed: 1, available: 0), offset: 2)),
        Malformed(
            name: "New Settings with three octets",
            decode: { () throws(HCIError) in _ = try ManagementEventPacket(bytes: kernelHex("06 00 00 00 03 00 C1 0A 00")).decode() },
            expected: .malformed(context: "MGMT New Settings Event", reason: .truncated(needed: 4, available: 3), offset: 0)),
        Malformed(
            name: "Index Added with a parameter",
            decode: { () throws(HCIError) in _ = try ManagementEventPacket(bytes: kernelHex("04 00 00 00 01 00 00")).decode() },
            expected: .malformed(context: "MGMT Index Added Event", reason: .trailingBytes(count: 1), offset: 0)),
        Malformed(
            name: "Set Powered 0x02",
            decode: { () throws(HCIError) in
                var reader = ByteReader([0x02])
                _ = try SetPoweredCommand(parsingParameters: &reader)
            },
            expected: .malformed(context: "MGMT Set Powered", reason: .invalidValue(field: "Powered", value: 2), offset: 0)),
        Malformed(
            name: "Set Advertising 0x03",
            decode: { () throws(HCIError) in
                var reader = ByteReader([0x03])
                _ = try SetAdvertisingCommand(parsingParameters: &reader)
            },
            expected: .malformed(context: "MGMT Set Advertising", reason: .invalidValue(field: "Advertising", value: 3), offset: 0)),
        Malformed(
            name: "Set Low Energy with two octets",
            decode: { () throws(HCIError) in
                var reader = ByteReader([0x01, 0x00])
                _ = try SetLowEnergyCommand(parsingParameters: &reader)
            },
            expected: .malformed(context: "MGMT Set Low Energy", reason: .trailingBytes(count: 1), offset: 1)),
        Malformed(
            name: "Set Connectable reply with five octets",
            decode: { () throws(HCIError) in
                var reader = ByteReader(kernelHex("C1 0A 00 00 00"))
                _ = try SetConnectableCommand.parseResponse(&reader)
            },
            expected: .malformed(context: "MGMT Set Connectable reply", reason: .trailingBytes(count: 1), offset: 4)),
        Malformed(
            name: "Read Controller Information reply one octet long",
            decode: { () throws(HCIError) in
                var reader = ByteReader(kernelControllerInfoReply + [0])
                _ = try ReadControllerInformationCommand.parseResponse(&reader)
            },
            expected: .malformed(context: "MGMT Read Controller Information reply", reason: .trailingBytes(count: 1), offset: 280)),
        Malformed(
            name: "Read Controller Information command with parameters",
            decode: { () throws(HCIError) in
                var reader = ByteReader([0x00])
                _ = try ReadControllerInformationCommand(parsingParameters: &reader)
            },
            expected: .malformed(context: "MGMT Read Controller Information", reason: .trailingBytes(count: 1), offset: 0)),
    ]

    @Test("malformed packets give one specific error", arguments: malformed)
    func malformedPackets(_ entry: Malformed) {
        #expect(throws: entry.expected) { try entry.decode() }
    }

    @Test("a command too long for the 16-bit length field is refused, not truncated")
    func oversizedCommand() {
        let packet = ManagementCommandPacket(opcode: .setPowered, index: 0, parameters: [UInt8](repeating: 0, count: 65_536))
        #expect(throws: HCIError.malformed(context: "MGMT command", reason: .invalidLength(field: "Parameter_Length", value: 65_536), offset: 4)) {
            try packet.encoded()
        }
    }

    static let statusNames: [(UInt8, String)] = [
        (0x00, "Success"), (0x01, "Unknown Command"), (0x02, "Not Connected"), (0x03, "Failed"),
        (0x04, "Connect Failed"), (0x05, "Authentication Failed"), (0x06, "Not Paired"), (0x07, "No Resources"),
        (0x08, "Timeout"), (0x09, "Already Connected"), (0x0A, "Busy"), (0x0B, "Rejected"), (0x0C, "Not Supported"),
        (0x0D, "Invalid Parameters"), (0x0E, "Disconnected"), (0x0F, "Not Powered"), (0x10, "Cancelled"),
        (0x11, "Invalid Index"), (0x12, "RFKilled"), (0x13, "Already Paired"), (0x14, "Permission Denied"),
    ]

    @Test("management status names follow mgmt-api.txt", arguments: statusNames)
    func statusName(_ code: UInt8, _ name: String) {
        let status = ManagementStatus(rawValue: code)
        #expect(status.name == name)
        #expect(status.description == "\(name) (0x\(String(code, radix: 16).count == 1 ? "0" : "")\(String(code, radix: 16)))")
    }

    @Test("named statuses are the same values as their codes; unknown codes stay open")
    func statusConstants() {
        #expect(ManagementStatus.permissionDenied == ManagementStatus(rawValue: 0x14))
        #expect(ManagementStatus.rfkilled.rawValue == 0x12)
        #expect(ManagementStatus.invalidIndex.rawValue == 0x11)
        #expect(ManagementStatus(rawValue: 0x15).name == nil)
        #expect(ManagementStatus(rawValue: 0x15).description == "status 0x15")
        #expect(ManagementOpcode(rawValue: 0x0029).description == "Set Advertising")
        #expect(ManagementOpcode(rawValue: 0x0099).description == "management opcode 0x0099")
        #expect(ManagementSettings(rawValue: 1 << 20 | 1).description == "powered bit20")
    }
}

@Suite("Kernel management transaction matching")
struct KernelManagementTransactionTests {
    let transaction = ManagementTransaction(opcode: .setPowered, index: 0)

    func event(_ hex: String) throws -> ManagementEventPacket { try ManagementEventPacket(bytes: kernelHex(hex)) }

    @Test("unrelated events leave the command pending")
    func unrelated() throws {
        #expect(try transaction.receive(event("06 00 00 00 04 00 C1 0A 00 00")) == nil)  // New Settings
        #expect(try transaction.receive(event("01 00 01 00 07 00 05 00 00 C1 0A 00 00")) == nil)  // other index
        #expect(try transaction.receive(event("01 00 00 00 07 00 07 00 00 C1 0A 00 00")) == nil)  // other opcode
        #expect(try transaction.receive(event("02 00 00 00 03 00 07 00 0A")) == nil)  // other command failed
        #expect(try transaction.receive(event("01 00 00 00 01 00 07")) == nil)  // someone else's malformed reply
    }

    @Test("a successful Command Status keeps it pending; a failed one ends it")
    func commandStatus() throws {
        #expect(try transaction.receive(event("02 00 00 00 03 00 05 00 00")) == nil)
        #expect(try transaction.receive(event("02 00 00 00 03 00 05 00 12")) == .failed(.rfkilled))
    }

    @Test("Command Complete ends it with the Return_Parameters or the failure status")
    func commandComplete() throws {
        #expect(
            try transaction.receive(event("01 00 00 00 07 00 05 00 00 C1 0A 00 00"))
                == .completed(returnParameters: kernelHex("C1 0A 00 00")))
        #expect(try transaction.receive(event("01 00 00 00 07 00 05 00 14 C0 0A 00 00")) == .failed(.permissionDenied))
        #expect(try transaction.receive(event("01 00 00 00 03 00 05 00 0A")) == .failed(.busy))
    }

    @Test("a malformed reply to our own command throws")
    func malformedOwnReply() throws {
        #expect(throws: HCIError.self) { try transaction.receive(event("02 00 00 00 04 00 05 00 00 00")) }
    }
}
