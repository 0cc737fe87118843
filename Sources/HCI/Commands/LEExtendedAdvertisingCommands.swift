import Bluetooth

/// Advertising_Handle limits shared by the extended advertising commands (0x00–0xEF).
enum LEAdvertisingHandleLimit {
    static let maximum: UInt8 = 0xEF

    static func read(_ r: inout CommandParameterReader) throws(HCIError) -> UInt8 {
        let at = r.offset
        let handle = try r.uint8()
        guard handle <= maximum else { throw r.invalidValue("Advertising_Handle", Int(handle), at: at) }
        return handle
    }

    static func check(_ handle: UInt8, in opcode: HCIOpcode, offset: Int) throws(HCIError) {
        guard handle <= maximum else {
            throw .malformed(
                context: opcode.description, reason: .invalidValue(field: "Advertising_Handle", value: Int(handle)),
                offset: offset)
        }
    }
}

/// HCI_LE_Set_Extended_Advertising_Parameters [v1]: configures one advertising set.
/// (v2, opcode 0x207F, adds Primary_Advertising_PHY_Options etc. and is not modelled.)
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.53
public struct LESetExtendedAdvertisingParametersV1Command: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingParametersV1
    /// Advertising_TX_Power value meaning "Host has no preference".
    public static let noTxPowerPreference: Int8 = 127

    public var advertisingHandle: UInt8
    public var advertisingEventProperties: LEAdvertisingEventProperties
    /// Primary_Advertising_Interval_Min in 0.625 ms units (24 bits).
    public var primaryAdvertisingIntervalMin: UInt32
    /// Primary_Advertising_Interval_Max in 0.625 ms units (24 bits).
    public var primaryAdvertisingIntervalMax: UInt32
    public var primaryAdvertisingChannelMap: LEAdvertisingChannelMap
    public var ownAddressType: LEOwnAddressType
    public var peerAddressType: AddressType
    public var peerAddress: BluetoothAddress
    public var advertisingFilterPolicy: LEAdvertisingFilterPolicy
    /// Advertising_TX_Power in dBm; 127 for no preference.
    public var advertisingTxPower: Int8
    /// Primary_Advertising_PHY: LE 1M or LE Coded only.
    public var primaryAdvertisingPHY: LEPHYType
    public var secondaryAdvertisingMaxSkip: UInt8
    public var secondaryAdvertisingPHY: LEPHYType
    /// Advertising_SID (0x00–0x0F).
    public var advertisingSID: UInt8
    public var scanRequestNotificationEnable: Bool

    public init(
        advertisingHandle: UInt8, advertisingEventProperties: LEAdvertisingEventProperties,
        primaryAdvertisingIntervalMin: UInt32, primaryAdvertisingIntervalMax: UInt32,
        primaryAdvertisingChannelMap: LEAdvertisingChannelMap = .all, ownAddressType: LEOwnAddressType = .public,
        peerAddressType: AddressType = .public, peerAddress: BluetoothAddress = .zero,
        advertisingFilterPolicy: LEAdvertisingFilterPolicy = .acceptAll, advertisingTxPower: Int8 = 127,
        primaryAdvertisingPHY: LEPHYType = .le1M, secondaryAdvertisingMaxSkip: UInt8 = 0,
        secondaryAdvertisingPHY: LEPHYType = .le1M, advertisingSID: UInt8 = 0, scanRequestNotificationEnable: Bool = false
    ) {
        self.advertisingHandle = advertisingHandle
        self.advertisingEventProperties = advertisingEventProperties
        self.primaryAdvertisingIntervalMin = primaryAdvertisingIntervalMin
        self.primaryAdvertisingIntervalMax = primaryAdvertisingIntervalMax
        self.primaryAdvertisingChannelMap = primaryAdvertisingChannelMap
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.advertisingFilterPolicy = advertisingFilterPolicy
        self.advertisingTxPower = advertisingTxPower
        self.primaryAdvertisingPHY = primaryAdvertisingPHY
        self.secondaryAdvertisingMaxSkip = secondaryAdvertisingMaxSkip
        self.secondaryAdvertisingPHY = secondaryAdvertisingPHY
        self.advertisingSID = advertisingSID
        self.scanRequestNotificationEnable = scanRequestNotificationEnable
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        advertisingHandle = try LEAdvertisingHandleLimit.read(&r)
        advertisingEventProperties = LEAdvertisingEventProperties(rawValue: try r.uint16())
        primaryAdvertisingIntervalMin = try r.uint24()
        primaryAdvertisingIntervalMax = try r.uint24()
        var at = r.offset
        primaryAdvertisingChannelMap = LEAdvertisingChannelMap(rawValue: try r.uint8())
        guard primaryAdvertisingChannelMap.isValid else {
            throw r.invalidValue("Primary_Advertising_Channel_Map", Int(primaryAdvertisingChannelMap.rawValue), at: at)
        }
        ownAddressType = try r.enumeration(LEOwnAddressType.self, "Own_Address_Type")
        peerAddressType = try r.enumeration(AddressType.self, "Peer_Address_Type")
        peerAddress = try r.address()
        advertisingFilterPolicy = try r.enumeration(LEAdvertisingFilterPolicy.self, "Advertising_Filter_Policy")
        advertisingTxPower = try r.int8()
        at = r.offset
        primaryAdvertisingPHY = try r.enumeration(LEPHYType.self, "Primary_Advertising_PHY")
        guard primaryAdvertisingPHY != .le2M else {
            throw r.invalidValue("Primary_Advertising_PHY", Int(LEPHYType.le2M.rawValue), at: at)
        }
        secondaryAdvertisingMaxSkip = try r.uint8()
        secondaryAdvertisingPHY = try r.enumeration(LEPHYType.self, "Secondary_Advertising_PHY")
        at = r.offset
        advertisingSID = try r.uint8()
        guard advertisingSID <= 0x0F else { throw r.invalidValue("Advertising_SID", Int(advertisingSID), at: at) }
        scanRequestNotificationEnable = try r.bool("Scan_Request_Notification_Enable")
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        func invalid(_ field: String, _ value: Int, _ offset: Int) -> HCIError {
            .malformed(
                context: Self.opcode.description, reason: .invalidValue(field: field, value: value), offset: offset)
        }
        try LEAdvertisingHandleLimit.check(advertisingHandle, in: Self.opcode, offset: 0)
        guard primaryAdvertisingIntervalMin >> 24 == 0 else {
            throw invalid("Primary_Advertising_Interval_Min", Int(primaryAdvertisingIntervalMin), 3)
        }
        guard primaryAdvertisingIntervalMax >> 24 == 0 else {
            throw invalid("Primary_Advertising_Interval_Max", Int(primaryAdvertisingIntervalMax), 6)
        }
        guard primaryAdvertisingChannelMap.isValid else {
            throw invalid("Primary_Advertising_Channel_Map", Int(primaryAdvertisingChannelMap.rawValue), 9)
        }
        guard primaryAdvertisingPHY != .le2M else { throw invalid("Primary_Advertising_PHY", 2, 20) }
        guard advertisingSID <= 0x0F else { throw invalid("Advertising_SID", Int(advertisingSID), 23) }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(advertisingHandle)
        writer.writeUInt16LE(advertisingEventProperties.rawValue)
        writer.writeUInt24LE(primaryAdvertisingIntervalMin)
        writer.writeUInt24LE(primaryAdvertisingIntervalMax)
        writer.writeUInt8(primaryAdvertisingChannelMap.rawValue)
        writer.writeUInt8(ownAddressType.rawValue)
        writer.writeUInt8(peerAddressType.rawValue)
        peerAddress.write(littleEndian: &writer)
        writer.writeUInt8(advertisingFilterPolicy.rawValue)
        writer.writeInt8(advertisingTxPower)
        writer.writeUInt8(primaryAdvertisingPHY.rawValue)
        writer.writeUInt8(secondaryAdvertisingMaxSkip)
        writer.writeUInt8(secondaryAdvertisingPHY.rawValue)
        writer.writeUInt8(advertisingSID)
        writer.writeUInt8(scanRequestNotificationEnable ? 1 : 0)
    }

    public var description: String {
        var parts = [
            "handle \(advertisingHandle)", "\(advertisingEventProperties)",
            "interval \(CommandFormat.millisecondRange(primaryAdvertisingIntervalMin, primaryAdvertisingIntervalMax, microsecondsPerUnit: 625))",
            "\(primaryAdvertisingChannelMap)", "own \(ownAddressType)",
        ]
        if advertisingEventProperties.contains(.directed) { parts.append("peer \(peerAddress) (\(peerAddressType))") }
        parts.append("\(advertisingFilterPolicy)")
        parts.append(
            advertisingTxPower == Self.noTxPowerPreference
                ? "TX power no preference" : "TX power \(advertisingTxPower) dBm")
        parts.append(
            "primary \(primaryAdvertisingPHY), secondary \(secondaryAdvertisingPHY) skip \(secondaryAdvertisingMaxSkip)"
        )
        parts.append("SID \(advertisingSID)")
        if scanRequestNotificationEnable { parts.append("scan request notifications") }
        return "\(Self.opcode.displayName): " + parts.joined(separator: ", ")
    }

    /// Status, Selected_TX_Power (dBm).
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var selectedTxPower: Int8

        public init(status: HCIStatus = .success, selectedTxPower: Int8) {
            self.status = status
            self.selectedTxPower = selectedTxPower
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(LESetExtendedAdvertisingParametersV1Command.opcode) return parameters")
            status = try r.status()
            selectedTxPower = try r.int8()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeInt8(selectedTxPower)
        }

        public var description: String { "\(status), selected TX power \(selectedTxPower) dBm" }
    }
}

