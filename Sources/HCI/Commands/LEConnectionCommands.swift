import Bluetooth

/// The connection timing block shared by LE Create Connection, LE Extended Create Connection
/// (per PHY), LE Connection Update and LE Remote Connection Parameter Request Reply.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.12
public struct LEConnectionParameters: Hashable, Sendable, CustomStringConvertible {
    /// Connection_Interval_Min in 1.25 ms units.
    public var connectionIntervalMin: UInt16
    /// Connection_Interval_Max in 1.25 ms units.
    public var connectionIntervalMax: UInt16
    /// Max_Latency in connection events.
    public var maxLatency: UInt16
    /// Supervision_Timeout in 10 ms units.
    public var supervisionTimeout: UInt16
    /// Min_CE_Length in 0.625 ms units.
    public var minCELength: UInt16
    /// Max_CE_Length in 0.625 ms units.
    public var maxCELength: UInt16

    public static let encodedLength = 12

    public init(
        connectionIntervalMin: UInt16, connectionIntervalMax: UInt16, maxLatency: UInt16 = 0,
        supervisionTimeout: UInt16, minCELength: UInt16 = 0, maxCELength: UInt16 = 0
    ) {
        self.connectionIntervalMin = connectionIntervalMin
        self.connectionIntervalMax = connectionIntervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }

    init(parsing r: inout CommandParameterReader) throws(HCIError) {
        connectionIntervalMin = try r.uint16()
        connectionIntervalMax = try r.uint16()
        maxLatency = try r.uint16()
        supervisionTimeout = try r.uint16()
        minCELength = try r.uint16()
        maxCELength = try r.uint16()
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionIntervalMin)
        writer.writeUInt16LE(connectionIntervalMax)
        writer.writeUInt16LE(maxLatency)
        writer.writeUInt16LE(supervisionTimeout)
        writer.writeUInt16LE(minCELength)
        writer.writeUInt16LE(maxCELength)
    }

    /// `interval 30.000–50.000 ms, latency 0, timeout 420.000 ms, CE 0.000–0.000 ms`
    public var description: String {
        "interval \(CommandFormat.millisecondRange(connectionIntervalMin, connectionIntervalMax, microsecondsPerUnit: 1250)), "
            + "latency \(maxLatency), timeout \(CommandFormat.tenMilliseconds(supervisionTimeout)), "
            + "CE \(CommandFormat.millisecondRange(minCELength, maxCELength, microsecondsPerUnit: 625))"
    }
}

/// HCI_LE_Create_Connection: legacy initiating. Answered by HCI_Command_Status, then an LE
/// (Enhanced) Connection Complete event.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.12
public struct LECreateConnectionCommand: HCICommand {
    public static let opcode = HCIOpcode.leCreateConnection
    public static var completion: HCICommandCompletion { .commandStatus }

    /// LE_Scan_Interval in 0.625 ms units.
    public var leScanInterval: UInt16
    /// LE_Scan_Window in 0.625 ms units.
    public var leScanWindow: UInt16
    public var initiatorFilterPolicy: LEInitiatorFilterPolicy
    public var peerAddressType: LEPeerAddressType
    public var peerAddress: BluetoothAddress
    public var ownAddressType: LEOwnAddressType
    public var connectionParameters: LEConnectionParameters

    public init(
        leScanInterval: UInt16, leScanWindow: UInt16, initiatorFilterPolicy: LEInitiatorFilterPolicy = .peerAddress,
        peerAddressType: LEPeerAddressType, peerAddress: BluetoothAddress, ownAddressType: LEOwnAddressType = .public,
        connectionParameters: LEConnectionParameters
    ) {
        self.leScanInterval = leScanInterval
        self.leScanWindow = leScanWindow
        self.initiatorFilterPolicy = initiatorFilterPolicy
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.ownAddressType = ownAddressType
        self.connectionParameters = connectionParameters
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        leScanInterval = try r.uint16()
        leScanWindow = try r.uint16()
        initiatorFilterPolicy = try r.enumeration(LEInitiatorFilterPolicy.self, "Initiator_Filter_Policy")
        peerAddressType = try r.enumeration(LEPeerAddressType.self, "Peer_Address_Type")
        peerAddress = try r.address()
        ownAddressType = try r.enumeration(LEOwnAddressType.self, "Own_Address_Type")
        connectionParameters = try LEConnectionParameters(parsing: &r)
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(leScanInterval)
        writer.writeUInt16LE(leScanWindow)
        writer.writeUInt8(initiatorFilterPolicy.rawValue)
        writer.writeUInt8(peerAddressType.rawValue)
        peerAddress.write(littleEndian: &writer)
        writer.writeUInt8(ownAddressType.rawValue)
        connectionParameters.write(to: &writer)
    }

