import Bluetooth

/// HCI_LE_Set_Advertising_Parameters: legacy advertising type, timing, addresses and filter.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.5
public struct LESetAdvertisingParametersCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetAdvertisingParameters

    /// Advertising_Interval_Min in 0.625 ms units.
    public var advertisingIntervalMin: UInt16
    /// Advertising_Interval_Max in 0.625 ms units.
    public var advertisingIntervalMax: UInt16
    public var advertisingType: LEAdvertisingType
    public var ownAddressType: LEOwnAddressType
    /// Peer_Address_Type (public or random only here).
    public var peerAddressType: AddressType
    public var peerAddress: BluetoothAddress
    public var advertisingChannelMap: LEAdvertisingChannelMap
    public var advertisingFilterPolicy: LEAdvertisingFilterPolicy

    public init(
        advertisingIntervalMin: UInt16, advertisingIntervalMax: UInt16,
        advertisingType: LEAdvertisingType = .connectableUndirected, ownAddressType: LEOwnAddressType = .public,
        peerAddressType: AddressType = .public, peerAddress: BluetoothAddress = .zero,
        advertisingChannelMap: LEAdvertisingChannelMap = .all,
        advertisingFilterPolicy: LEAdvertisingFilterPolicy = .acceptAll
    ) {
        self.advertisingIntervalMin = advertisingIntervalMin
        self.advertisingIntervalMax = advertisingIntervalMax
        self.advertisingType = advertisingType
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.advertisingChannelMap = advertisingChannelMap
        self.advertisingFilterPolicy = advertisingFilterPolicy
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        advertisingIntervalMin = try r.uint16()
        advertisingIntervalMax = try r.uint16()
        advertisingType = try r.enumeration(LEAdvertisingType.self, "Advertising_Type")
        ownAddressType = try r.enumeration(LEOwnAddressType.self, "Own_Address_Type")
        peerAddressType = try r.enumeration(AddressType.self, "Peer_Address_Type")
        peerAddress = try r.address()
        let at = r.offset
        advertisingChannelMap = LEAdvertisingChannelMap(rawValue: try r.uint8())
        guard advertisingChannelMap.isValid else {
            throw r.invalidValue("Advertising_Channel_Map", Int(advertisingChannelMap.rawValue), at: at)
        }
        advertisingFilterPolicy = try r.enumeration(LEAdvertisingFilterPolicy.self, "Advertising_Filter_Policy")
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        guard advertisingChannelMap.isValid else {
            throw .malformed(
                context: Self.opcode.description,
                reason: .invalidValue(field: "Advertising_Channel_Map", value: Int(advertisingChannelMap.rawValue)),
                offset: 13)
        }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(advertisingIntervalMin)
        writer.writeUInt16LE(advertisingIntervalMax)
        writer.writeUInt8(advertisingType.rawValue)
        writer.writeUInt8(ownAddressType.rawValue)
        writer.writeUInt8(peerAddressType.rawValue)
        peerAddress.write(littleEndian: &writer)
        writer.writeUInt8(advertisingChannelMap.rawValue)
        writer.writeUInt8(advertisingFilterPolicy.rawValue)
    }

    private var isDirected: Bool {
        advertisingType == .connectableDirectedHighDuty || advertisingType == .connectableDirectedLowDuty
    }

    public var description: String {
        var text =
            "\(Self.opcode.displayName): \(advertisingType), interval "
            + "\(CommandFormat.millisecondRange(advertisingIntervalMin, advertisingIntervalMax, microsecondsPerUnit: 625)), "
            + "own \(ownAddressType)"
        if isDirected { text += ", peer \(peerAddress) (\(peerAddressType))" }
        return text + ", \(advertisingChannelMap), \(advertisingFilterPolicy)"
    }
}

/// The 31-octet legacy data field shared by Set Advertising Data and Set Scan Response Data:
/// a length octet, then 31 octets of which only the first `length` are significant.
enum LegacyAdvertisingDataField {
    static let capacity = 31

    static func parse(_ r: inout CommandParameterReader, lengthField: String) throws(HCIError) -> [UInt8] {
        let at = r.offset
        let length = Int(try r.uint8())
        guard length <= capacity else { throw r.invalidLength(lengthField, length, at: at) }
        let field = try r.bytes(capacity)
        return Array(field[0..<length])
    }

    static func write(_ data: [UInt8], to writer: inout ByteWriter) {
        let significant = data.prefix(capacity)
        writer.writeUInt8(UInt8(significant.count))
        writer.writeBytes(significant)
        writer.writeBytes(repeatElement(UInt8(0), count: capacity - significant.count))
    }

    static func validate(_ data: [UInt8], lengthField: String, in opcode: HCIOpcode) throws(HCIError) {
        guard data.count <= capacity else {
            throw .malformed(
                context: opcode.description, reason: .invalidLength(field: lengthField, value: data.count), offset: 0)
        }
    }
}

/// HCI_LE_Set_Advertising_Data: the AD structures of legacy advertising (up to 31 octets).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.7
public struct LESetAdvertisingDataCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetAdvertisingData
    /// The significant octets of Advertising_Data (Advertising_Data_Length of them, ≤ 31);
    /// the rest of the 31-octet field is written as zeros.
    public var advertisingData: [UInt8]

    public init(advertisingData: [UInt8]) { self.advertisingData = advertisingData }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        advertisingData = try LegacyAdvertisingDataField.parse(&r, lengthField: "Advertising_Data_Length")
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try LegacyAdvertisingDataField.validate(
            advertisingData, lengthField: "Advertising_Data_Length", in: Self.opcode)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        LegacyAdvertisingDataField.write(advertisingData, to: &writer)
    }

    public var description: String { "\(Self.opcode.displayName): \(CommandFormat.data(advertisingData))" }
}

/// HCI_LE_Set_Scan_Response_Data: the AD structures of the legacy scan response (up to 31 octets).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.8
public struct LESetScanResponseDataCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetScanResponseData
    /// The significant octets of Scan_Response_Data (Scan_Response_Data_Length of them, ≤ 31).
    public var scanResponseData: [UInt8]

    public init(scanResponseData: [UInt8]) { self.scanResponseData = scanResponseData }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        scanResponseData = try LegacyAdvertisingDataField.parse(&r, lengthField: "Scan_Response_Data_Length")
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try LegacyAdvertisingDataField.validate(
            scanResponseData, lengthField: "Scan_Response_Data_Length", in: Self.opcode)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        LegacyAdvertisingDataField.write(scanResponseData, to: &writer)
    }

    public var description: String { "\(Self.opcode.displayName): \(CommandFormat.data(scanResponseData))" }
}

/// HCI_LE_Set_Advertising_Enable: starts or stops legacy advertising.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.9
public struct LESetAdvertisingEnableCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetAdvertisingEnable
    public var advertisingEnable: Bool

    public init(advertisingEnable: Bool) { self.advertisingEnable = advertisingEnable }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        advertisingEnable = try r.bool("Advertising_Enable")
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) { writer.writeUInt8(advertisingEnable ? 1 : 0) }

    public var description: String { "\(Self.opcode.displayName): \(advertisingEnable ? "enable" : "disable")" }
}
