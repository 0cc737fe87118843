import Bluetooth

/// HCI_LE_Connection_Update_Complete: new connection parameters are in use.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.3
public struct LEConnectionUpdateCompleteEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.connectionUpdateComplete
    static let context = "HCI_LE_Connection_Update_Complete"

    public var status: HCIStatus
    public var connectionHandle: UInt16
    /// Connection_Interval in units of 1.25 ms.
    public var connectionInterval: UInt16
    /// Peripheral_Latency in connection events.
    public var peripheralLatency: UInt16
    /// Supervision_Timeout in units of 10 ms.
    public var supervisionTimeout: UInt16

    public init(status: HCIStatus, connectionHandle: UInt16, connectionInterval: UInt16, peripheralLatency: UInt16, supervisionTimeout: UInt16) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        status = HCIStatus(rawValue: try reader.hciUInt8(c))
        connectionHandle = try reader.hciConnectionHandle(c)
        connectionInterval = try reader.hciUInt16(c)
        peripheralLatency = try reader.hciUInt16(c)
        supervisionTimeout = try reader.hciUInt16(c)
        try reader.hciExpectEnd(c)
    }

    public static let encodedLength = 9

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(status.rawValue)
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt16LE(connectionInterval)
        writer.writeUInt16LE(peripheralLatency)
        writer.writeUInt16LE(supervisionTimeout)
    }

    public var description: String {
        "LE Connection Update Complete: \(status) handle \(connectionHandle) "
            + hciConnectionParametersText(connectionInterval, peripheralLatency, supervisionTimeout)
    }
}

/// HCI_LE_Remote_Connection_Parameter_Request: the peer asks for new connection parameters.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.6
public struct LERemoteConnectionParameterRequestEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.remoteConnectionParameterRequest
    static let context = "HCI_LE_Remote_Connection_Parameter_Request"

    public var connectionHandle: UInt16
    /// Interval_Min in units of 1.25 ms.
    public var intervalMin: UInt16
    /// Interval_Max in units of 1.25 ms.
    public var intervalMax: UInt16
    /// Max_Latency in connection events.
    public var maxLatency: UInt16
    /// Timeout (supervision) in units of 10 ms.
    public var timeout: UInt16

    public init(connectionHandle: UInt16, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16, timeout: UInt16) {
        self.connectionHandle = connectionHandle
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.timeout = timeout
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        connectionHandle = try reader.hciConnectionHandle(c)
        intervalMin = try reader.hciUInt16(c)
        intervalMax = try reader.hciUInt16(c)
        maxLatency = try reader.hciUInt16(c)
        timeout = try reader.hciUInt16(c)
        try reader.hciExpectEnd(c)
    }

    public static let encodedLength = 10

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt16LE(intervalMin)
        writer.writeUInt16LE(intervalMax)
        writer.writeUInt16LE(maxLatency)
        writer.writeUInt16LE(timeout)
    }

    public var description: String {
        "LE Remote Connection Parameter Request: handle \(connectionHandle) interval "
            + "\(hciMillisecondsText(Int(intervalMin) * 125, scale: 100))–\(hciMillisecondsText(Int(intervalMax) * 125, scale: 100))"
            + " latency \(maxLatency) timeout \(Int(timeout) * 10) ms"
    }
}
