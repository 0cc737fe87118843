import Bluetooth

/// One AD structure, typed. A known type whose data does not have the shape its type requires
/// (an odd-length 16-bit UUID list, a two-octet Tx Power Level) is kept as `.other` and flagged
/// in `AdvertisingData.problems`; decoding then re-encoding always gives the same octets.
/// - SeeAlso: Core Specification Supplement 11, Part A, §1; Core Spec 5.4, Vol 3, Part C, §11
public enum ADStructure: Hashable, Sendable, CustomStringConvertible {
    /// Flags (0x01), one octet.
    case flags(ADFlags)
    /// Incomplete List of 16/32/128-bit Service UUIDs (0x02, 0x04, 0x06).
    case incompleteServiceUUIDs(ADUUIDWidth, [BluetoothUUID])
    /// Complete List of 16/32/128-bit Service UUIDs (0x03, 0x05, 0x07).
    case completeServiceUUIDs(ADUUIDWidth, [BluetoothUUID])
    /// Shortened Local Name (0x08), UTF-8 octets as sent.
    case shortenedLocalName([UInt8])
    /// Complete Local Name (0x09), UTF-8 octets as sent.
    case completeLocalName([UInt8])
    /// Tx Power Level (0x0A) in dBm.
    case txPowerLevel(Int8)
    /// Peripheral Connection Interval Range (0x12): units of 1.25 ms; 0xFFFF = no specific value.
    case peripheralConnectionIntervalRange(min: UInt16, max: UInt16)
    /// List of 16/32/128-bit Service Solicitation UUIDs (0x14, 0x1F, 0x15).
    case serviceSolicitationUUIDs(ADUUIDWidth, [BluetoothUUID])
    /// Service Data - 16/32/128-bit UUID (0x16, 0x20, 0x21): the UUID's case gives the width.
    case serviceData(BluetoothUUID, [UInt8])
    /// Appearance (0x19), Assigned Numbers §2.6.
    case appearance(UInt16)
    /// Public Target Address (0x17): one or more addresses.
    case publicTargetAddresses([BluetoothAddress])
    /// Random Target Address (0x18): one or more addresses.
    case randomTargetAddresses([BluetoothAddress])
    /// Advertising Interval (0x1A) in units of 0.625 ms.
    case advertisingInterval(UInt16)
    /// LE Bluetooth Device Address (0x1B): address and its type (bit 0 of the last octet).
    case leBluetoothDeviceAddress(BluetoothAddress, AddressType)
    /// LE Role (0x1C): 0x00 peripheral only, 0x01 central only, 0x02 both (peripheral
    /// preferred), 0x03 both (central preferred).
    case leRole(UInt8)
    /// URI (0x24): scheme code point (UTF-8) then the rest of the URI, octets as sent.
    case uri([UInt8])
    /// Manufacturer Specific Data (0xFF): Company Identifier then data.
    case manufacturerSpecificData(companyID: UInt16, data: [UInt8])
    /// Any other type, or a known type whose data has the wrong shape.
    case other(ADType, [UInt8])

