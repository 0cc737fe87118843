import Bluetooth

/// Event_Type of an extended advertising report: a 16-bit field of properties plus the data
/// status in bits 5–6.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.13
public struct LEExtendedAdvertisingEventType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let connectable = LEExtendedAdvertisingEventType(rawValue: 1 << 0)
    public static let scannable = LEExtendedAdvertisingEventType(rawValue: 1 << 1)
    public static let directed = LEExtendedAdvertisingEventType(rawValue: 1 << 2)
    public static let scanResponse = LEExtendedAdvertisingEventType(rawValue: 1 << 3)
    /// The report is of a legacy advertising PDU.
    public static let legacy = LEExtendedAdvertisingEventType(rawValue: 1 << 4)

    /// Legacy PDU event types as reported in this field.
    public static let legacyAdvInd = LEExtendedAdvertisingEventType(rawValue: 0x13)
    public static let legacyAdvDirectInd = LEExtendedAdvertisingEventType(rawValue: 0x15)
    public static let legacyAdvScanInd = LEExtendedAdvertisingEventType(rawValue: 0x12)
    public static let legacyAdvNonconnInd = LEExtendedAdvertisingEventType(rawValue: 0x10)
    public static let legacyScanRspToAdvInd = LEExtendedAdvertisingEventType(rawValue: 0x1B)
    public static let legacyScanRspToAdvScanInd = LEExtendedAdvertisingEventType(rawValue: 0x1A)

    /// Data status, bits 5–6.
    public struct DataStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue & 0b11 }
        /// 0b00: complete.
        public static let complete = DataStatus(rawValue: 0b00)
        /// 0b01: incomplete, more data to come.
        public static let incompleteMoreData = DataStatus(rawValue: 0b01)
        /// 0b10: incomplete, data truncated, no more to come.
        public static let truncated = DataStatus(rawValue: 0b10)

        public var description: String {
            switch rawValue {
            case 0b00: return "complete"
            case 0b01: return "incomplete, more data to come"
            case 0b10: return "incomplete, truncated"
            default: return "reserved data status"
            }
        }
    }

    public func contains(_ flag: LEExtendedAdvertisingEventType) -> Bool { rawValue & flag.rawValue == flag.rawValue }

    public var isConnectable: Bool { contains(.connectable) }
    public var isScannable: Bool { contains(.scannable) }
    public var isDirected: Bool { contains(.directed) }
    public var isScanResponse: Bool { contains(.scanResponse) }
    public var isLegacy: Bool { contains(.legacy) }

    public var dataStatus: DataStatus {
        get { DataStatus(rawValue: UInt8(truncatingIfNeeded: rawValue >> 5)) }
        set { rawValue = rawValue & ~0x0060 | UInt16(newValue.rawValue) << 5 }
    }

    /// The legacy PDU name (`ADV_IND` …) when `isLegacy` and the combination is one the spec lists.
    public var legacyPDUName: String? {
        switch rawValue & ~0x0060 {
        case 0x13: return "ADV_IND"
        case 0x15: return "ADV_DIRECT_IND"
        case 0x12: return "ADV_SCAN_IND"
        case 0x10: return "ADV_NONCONN_IND"
        case 0x1B, 0x1A: return "SCAN_RSP"
        default: return nil
        }
    }

    public var description: String {
        var text: [UInt8] = []
        writeText(to: &text)
        return text.asText
    }
}

/// One report of an HCI_LE_Extended_Advertising_Report event.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.13
public struct LEExtendedAdvertisingReport: Hashable, Sendable, CustomStringConvertible {
    public var eventType: LEExtendedAdvertisingEventType
    /// Address_Type: 0x00–0x03, or 0xFF (anonymous: no address provided).
    public var addressType: LEAddressType
    public var address: BluetoothAddress
    /// Primary_PHY: LE 1M or LE Coded.
    public var primaryPHY: LEPHY
    /// Secondary_PHY: 0x00 when no packets were on the secondary advertising channel.
    public var secondaryPHY: LEPHY
    /// Advertising_SID 0x00–0x0F; 0xFF: no ADI field provided.
    public var advertisingSID: UInt8
    /// TX_Power in dBm (−127…+20); 127 means not available.
    public var txPower: Int8
    /// RSSI in dBm (−127…+20); 127 means not available.
    public var rssi: Int8
    /// Periodic_Advertising_Interval in units of 1.25 ms; 0x0000 = no periodic advertising.
    public var periodicAdvertisingInterval: UInt16
    /// Direct_Address_Type: 0x00–0x03, 0xFE (random, controller could not resolve).
    public var directAddressType: LEAddressType
    public var directAddress: BluetoothAddress
    /// Data (Data_Length octets): one fragment of AD structures; see `ExtendedAdvertisingReassembler`.
    public var data: [UInt8]

    /// SID value meaning no ADI field was present.
    public static let noADI: UInt8 = 0xFF
    /// TX_Power / RSSI value meaning "not available".
    public static let notAvailable: Int8 = 127
    /// Octets of a report before its data.
    public static let fixedLength = 24

