import Bluetooth
import HCI
import L2CAP

/// A device seen while scanning: its advertising data and scan response merged, with every raw
/// report kept (up to `ScanAggregator.maximumReportsPerDevice`, the oldest dropped first).
public struct DiscoveredDevice: Hashable, Sendable, CustomStringConvertible {
    public var address: BluetoothAddress
    public var addressType: AddressType
    /// RSSI of the latest report that carried one.
    public var rssi: Int8?
    /// The latest advertising data (ADV_* or extended, not scan response).
    public var advertisingData: [UInt8]
    /// The latest scan response data, if a scan response was seen.
    public var scanResponseData: [UInt8]?
    /// Whether the device's latest advertising PDU was connectable.
    public var isConnectable: Bool
    /// TX power from an extended report, when given.
    public var reportedTxPower: Int8?
    /// The merged AD: advertising data then scan response, summarised.
    public var summary: AdvertisingDataSummary
    /// The reports of this device, oldest first (bounded).
    public var reports: [ScanReport]
    /// Reports dropped from `reports` by its bound.
    public var droppedReports: Int

    public init(address: BluetoothAddress, addressType: AddressType) {
        self.address = address
        self.addressType = addressType
        rssi = nil
        advertisingData = []
        scanResponseData = nil
        isConnectable = false
        reportedTxPower = nil
        summary = AdvertisingDataSummary()
        reports = []
        droppedReports = 0
    }

    public var name: String? { summary.name }
    public var serviceUUIDs: [BluetoothUUID] { summary.serviceUUIDs }
    public var serviceData: [AdvertisingDataSummary.ServiceData] { summary.serviceData }
    public var manufacturerData: [AdvertisingDataSummary.ManufacturerData] { summary.manufacturerData }
    /// TX power: the AD TX Power Level, else the extended report's TX_Power.
    public var txPower: Int8? { summary.txPowerLevel ?? reportedTxPower }
    /// The merged AD octets: advertising data followed by the scan response data.
    public var mergedData: [UInt8] { advertisingData + (scanResponseData ?? []) }

    public var description: String {
        "\(address) (\(addressType))" + (name.map { " \"\($0)\"" } ?? "")
            + (rssi.map { " \($0) dBm" } ?? "") + (isConnectable ? " connectable" : "")
    }
}

/// What a scan delivers.
public enum ScanEvent: Hashable, Sendable {
    /// A device seen for the first time.
    case discovered(DiscoveredDevice)
    /// A known device whose merged advertising data (or connectability) changed.
    case updated(DiscoveredDevice)
    /// One raw report (report mode `.allReports`).
    case report(ScanReport)
}

/// Merges advertising reports per device (address and address type), sans-I/O.
///
/// Feed it LE Meta events (`receive(_:)`); legacy reports, directed reports and extended
/// reports (joined by an `ExtendedAdvertisingReassembler` first) are merged: an ADV PDU replaces
/// the device's advertising data, a scan response its scan response data, and the device is
/// reported when first seen and whenever the merged data or its connectability changes (an RSSI
/// change alone is not a change). In `.allReports` mode every report is also emitted raw.
///
/// Bounded: at most `maximumDevices` devices (the one heard least recently is forgotten when a
/// new one arrives), `maximumReportsPerDevice` raw reports kept per device. The default table
/// (4 096 devices, at most ≈10 MB with 16 legacy reports each) holds a crowded hall: with 1 000
/// advertisers in range, the former 512 forgot and rediscovered devices all the time (48% of
/// reports announced a "new" device in `gattbench scan`), each eviction a walk of the table.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §11 (AD and scan response data); Vol 4, Part E, §7.7.65
public struct ScanAggregator: Sendable {
    public enum ReportMode: Hashable, Sendable {
        /// `.discovered` / `.updated` per device.
        case merged
        /// `.report` for every report, and the device events as well.
        case allReports
    }

    public struct Key: Hashable, Sendable {
        public var address: BluetoothAddress
        public var addressType: AddressType
        public init(address: BluetoothAddress, addressType: AddressType) {
            self.address = address
            self.addressType = addressType
        }
    }