    /// Decodes the data of one structure of `type`. `nil` when a known type's data has the
    /// wrong shape (the caller keeps it as `.other` and reports it).
    public init?(type: ADType, data: ArraySlice<UInt8>) {
        var reader = ByteReader(data)
        func uuids(_ width: ADUUIDWidth) -> [BluetoothUUID]? {
            guard data.count % width.rawValue == 0 else { return nil }
            var list: [BluetoothUUID] = []
            list.reserveCapacity(data.count / width.rawValue)
            while !reader.isAtEnd {
                guard let uuid = try? BluetoothUUID(parsing: &reader, width: width.rawValue) else { return nil }
                list.append(uuid)
            }
            return list
        }
        func addresses() -> [BluetoothAddress]? {
            guard !data.isEmpty, data.count % 6 == 0 else { return nil }
            var list: [BluetoothAddress] = []
            while !reader.isAtEnd {
                guard let address = try? BluetoothAddress(parsingLittleEndian: &reader) else { return nil }
                list.append(address)
            }
            return list
        }
        func serviceData(_ width: ADUUIDWidth) -> ADStructure? {
            guard data.count >= width.rawValue,
                let uuid = try? BluetoothUUID(parsing: &reader, width: width.rawValue)
            else { return nil }
            return .serviceData(uuid, Array(reader.readRemaining()))
        }
        func uint16() -> UInt16? {
            guard data.count == 2 else { return nil }
            return try? reader.readUInt16LE()
        }
        let value: ADStructure?
        switch type.rawValue {
        case 0x01: value = data.count == 1 ? .flags(ADFlags(rawValue: data[data.startIndex])) : nil
        case 0x02: value = uuids(.bits16).map { .incompleteServiceUUIDs(.bits16, $0) }
        case 0x03: value = uuids(.bits16).map { .completeServiceUUIDs(.bits16, $0) }
        case 0x04: value = uuids(.bits32).map { .incompleteServiceUUIDs(.bits32, $0) }
        case 0x05: value = uuids(.bits32).map { .completeServiceUUIDs(.bits32, $0) }
        case 0x06: value = uuids(.bits128).map { .incompleteServiceUUIDs(.bits128, $0) }
        case 0x07: value = uuids(.bits128).map { .completeServiceUUIDs(.bits128, $0) }
        case 0x08: value = .shortenedLocalName(Array(data))
        case 0x09: value = .completeLocalName(Array(data))
        case 0x0A: value = data.count == 1 ? .txPowerLevel(Int8(bitPattern: data[data.startIndex])) : nil
        case 0x12:
            if data.count == 4, let low = try? reader.readUInt16LE(), let high = try? reader.readUInt16LE() {
                value = .peripheralConnectionIntervalRange(min: low, max: high)
            } else {
                value = nil
            }
        case 0x14: value = uuids(.bits16).map { .serviceSolicitationUUIDs(.bits16, $0) }
        case 0x15: value = uuids(.bits128).map { .serviceSolicitationUUIDs(.bits128, $0) }
        case 0x1F: value = uuids(.bits32).map { .serviceSolicitationUUIDs(.bits32, $0) }
        case 0x16: value = serviceData(.bits16)
        case 0x20: value = serviceData(.bits32)
        case 0x21: value = serviceData(.bits128)
        case 0x17: value = addresses().map { .publicTargetAddresses($0) }
        case 0x18: value = addresses().map { .randomTargetAddresses($0) }
        case 0x19: value = uint16().map { .appearance($0) }
        case 0x1A: value = uint16().map { .advertisingInterval($0) }
        case 0x1B:
            if data.count == 7, let address = try? BluetoothAddress(parsingLittleEndian: &reader),
                let typeOctet = try? reader.readUInt8(), let addressType = AddressType(rawValue: typeOctet)
            {
                value = .leBluetoothDeviceAddress(address, addressType)
            } else {
                value = nil
            }
        case 0x1C: value = data.count == 1 ? .leRole(data[data.startIndex]) : nil
        case 0x24: value = .uri(Array(data))
        case 0xFF:
            if data.count >= 2, let company = try? reader.readUInt16LE() {
                value = .manufacturerSpecificData(companyID: company, data: Array(reader.readRemaining()))
            } else {
                value = nil
            }
        default: value = .other(type, Array(data))
        }
        guard let value else { return nil }
        self = value
    }