    public init(
        eventType: LEExtendedAdvertisingEventType, addressType: LEAddressType, address: BluetoothAddress,
        primaryPHY: LEPHY = .le1M, secondaryPHY: LEPHY = .none, advertisingSID: UInt8 = noADI,
        txPower: Int8 = notAvailable, rssi: Int8, periodicAdvertisingInterval: UInt16 = 0,
        directAddressType: LEAddressType = .public, directAddress: BluetoothAddress = .zero, data: [UInt8]
    ) {
        self.eventType = eventType
        self.addressType = addressType
        self.address = address
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.txPower = txPower
        self.rssi = rssi
        self.periodicAdvertisingInterval = periodicAdvertisingInterval
        self.directAddressType = directAddressType
        self.directAddress = directAddress
        self.data = data
    }

    public var dataStatus: LEExtendedAdvertisingEventType.DataStatus { eventType.dataStatus }

    /// The AD structures of `data`; never fails, problems are in the result. For a fragment
    /// (data status "more to come") reassemble first.
    public var advertisingData: AdvertisingData { AdvertisingData(data) }

    public var description: String {
        var text: [UInt8] = []
        writeText(to: &text)
        return text.asText
    }
}

/// HCI_LE_Extended_Advertising_Report: Num_Reports (0x01–0x0A) reports, each 24 octets plus
/// its Data, one after the other.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.13
public struct LEExtendedAdvertisingReportEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.extendedAdvertisingReport
    static let context = "HCI_LE_Extended_Advertising_Report"
    /// Num_Reports range.
    public static let reportCountRange = 1...0x0A

    /// `reports.count` is Num_Reports.
    public var reports: [LEExtendedAdvertisingReport]

    public init(reports: [LEExtendedAdvertisingReport]) { self.reports = reports }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        let countOffset = reader.offset
        let count = Int(try reader.hciUInt8(c))
        guard Self.reportCountRange.contains(count) else {
            throw HCIError.malformed(context: c, reason: .invalidValue(field: "Num_Reports", value: count), offset: countOffset)
        }
        guard reader.remainingCount >= count * LEExtendedAdvertisingReport.fixedLength else {
            throw HCIError.malformed(context: c, reason: .invalidLength(field: "Num_Reports", value: count), offset: countOffset)
        }
        var reports: [LEExtendedAdvertisingReport] = []
        reports.reserveCapacity(count)
        for _ in 0..<count {
            let eventType = LEExtendedAdvertisingEventType(rawValue: try reader.hciUInt16(c))
            let addressType = LEAddressType(rawValue: try reader.hciUInt8(c))
            let address = try reader.hciAddress(c)
            let primaryPHY = LEPHY(rawValue: try reader.hciUInt8(c))
            let secondaryPHY = LEPHY(rawValue: try reader.hciUInt8(c))
            let sid = try reader.hciUInt8(c)
            let txPower = try reader.hciInt8(c)
            let rssi = try reader.hciInt8(c)
            let interval = try reader.hciUInt16(c)
            let directAddressType = LEAddressType(rawValue: try reader.hciUInt8(c))
            let directAddress = try reader.hciAddress(c)
            let length = Int(try reader.hciUInt8(c))
            let data = Array(try reader.hciBytes(length, c))
            reports.append(LEExtendedAdvertisingReport(
                eventType: eventType, addressType: addressType, address: address, primaryPHY: primaryPHY,
                secondaryPHY: secondaryPHY, advertisingSID: sid, txPower: txPower, rssi: rssi,
                periodicAdvertisingInterval: interval, directAddressType: directAddressType,
                directAddress: directAddress, data: data))
        }
        try reader.hciExpectEnd(c)
        self.reports = reports
    }

    public var encodedLength: Int { 1 + reports.reduce(0) { $0 + LEExtendedAdvertisingReport.fixedLength + $1.data.count } }

    /// Throws when Num_Reports is out of range or the event would not fit the 255-octet limit.
    public func write(to writer: inout ByteWriter) throws(HCIError) {
        let c = Self.context
        guard Self.reportCountRange.contains(reports.count) else {
            throw HCIError.invalidArgument(context: c, reason: "\(reports.count) reports, must be 1–10")
        }
        guard encodedLength + 1 <= 255 else {
            throw HCIError.invalidArgument(context: c, reason: "\(encodedLength + 1) parameter octets, at most 255")
        }
        writer.writeUInt8(UInt8(reports.count))
        for report in reports {
            writer.writeUInt16LE(report.eventType.rawValue)
            writer.writeUInt8(report.addressType.rawValue)
            report.address.write(littleEndian: &writer)
            writer.writeUInt8(report.primaryPHY.rawValue)
            writer.writeUInt8(report.secondaryPHY.rawValue)
            writer.writeUInt8(report.advertisingSID)
            writer.writeInt8(report.txPower)
            writer.writeInt8(report.rssi)
            writer.writeUInt16LE(report.periodicAdvertisingInterval)
            writer.writeUInt8(report.directAddressType.rawValue)
            report.directAddress.write(littleEndian: &writer)
            writer.writeUInt8(UInt8(report.data.count))
            writer.writeBytes(report.data)
        }
    }

    public var description: String {
        "LE Extended Advertising Report: " + reports.map(\.description).joined(separator: "; ")
    }
}
