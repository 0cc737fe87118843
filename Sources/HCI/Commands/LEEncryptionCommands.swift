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
        guard longTermKey.count == 16 else {
            throw .invalidArgument(
                context: Self.opcode.description, reason: "Long_Term_Key of \(longTermKey.count) octets, 16 expected")
        }
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
