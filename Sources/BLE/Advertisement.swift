import Bluetooth
import HCI
import Host

/// What to scan for: an empty filter sees every device.
public struct ScanOptions: Sendable {
    /// Devices advertising at least one of these service UUIDs (in their list or their
    /// service data); empty: any.
    public var services: [BluetoothUUID]
    /// Devices whose advertised name contains this text (case-insensitive); nil: any.
    public var name: String?
    /// Devices heard at this RSSI (dBm) or stronger; nil: any.
    public var minimumRSSI: Int?
    /// Active scanning (scan requests, so scan responses are merged in) or passive.
    public var active: Bool
    /// The scan ends by itself after this long; nil: when the caller stops iterating.
    public var duration: Duration?
    /// Every advertising report as it comes, each with only its own data (no merging, no
    /// de-duplication: a gateway forwarding what the air carries); false: a device when first
    /// seen and when its merged data changes.
    public var everyReport = false

    /// A scan filter and its length.
    public init(
        services: [BluetoothUUID] = [], name: String? = nil, minimumRSSI: Int? = nil, active: Bool = true,
        duration: Duration? = nil
    ) {
        self.services = services
        self.name = name
        self.minimumRSSI = minimumRSSI
        self.active = active
        self.duration = duration
    }

    /// Whether `advertisement` passes this filter.
    func matches(_ advertisement: Advertisement) -> Bool {
        if let minimumRSSI, advertisement.rssi < minimumRSSI { return false }
        if let name {
            guard let advertised = advertisement.name, advertised.lowercased().contains(name.lowercased()) else {
                return false
            }
        }
        if !services.isEmpty {
            let advertised = advertisement.serviceUUIDs + advertisement.serviceData.map(\.uuid)
            guard services.contains(where: { wanted in advertised.contains(wanted) }) else { return false }
        }
        return true
    }
}

/// Manufacturer Specific Data (AD type 0xFF): a company identifier (`companyID`) and its bytes
/// (`data`).
/// - SeeAlso: Core Specification Supplement, Part A, §1.4
public typealias ManufacturerData = AdvertisingDataSummary.ManufacturerData

/// Service Data (AD types 0x16, 0x20, 0x21): a service UUID (`uuid`) and its bytes (`data`).
/// - SeeAlso: Core Specification Supplement, Part A, §1.11
public typealias ServiceData = AdvertisingDataSummary.ServiceData

/// One device as a scan sees it: its advertising and scan response merged.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §11 (advertising and scan response data format)
public struct Advertisement: Hashable, Sendable {
    /// Its address and address type.
    public var peer: PeerAddress
    /// The complete or shortened local name.
    public var name: String?
    /// The RSSI of the last report, in dBm (127 when the controller could not measure it).
    public var rssi: Int
    /// Whether it accepts connections (connectable advertising).
    public var isConnectable: Bool
    /// The service UUIDs it lists (complete and incomplete lists, 16-, 32- and 128-bit).
    public var serviceUUIDs: [BluetoothUUID]
    /// Its manufacturer specific data.
    public var manufacturerData: [ManufacturerData]
    /// Its service data.
    public var serviceData: [ServiceData]
    /// The TX power it advertises (AD type 0x0A) or the controller reported, in dBm.
    public var txPower: Int?
    /// The advertising data followed by the scan response data, as received.
    public var data: [UInt8]
    /// The bonded identity behind ``peer`` when it is a resolvable private address an IRK of
    /// ours resolves (the device's address changes; its identity does not); nil otherwise.
    public var identity: PeerAddress?
    /// Whether this is one scan response on its own (``ScanOptions/everyReport``); false for a
    /// merged device and for advertising reports.
    public var isScanResponse = false

    /// An advertisement with every field given.
    public init(
        peer: PeerAddress, name: String? = nil, rssi: Int, isConnectable: Bool, serviceUUIDs: [BluetoothUUID] = [],
        manufacturerData: [ManufacturerData] = [], serviceData: [ServiceData] = [], txPower: Int? = nil,
        data: [UInt8] = []
    ) {
        self.peer = peer
        self.name = name
        self.rssi = rssi
        self.isConnectable = isConnectable
        self.serviceUUIDs = serviceUUIDs
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.txPower = txPower
        self.data = data
    }

    /// The merged view of a device the host's scan aggregator keeps.
    /// One raw report as it came: its own AD structures only.
    package init?(report: ScanReport) {
        guard let type = report.addressType.addressType else { return nil }
        let summary = AdvertisingData(report.data).summary
        self.init(
            peer: PeerAddress(address: report.address, type: type), name: summary.name, rssi: Int(report.rssi ?? 127),
            isConnectable: report.isConnectable, serviceUUIDs: summary.serviceUUIDs,
            manufacturerData: summary.manufacturerData, serviceData: summary.serviceData,
            txPower: (summary.txPowerLevel ?? report.txPower).map(Int.init), data: report.data)
        isScanResponse = report.isScanResponse
    }

    package init(_ device: DiscoveredDevice) {
        self.init(
            peer: PeerAddress(address: device.address, type: device.addressType), name: device.name,
            rssi: Int(device.rssi ?? 127), isConnectable: device.isConnectable, serviceUUIDs: device.serviceUUIDs,
            manufacturerData: device.manufacturerData, serviceData: device.serviceData,
            txPower: device.txPower.map(Int.init), data: device.mergedData)
    }
}
