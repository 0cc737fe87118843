import Testing

@testable import HCI

@Suite("HCI status codes and opcode names")
struct StatusCodeTests {
    static let names: [(UInt8, String)] = [
        (0x00, "Success"),
        (0x01, "Unknown HCI Command"),
        (0x02, "Unknown Connection Identifier"),
        (0x08, "Connection Timeout"),
        (0x0C, "Command Disallowed"),
        (0x12, "Invalid HCI Command Parameters"),
        (0x13, "Remote User Terminated Connection"),
        (0x16, "Connection Terminated By Local Host"),
        (0x22, "LMP Response Timeout / LL Response Timeout"),
        (0x3B, "Unacceptable Connection Parameters"),
        (0x3E, "Connection Failed to be Established / Synchronization Timeout"),
        (0x42, "Unknown Advertising Identifier"),
        (0x45, "Packet Too Long"),
    ]

    @Test(arguments: 0..<names.count)
    func specNames(_ index: Int) {
        let (code, name) = Self.names[index]
        #expect(HCIStatus(rawValue: code).name == name)
    }

    @Test func descriptions() {
        #expect(HCIStatus.remoteUserTerminatedConnection.description == "Remote User Terminated Connection (0x13)")
        #expect(HCIStatus.success.description == "Success (0x00)")
        #expect(HCIStatus(rawValue: 0x7F).description == "status 0x7f")
        #expect(HCIStatus(rawValue: 0x2B).description == "status 0x2b")  // reserved
        #expect(HCIStatus(rawValue: 0x46).name == nil)  // past the 5.4 table
        #expect(HCIStatus(rawValue: 0xFF).name == nil)
    }

    @Test func constantsMatchTable() {
        let constants: [(HCIStatus, UInt8)] = [
            (.unknownConnectionIdentifier, 0x02), (.connectionTimeout, 0x08), (.commandDisallowed, 0x0C),
            (.remoteUserTerminatedConnection, 0x13), (.connectionTerminatedByLocalHost, 0x16),
            (.unsupportedRemoteFeature, 0x1A), (.lmpResponseTimeout, 0x22), (.instantPassed, 0x28),
            (.differentTransactionCollision, 0x2A), (.qosUnacceptableParameter, 0x2C), (.roleSwitchPending, 0x32),
            (.reservedSlotViolation, 0x34), (.controllerBusy, 0x3A), (.connectionFailedToBeEstablished, 0x3E),
            (.packetTooLong, 0x45),
        ]
        for (status, code) in constants { #expect(status.rawValue == code) }
        // 0x00–0x45 less the three reserved codes.
        #expect((0...0xFF).filter { HCIStatus(rawValue: UInt8($0)).name != nil }.count == 0x46 - 3)
        #expect(HCIStatus.success.isSuccess && !HCIStatus.commandDisallowed.isSuccess)
    }

    @Test func opcodeNames() {
        #expect(HCIOpcode.leSetScanEnable.description == "HCI_LE_Set_Scan_Enable")
        #expect(HCIOpcode.reset.description == "HCI_Reset")
        #expect(HCIOpcode.readBDADDR.displayName == "Read BD ADDR")
        #expect(HCIOpcode.leSetExtendedScanParameters.displayName == "LE Set Extended Scan Parameters")
        #expect(HCIOpcode(rawValue: 0xFC01).description == "Vendor command 0xfc01")
        #expect(HCIOpcode(rawValue: 0xFC01).displayName == "Vendor command 0xfc01")
        #expect(HCIOpcode(rawValue: 0x2004).description == "HCI command 0x2004")
        #expect(HCIOpcode(rawValue: 0x2004).displayName == "Unknown command 0x2004")
        // Every named opcode: the name without `HCI_`, underscores as spaces (built octet by
        // octet; the same text as a Character-wise replacement).
        for (raw, name) in HCIOpcode.names {
            let expected = String((name.hasPrefix("HCI_") ? String(name.dropFirst(4)) : name).map { $0 == "_" ? " " : $0 })
            #expect(HCIOpcode(rawValue: raw).displayName == expected, "\(name)")
        }
        #expect(HCIOpcode.leSetScanEnable == HCIOpcode(ogf: 0x08, ocf: 0x000C))
        #expect(HCIOpcode.disconnect == HCIOpcode(ogf: 0x01, ocf: 0x0006))
        #expect(HCIOpcode.readRSSI == HCIOpcode(ogf: 0x05, ocf: 0x0005))
    }

    @Test func opcodeTableIsConsistent() {
        let opcodes = HCIOpcode.known.map(\.0.rawValue)
        #expect(Set(opcodes).count == opcodes.count)
        for (_, name) in HCIOpcode.known { #expect(name.hasPrefix("HCI_")) }
        for type in AnyHCICommand.commandTypes {
            #expect(HCIOpcode.names[type.opcode.rawValue] != nil, "\(type.opcode.rawValue)")
        }
    }
}
