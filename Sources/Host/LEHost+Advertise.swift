import ATT
import Bluetooth
import HCI
import L2CAP

/// What `LEHost.advertise(_:)` puts on the air.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.5–§7.8.9 (legacy), §7.8.53–§7.8.56 (extended)
public struct LEAdvertisingParameters: Hashable, Sendable {
    /// AdvData (at most 31 octets: legacy PDUs are used on both command sets).
    public var advertisingData: [UInt8]
    /// ScanRspData (at most 31 octets).
    public var scanResponseData: [UInt8]
    /// Advertising_Interval_Min/Max in 0.625 ms units (0x0020–0x4000); 100–150 ms by default.
    public var intervalMin: UInt16 = 0x00A0
    public var intervalMax: UInt16 = 0x00F0
    /// ADV_IND when true (a central may connect); else ADV_SCAN_IND with scan response data,
    /// ADV_NONCONN_IND without.
    public var connectable = true
    /// Advertise from this random (static) address instead of the controller's public one.
    public var randomAddress: BluetoothAddress?
    /// Connections accepted at once; advertising resumes while fewer are up.
    public var maximumConnections = 1

    public init(advertisingData: [UInt8], scanResponseData: [UInt8] = []) {
        self.advertisingData = advertisingData
        self.scanResponseData = scanResponseData
    }

    /// Why the controller would refuse these parameters, `nil` when they are valid.
    public var invalidity: String? {
        if advertisingData.count > 31 { return "advertising data is \(advertisingData.count) octets (at most 31)" }
        if scanResponseData.count > 31 { return "scan response data is \(scanResponseData.count) octets (at most 31)" }
        guard (0x0020...0x4000).contains(intervalMin), (0x0020...0x4000).contains(intervalMax),
            intervalMin <= intervalMax
        else { return "advertising interval \(intervalMin)–\(intervalMax) outside 0x0020–0x4000 or reversed" }
        if maximumConnections < 1 { return "maximum connections must be at least 1" }
        return nil
    }

    /// The legacy advertising type these parameters ask for.
    var legacyType: LEAdvertisingType {
        if connectable { return .connectableUndirected }
        return scanResponseData.isEmpty ? .nonConnectableUndirected : .scannableUndirected
    }

    /// The same PDUs as legacy advertising event properties of an extended set.
    var extendedProperties: LEAdvertisingEventProperties {
        if connectable { return [.connectable, .scannable, .useLegacyPDUs] }
        return scanResponseData.isEmpty ? [.useLegacyPDUs] : [.scannable, .useLegacyPDUs]
    }
}
