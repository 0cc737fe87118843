/// A 16-bit HCI command opcode: OGF (6 bits) and OCF (10 bits). Open: unknown opcodes keep their value.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.1
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(ogf: UInt8, ocf: UInt16) { rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x3FF) }

    public var ogf: UInt8 { UInt8(rawValue >> 10) }
    public var ocf: UInt16 { rawValue & 0x3FF }

    /// OGF 0x3F: reserved for vendor-specific debug commands.
    public var isVendorSpecific: Bool { ogf == 0x3F }

    /// The spec name (`HCI_LE_Set_Scan_Enable`); `Vendor command 0xfc01` for OGF 0x3F (btmon says
    /// "Vendor"), `HCI command 0x2004` for any other opcode without a name.
    public var description: String {
        if let name = HCIOpcode.names[rawValue] { return name }
        return (isVendorSpecific ? "Vendor command " : "HCI command ") + hexCode
    }

    /// `0x0c1a`: the opcode in four lowercase hex digits, as btmon prints it.
    var hexCode: String { "0x" + String(rawValue, radix: 16, uppercase: false).leftPadded(4) }

    /// Spec names by opcode: every standard command (`HCICommandNames`) and the opcodes this module
    /// sends (`known`), whose name wins where both have one (the tests check that they agree).
    static let names: [UInt16: String] = {
        var names = Dictionary(
            HCICommandNames.all.map { ($0.opcode, $0.name) }, uniquingKeysWith: { first, _ in first })
        for (opcode, name) in HCIOpcode.known { names[opcode.rawValue] = name }
        return names
    }()
}

/// An 8-bit HCI event code. Open: unknown codes keep their value.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7
public struct HCIEventCode: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
}

/// An LE Meta event subevent code.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65
public struct LESubeventCode: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
}

extension String {
    package func leftPadded(_ width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
