import Bluetooth

/// HCI_Disconnection_Complete: a connection was terminated.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.5
public struct DisconnectionCompleteEvent: Hashable, Sendable, CustomStringConvertible {
    public static let eventCode = HCIEventCode.disconnectionComplete
    static let context = "HCI_Disconnection_Complete"

    public var status: HCIStatus
    /// Connection_Handle (0x0000–0x0EFF).
    public var connectionHandle: UInt16
    /// Reason: an error code (Core Spec 5.4, Vol 1, Part F).
    public var reason: HCIStatus

    public init(status: HCIStatus, connectionHandle: UInt16, reason: HCIStatus) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.reason = reason
    }

    /// Parses the event parameters (after the event header).
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        status = HCIStatus(rawValue: try reader.hciUInt8(c))
        connectionHandle = try reader.hciConnectionHandle(c)
        reason = HCIStatus(rawValue: try reader.hciUInt8(c))
        try reader.hciExpectEnd(c)
    }

    public static let encodedLength = 4

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(status.rawValue)
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt8(reason.rawValue)
    }

    public var description: String {
        "Disconnection Complete: \(status) handle \(connectionHandle) reason \(hciHexString(reason.rawValue, 2))"
    }
}
