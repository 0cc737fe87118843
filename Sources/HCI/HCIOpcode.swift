/// A 16-bit HCI command opcode: OGF (6 bits) and OCF (10 bits). Open: unknown opcodes keep their value.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.1
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(ogf: UInt8, ocf: UInt16) { rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x3FF) }

    public var ogf: UInt8 { UInt8(rawValue >> 10) }
    public var ocf: UInt16 { rawValue & 0x3FF }

    public var description: String {
        if let name = HCIOpcode.names[rawValue] { return name }
        return "HCI command 0x" + String(rawValue, radix: 16, uppercase: false).leftPadded(4)
    }

    /// Spec names of the opcodes this module knows; filled by the command definitions.
    static let names: [UInt16: String] = Dictionary(uniqueKeysWithValues: HCIOpcode.known.map { ($0.0.rawValue, $0.1) })
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
