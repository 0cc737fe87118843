import Bluetooth

/// HCI_LE_Enable_Encryption: the central starts (or refreshes) encryption of a connection with
/// a Long Term Key. Answered by HCI_Command_Status, then HCI_Encryption_Change (a new
/// encryption) or HCI_Encryption_Key_Refresh_Complete (a link already encrypted).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.24
public struct LEEnableEncryptionCommand: HCICommand {
    public static let opcode = HCIOpcode.leEnableEncryption
    public static var completion: HCICommandCompletion { .commandStatus }

    public var connectionHandle: UInt16
    /// Random_Number (the LTK's Rand; 0 for Secure Connections and the STK).
    public var randomNumber: UInt64
    /// Encrypted_Diversifier (the LTK's EDIV; 0 for Secure Connections and the STK).
    public var encryptedDiversifier: UInt16
    /// Long_Term_Key, 16 octets least significant first (as SMP distributes it).
    public var longTermKey: [UInt8]

    public init(connectionHandle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16, longTermKey: [UInt8]) {
        self.connectionHandle = connectionHandle
        self.randomNumber = randomNumber
        self.encryptedDiversifier = encryptedDiversifier
        self.longTermKey = longTermKey
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        connectionHandle = try r.connectionHandle()
        randomNumber = try r.uint64()
        encryptedDiversifier = try r.uint16()
        longTermKey = try r.bytes(16)
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(connectionHandle, in: Self.opcode, offset: 0)
        try checkLongTermKey(longTermKey, in: Self.opcode)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt64LE(randomNumber)
        writer.writeUInt16LE(encryptedDiversifier)
        writer.writeBytes(longTermKey)
    }

    /// The key is not shown.
    public var description: String {
        "\(Self.opcode.displayName): \(CommandFormat.handle(connectionHandle)), EDIV 0x\(String(encryptedDiversifier, radix: 16)), key hidden"
    }
}

/// HCI_Encryption_Key_Refresh_Complete: a connection's encryption key was refreshed (LE Enable
/// Encryption on a link already encrypted). Decoded from the event the codec keeps raw.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.39
public struct EncryptionKeyRefreshCompleteEvent: Hashable, Sendable {
    public var status: HCIStatus
    public var connectionHandle: UInt16

    public init(status: HCIStatus, connectionHandle: UInt16) {
        self.status = status
        self.connectionHandle = connectionHandle
    }

    /// The event, when `event` is one (it arrives as `.unknown` with code 0x30); nil otherwise or
    /// when its parameters are not three octets.
    public init?(_ event: HCIEvent) {
        guard case .unknown(let code, let parameters) = event, code == .encryptionKeyRefreshComplete,
            parameters.count == 3
        else { return nil }
        status = HCIStatus(rawValue: parameters[0])
        connectionHandle = (UInt16(parameters[1]) | UInt16(parameters[2]) << 8) & 0x0FFF
    }
}

/// HCI_LE_Long_Term_Key_Request_Reply: the peripheral's host gives the key the central asked
/// to encrypt with (LE Long Term Key Request).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.25
public struct LELongTermKeyRequestReplyCommand: HCICommand {
    public static let opcode = HCIOpcode.leLongTermKeyRequestReply
    public typealias ReturnParameters = ConnectionHandleReturnParameters

    public var connectionHandle: UInt16
    /// 16 octets, least significant first.
    public var longTermKey: [UInt8]

    public init(connectionHandle: UInt16, longTermKey: [UInt8]) {
        self.connectionHandle = connectionHandle
        self.longTermKey = longTermKey
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        connectionHandle = try r.connectionHandle()
        longTermKey = try r.bytes(16)
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(connectionHandle, in: Self.opcode, offset: 0)
        try checkLongTermKey(longTermKey, in: Self.opcode)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        writer.writeBytes(longTermKey)
    }

    /// The key is not shown.
    public var description: String { "\(Self.opcode.displayName): \(CommandFormat.handle(connectionHandle)), key hidden" }
}

/// HCI_LE_Long_Term_Key_Request_Negative_Reply: the peripheral's host has no such key (the
/// central gets PIN or Key Missing).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.26
public struct LELongTermKeyRequestNegativeReplyCommand: HCICommand {
    public static let opcode = HCIOpcode.leLongTermKeyRequestNegativeReply
    public typealias ReturnParameters = ConnectionHandleReturnParameters

    public var connectionHandle: UInt16

    public init(connectionHandle: UInt16) { self.connectionHandle = connectionHandle }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        connectionHandle = try r.connectionHandle()
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(connectionHandle, in: Self.opcode, offset: 0)
    }

    public func writeParameters(to writer: inout ByteWriter) { writer.writeUInt16LE(connectionHandle) }

    public var description: String { "\(Self.opcode.displayName): \(CommandFormat.handle(connectionHandle))" }
}

/// HCI_LE_Long_Term_Key_Request (LE Meta subevent 0x05): the central asks the peripheral's host
/// for the key named by Random_Number and Encrypted_Diversifier (both zero for Secure
/// Connections and the STK). Decoded from the subevent the codec keeps raw.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.5
public struct LELongTermKeyRequestEvent: Hashable, Sendable {
    public var connectionHandle: UInt16
    public var randomNumber: UInt64
    public var encryptedDiversifier: UInt16

    public init(connectionHandle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16) {
        self.connectionHandle = connectionHandle
        self.randomNumber = randomNumber
        self.encryptedDiversifier = encryptedDiversifier
    }

    /// The request, when `meta` is one with its twelve octets; nil otherwise.
    public init?(_ meta: LEMetaEvent) {
        guard case .unknown(let subevent, let parameters) = meta, subevent.rawValue == 0x05, parameters.count == 12
        else { return nil }
        connectionHandle = (UInt16(parameters[0]) | UInt16(parameters[1]) << 8) & 0x0FFF
        randomNumber = parameters[2..<10].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        encryptedDiversifier = UInt16(parameters[10]) | UInt16(parameters[11]) << 8
    }

    /// The LE Meta event carrying it (the virtual controller sends it so).
    public var metaEvent: LEMetaEvent {
        var parameters = [UInt8(truncatingIfNeeded: connectionHandle), UInt8(truncatingIfNeeded: connectionHandle >> 8)]
        parameters += (0..<8).map { UInt8(truncatingIfNeeded: randomNumber >> (8 * UInt64($0))) }
        parameters += [UInt8(truncatingIfNeeded: encryptedDiversifier), UInt8(truncatingIfNeeded: encryptedDiversifier >> 8)]
        return .unknown(subevent: LESubeventCode(rawValue: 0x05), parameters: parameters)
    }
}

/// A Long_Term_Key parameter is exactly 16 octets.
func checkLongTermKey(_ key: [UInt8], in opcode: HCIOpcode) throws(HCIError) {
    guard key.count == 16 else {
        throw .invalidArgument(context: opcode.description, reason: "Long_Term_Key of \(key.count) octets, 16 expected")
    }
}
