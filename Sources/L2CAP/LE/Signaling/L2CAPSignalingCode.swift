/// The Code of an L2CAP signaling command. Open: unknown codes keep their value.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4 (Table 4.2)
public struct L2CAPSignalingCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// L2CAP_COMMAND_REJECT_RSP
    public static let commandReject = L2CAPSignalingCode(rawValue: 0x01)
    /// L2CAP_DISCONNECTION_REQ
    public static let disconnectionRequest = L2CAPSignalingCode(rawValue: 0x06)
    /// L2CAP_DISCONNECTION_RSP
    public static let disconnectionResponse = L2CAPSignalingCode(rawValue: 0x07)
    /// L2CAP_CONNECTION_PARAMETER_UPDATE_REQ
    public static let connectionParameterUpdateRequest = L2CAPSignalingCode(rawValue: 0x12)
    /// L2CAP_CONNECTION_PARAMETER_UPDATE_RSP
    public static let connectionParameterUpdateResponse = L2CAPSignalingCode(rawValue: 0x13)
    /// L2CAP_LE_CREDIT_BASED_CONNECTION_REQ
    public static let leCreditBasedConnectionRequest = L2CAPSignalingCode(rawValue: 0x14)
    /// L2CAP_LE_CREDIT_BASED_CONNECTION_RSP
    public static let leCreditBasedConnectionResponse = L2CAPSignalingCode(rawValue: 0x15)
    /// L2CAP_FLOW_CONTROL_CREDIT_IND
    public static let flowControlCreditIndication = L2CAPSignalingCode(rawValue: 0x16)
    /// L2CAP_CREDIT_BASED_CONNECTION_REQ
    public static let creditBasedConnectionRequest = L2CAPSignalingCode(rawValue: 0x17)
    /// L2CAP_CREDIT_BASED_CONNECTION_RSP
    public static let creditBasedConnectionResponse = L2CAPSignalingCode(rawValue: 0x18)
    /// L2CAP_CREDIT_BASED_RECONFIGURE_REQ
    public static let creditBasedReconfigureRequest = L2CAPSignalingCode(rawValue: 0x19)
    /// L2CAP_CREDIT_BASED_RECONFIGURE_RSP
    public static let creditBasedReconfigureResponse = L2CAPSignalingCode(rawValue: 0x1A)

    /// Whether the code is a response the LE signaling channel carries (Command Reject
    /// included): never answered. BR/EDR-only codes are not: on LE they are not understood.
    public var isResponse: Bool {
        switch rawValue {
        case 0x01, 0x07, 0x13, 0x15, 0x18, 0x1A: return true
        default: return false
        }
    }

    public var description: String {
        switch rawValue {
        case 0x01: return "L2CAP_COMMAND_REJECT_RSP"
        case 0x06: return "L2CAP_DISCONNECTION_REQ"
        case 0x07: return "L2CAP_DISCONNECTION_RSP"
        case 0x12: return "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ"
        case 0x13: return "L2CAP_CONNECTION_PARAMETER_UPDATE_RSP"
        case 0x14: return "L2CAP_LE_CREDIT_BASED_CONNECTION_REQ"
        case 0x15: return "L2CAP_LE_CREDIT_BASED_CONNECTION_RSP"
        case 0x16: return "L2CAP_FLOW_CONTROL_CREDIT_IND"
        case 0x17: return "L2CAP_CREDIT_BASED_CONNECTION_REQ"
        case 0x18: return "L2CAP_CREDIT_BASED_CONNECTION_RSP"
        case 0x19: return "L2CAP_CREDIT_BASED_RECONFIGURE_REQ"
        case 0x1A: return "L2CAP_CREDIT_BASED_RECONFIGURE_RSP"
        default: return "signaling code " + l2capHex(rawValue, 2)
        }
    }
}

/// Reason of an L2CAP_COMMAND_REJECT_RSP. Open.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.1 (Table 4.3)
public struct CommandRejectReason: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let commandNotUnderstood = CommandRejectReason(rawValue: 0x0000)
    public static let signalingMTUExceeded = CommandRejectReason(rawValue: 0x0001)
    public static let invalidCIDInRequest = CommandRejectReason(rawValue: 0x0002)
}

/// Result of L2CAP_LE_CREDIT_BASED_CONNECTION_RSP and L2CAP_CREDIT_BASED_CONNECTION_RSP. Open.
/// The two tables share these values (the second says "all connections" or "some connections").
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.23 (Table 4.16) and §4.26 (Table 4.19)
public struct CreditBasedConnectionResult: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let successful = CreditBasedConnectionResult(rawValue: 0x0000)
    public static let spsmNotSupported = CreditBasedConnectionResult(rawValue: 0x0002)
    public static let noResourcesAvailable = CreditBasedConnectionResult(rawValue: 0x0004)
    public static let insufficientAuthentication = CreditBasedConnectionResult(rawValue: 0x0005)
    public static let insufficientAuthorization = CreditBasedConnectionResult(rawValue: 0x0006)
    public static let encryptionKeySizeTooShort = CreditBasedConnectionResult(rawValue: 0x0007)
    public static let insufficientEncryption = CreditBasedConnectionResult(rawValue: 0x0008)
    public static let invalidSourceCID = CreditBasedConnectionResult(rawValue: 0x0009)
    public static let sourceCIDAlreadyAllocated = CreditBasedConnectionResult(rawValue: 0x000A)
    public static let unacceptableParameters = CreditBasedConnectionResult(rawValue: 0x000B)
    /// Only in L2CAP_CREDIT_BASED_CONNECTION_RSP.
    public static let invalidParameters = CreditBasedConnectionResult(rawValue: 0x000C)

    /// The result's name in Table 4.16, nil for a reserved value.
    public var name: String? {
        switch rawValue {
        case 0x0000: return "Successful"
        case 0x0002: return "SPSM Not Supported"
        case 0x0004: return "No Resources Available"
        case 0x0005: return "Insufficient Authentication"
        case 0x0006: return "Insufficient Authorization"
        case 0x0007: return "Encryption Key Size Too Short"
        case 0x0008: return "Insufficient Encryption"
        case 0x0009: return "Invalid Source CID"
        case 0x000A: return "Source CID Already Allocated"
        case 0x000B: return "Unacceptable Parameters"
        case 0x000C: return "Invalid Parameters"
        default: return nil
        }
    }
}

/// Result of L2CAP_CREDIT_BASED_RECONFIGURE_RSP. Open.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.28 (Table 4.20)
public struct CreditBasedReconfigureResult: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let successful = CreditBasedReconfigureResult(rawValue: 0x0000)
    public static let reductionInMTUNotAllowed = CreditBasedReconfigureResult(rawValue: 0x0001)
    public static let reductionInMPSNotAllowed = CreditBasedReconfigureResult(rawValue: 0x0002)
    public static let invalidDestinationCID = CreditBasedReconfigureResult(rawValue: 0x0003)
    public static let unacceptableParameters = CreditBasedReconfigureResult(rawValue: 0x0004)
}

/// Result of L2CAP_CONNECTION_PARAMETER_UPDATE_RSP. Open.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.21
public struct ConnectionParameterUpdateResult: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let accepted = ConnectionParameterUpdateResult(rawValue: 0x0000)
    public static let rejected = ConnectionParameterUpdateResult(rawValue: 0x0001)
}
