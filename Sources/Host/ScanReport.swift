import Bluetooth
import HCI
import L2CAP

/// One advertising report as the controller gave it (legacy, directed or a reassembled extended
/// chain), normalised for the scan stream.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.2, §7.7.65.11, §7.7.65.13
public struct ScanReport: Hashable, Sendable, CustomStringConvertible {
    /// The PDU kind: `ADV_IND`, `ADV_DIRECT_IND`, `ADV_SCAN_IND`, `ADV_NONCONN_IND`, `SCAN_RSP`,
    /// or `EXT` for extended (non-legacy) advertising.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let advInd = Kind(rawValue: "ADV_IND")
        public static let advDirectInd = Kind(rawValue: "ADV_DIRECT_IND")
        public static let advScanInd = Kind(rawValue: "ADV_SCAN_IND")
        public static let advNonconnInd = Kind(rawValue: "ADV_NONCONN_IND")
        public static let scanRsp = Kind(rawValue: "SCAN_RSP")
        public static let extended = Kind(rawValue: "EXT")

        public var description: String { rawValue }
    }

    public var kind: Kind
    /// Address_Type as reported (public, random, or their identity forms; anonymous 0xFF).
    public var addressType: LEAddressType
    public var address: BluetoothAddress
    /// RSSI in dBm; `nil` when the controller reported 127 (not available).
    public var rssi: Int8?
    /// TX power in dBm from an extended report; `nil` when not available.
    public var txPower: Int8?
    /// Whether the advertising may be answered by a connection request.
    public var isConnectable: Bool
    /// Whether this is a scan response (to a legacy or an extended scannable PDU).
    public var isScanResponse: Bool
    /// The AD octets of the report (whole, for an extended chain).
    public var data: [UInt8]

    public init(
        kind: Kind, addressType: LEAddressType, address: BluetoothAddress, rssi: Int8?, txPower: Int8? = nil,
        isConnectable: Bool, isScanResponse: Bool, data: [UInt8]
    ) {
        self.kind = kind
        self.addressType = addressType
        self.address = address
        self.rssi = rssi
        self.txPower = txPower
        self.isConnectable = isConnectable
        self.isScanResponse = isScanResponse
        self.data = data
    }

    /// A legacy LE Advertising Report.
    public init(_ report: LEAdvertisingReport) {
        let kind: Kind
        switch report.eventType {
        case .advInd: kind = .advInd
        case .advDirectInd: kind = .advDirectInd
        case .advScanInd: kind = .advScanInd
        case .advNonconnInd: kind = .advNonconnInd
        case .scanRsp: kind = .scanRsp
        default: kind = Kind(rawValue: report.eventType.description)
        }
        self.init(
            kind: kind, addressType: report.addressType, address: report.address,
            rssi: report.rssi == LEAdvertisingReport.rssiNotAvailable ? nil : report.rssi,
            isConnectable: kind == .advInd || kind == .advDirectInd, isScanResponse: kind == .scanRsp, data: report.data
        )
    }

    /// A whole (reassembled) LE Extended Advertising Report.
    public init(_ report: LEExtendedAdvertisingReport) {
        let type = report.eventType
        let kind: Kind
        if !type.isLegacy {
            kind = .extended
        } else if type.isScanResponse {
            kind = .scanRsp
        } else if type.isDirected {
            kind = .advDirectInd
        } else if type.isConnectable {
            kind = .advInd
        } else if type.isScannable {
            kind = .advScanInd
        } else {
            kind = .advNonconnInd
        }
        self.init(
            kind: kind, addressType: report.addressType, address: report.address,
            rssi: report.rssi == LEExtendedAdvertisingReport.notAvailable ? nil : report.rssi,
            txPower: report.txPower == LEExtendedAdvertisingReport.notAvailable ? nil : report.txPower,
            isConnectable: type.isConnectable, isScanResponse: type.isScanResponse, data: report.data)
    }

    /// An LE Directed Advertising Report (no data).
    public init(_ report: LEDirectedAdvertisingReport) {
        self.init(
            kind: .advDirectInd, addressType: report.addressType, address: report.address,
            rssi: report.rssi == LEAdvertisingReport.rssiNotAvailable ? nil : report.rssi,
            isConnectable: true, isScanResponse: false, data: [])
    }

    public var description: String {
        "\(kind) \(address) (\(addressType)) rssi \(rssi.map { "\($0) dBm" } ?? "n/a") data \(Hex.encode(data))"
    }
}
