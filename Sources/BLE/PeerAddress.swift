import Bluetooth

/// A remote device's address with its type: `AA:BB:CC:DD:EE:FF`, `…/random` or `…/public`.
/// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §1.3 (device address types)
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The 48-bit address.
    public var address: BluetoothAddress
    /// Public or random (static, resolvable or non-resolvable private).
    public var type: AddressType

    /// An address and its type.
    public init(address: BluetoothAddress, type: AddressType) {
        self.address = address
        self.type = type
    }

    /// Parses `AA:BB:CC:DD:EE:FF` (public), `AA:BB:CC:DD:EE:FF/random` or `…/public`; `nil` for
    /// anything else.
    public init?(_ text: String) {
        self.init(text, random: false)
    }

    /// Parses as ``init(_:)``; `random` gives the type when the text names none (`--random`).
    public init?(_ text: String, random: Bool) {
        var body = Substring(text)
        var type: AddressType = random ? .random : .public
        if let slash = body.firstIndex(of: "/") {
            switch body[body.index(after: slash)...].lowercased() {
            case "random": type = .random
            case "public": type = .public
            default: return nil
            }
            body = body[..<slash]
        }
        guard let address = BluetoothAddress(String(body)) else { return nil }
        self.init(address: address, type: type)
    }

    /// `AA:BB:CC:DD:EE:FF`, with ` (random)` after a random address.
    public var description: String { "\(address)" + (type == .random ? " (random)" : "") }
}
