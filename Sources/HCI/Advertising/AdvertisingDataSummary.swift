import Bluetooth

/// What a scanner shows for a device: the typed AD structures of its advertising data and scan
/// response merged into one view. Later data wins per key (a complete name over a shortened one,
/// service data per UUID, manufacturer data per company).
public struct AdvertisingDataSummary: Hashable, Sendable {
    public struct ServiceData: Hashable, Sendable {
        public var uuid: BluetoothUUID
        public var data: [UInt8]
        public init(uuid: BluetoothUUID, data: [UInt8]) {
            self.uuid = uuid
            self.data = data
        }
    }

    public struct ManufacturerData: Hashable, Sendable {
        /// Company Identifier (Assigned Numbers §7).
        public var companyID: UInt16
        public var data: [UInt8]
        public init(companyID: UInt16, data: [UInt8]) {
            self.companyID = companyID
            self.data = data
        }
    }

    public var flags: ADFlags?
    /// Local name (trailing NUL padding removed); complete if `isCompleteName`.
    public var name: String?
    public var isCompleteName = false
    /// Service UUIDs from every list, in order of first appearance, without duplicates.
    public var serviceUUIDs: [BluetoothUUID] = []
    public var solicitedServiceUUIDs: [BluetoothUUID] = []
    public var serviceData: [ServiceData] = []
    public var manufacturerData: [ManufacturerData] = []
    /// Tx Power Level in dBm.
    public var txPowerLevel: Int8?
    public var appearance: UInt16?

    public init() {}

    public init(_ data: AdvertisingData) {
        merge(data)
    }

    /// Adds `data` (e.g. a scan response after the advertising data).
    public mutating func merge(_ data: AdvertisingData) {
        for structure in data.structures { merge(structure) }
    }

    public mutating func merge(_ structure: ADStructure) {
        switch structure {
        case .flags(let value): flags = value
        case .incompleteServiceUUIDs(_, let uuids), .completeServiceUUIDs(_, let uuids):
            for uuid in uuids where !serviceUUIDs.contains(uuid) { serviceUUIDs.append(uuid) }
        case .serviceSolicitationUUIDs(_, let uuids):
            for uuid in uuids where !solicitedServiceUUIDs.contains(uuid) { solicitedServiceUUIDs.append(uuid) }
        case .shortenedLocalName(let bytes):
            if !isCompleteName { name = Self.text(bytes) }
        case .completeLocalName(let bytes):
            name = Self.text(bytes)
            isCompleteName = true
        case .txPowerLevel(let value): txPowerLevel = value
        case .serviceData(let uuid, let bytes):
            let entry = ServiceData(uuid: uuid, data: bytes)
            if let index = serviceData.firstIndex(where: { $0.uuid == uuid }) {
                serviceData[index] = entry
            } else {
                serviceData.append(entry)
            }
        case .manufacturerSpecificData(let company, let bytes):
            let entry = ManufacturerData(companyID: company, data: bytes)
            if let index = manufacturerData.firstIndex(where: { $0.companyID == company }) {
                manufacturerData[index] = entry
            } else {
                manufacturerData.append(entry)
            }
        case .appearance(let value): appearance = value
        default: break
        }
    }

    static func text(_ bytes: [UInt8]) -> String {
        var end = bytes.endIndex
        while end > bytes.startIndex, bytes[end - 1] == 0 { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}