    public let mode: ReportMode
    public let maximumDevices: Int
    public let maximumReportsPerDevice: Int

    private var table: [Key: (device: DiscoveredDevice, lastSeen: UInt64)] = [:]
    private var sequence: UInt64 = 0
    private var reassembler: ExtendedAdvertisingReassembler
    /// Devices forgotten because the table was full.
    public private(set) var evictedDevices = 0
    /// Reports that could not be attributed to a device (anonymous advertisers).
    public private(set) var anonymousReports = 0
    /// Extended chains dropped by the reassembler.
    public private(set) var droppedChains = 0

    /// The device table's default bound.
    public static let defaultMaximumDevices = 4096

    public init(mode: ReportMode = .merged, maximumDevices: Int = defaultMaximumDevices, maximumReportsPerDevice: Int = 16) {
        self.mode = mode
        self.maximumDevices = max(1, maximumDevices)
        self.maximumReportsPerDevice = max(1, maximumReportsPerDevice)
        reassembler = ExtendedAdvertisingReassembler()
    }

    /// Devices currently known, in no particular order.
    public var devices: [DiscoveredDevice] { table.values.map(\.device) }

    /// The device with this address and type, if known.
    public func device(_ address: BluetoothAddress, type: AddressType) -> DiscoveredDevice? {
        table[Key(address: address, addressType: type)]?.device
    }

    /// Feeds one LE Meta event; other subevents give nothing.
    public mutating func receive(_ event: LEMetaEvent) -> [ScanEvent] {
        var events: [ScanEvent] = []
        switch event {
        case .advertisingReport(let reports):
            for report in reports.reports { receive(ScanReport(report), into: &events) }
        case .directedAdvertisingReport(let reports):
            for report in reports.reports { receive(ScanReport(report), into: &events) }
        case .extendedAdvertisingReport(let reports):
            for fragment in reports.reports {
                for output in reassembler.receive(fragment) {
                    switch output {
                    case .report(let whole): receive(ScanReport(whole), into: &events)
                    case .dropped: droppedChains += 1
                    }
                }
            }
        default:
            break
        }
        return events
    }

    /// Feeds one normalised report.
    public mutating func receive(_ report: ScanReport) -> [ScanEvent] {
        var events: [ScanEvent] = []
        receive(report, into: &events)
        return events
    }

    private mutating func receive(_ report: ScanReport, into events: inout [ScanEvent]) {
        if mode == .allReports { events.append(.report(report)) }
        guard let type = report.addressType.addressType else {
            anonymousReports += 1
            return
        }
        sequence &+= 1
        let key = Key(address: report.address, addressType: type)
        // Taken out of the table (and its binding consumed) while it changes, so its arrays are
        // uniquely held and not copied on write.
        let known = table.removeValue(forKey: key)?.device
        let isNew = known == nil
        if isNew && table.count >= maximumDevices { evictLeastRecent() }
        var device = (consume known) ?? DiscoveredDevice(address: report.address, addressType: type)
        let before = (device.advertisingData, device.scanResponseData, device.isConnectable)

        if let rssi = report.rssi { device.rssi = rssi }
        if let txPower = report.txPower { device.reportedTxPower = txPower }
        if report.isScanResponse {
            device.scanResponseData = report.data
        } else {
            device.advertisingData = report.data
            device.isConnectable = report.isConnectable
        }
        if device.reports.count >= maximumReportsPerDevice {
            device.reports.removeFirst(device.reports.count - maximumReportsPerDevice + 1)
            device.droppedReports += 1
        }
        device.reports.append(report)

        let changed = isNew || before.0 != device.advertisingData || before.1 != device.scanResponseData || before.2 != device.isConnectable
        if changed {
            var summary = AdvertisingData(device.advertisingData).summary
            if let scanResponse = device.scanResponseData { summary.merge(AdvertisingData(scanResponse)) }
            device.summary = summary
        }
        table[key] = (device, sequence)
        if isNew {
            events.append(.discovered(device))
        } else if changed {
            events.append(.updated(device))
        }
    }

    private mutating func evictLeastRecent() {
        guard let oldest = table.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key else { return }
        table.removeValue(forKey: oldest)
        evictedDevices += 1
    }
}
