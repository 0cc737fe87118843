/// An HCI status / error code. Open: unknown codes keep their value.
/// - SeeAlso: Core Spec 5.4, Vol 1, Part F, §1.3
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = HCIStatus(rawValue: 0x00)
    public static let unknownHCICommand = HCIStatus(rawValue: 0x01)
    public static let unknownConnectionIdentifier = HCIStatus(rawValue: 0x02)
    public static let hardwareFailure = HCIStatus(rawValue: 0x03)
    public static let pageTimeout = HCIStatus(rawValue: 0x04)
    public static let authenticationFailure = HCIStatus(rawValue: 0x05)
    public static let pinOrKeyMissing = HCIStatus(rawValue: 0x06)
    public static let memoryCapacityExceeded = HCIStatus(rawValue: 0x07)
    public static let connectionTimeout = HCIStatus(rawValue: 0x08)
    public static let connectionLimitExceeded = HCIStatus(rawValue: 0x09)
    public static let synchronousConnectionLimitToADeviceExceeded = HCIStatus(rawValue: 0x0A)
    public static let connectionAlreadyExists = HCIStatus(rawValue: 0x0B)
    public static let commandDisallowed = HCIStatus(rawValue: 0x0C)
    public static let connectionRejectedDueToLimitedResources = HCIStatus(rawValue: 0x0D)
    public static let connectionRejectedDueToSecurityReasons = HCIStatus(rawValue: 0x0E)
    public static let connectionRejectedDueToUnacceptableBDADDR = HCIStatus(rawValue: 0x0F)
    public static let connectionAcceptTimeoutExceeded = HCIStatus(rawValue: 0x10)
    public static let unsupportedFeatureOrParameterValue = HCIStatus(rawValue: 0x11)
    public static let invalidHCICommandParameters = HCIStatus(rawValue: 0x12)
    public static let remoteUserTerminatedConnection = HCIStatus(rawValue: 0x13)
    public static let remoteDeviceTerminatedConnectionDueToLowResources = HCIStatus(rawValue: 0x14)
    public static let remoteDeviceTerminatedConnectionDueToPowerOff = HCIStatus(rawValue: 0x15)
    public static let connectionTerminatedByLocalHost = HCIStatus(rawValue: 0x16)
    public static let repeatedAttempts = HCIStatus(rawValue: 0x17)
    public static let pairingNotAllowed = HCIStatus(rawValue: 0x18)
    public static let unknownLMPPDU = HCIStatus(rawValue: 0x19)
    public static let unsupportedRemoteFeature = HCIStatus(rawValue: 0x1A)
    public static let scoOffsetRejected = HCIStatus(rawValue: 0x1B)
    public static let scoIntervalRejected = HCIStatus(rawValue: 0x1C)
    public static let scoAirModeRejected = HCIStatus(rawValue: 0x1D)
    public static let invalidLMPParameters = HCIStatus(rawValue: 0x1E)
    public static let unspecifiedError = HCIStatus(rawValue: 0x1F)
    public static let unsupportedLMPParameterValue = HCIStatus(rawValue: 0x20)
    public static let roleChangeNotAllowed = HCIStatus(rawValue: 0x21)
    public static let lmpResponseTimeout = HCIStatus(rawValue: 0x22)
    public static let lmpErrorTransactionCollision = HCIStatus(rawValue: 0x23)
    public static let lmpPDUNotAllowed = HCIStatus(rawValue: 0x24)
    public static let encryptionModeNotAcceptable = HCIStatus(rawValue: 0x25)
    public static let linkKeyCannotBeChanged = HCIStatus(rawValue: 0x26)
    public static let requestedQoSNotSupported = HCIStatus(rawValue: 0x27)
    public static let instantPassed = HCIStatus(rawValue: 0x28)
    public static let pairingWithUnitKeyNotSupported = HCIStatus(rawValue: 0x29)
    public static let differentTransactionCollision = HCIStatus(rawValue: 0x2A)
    public static let qosUnacceptableParameter = HCIStatus(rawValue: 0x2C)
    public static let qosRejected = HCIStatus(rawValue: 0x2D)
    public static let channelClassificationNotSupported = HCIStatus(rawValue: 0x2E)
    public static let insufficientSecurity = HCIStatus(rawValue: 0x2F)
    public static let parameterOutOfMandatoryRange = HCIStatus(rawValue: 0x30)
    public static let roleSwitchPending = HCIStatus(rawValue: 0x32)
    public static let reservedSlotViolation = HCIStatus(rawValue: 0x34)
    public static let roleSwitchFailed = HCIStatus(rawValue: 0x35)
    public static let extendedInquiryResponseTooLarge = HCIStatus(rawValue: 0x36)
    public static let secureSimplePairingNotSupportedByHost = HCIStatus(rawValue: 0x37)
    public static let hostBusyPairing = HCIStatus(rawValue: 0x38)
    public static let connectionRejectedDueToNoSuitableChannelFound = HCIStatus(rawValue: 0x39)
    public static let controllerBusy = HCIStatus(rawValue: 0x3A)
    public static let unacceptableConnectionParameters = HCIStatus(rawValue: 0x3B)
    public static let advertisingTimeout = HCIStatus(rawValue: 0x3C)
    public static let connectionTerminatedDueToMICFailure = HCIStatus(rawValue: 0x3D)
    public static let connectionFailedToBeEstablished = HCIStatus(rawValue: 0x3E)
    /// 0x3F: previously used (MAC Connection Failed); kept so captures of old controllers print a name.
    public static let macConnectionFailed = HCIStatus(rawValue: 0x3F)
    public static let coarseClockAdjustmentRejected = HCIStatus(rawValue: 0x40)
    public static let type0SubmapNotDefined = HCIStatus(rawValue: 0x41)
    public static let unknownAdvertisingIdentifier = HCIStatus(rawValue: 0x42)
    public static let limitReached = HCIStatus(rawValue: 0x43)
    public static let operationCancelledByHost = HCIStatus(rawValue: 0x44)
    public static let packetTooLong = HCIStatus(rawValue: 0x45)

    /// The spec's name for this code, `nil` for codes the 5.4 table does not define.
    public var name: String? {
        let index = Int(rawValue)
        guard index < HCIStatus.names.count, let name = HCIStatus.names[index] else { return nil }
        return name
    }

    public var isSuccess: Bool { rawValue == 0 }

    /// `"Remote User Terminated Connection (0x13)"`; `"status 0x7f"` for an undefined code.
    public var description: String {
        let hex = "0x" + String(rawValue, radix: 16).leftPadded(2)
        if let name { return "\(name) (\(hex))" }
        return "status " + hex
    }

    /// Names indexed by code, as the Core 5.4 table words them (0x00–0x45).
    static let names: [String?] = [
        "Success",  // 0x00
        "Unknown HCI Command",
        "Unknown Connection Identifier",
        "Hardware Failure",
        "Page Timeout",
        "Authentication Failure",
        "PIN or Key Missing",
        "Memory Capacity Exceeded",
        "Connection Timeout",
        "Connection Limit Exceeded",
        "Synchronous Connection Limit To A Device Exceeded",
        "Connection Already Exists",
        "Command Disallowed",
        "Connection Rejected due to Limited Resources",
        "Connection Rejected Due To Security Reasons",
        "Connection Rejected due to Unacceptable BD_ADDR",
        "Connection Accept Timeout Exceeded",  // 0x10
        "Unsupported Feature or Parameter Value",
        "Invalid HCI Command Parameters",
        "Remote User Terminated Connection",
        "Remote Device Terminated Connection due to Low Resources",
        "Remote Device Terminated Connection due to Power Off",
        "Connection Terminated By Local Host",
        "Repeated Attempts",
        "Pairing Not Allowed",
        "Unknown LMP PDU",
        "Unsupported Remote Feature",
        "SCO Offset Rejected",
        "SCO Interval Rejected",
        "SCO Air Mode Rejected",
        "Invalid LMP Parameters / Invalid LL Parameters",
        "Unspecified Error",
        "Unsupported LMP Parameter Value / Unsupported LL Parameter Value",  // 0x20
        "Role Change Not Allowed",
        "LMP Response Timeout / LL Response Timeout",
        "LMP Error Transaction Collision / LL Procedure Collision",
        "LMP PDU Not Allowed",
        "Encryption Mode Not Acceptable",
        "Link Key cannot be Changed",
        "Requested QoS Not Supported",
        "Instant Passed",
        "Pairing With Unit Key Not Supported",
        "Different Transaction Collision",
        nil,  // 0x2B reserved
        "QoS Unacceptable Parameter",
        "QoS Rejected",
        "Channel Classification Not Supported",
        "Insufficient Security",
        "Parameter Out Of Mandatory Range",  // 0x30
        nil,  // 0x31 reserved
        "Role Switch Pending",
        nil,  // 0x33 reserved
        "Reserved Slot Violation",
        "Role Switch Failed",
        "Extended Inquiry Response Too Large",
        "Secure Simple Pairing Not Supported By Host",
        "Host Busy - Pairing",
        "Connection Rejected due to No Suitable Channel Found",
        "Controller Busy",
        "Unacceptable Connection Parameters",
        "Advertising Timeout",
        "Connection Terminated due to MIC Failure",
        "Connection Failed to be Established / Synchronization Timeout",
        "Previously used (MAC Connection Failed)",
        "Coarse Clock Adjustment Rejected but Will Try to Adjust Using Clock Dragging",  // 0x40
        "Type0 Submap Not Defined",
        "Unknown Advertising Identifier",
        "Limit Reached",
        "Operation Cancelled by Host",
        "Packet Too Long",  // 0x45
    ]
}
