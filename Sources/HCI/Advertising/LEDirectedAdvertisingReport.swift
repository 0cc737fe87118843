import Bluetooth

/// One report of an HCI_LE_Directed_Advertising_Report event (a directed advertisement to a
/// resolvable private address the controller could not resolve).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.11
public struct LEDirectedAdvertisingReport: Hashable, Sendable, CustomStringConvertible {
    /// Event_Type: always 0x01 (ADV_DIRECT_IND).
    public var eventType: LEAdvertisingEventType
    /// Address_Type of the advertiser: 0x00–0x03.
    public var addressType: LEAddressType
    public var address: BluetoothAddress
    /// Direct_Address_Type: 0x01 (random).
    public var directAddressType: LEAddressType
    /// Direct_Address: the resolvable private address the advertisement is directed to.
    public var directAddress: BluetoothAddress
    /// RSSI in dBm (−127…+20); 127 means not available.
    public var rssi: Int8

    public init(
        eventType: LEAdvertisingEventType = .advDirectInd, addressType: LEAddressType, address: BluetoothAddress,
        directAddressType: LEAddressType, directAddress: BluetoothAddress, rssi: Int8
    ) {
        self.eventType = eventType
        self.addressType = addressType
        self.address = address
        self.directAddressType = directAddressType
        self.directAddress = directAddress
        self.rssi = rssi
    }

    public var description: String {
        "\(eventType) \(address) (\(addressType)) to \(directAddress) (\(directAddressType)) rssi \(rssi == 127 ? "n/a" : "\(rssi) dBm")"
    }
}

/// HCI_LE_Directed_Advertising_Report: Num_Reports (0x01–0x19) reports of 16 octets each.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.11
public struct LEDirectedAdvertisingReportEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.directedAdvertisingReport
    static let context = "HCI_LE_Directed_Advertising_Report"
    static let reportLength = 16

    /// `reports.count` is Num_Reports.
    public var reports: [LEDirectedAdvertisingReport]

    public init(reports: [LEDirectedAdvertisingReport]) { self.reports = reports }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        let countOffset = reader.offset
        let count = Int(try reader.hciUInt8(c))
        guard LEAdvertisingReportEvent.reportCountRange.contains(count) else {
            throw HCIError.malformed(context: c, reason: .invalidValue(field: "Num_Reports", value: count), offset: countOffset)
        }
        guard reader.remainingCount == count * Self.reportLength else {
            throw HCIError.malformed(context: c, reason: .invalidLength(field: "Num_Reports", value: count), offset: countOffset)
        }
        var reports: [LEDirectedAdvertisingReport] = []
        reports.reserveCapacity(count)
        for _ in 0..<count {
            let eventType = LEAdvertisingEventType(rawValue: try reader.hciUInt8(c))
            let addressType = LEAddressType(rawValue: try reader.hciUInt8(c))
            let address = try reader.hciAddress(c)
            let directAddressType = LEAddressType(rawValue: try reader.hciUInt8(c))
            let directAddress = try reader.hciAddress(c)
            let rssi = try reader.hciInt8(c)
            reports.append(LEDirectedAdvertisingReport(
                eventType: eventType, addressType: addressType, address: address,
                directAddressType: directAddressType, directAddress: directAddress, rssi: rssi))
        }
        try reader.hciExpectEnd(c)
        self.reports = reports
    }

    public var encodedLength: Int { 1 + reports.count * Self.reportLength }

    public func write(to writer: inout ByteWriter) throws(HCIError) {
        guard LEAdvertisingReportEvent.reportCountRange.contains(reports.count) else {
            throw HCIError.invalidArgument(context: Self.context, reason: "\(reports.count) reports, must be 1–25")
        }
        writer.writeUInt8(UInt8(reports.count))
        for report in reports {
            writer.writeUInt8(report.eventType.rawValue)
            writer.writeUInt8(report.addressType.rawValue)
            report.address.write(littleEndian: &writer)
            writer.writeUInt8(report.directAddressType.rawValue)
            report.directAddress.write(littleEndian: &writer)
            writer.writeInt8(report.rssi)
        }
    }

    public var description: String {
        "LE Directed Advertising Report: " + reports.map(\.description).joined(separator: "; ")
    }
}
