import ATT
import Bluetooth

/// The access permissions of an attribute: whether it may be read and written, and the
/// security the link must have for each.
///
/// `readEncrypted` and `readAuthenticated` imply `read` (likewise for writes): an attribute
/// with only `readEncrypted` is readable on an encrypted link.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.2.5 (attribute permissions)
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §10.3 (security requirements of attributes)
public struct AttributePermissions: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let read = AttributePermissions(rawValue: 0x01)
    public static let write = AttributePermissions(rawValue: 0x02)
    /// Reading needs an encrypted link.
    public static let readEncrypted = AttributePermissions(rawValue: 0x04)
    /// Writing needs an encrypted link.
    public static let writeEncrypted = AttributePermissions(rawValue: 0x08)
    /// Reading needs an encrypted link with an authenticated (MITM-protected) key.
    public static let readAuthenticated = AttributePermissions(rawValue: 0x10)
    /// Writing needs an encrypted link with an authenticated (MITM-protected) key.
    public static let writeAuthenticated = AttributePermissions(rawValue: 0x20)
    /// Reading needs the application's authorization of the client.
    public static let readAuthorized = AttributePermissions(rawValue: 0x40)
    /// Writing needs the application's authorization of the client.
    public static let writeAuthorized = AttributePermissions(rawValue: 0x80)

    /// Readable and writable without security.
    public static let readWrite: AttributePermissions = [.read, .write]

    /// Every bit with the name the JSON database description uses.
    public static let named: [(permission: AttributePermissions, name: String)] = [
        (.read, "read"), (.write, "write"), (.readEncrypted, "readEncrypted"),
        (.writeEncrypted, "writeEncrypted"), (.readAuthenticated, "readAuthenticated"),
        (.writeAuthenticated, "writeAuthenticated"), (.readAuthorized, "readAuthorized"),
        (.writeAuthorized, "writeAuthorized"),
    ]

    /// The set whose names are given; `nil` when a name is unknown.
    public init?<S: Sequence>(names: S) where S.Element == String {
        var value: UInt8 = 0
        for name in names {
            guard let entry = AttributePermissions.named.first(where: { $0.name == name }) else { return nil }
            value |= entry.permission.rawValue
        }
        self.init(rawValue: value)
    }

    /// From the BlueZ-style bitmask of the shared vectors (bit 0 read, 1 write, 2 read
    /// encrypted, 3 write encrypted; then ours: 4/5 read/write authenticated, 6/7 read/write
    /// authorized). 0 means "no check": readable and writable without security.
    public init(bitmask: Int) {
        guard bitmask != 0 else {
            self = .readWrite
            return
        }
        self.init(rawValue: UInt8(truncatingIfNeeded: bitmask & 0xFF))
    }

    public var isReadable: Bool {
        !intersection([.read, .readEncrypted, .readAuthenticated, .readAuthorized]).isEmpty
    }
    public var isWritable: Bool {
        !intersection([.write, .writeEncrypted, .writeAuthenticated, .writeAuthorized]).isEmpty
    }

    public var names: [String] {
        AttributePermissions.named.compactMap { contains($0.permission) ? $0.name : nil }
    }

    public var description: String { "[" + names.joined(separator: ", ") + "]" }

    /// The error a read by a client on a link at `security` must get, or `nil` when allowed.
    /// Read Not Permitted (0x02) for an unreadable attribute; Insufficient Encryption (0x0F)
    /// when encryption is needed and the link is not encrypted; Insufficient Authentication
    /// (0x05) when an authenticated key is needed and the link lacks one; then Insufficient
    /// Authorization (0x08) when authorization is needed and the client is not `authorized`.
    public func readError(at security: SecurityLevel, authorized: Bool = false) -> ATTErrorCode? {
        guard isReadable else { return .readNotPermitted }
        if let code = securityError(encrypted: .readEncrypted, authenticated: .readAuthenticated, at: security) {
            return code
        }
        return contains(.readAuthorized) && !authorized ? .insufficientAuthorization : nil
    }

    /// The error a write must get (Write Not Permitted 0x03, then as `readError(at:authorized:)`),
    /// or `nil`.
    public func writeError(at security: SecurityLevel, authorized: Bool = false) -> ATTErrorCode? {
        guard isWritable else { return .writeNotPermitted }
        if let code = securityError(encrypted: .writeEncrypted, authenticated: .writeAuthenticated, at: security) {
            return code
        }
        return contains(.writeAuthorized) && !authorized ? .insufficientAuthorization : nil
    }

    private func securityError(
        encrypted: AttributePermissions, authenticated: AttributePermissions, at security: SecurityLevel
    ) -> ATTErrorCode? {
        // An authenticated key is needed and the link lacks one: the client must pair with
        // MITM protection (Insufficient Authentication), encrypted or not.
        if contains(authenticated), security < .authenticated { return .insufficientAuthentication }
        if contains(encrypted), security < .encrypted { return .insufficientEncryption }
        return nil
    }
}

/// The security of the link a client talks over, as the server sees it (the GAP LE security
/// mode 1 levels).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §10.2.1
public enum SecurityLevel: Int, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Level 1: no encryption.
    case none = 1
    /// Level 2: encrypted with an unauthenticated key.
    case encrypted = 2
    /// Level 3: encrypted with an authenticated (MITM-protected) key.
    case authenticated = 3
    /// Level 4: authenticated LE Secure Connections with a 128-bit key.
    case secureConnections = 4

    public static func < (lhs: SecurityLevel, rhs: SecurityLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The level an encrypted link has with a key from a pairing that was `authenticated`
    /// (not Just Works), `secureConnections`, of `keySize` octets (LE security mode 1).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §10.2.1
    public static func of(authenticated: Bool, secureConnections: Bool, keySize: Int) -> SecurityLevel {
        if authenticated, secureConnections, keySize == 16 { return .secureConnections }
        return authenticated ? .authenticated : .encrypted
    }

    public var description: String {
        switch self {
        case .none: return "none"
        case .encrypted: return "encrypted"
        case .authenticated: return "authenticated"
        case .secureConnections: return "secure connections"
        }
    }
}
