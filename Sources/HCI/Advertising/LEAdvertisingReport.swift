import Bluetooth

/// Event_Type of a legacy advertising report: which advertising PDU was received.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.2
public struct LEAdvertisingEventType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x00: connectable and scannable undirected advertising.
    public static let advInd = LEAdvertisingEventType(rawValue: 0x00)
    /// 0x01: connectable directed advertising.
    public static let advDirectInd = LEAdvertisingEventType(rawValue: 0x01)
    /// 0x02: scannable undirected advertising.
    public static let advScanInd = LEAdvertisingEventType(rawValue: 0x02)
    /// 0x03: non-connectable undirected advertising.
    public static let advNonconnInd = LEAdvertisingEventType(rawValue: 0x03)
    /// 0x04: scan response.
    public static let scanRsp = LEAdvertisingEventType(rawValue: 0x04)

    /// `ADV_IND`, `ADV_DIRECT_IND`, `ADV_SCAN_IND`, `ADV_NONCONN_IND`, `SCAN_RSP`.
    public var name: String? {
        switch rawValue {
        case 0x00: return "ADV_IND"
        case 0x01: return "ADV_DIRECT_IND"
        case 0x02: return "ADV_SCAN_IND"
        case 0x03: return "ADV_NONCONN_IND"
        case 0x04: return "SCAN_RSP"
        default: return nil
        }
    }

    public var description: String { name ?? "event type " + hciHexString(rawValue, 2) }
}

/// One report of an HCI_LE_Advertising_Report event.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.2
public struct LEAdvertisingReport: Hashable, Sendable, CustomStringConvertible {
    public var eventType: LEAdvertisingEventType
    /// Address_Type: 0x00–0x03 (0x02/0x03: identity address resolved by the controller).
    public var addressType: LEAddressType
    public var address: BluetoothAddress
    /// Data (Data_Length 0–31 octets): AD structures, decoded lazily by `advertisingData`.
    public var data: [UInt8]
    /// RSSI in dBm (−127…+20); 127 means not available.
    public var rssi: Int8

    /// Largest Data_Length of a legacy report.
    public static let maxDataLength = 31
    /// RSSI value meaning "not available".
    public static let rssiNotAvailable: Int8 = 127

    public init(eventType: LEAdvertisingEventType, addressType: LEAddressType, address: BluetoothAddress, data: [UInt8], rssi: Int8) {
        self.eventType = eventType
        self.addressType = addressType
        self.address = address
        self.data = data
        self.rssi = rssi
    }

    /// The AD structures of `data`; never fails, problems are in the result.
    public var advertisingData: AdvertisingData { AdvertisingData(data) }

    public var description: String {
        var text: [UInt8] = []
        writeText(to: &text)
        return text.asText
    }
}

/// HCI_LE_Advertising_Report: one or more legacy advertising reports (Num_Reports 0x01–0x19).
///
/// Reports follow one another, each complete: Event_Type, Address_Type, Address, Data_Length,
/// Data, RSSI (the per-report layout BlueZ, Zephyr and Wireshark decode and controllers send).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.2
public struct LEAdvertisingReportEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.advertisingReport
    static let context = "HCI_LE_Advertising_Report"
    /// Num_Reports range.
    public static let reportCountRange = 1...0x19

    /// `reports.count` is Num_Reports.
    public var reports: [LEAdvertisingReport]

    public init(reports: [LEAdvertisingReport]) { self.reports = reports }

    /// Parses the subevent parameters (after the subevent code).
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        let countOffset = reader.offset
        let count = Int(try reader.hciUInt8(c))
        guard Self.reportCountRange.contains(count) else {
            throw HCIError.malformed(context: c, reason: .invalidValue(field: "Num_Reports", value: count), offset: countOffset)
        }
        // Each report takes at least 10 octets plus its data.
        guard reader.remainingCount >= count * 10 else {
            throw HCIError.malformed(context: c, reason: .invalidLength(field: "Num_Reports", value: count), offset: countOffset)
        }
        var reports: [LEAdvertisingReport] = []
        reports.reserveCapacity(count)
        for _ in 0..<count {
            let eventType = LEAdvertisingEventType(rawValue: try reader.hciUInt8(c))
            let addressType = LEAddressType(rawValue: try reader.hciUInt8(c))
            let address = try reader.hciAddress(c)
            let lengthOffset = reader.offset
            let length = Int(try reader.hciUInt8(c))
            guard length <= LEAdvertisingReport.maxDataLength else {
                throw HCIError.malformed(context: c, reason: .invalidLength(field: "Data_Length", value: length), offset: lengthOffset)
            }
            let data = Array(try reader.hciBytes(length, c))
            let rssi = try reader.hciInt8(c)
            reports.append(LEAdvertisingReport(eventType: eventType, addressType: addressType, address: address, data: data, rssi: rssi))
        }
        try reader.hciExpectEnd(c)
        self.reports = reports
    }

    public var encodedLength: Int { 1 + reports.reduce(0) { $0 + 10 + $1.data.count } }

    /// Throws when Num_Reports or a Data_Length is out of range, or the event would not fit
    /// the 255-octet parameter limit.
    public func write(to writer: inout ByteWriter) throws(HCIError) {
        let c = Self.context
        guard Self.reportCountRange.contains(reports.count) else {
            throw HCIError.invalidArgument(context: c, reason: "\(reports.count) reports, must be 1–25")
        }
        guard encodedLength + 1 <= 255 else {
            throw HCIError.invalidArgument(context: c, reason: "\(encodedLength + 1) parameter octets, at most 255")
        }
        writer.writeUInt8(UInt8(reports.count))
        for report in reports {
            guard report.data.count <= LEAdvertisingReport.maxDataLength else {
                throw HCIError.invalidArgument(context: c, reason: "Data_Length \(report.data.count), at most 31")
            }
            writer.writeUInt8(report.eventType.rawValue)
            writer.writeUInt8(report.addressType.rawValue)
            report.address.write(littleEndian: &writer)
            writer.writeUInt8(UInt8(report.data.count))
            writer.writeBytes(report.data)
            writer.writeInt8(report.rssi)
        }
    }

    public var description: String {
        "LE Advertising Report: " + reports.map(\.description).joined(separator: "; ")
    }
}
