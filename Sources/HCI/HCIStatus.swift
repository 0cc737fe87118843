/// An HCI status / error code. Open: unknown codes keep their value.
/// - SeeAlso: Core Spec 5.4, Vol 1, Part F, §1.3
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = HCIStatus(rawValue: 0x00)

    public var description: String { "status 0x" + String(rawValue, radix: 16).leftPadded(2) }
}
