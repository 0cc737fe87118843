import Bluetooth

/// HCI_Encryption_Change [v1] (0x08) and [v2] (0x59, adds Encryption_Key_Size).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.8
public struct EncryptionChangeEvent: Hashable, Sendable, CustomStringConvertible {
    public var status: HCIStatus
    /// Connection_Handle (0x0000–0x0EFF).
    public var connectionHandle: UInt16
    /// Encryption_Enabled: 0x00 off, 0x01 on (AES-CCM on LE), 0x02 on with E0/AES-CCM on BR/EDR.
    public var encryptionEnabled: UInt8
    /// Encryption_Key_Size in octets: present exactly in the v2 event.
    public var encryptionKeySize: UInt8?

    public init(status: HCIStatus, connectionHandle: UInt16, encryptionEnabled: UInt8, encryptionKeySize: UInt8? = nil) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.encryptionEnabled = encryptionEnabled
        self.encryptionKeySize = encryptionKeySize
    }

    /// The event code this value is sent with: v2 when it carries a key size.
    public var eventCode: HCIEventCode { encryptionKeySize == nil ? .encryptionChangeV1 : .encryptionChangeV2 }

    /// Parses the parameters of the v1 (`version2 == false`) or v2 event.
    public init(parsing reader: inout ByteReader, version2: Bool) throws(HCIError) {
        let c = version2 ? "HCI_Encryption_Change_v2" : "HCI_Encryption_Change_v1"
        status = HCIStatus(rawValue: try reader.hciUInt8(c))
        connectionHandle = try reader.hciConnectionHandle(c)
        encryptionEnabled = try reader.hciUInt8(c)
        encryptionKeySize = version2 ? try reader.hciUInt8(c) : nil
        try reader.hciExpectEnd(c)
    }

    public var encodedLength: Int { encryptionKeySize == nil ? 4 : 5 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(status.rawValue)
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt8(encryptionEnabled)
        if let size = encryptionKeySize { writer.writeUInt8(size) }
    }

    public var description: String {
        let state: String
        switch encryptionEnabled {
        case 0x00: state = "off"
        case 0x01: state = "on"
        case 0x02: state = "on (BR/EDR AES-CCM)"
        default: state = hciHexString(encryptionEnabled, 2)
        }
        var text = "Encryption Change: \(status) handle \(connectionHandle) encryption \(state)"
        if let size = encryptionKeySize { text += " key size \(size)" }
        return text
    }
}