    /// The AD type this structure is sent with.
    public var type: ADType {
        switch self {
        case .flags: return .flags
        case .incompleteServiceUUIDs(let width, _):
            return ADType(rawValue: width == .bits16 ? 0x02 : width == .bits32 ? 0x04 : 0x06)
        case .completeServiceUUIDs(let width, _):
            return ADType(rawValue: width == .bits16 ? 0x03 : width == .bits32 ? 0x05 : 0x07)
        case .shortenedLocalName: return .shortenedLocalName
        case .completeLocalName: return .completeLocalName
        case .txPowerLevel: return .txPowerLevel
        case .peripheralConnectionIntervalRange: return .peripheralConnectionIntervalRange
        case .serviceSolicitationUUIDs(let width, _):
            return ADType(rawValue: width == .bits16 ? 0x14 : width == .bits32 ? 0x1F : 0x15)
        case .serviceData(let uuid, _):
            return ADType(rawValue: uuid.byteWidth == 2 ? 0x16 : uuid.byteWidth == 4 ? 0x20 : 0x21)
        case .appearance: return .appearance
        case .publicTargetAddresses: return .publicTargetAddress
        case .randomTargetAddresses: return .randomTargetAddress
        case .advertisingInterval: return .advertisingInterval
        case .leBluetoothDeviceAddress: return .leBluetoothDeviceAddress
        case .leRole: return .leRole
        case .uri: return .uri
        case .manufacturerSpecificData: return .manufacturerSpecificData
        case .other(let type, _): return type
        }
    }

    /// The structure's data octets (after the type). Throws when a UUID does not fit the
    /// list's width.
    public func data() throws(HCIError) -> [UInt8] {
        var writer = ByteWriter()
        func writeUUIDs(_ width: ADUUIDWidth, _ uuids: [BluetoothUUID]) throws(HCIError) {
            for uuid in uuids { try Self.write(uuid, width: width, to: &writer) }
        }
        switch self {
        case .flags(let flags): writer.writeUInt8(flags.rawValue)
        case .incompleteServiceUUIDs(let width, let uuids), .completeServiceUUIDs(let width, let uuids),
            .serviceSolicitationUUIDs(let width, let uuids):
            try writeUUIDs(width, uuids)
        case .shortenedLocalName(let bytes), .completeLocalName(let bytes), .uri(let bytes): writer.writeBytes(bytes)
        case .txPowerLevel(let power): writer.writeInt8(power)
        case .peripheralConnectionIntervalRange(let low, let high):
            writer.writeUInt16LE(low)
            writer.writeUInt16LE(high)
        case .serviceData(let uuid, let bytes):
            uuid.write(to: &writer)
            writer.writeBytes(bytes)
        case .appearance(let value), .advertisingInterval(let value): writer.writeUInt16LE(value)
        case .publicTargetAddresses(let list), .randomTargetAddresses(let list):
            for address in list { address.write(littleEndian: &writer) }
        case .leBluetoothDeviceAddress(let address, let type):
            address.write(littleEndian: &writer)
            writer.writeUInt8(type.rawValue)
        case .leRole(let role): writer.writeUInt8(role)
        case .manufacturerSpecificData(let company, let bytes):
            writer.writeUInt16LE(company)
            writer.writeBytes(bytes)
        case .other(_, let bytes): writer.writeBytes(bytes)
        }
        return writer.bytes
    }

    /// Writes Length, AD Type, data. Throws when the data exceeds 254 octets or a UUID does
    /// not fit its list's width.
    public func write(to writer: inout ByteWriter) throws(HCIError) {
        let payload = try data()
        guard payload.count <= 254 else {
            throw HCIError.invalidArgument(context: "AD structure \(type)", reason: "\(payload.count) data octets, at most 254")
        }
        writer.writeUInt8(UInt8(payload.count + 1))
        writer.writeUInt8(type.rawValue)
        writer.writeBytes(payload)
    }

    static func write(_ uuid: BluetoothUUID, width: ADUUIDWidth, to writer: inout ByteWriter) throws(HCIError) {
        switch (width, uuid.shortened) {
        case (.bits16, .bit16(let v)): writer.writeUInt16LE(v)
        case (.bits32, .bit16(let v)): writer.writeUInt32LE(UInt32(v))
        case (.bits32, .bit32(let v)): writer.writeUInt32LE(v)
        case (.bits128, _): writer.writeUInt128LE(uuid.uuid128)
        default:
            throw HCIError.invalidArgument(context: "AD UUID list", reason: "\(uuid) does not fit \(width.rawValue * 8) bits")
        }
    }

    public var description: String {
        var text: [UInt8] = []
        writeText(to: &text)
        return text.asText
    }
}
