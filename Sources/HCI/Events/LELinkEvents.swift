import Bluetooth

/// HCI_LE_Read_Remote_Features_Complete: the peer's LE feature bits (LE_Features, 8 octets).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.4
public struct LEReadRemoteFeaturesCompleteEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.readRemoteFeaturesComplete
    static let context = "HCI_LE_Read_Remote_Features_Complete"

    public var status: HCIStatus
    public var connectionHandle: UInt16
    /// LE_Features: bit mask of Core Spec 5.4, Vol 6, Part B, §4.6 (bit 0 = LE Encryption).
    public var leFeatures: UInt64

    public init(status: HCIStatus, connectionHandle: UInt16, leFeatures: UInt64) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.leFeatures = leFeatures
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        status = HCIStatus(rawValue: try reader.hciUInt8(c))
        connectionHandle = try reader.hciConnectionHandle(c)
        leFeatures = try reader.hciUInt64(c)
        try reader.hciExpectEnd(c)
    }

    public static let encodedLength = 11

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(status.rawValue)
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt64LE(leFeatures)
    }

    public var description: String {
        "LE Read Remote Features Complete: \(status) handle \(connectionHandle) features \(hciHexString(leFeatures, 16))"
    }
}

/// HCI_LE_Data_Length_Change: the maximum LL payload sizes and times changed.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.7
public struct LEDataLengthChangeEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.dataLengthChange
    static let context = "HCI_LE_Data_Length_Change"

    public var connectionHandle: UInt16
    /// Max_TX_Octets (0x001B–0x00FB).
    public var maxTXOctets: UInt16
    /// Max_TX_Time in microseconds (0x0148–0x4290).
    public var maxTXTime: UInt16
    /// Max_RX_Octets (0x001B–0x00FB).
    public var maxRXOctets: UInt16
    /// Max_RX_Time in microseconds (0x0148–0x4290).
    public var maxRXTime: UInt16

    public init(connectionHandle: UInt16, maxTXOctets: UInt16, maxTXTime: UInt16, maxRXOctets: UInt16, maxRXTime: UInt16) {
        self.connectionHandle = connectionHandle
        self.maxTXOctets = maxTXOctets
        self.maxTXTime = maxTXTime
        self.maxRXOctets = maxRXOctets
        self.maxRXTime = maxRXTime
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        connectionHandle = try reader.hciConnectionHandle(c)
        maxTXOctets = try reader.hciUInt16(c)
        maxTXTime = try reader.hciUInt16(c)
        maxRXOctets = try reader.hciUInt16(c)
        maxRXTime = try reader.hciUInt16(c)
        try reader.hciExpectEnd(c)
    }

    public static let encodedLength = 10

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt16LE(maxTXOctets)
        writer.writeUInt16LE(maxTXTime)
        writer.writeUInt16LE(maxRXOctets)
        writer.writeUInt16LE(maxRXTime)
    }

    public var description: String {
        "LE Data Length Change: handle \(connectionHandle) TX \(maxTXOctets) octets \(maxTXTime) us"
            + " RX \(maxRXOctets) octets \(maxRXTime) us"
    }
}

/// HCI_LE_PHY_Update_Complete: the PHYs of a connection changed (or the procedure failed).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.12
public struct LEPHYUpdateCompleteEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.phyUpdateComplete
    static let context = "HCI_LE_PHY_Update_Complete"

    public var status: HCIStatus
    public var connectionHandle: UInt16
    public var txPHY: LEPHY
    public var rxPHY: LEPHY

    public init(status: HCIStatus, connectionHandle: UInt16, txPHY: LEPHY, rxPHY: LEPHY) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.txPHY = txPHY
        self.rxPHY = rxPHY
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        status = HCIStatus(rawValue: try reader.hciUInt8(c))
        connectionHandle = try reader.hciConnectionHandle(c)
        txPHY = LEPHY(rawValue: try reader.hciUInt8(c))
        rxPHY = LEPHY(rawValue: try reader.hciUInt8(c))
        try reader.hciExpectEnd(c)
    }

    public static let encodedLength = 5

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(status.rawValue)
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt8(txPHY.rawValue)
        writer.writeUInt8(rxPHY.rawValue)
    }

    public var description: String {
        "LE PHY Update Complete: \(status) handle \(connectionHandle) TX \(txPHY) RX \(rxPHY)"
    }
}

/// HCI_LE_Channel_Selection_Algorithm: which channel selection algorithm a connection uses.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.20
public struct LEChannelSelectionAlgorithmEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.channelSelectionAlgorithm
    static let context = "HCI_LE_Channel_Selection_Algorithm"

    public var connectionHandle: UInt16
    /// Channel_Selection_Algorithm: 0x00 = #1, 0x01 = #2.
    public var channelSelectionAlgorithm: UInt8

    public init(connectionHandle: UInt16, channelSelectionAlgorithm: UInt8) {
        self.connectionHandle = connectionHandle
        self.channelSelectionAlgorithm = channelSelectionAlgorithm
    }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        connectionHandle = try reader.hciConnectionHandle(c)
        channelSelectionAlgorithm = try reader.hciUInt8(c)
        try reader.hciExpectEnd(c)
    }

    public static let encodedLength = 3

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt8(channelSelectionAlgorithm)
    }

    public var description: String {
        let name = channelSelectionAlgorithm <= 1 ? "#\(channelSelectionAlgorithm + 1)" : hciHexString(channelSelectionAlgorithm, 2)
        return "LE Channel Selection Algorithm: handle \(connectionHandle) algorithm \(name)"
    }
}