/// HCI_LE_Set_Extended_Advertising_Data: one fragment (or all) of a set's advertising data.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.54
public struct LESetExtendedAdvertisingDataCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingData
    /// The most Advertising_Data one command carries (255 − 4 header octets).
    public static let maximumDataLength = 251

    public var advertisingHandle: UInt8
    public var operation: LEAdvertisingDataOperation
    /// Fragment_Preference: `true` when the controller should not fragment the data.
    public var shouldNotFragment: Bool
    public var advertisingData: [UInt8]

    public init(
        advertisingHandle: UInt8, operation: LEAdvertisingDataOperation = .complete, shouldNotFragment: Bool = false,
        advertisingData: [UInt8]
    ) {
        self.advertisingHandle = advertisingHandle
        self.operation = operation
        self.shouldNotFragment = shouldNotFragment
        self.advertisingData = advertisingData
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        advertisingHandle = try LEAdvertisingHandleLimit.read(&r)
        operation = try r.enumeration(LEAdvertisingDataOperation.self, "Operation")
        shouldNotFragment = try r.bool("Fragment_Preference")
        let at = r.offset
        let length = Int(try r.uint8())
        guard length <= Self.maximumDataLength else { throw r.invalidLength("Advertising_Data_Length", length, at: at) }
        advertisingData = try r.bytes(length)
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try LEAdvertisingHandleLimit.check(advertisingHandle, in: Self.opcode, offset: 0)
        guard advertisingData.count <= Self.maximumDataLength else {
            throw .malformed(
                context: Self.opcode.description,
                reason: .invalidLength(field: "Advertising_Data_Length", value: advertisingData.count), offset: 3)
        }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(advertisingHandle)
        writer.writeUInt8(operation.rawValue)
        writer.writeUInt8(shouldNotFragment ? 1 : 0)
        writer.writeUInt8(UInt8(truncatingIfNeeded: advertisingData.count))
        writer.writeBytes(advertisingData)
    }

    public var description: String {
        "\(Self.opcode.displayName): handle \(advertisingHandle), \(operation), "
            + (shouldNotFragment ? "do not fragment, " : "") + CommandFormat.data(advertisingData)
    }
}