    public var description: String {
        let target =
            initiatorFilterPolicy == .peerAddress ? "peer \(peerAddress) (\(peerAddressType))" : "filter accept list"
        return "\(Self.opcode.displayName): \(target), scan \(CommandFormat.slots(leScanInterval))/"
            + "\(CommandFormat.slots(leScanWindow)), own \(ownAddressType), \(connectionParameters)"
    }
}

/// HCI_LE_Create_Connection_Cancel: stops a pending LE Create Connection.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.13
public struct LECreateConnectionCancelCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leCreateConnectionCancel
    public init() {}
}

/// HCI_LE_Connection_Update: asks for new connection parameters. Answered by
/// HCI_Command_Status, then HCI_LE_Connection_Update_Complete.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.18
public struct LEConnectionUpdateCommand: HCICommand {
    public static let opcode = HCIOpcode.leConnectionUpdate
    public static var completion: HCICommandCompletion { .commandStatus }

    public var connectionHandle: UInt16
    public var connectionParameters: LEConnectionParameters

    public init(connectionHandle: UInt16, connectionParameters: LEConnectionParameters) {
        self.connectionHandle = connectionHandle
        self.connectionParameters = connectionParameters
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        connectionHandle = try r.connectionHandle()
        connectionParameters = try LEConnectionParameters(parsing: &r)
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(connectionHandle, in: Self.opcode, offset: 0)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        connectionParameters.write(to: &writer)
    }

    public var description: String {
        "\(Self.opcode.displayName): \(CommandFormat.handle(connectionHandle)), \(connectionParameters)"
    }
}

/// Return parameters that are a status and the Connection_Handle the command named
/// (LE Set Data Length, the Remote Connection Parameter Request replies).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.31, §7.8.32, §7.8.33
public struct ConnectionHandleReturnParameters: HCIReturnParameters {
    public var status: HCIStatus
    public var connectionHandle: UInt16

    public init(status: HCIStatus = .success, connectionHandle: UInt16) {
        self.status = status
        self.connectionHandle = connectionHandle
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, context: "connection handle return parameters")
        status = try r.status()
        connectionHandle = try r.connectionHandle()
        try r.end()
        reader = r.reader
    }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(status.rawValue)
        writer.writeUInt16LE(connectionHandle)
    }

    public var description: String { "\(status), \(CommandFormat.handle(connectionHandle))" }
}

/// HCI_LE_Remote_Connection_Parameter_Request_Reply: accepts (possibly amended) parameters the
/// peer asked for. The fields are Interval_Min, Interval_Max, Max_Latency, Timeout, Min/Max_CE_Length.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.31
public struct LERemoteConnectionParameterRequestReplyCommand: HCICommand {
    public static let opcode = HCIOpcode.leRemoteConnectionParameterRequestReply
    public typealias ReturnParameters = ConnectionHandleReturnParameters

    public var connectionHandle: UInt16
    public var connectionParameters: LEConnectionParameters

    public init(connectionHandle: UInt16, connectionParameters: LEConnectionParameters) {
        self.connectionHandle = connectionHandle
        self.connectionParameters = connectionParameters
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        connectionHandle = try r.connectionHandle()
        connectionParameters = try LEConnectionParameters(parsing: &r)
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(connectionHandle, in: Self.opcode, offset: 0)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        connectionParameters.write(to: &writer)
    }

    public var description: String {
        "\(Self.opcode.displayName): \(CommandFormat.handle(connectionHandle)), \(connectionParameters)"
    }
}

/// HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply: rejects the peer's parameters.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.32
public struct LERemoteConnectionParameterRequestNegativeReplyCommand: HCICommand {
    public static let opcode = HCIOpcode.leRemoteConnectionParameterRequestNegativeReply
    public typealias ReturnParameters = ConnectionHandleReturnParameters

    public var connectionHandle: UInt16
    public var reason: HCIStatus

    public init(connectionHandle: UInt16, reason: HCIStatus = .unacceptableConnectionParameters) {
        self.connectionHandle = connectionHandle
        self.reason = reason
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        connectionHandle = try r.connectionHandle()
        reason = try r.status()
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(connectionHandle, in: Self.opcode, offset: 0)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt8(reason.rawValue)
    }

