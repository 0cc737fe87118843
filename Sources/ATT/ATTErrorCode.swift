/// An ATT error code, as carried by ATT_ERROR_RSP. Open: application (0x80–0x9F), reserved and
/// profile codes keep their value.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.1.1 (Table 3.4); Core Specification Supplement,
///   Part B, §1.2 (Common Profile and Service Error Codes 0xE0–0xFF)
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    /// The attribute handle given was not valid on this server.
    public static let invalidHandle = ATTErrorCode(0x01)
    /// The attribute cannot be read.
    public static let readNotPermitted = ATTErrorCode(0x02)
    /// The attribute cannot be written.
    public static let writeNotPermitted = ATTErrorCode(0x03)
    /// The attribute PDU was invalid.
    public static let invalidPDU = ATTErrorCode(0x04)
    /// The attribute requires authentication before it can be read or written.
    public static let insufficientAuthentication = ATTErrorCode(0x05)
    /// ATT server does not support the request received from the client.
    public static let requestNotSupported = ATTErrorCode(0x06)
    /// Offset specified was past the end of the attribute.
    public static let invalidOffset = ATTErrorCode(0x07)
    /// The attribute requires authorization before it can be read or written.
    public static let insufficientAuthorization = ATTErrorCode(0x08)
    /// Too many prepare writes have been queued.
    public static let prepareQueueFull = ATTErrorCode(0x09)
    /// No attribute found within the given attribute handle range.
    public static let attributeNotFound = ATTErrorCode(0x0A)
    /// The attribute cannot be read using the ATT_READ_BLOB_REQ PDU.
    public static let attributeNotLong = ATTErrorCode(0x0B)
    /// The Encryption Key Size used for encrypting this link is too short.
    public static let encryptionKeySizeTooShort = ATTErrorCode(0x0C)
    /// The attribute value length is invalid for the operation.
    public static let invalidAttributeValueLength = ATTErrorCode(0x0D)
    /// The request has encountered an unlikely error and could not be completed.
    public static let unlikelyError = ATTErrorCode(0x0E)
    /// The attribute requires encryption before it can be read or written.
    public static let insufficientEncryption = ATTErrorCode(0x0F)
    /// The attribute type is not a supported grouping attribute as defined by a higher layer.
    public static let unsupportedGroupType = ATTErrorCode(0x10)
    /// Insufficient Resources to complete the request.
    public static let insufficientResources = ATTErrorCode(0x11)
    /// The server requests the client to rediscover the database.
    public static let databaseOutOfSync = ATTErrorCode(0x12)
    /// The attribute parameter value was not allowed.
    public static let valueNotAllowed = ATTErrorCode(0x13)

    /// Write Request Rejected (Supplement Part B).
    public static let writeRequestRejected = ATTErrorCode(0xFC)
    /// Client Characteristic Configuration Descriptor Improperly Configured (Supplement Part B).
    public static let cccdImproperlyConfigured = ATTErrorCode(0xFD)
    /// Procedure Already in Progress (Supplement Part B).
    public static let procedureAlreadyInProgress = ATTErrorCode(0xFE)
    /// Out of Range (Supplement Part B).
    public static let outOfRange = ATTErrorCode(0xFF)

    /// Every code named by Core 5.4 and the Supplement, in numeric order.
    public static let allNamed: [ATTErrorCode] =
        (0x01...0x13).map { ATTErrorCode(UInt8($0)) } + [.writeRequestRejected, .cccdImproperlyConfigured,
                                                           .procedureAlreadyInProgress, .outOfRange]

    /// Application Error: 0x80–0x9F, defined by a higher layer specification.
    @inlinable public var isApplicationError: Bool { (0x80...0x9F).contains(rawValue) }
    /// Common Profile and Service Error Codes: 0xE0–0xFF (Supplement Part B).
    @inlinable public var isCommonProfileError: Bool { rawValue >= 0xE0 }
    /// Reserved for future use: 0x00, 0x14–0x7F, 0xA0–0xDF.
    public var isReserved: Bool {
        rawValue == 0 || (0x14...0x7F).contains(rawValue) || (0xA0...0xDF).contains(rawValue)
    }

    /// Wireshark's name as the oracle records print it (`ATTRIBUTE_NOT_FOUND`); `nil` for codes
    /// the oracle has no name for (application, reserved and unnamed profile codes), as the
    /// oracle prints `null` there.
    public var name: String? {
        ATTErrorCode.names[Int(rawValue)]?.wireshark
    }

    /// Human text: `Attribute Not Found (0x0a)`, `Application Error (0x80)`,
    /// `Reserved (0x20)`, `Common Profile and Service Error (0xe0)`.
    public var description: String {
        let code = " (0x" + hex2(rawValue) + ")"
        if let entry = ATTErrorCode.names[Int(rawValue)] { return entry.human + code }
        if isApplicationError { return "Application Error" + code }
        if isCommonProfileError { return "Common Profile and Service Error" + code }
        return "Reserved" + code
    }

    struct Names: Sendable {
        let wireshark: String
        let human: String
    }

    static let names: [Names?] = {
        var table = [Names?](repeating: nil, count: 256)
        func add(_ code: ATTErrorCode, _ ws: String, _ human: String) {
            table[Int(code.rawValue)] = Names(wireshark: ws, human: human)
        }
        add(.invalidHandle, "INVALID_HANDLE", "Invalid Handle")
        add(.readNotPermitted, "READ_NOT_PERMITTED", "Read Not Permitted")
        add(.writeNotPermitted, "WRITE_NOT_PERMITTED", "Write Not Permitted")
        add(.invalidPDU, "INVALID_PDU", "Invalid PDU")
        add(.insufficientAuthentication, "INSUFFICIENT_AUTHENTICATION", "Insufficient Authentication")
        add(.requestNotSupported, "REQUEST_NOT_SUPPORTED", "Request Not Supported")
        add(.invalidOffset, "INVALID_OFFSET", "Invalid Offset")
        add(.insufficientAuthorization, "INSUFFICIENT_AUTHORIZATION", "Insufficient Authorization")
        add(.prepareQueueFull, "PREPARE_QUEUE_FULL", "Prepare Queue Full")
        add(.attributeNotFound, "ATTRIBUTE_NOT_FOUND", "Attribute Not Found")
        add(.attributeNotLong, "ATTRIBUTE_NOT_LONG", "Attribute Not Long")
        add(.encryptionKeySizeTooShort, "INSUFFICIENT_ENCRYPTION_KEY_SIZE", "Encryption Key Size Too Short")
        add(.invalidAttributeValueLength, "INVALID_ATTRIBUTE_VALUE_LENGTH", "Invalid Attribute Value Length")
        add(.unlikelyError, "UNLIKELY_ERROR", "Unlikely Error")
        add(.insufficientEncryption, "INSUFFICIENT_ENCRYPTION", "Insufficient Encryption")
        add(.unsupportedGroupType, "UNSUPPORTED_GROUP_TYPE", "Unsupported Group Type")
        add(.insufficientResources, "INSUFFICIENT_RESOURCES", "Insufficient Resources")
        add(.databaseOutOfSync, "DATABASE_OUT_OF_SYNC", "Database Out Of Sync")
        add(.valueNotAllowed, "VALUE_NOT_ALLOWED", "Value Not Allowed")
        add(.writeRequestRejected, "WRITE_REQUEST_REJECTED", "Write Request Rejected")
        add(.cccdImproperlyConfigured, "CCCD_IMPROPERLY_CONFIGURED",
            "Client Characteristic Configuration Descriptor Improperly Configured")
        add(.procedureAlreadyInProgress, "PROCEDURE_ALREADY_IN_PROGRESS", "Procedure Already in Progress")
        add(.outOfRange, "OUT_OF_RANGE", "Out of Range")
        return table
    }()
}