/// One set in LE Set Extended Advertising Enable.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.56
public struct LEExtendedAdvertisingSetEnable: Hashable, Sendable, CustomStringConvertible {
    public var advertisingHandle: UInt8
    /// Duration in 10 ms units; 0 advertises until disabled.
    public var duration: UInt16
    /// Max_Extended_Advertising_Events; 0 for no maximum.
    public var maxExtendedAdvertisingEvents: UInt8

    public init(advertisingHandle: UInt8, duration: UInt16 = 0, maxExtendedAdvertisingEvents: UInt8 = 0) {
        self.advertisingHandle = advertisingHandle
        self.duration = duration
        self.maxExtendedAdvertisingEvents = maxExtendedAdvertisingEvents
    }

    public var description: String {
        var text = "handle \(advertisingHandle)"
        if duration != 0 { text += " for \(CommandFormat.tenMilliseconds(duration))" }
        if maxExtendedAdvertisingEvents != 0 { text += " max \(maxExtendedAdvertisingEvents) events" }
        return text
    }
}

/// HCI_LE_Set_Extended_Advertising_Enable: enables or disables advertising sets; with
/// `enable == false` and no sets it disables all of them.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.56
public struct LESetExtendedAdvertisingEnableCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingEnable
    /// Num_Sets range when sets are named (0x01–0x3F).
    public static let maximumSets = 0x3F

    public var enable: Bool
    public var sets: [LEExtendedAdvertisingSetEnable]

    public init(enable: Bool, sets: [LEExtendedAdvertisingSetEnable]) {
        self.enable = enable
        self.sets = sets
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        enable = try r.bool("Enable")
        let at = r.offset
        let count = Int(try r.uint8())
        guard count <= Self.maximumSets, count > 0 || !enable else { throw r.invalidLength("Num_Sets", count, at: at) }
        var sets: [LEExtendedAdvertisingSetEnable] = []
        sets.reserveCapacity(count)
        for _ in 0..<count {
            sets.append(
                LEExtendedAdvertisingSetEnable(
                    advertisingHandle: try LEAdvertisingHandleLimit.read(&r), duration: try r.uint16(),
                    maxExtendedAdvertisingEvents: try r.uint8()))
        }
        self.sets = sets
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        guard sets.count <= Self.maximumSets, !sets.isEmpty || !enable else {
            throw .malformed(
                context: Self.opcode.description, reason: .invalidLength(field: "Num_Sets", value: sets.count),
                offset: 1)
        }
        for (index, set) in sets.enumerated() {
            try LEAdvertisingHandleLimit.check(set.advertisingHandle, in: Self.opcode, offset: 2 + 4 * index)
        }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(enable ? 1 : 0)
        writer.writeUInt8(UInt8(truncatingIfNeeded: sets.count))
        for set in sets {
            writer.writeUInt8(set.advertisingHandle)
            writer.writeUInt16LE(set.duration)
            writer.writeUInt8(set.maxExtendedAdvertisingEvents)
        }
    }

    public var description: String {
        let what = enable ? "enable" : "disable"
        if sets.isEmpty { return "\(Self.opcode.displayName): \(what) all sets" }
        return "\(Self.opcode.displayName): \(what) " + sets.map(\.description).joined(separator: "; ")
    }
}
