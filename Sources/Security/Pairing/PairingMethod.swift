/// A device's input and output capabilities for pairing.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3.2 (Table 2.4)
public enum IOCapability: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case displayOnly, displayYesNo, keyboardOnly, noInputNoOutput, keyboardDisplay

    /// The IO Capability octet of the Pairing Request and Response.
    public var rawValue: UInt8 {
        switch self {
        case .displayOnly: return 0x00
        case .displayYesNo: return 0x01
        case .keyboardOnly: return 0x02
        case .noInputNoOutput: return 0x03
        case .keyboardDisplay: return 0x04
        }
    }

    /// The capability an octet names; nil for the reserved values (0x05–0xFF).
    public init?(rawValue: UInt8) {
        guard let found = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = found
    }

    public var description: String {
        switch self {
        case .displayOnly: return "DisplayOnly"
        case .displayYesNo: return "DisplayYesNo"
        case .keyboardOnly: return "KeyboardOnly"
        case .noInputNoOutput: return "NoInputNoOutput"
        case .keyboardDisplay: return "KeyboardDisplay"
        }
    }
}

/// How a pairing authenticates.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3.5.1 (Tables 2.6–2.8)
public enum PairingMethod: Hashable, Sendable, CustomStringConvertible {
    /// No authentication (no MITM protection).
    case justWorks
    /// Both show a six-digit number and the users confirm they match (Secure Connections only).
    case numericComparison
    /// A six-digit passkey that one side displays and the other enters (or both enter).
    case passkeyEntry(initiatorInputs: Bool, responderInputs: Bool)

    /// Whether the method protects against a man in the middle (the keys are "authenticated").
    public var isAuthenticated: Bool { self != .justWorks }

    public var description: String {
        switch self {
        case .justWorks: return "Just Works"
        case .numericComparison: return "Numeric Comparison"
        case .passkeyEntry(let initiator, let responder):
            switch (initiator, responder) {
            case (true, true): return "Passkey Entry (both enter)"
            case (true, false): return "Passkey Entry (the responder displays)"
            default: return "Passkey Entry (the initiator displays)"
            }
        }
    }

    /// The method both devices' features select (OOB is not supported: its flag is 0 on our side).
    public static func select(
        initiator: IOCapability, responder: IOCapability, initiatorMITM: Bool, responderMITM: Bool,
        secureConnections: Bool
    ) -> PairingMethod {
        guard initiatorMITM || responderMITM else { return .justWorks }
        return fromIOCapabilities(initiator: initiator, responder: responder, secureConnections: secureConnections)
    }

    /// Table 2.8: the method from the two IO capabilities.
    static func fromIOCapabilities(
        initiator: IOCapability, responder: IOCapability, secureConnections: Bool
    ) -> PairingMethod {
        let initiatorDisplays = PairingMethod.passkeyEntry(initiatorInputs: false, responderInputs: true)
        let responderDisplays = PairingMethod.passkeyEntry(initiatorInputs: true, responderInputs: false)
        let comparisonOr: (PairingMethod) -> PairingMethod = { secureConnections ? .numericComparison : $0 }
        switch (responder, initiator) {
        case (.noInputNoOutput, _), (_, .noInputNoOutput): return .justWorks
        case (.displayOnly, .displayOnly), (.displayOnly, .displayYesNo): return .justWorks
        case (.displayOnly, .keyboardOnly), (.displayOnly, .keyboardDisplay): return responderDisplays
        case (.displayYesNo, .displayOnly): return .justWorks
        case (.displayYesNo, .displayYesNo): return comparisonOr(.justWorks)
        case (.displayYesNo, .keyboardOnly): return responderDisplays
        case (.displayYesNo, .keyboardDisplay): return comparisonOr(responderDisplays)
        case (.keyboardOnly, .displayOnly), (.keyboardOnly, .displayYesNo), (.keyboardOnly, .keyboardDisplay):
            return initiatorDisplays
        case (.keyboardOnly, .keyboardOnly): return .passkeyEntry(initiatorInputs: true, responderInputs: true)
        case (.keyboardDisplay, .displayOnly): return initiatorDisplays
        case (.keyboardDisplay, .displayYesNo): return comparisonOr(initiatorDisplays)
        case (.keyboardDisplay, .keyboardOnly): return responderDisplays
        case (.keyboardDisplay, .keyboardDisplay): return comparisonOr(initiatorDisplays)
        }
    }
}

/// The AuthReq field of the Pairing Request, Response and Security Request.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.5.1 (Figure 3.3)
public struct AuthenticationRequirements: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bonding_Flags 0b01: keys are stored.
    public static let bonding = AuthenticationRequirements(rawValue: 0x01)
    public static let mitm = AuthenticationRequirements(rawValue: 0x04)
    public static let secureConnections = AuthenticationRequirements(rawValue: 0x08)
    public static let keypress = AuthenticationRequirements(rawValue: 0x10)
    public static let ct2 = AuthenticationRequirements(rawValue: 0x20)
}

/// The Initiator and Responder Key Distribution fields.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.6.1 (Figure 3.11)
public struct KeyDistribution: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// LTK, EDIV and Rand (legacy pairing; ignored under Secure Connections).
    public static let encryptionKey = KeyDistribution(rawValue: 0x01)
    /// IRK and identity address.
    public static let identityKey = KeyDistribution(rawValue: 0x02)
    /// CSRK.
    public static let signingKey = KeyDistribution(rawValue: 0x04)
    /// BR/EDR link key derivation (not used here).
    public static let linkKey = KeyDistribution(rawValue: 0x08)
}

/// What a pairing is asked to be.
public struct PairingOptions: Hashable, Sendable {
    /// Our input and output capabilities.
    public var ioCapability: IOCapability
    /// Keep the keys (a bond) and ask the peer to keep them.
    public var bonding: Bool
    /// Refuse legacy pairing.
    public var secureConnectionsOnly: Bool
    /// The smallest encryption key size accepted (7–16 octets).
    public var minimumKeySize: Int
    /// Ask for protection against a man in the middle (Passkey Entry or Numeric Comparison);
    /// a pairing that can only be Just Works then fails with Authentication Requirements.
    public var requireMITM: Bool
    /// Use LE legacy pairing even when both sides support Secure Connections (`pair --legacy`).
    public var legacyOnly: Bool

    /// Pairing with `ioCapability`, bonding by default, Secure Connections preferred.
    public init(
        ioCapability: IOCapability = .keyboardDisplay, bonding: Bool = true, secureConnectionsOnly: Bool = false,
        minimumKeySize: Int = 16
    ) {
        self.ioCapability = ioCapability
        self.bonding = bonding
        self.secureConnectionsOnly = secureConnectionsOnly
        self.minimumKeySize = min(16, max(7, minimumKeySize))
        self.requireMITM = false
        self.legacyOnly = false
    }
}
