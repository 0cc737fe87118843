/// The Characteristic Properties bit field of a characteristic declaration: which procedures
/// the characteristic value supports.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.1.1 (Table 3.5)
public struct CharacteristicProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The value may be broadcast in advertising (Server Characteristic Configuration).
    public static let broadcast = CharacteristicProperties(rawValue: 0x01)
    public static let read = CharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = CharacteristicProperties(rawValue: 0x04)
    public static let write = CharacteristicProperties(rawValue: 0x08)
    public static let notify = CharacteristicProperties(rawValue: 0x10)
    public static let indicate = CharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = CharacteristicProperties(rawValue: 0x40)
    /// Further properties are in the Characteristic Extended Properties descriptor.
    public static let extendedProperties = CharacteristicProperties(rawValue: 0x80)

    /// Every bit with its name as the JSON output spells it, in the order the JSON lists them.
    public static let named: [(property: CharacteristicProperties, name: String)] = [
        (.read, "read"),
        (.write, "write"),
        (.writeWithoutResponse, "writeWithoutResponse"),
        (.notify, "notify"),
        (.indicate, "indicate"),
        (.authenticatedSignedWrites, "authenticatedSignedWrites"),
        (.broadcast, "broadcast"),
        (.extendedProperties, "extendedProperties"),
    ]

    /// The names of the bits set, in the JSON order (`["read", "notify"]`).
    public var names: [String] {
        CharacteristicProperties.named.compactMap { contains($0.property) ? $0.name : nil }
    }

    /// The set whose names are given; `nil` when a name is unknown.
    public init?<S: Sequence>(names: S) where S.Element == String {
        var value: UInt8 = 0
        for name in names {
            guard let entry = CharacteristicProperties.named.first(where: { $0.name == name }) else { return nil }
            value |= entry.property.rawValue
        }
        self.init(rawValue: value)
    }

    public var description: String { "[" + names.joined(separator: ", ") + "]" }
}
