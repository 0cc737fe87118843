import Testing

@testable import HCI

@Suite("HCI command, event and LE subevent names")
struct CommandNameTests {
    /// Opcodes the stack does not send, named from the Core 5.4 table as btmon prints them.
    static let specNames: [(UInt16, String)] = [
        (0x0C52, "Write Extended Inquiry Response"),
        (0x0C33, "Host Buffer Size"),
        (0x0C56, "Write Simple Pairing Mode"),
        (0x202A, "LE Read Resolving List Size"),
        (0x0405, "Create Connection"),
    ]

    @Test(arguments: 0..<specNames.count)
    func specName(_ index: Int) {
        let (opcode, name) = Self.specNames[index]
        #expect(HCIOpcode(rawValue: opcode).displayName == name)
    }

    /// One opcode of each OGF, built from OGF and OCF so a slip in either shows.
    static let onePerGroup: [(ogf: UInt8, ocf: UInt16, name: String)] = [
        (0x01, 0x0001, "Inquiry"),
        (0x02, 0x0011, "Sniff Subrating"),
        (0x03, 0x007A, "Write Secure Connections Host Support"),
        (0x04, 0x000D, "Read Local Supported Codecs [v2]"),
        (0x05, 0x0008, "Read Encryption Key Size"),
        (0x06, 0x0003, "Enable Device Under Test Mode"),
        (0x08, 0x0086, "LE Set Periodic Advertising Parameters [v2]"),
    ]

    @Test(arguments: 0..<onePerGroup.count)
    func groupName(_ index: Int) {
        let (ogf, ocf, name) = Self.onePerGroup[index]
        let opcode = HCIOpcode(ogf: ogf, ocf: ocf)
        #expect(opcode.displayName == name)
        #expect(opcode.description.hasPrefix("HCI_"))
    }

    @Test func tableCoversEveryGroupOnce() {
        let table = HCICommandNames.all
        #expect(table.count >= 300)
        for entry in table {
            let ogf = HCIOpcode(rawValue: entry.opcode).ogf
            #expect([1, 2, 3, 4, 5, 6, 8].contains(ogf), "0x\(String(entry.opcode, radix: 16)): OGF \(ogf)")
            // `HCI_` and underscores, then at most a version suffix: `HCI_LE_Read_Buffer_Size [v2]`.
            let parts = entry.name.split(separator: " ", maxSplits: 1)
            #expect(entry.name.hasPrefix("HCI_"), "\(entry.name)")
            #expect(parts.count == 1 || (parts[1].hasPrefix("[v") && parts[1].hasSuffix("]")), "\(entry.name)")
        }
        // One name per opcode, and no name on two opcodes.
        #expect(Set(table.map(\.opcode)).count == table.count)
        #expect(Set(table.map(\.name)).count == table.count)
        let groups: [[HCICommandNames.Entry]] = [
            HCICommandNames.linkControl, HCICommandNames.linkPolicy, HCICommandNames.controllerBaseband,
            HCICommandNames.informationalParameters, HCICommandNames.statusParameters, HCICommandNames.testing,
            HCICommandNames.leController,
        ]
        for (group, ogf) in zip(groups, [1, 2, 3, 4, 5, 6, 8] as [UInt8]) {
            #expect(!group.isEmpty)
            #expect(group.allSatisfy { HCIOpcode(rawValue: $0.opcode).ogf == ogf }, "OGF \(ogf)")
        }
    }

    @Test func knownAgreesWithTable() {
        let table = Dictionary(
            HCICommandNames.all.map { ($0.opcode, $0.name) }, uniquingKeysWith: { first, _ in first })
        for (opcode, name) in HCIOpcode.known {
            #expect(table[opcode.rawValue] == name, "0x\(String(opcode.rawValue, radix: 16))")
        }
        // `known` adds no opcode the table lacks, so the union is the table.
        #expect(HCIOpcode.names == table)
    }

    @Test func vendorAndUnknownOpcodes() {
        let vendor = HCIOpcode(ogf: 0x3F, ocf: 0x0001)
        #expect(vendor.rawValue == 0xFC01)
        #expect(vendor.isVendorSpecific)
        #expect(vendor.displayName == "Vendor command 0xfc01")
        #expect(vendor.description == "Vendor command 0xfc01")
        // OCF 0x0004 of the LE group has never been assigned.
        let unassigned = HCIOpcode(rawValue: 0x2004)
        #expect(!unassigned.isVendorSpecific)
        #expect(unassigned.displayName == "Unknown command 0x2004")
        #expect(unassigned.description == "HCI command 0x2004")
    }

    @Test func eventNames() {
        #expect(HCIEventCode(rawValue: 0x2F).description == "Extended Inquiry Result")
        #expect(HCIEventCode(rawValue: 0x22).description == "Inquiry Result with RSSI")
        #expect(HCIEventCode(rawValue: 0x48).description == "Number of Completed Data Blocks")
        #expect(HCIEventCode(rawValue: 0x58).description == "SAM Status Change")
        #expect(HCIEventCode.encryptionChangeV2.description == "Encryption Change v2")
        #expect(HCIEventCode.vendorSpecific.description == "Vendor")
        // Never assigned, and AMP's Disconnect Physical Link Complete (removed before 5.4).
        #expect(HCIEventCode(rawValue: 0x00).description == "Event 0x00")
        #expect(HCIEventCode(rawValue: 0x42).description == "Event 0x42")
    }

    @Test func everyCore54EventIsNamed() {
        let codes: [ClosedRange<UInt8>] = [
            0x01...0x1E, 0x20...0x23, 0x2C...0x36, 0x38...0x39, 0x3B...0x3E, 0x48...0x48, 0x4E...0x59, 0xFF...0xFF,
        ]
        let expected = Set(codes.flatMap { $0 })
        #expect(Set(HCIEventCode.names.keys) == expected)
    }

    @Test func leSubeventNames() {
        #expect(LESubeventCode(rawValue: 0x08).description == "LE Read Local P-256 Public Key Complete")
        #expect(LESubeventCode(rawValue: 0x19).description == "LE CIS Established")
        #expect(LESubeventCode(rawValue: 0x22).description == "LE BIGInfo Advertising Report")
        #expect(LESubeventCode(rawValue: 0x28).description == "LE Periodic Advertising Response Report")
        #expect(LESubeventCode.enhancedConnectionCompleteV2.description == "LE Enhanced Connection Complete v2")
        #expect(LESubeventCode(rawValue: 0x00).description == "LE subevent 0x00")
        #expect(Set(LESubeventCode.names.keys) == Set(UInt8(0x01)...UInt8(0x29)))
    }
}
