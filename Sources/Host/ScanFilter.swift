import Bluetooth
import HCI
import L2CAP

/// Which advertisers a scan shows (`scan --name`, `--service`, `--min-rssi`): every condition
/// given must hold; none given lets everything through.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §11 (AD types: Local Name, Service UUIDs, Service Data)
public struct ScanFilter: Hashable, Sendable {
    /// Text the device's name must contain, letter case ignored.
    public var name: String? { didSet { lowercasedName = name?.lowercased() } }
    /// `name` lower-cased once, not per device.
    private var lowercasedName: String?
    /// A service the device lists among its Service UUIDs or its Service Data.
    public var service: BluetoothUUID?
    /// The weakest RSSI shown, in dBm (devices without an RSSI pass).
    public var minimumRSSI: Int?
    /// A Company Identifier the device's Manufacturer Specific Data must carry (`--manufacturer`).
    public var manufacturer: UInt16?

    public init(name: String? = nil, service: BluetoothUUID? = nil, minimumRSSI: Int? = nil) {
        self.name = name
        lowercasedName = name?.lowercased()
        self.service = service
        self.minimumRSSI = minimumRSSI
    }

    /// True when no condition is given.
    public var isEmpty: Bool { name == nil && service == nil && minimumRSSI == nil && manufacturer == nil }

    /// Whether a merged device (ADV and SCAN_RSP data together) passes.
    public func matches(_ device: DiscoveredDevice) -> Bool {
        matches(summary: device.summary, rssi: device.rssi)
    }

    /// Whether one raw report passes, on its own data alone (`--all-reports`).
    public func matches(_ report: ScanReport) -> Bool {
        if isEmpty { return true }
        return matches(summary: AdvertisingData(report.data).summary, rssi: report.rssi)
    }

    private func matches(summary: AdvertisingDataSummary, rssi: Int8?) -> Bool {
        if let lowercasedName,
            !(summary.name.map { lowercasedName.isEmpty || $0.lowercased().contains(lowercasedName) } ?? false)
        {
            return false
        }
        if let service, !summary.serviceUUIDs.contains(service), !summary.serviceData.contains(where: { $0.uuid == service }) {
            return false
        }
        if let minimumRSSI, let rssi, Int(rssi) < minimumRSSI { return false }
        if let manufacturer, !summary.manufacturerData.contains(where: { $0.companyID == manufacturer }) { return false }
        return true
    }

    /// `text` anywhere in `name`, letter case ignored (Unicode lower-casing; accents are not
    /// folded).
    public static func name(_ name: String, contains text: String) -> Bool {
        text.isEmpty || name.lowercased().contains(text.lowercased())
    }
}