    public var description: String {
        "\(Self.opcode.displayName): \(CommandFormat.handle(connectionHandle)), reason \(reason)"
    }
}

/// HCI_LE_Set_Data_Length: suggests the maximum LL payload octets and time on a connection.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.33
public struct LESetDataLengthCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetDataLength
    public typealias ReturnParameters = ConnectionHandleReturnParameters

    public var connectionHandle: UInt16
    /// TX_Octets (0x001B–0x00FB).
    public var txOctets: UInt16
    /// TX_Time in µs (0x0148–0x4290).
    public var txTime: UInt16

    public init(connectionHandle: UInt16, txOctets: UInt16, txTime: UInt16) {
        self.connectionHandle = connectionHandle
        self.txOctets = txOctets
        self.txTime = txTime
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        connectionHandle = try r.connectionHandle()
        txOctets = try r.uint16()
        txTime = try r.uint16()
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(connectionHandle, in: Self.opcode, offset: 0)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt16LE(txOctets)
        writer.writeUInt16LE(txTime)
    }

    public var description: String {
        "\(Self.opcode.displayName): \(CommandFormat.handle(connectionHandle)), TX \(txOctets) octets, \(txTime) µs"
    }
}

/// HCI_LE_Read_PHY: the PHYs in use on a connection.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.47
public struct LEReadPHYCommand: HCICommand {
    public static let opcode = HCIOpcode.leReadPHY
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

    /// Status, Connection_Handle, TX_PHY, RX_PHY.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var connectionHandle: UInt16
        public var txPHY: LEPHYType
        public var rxPHY: LEPHYType

        public init(status: HCIStatus = .success, connectionHandle: UInt16, txPHY: LEPHYType, rxPHY: LEPHYType) {
            self.status = status
            self.connectionHandle = connectionHandle
            self.txPHY = txPHY
            self.rxPHY = rxPHY
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(reader, context: "\(LEReadPHYCommand.opcode) return parameters")
            status = try r.status()
            connectionHandle = try r.connectionHandle()
            txPHY = try r.enumeration(LEPHYType.self, "TX_PHY")
            rxPHY = try r.enumeration(LEPHYType.self, "RX_PHY")
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt16LE(connectionHandle)
            writer.writeUInt8(txPHY.rawValue)
            writer.writeUInt8(rxPHY.rawValue)
        }

        public var description: String {
            "\(status), \(CommandFormat.handle(connectionHandle)), TX \(txPHY), RX \(rxPHY)"
        }
    }
}

/// HCI_LE_Set_PHY: preferred PHYs for a connection. Answered by HCI_Command_Status, then
/// HCI_LE_PHY_Update_Complete.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.49
public struct LESetPHYCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetPHY
    public static var completion: HCICommandCompletion { .commandStatus }

    public var connectionHandle: UInt16
    public var allPHYs: LEAllPHYsPreference
    public var txPHYs: LEPHYMask
    public var rxPHYs: LEPHYMask
    public var phyOptions: LECodedPHYOptions

    public init(
        connectionHandle: UInt16, allPHYs: LEAllPHYsPreference = [], txPHYs: LEPHYMask, rxPHYs: LEPHYMask,
        phyOptions: LECodedPHYOptions = .noPreference
    ) {
        self.connectionHandle = connectionHandle
        self.allPHYs = allPHYs
        self.txPHYs = txPHYs
        self.rxPHYs = rxPHYs
        self.phyOptions = phyOptions
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        connectionHandle = try r.connectionHandle()
        allPHYs = LEAllPHYsPreference(rawValue: try r.uint8())
        txPHYs = LEPHYMask(rawValue: try r.uint8())
        rxPHYs = LEPHYMask(rawValue: try r.uint8())
        phyOptions = LECodedPHYOptions(rawValue: try r.uint16())
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(connectionHandle, in: Self.opcode, offset: 0)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt8(allPHYs.rawValue)
        writer.writeUInt8(txPHYs.rawValue)
        writer.writeUInt8(rxPHYs.rawValue)
        writer.writeUInt16LE(phyOptions.rawValue)
    }

    public var description: String {
        var parts = ["\(CommandFormat.handle(connectionHandle))"]
        if allPHYs.contains(.noTXPreference) { parts.append("TX any") } else { parts.append("TX \(txPHYs)") }
        if allPHYs.contains(.noRXPreference) { parts.append("RX any") } else { parts.append("RX \(rxPHYs)") }
        parts.append(phyOptions.description)
        return "\(Self.opcode.displayName): " + parts.joined(separator: ", ")
    }
}
