import Bluetooth

// The advertising reports' and AD structures' descriptions, written into a byte buffer: the
// `description` of each of these types is made from these (one text, two ways to get it).

extension LEAdvertisingReport {
    /// Appends `description`.
    public func writeText(to text: inout [UInt8]) {
        text.appendString(eventType.description)
        text.append(UInt8(ascii: " "))
        address.writeText(to: &text)
        text.appendText(" (")
        text.appendString(addressType.description)
        text.appendText(") rssi ")
        writeRSSI(rssi, notAvailable: Self.rssiNotAvailable, to: &text)
        writeData(data, to: &text)
    }
}

extension LEExtendedAdvertisingEventType {
    /// Appends `description`.
    public func writeText(to text: inout [UInt8]) {
        if let name = legacyPDUName {
            text.appendText("legacy ")
            text.appendString(name)
            return
        }
        // Words joined by spaces.
        var first = true
        func part(_ word: StaticString) {
            if !first { text.append(UInt8(ascii: " ")) }
            first = false
            text.appendText(word)
        }
        if isConnectable { part("connectable") }
        if isScannable { part("scannable") }
        if isDirected { part("directed") }
        if isScanResponse { part("scan response") }
        if isLegacy { part("legacy") }
        if first { part("non-connectable") }
        if dataStatus != .complete {
            text.append(UInt8(ascii: " "))
            text.appendString(dataStatus.description)
        }
    }
}

extension LEExtendedAdvertisingReport {
    /// Appends `description`.
    public func writeText(to text: inout [UInt8]) {
        eventType.writeText(to: &text)
        text.append(UInt8(ascii: " "))
        address.writeText(to: &text)
        text.appendText(" (")
        text.appendString(addressType.description)
        text.appendText(") ")
        text.appendString(primaryPHY.description)
        if secondaryPHY != .none {
            text.append(UInt8(ascii: "/"))
            text.appendString(secondaryPHY.description)
        }
        if advertisingSID != Self.noADI {
            text.appendText(" SID ")
            text.appendDecimal(advertisingSID)
        }
        if txPower != Self.notAvailable {
            text.appendText(" tx ")
            text.appendDecimal(txPower)
            text.appendText(" dBm")
        }
        text.appendText(" rssi ")
        writeRSSI(rssi, notAvailable: Self.notAvailable, to: &text)
        if periodicAdvertisingInterval != 0 {
            text.appendText(" periodic ")
            writeMilliseconds(Int(periodicAdvertisingInterval) * 125, scale: 100, to: &text)
        }
        if eventType.isDirected {
            text.appendText(" to ")
            directAddress.writeText(to: &text)
            text.appendText(" (")
            text.appendString(directAddressType.description)
            text.append(UInt8(ascii: ")"))
        }
        writeData(data, to: &text)
    }
}

extension ADFlags {
    /// Appends `description`.
    public func writeText(to text: inout [UInt8]) {
        var first = true
        func part(_ word: StaticString) {
            if !first { text.appendText(", ") }
            first = false
            text.appendText(word)
        }
        if contains(.leLimitedDiscoverableMode) { part("LE Limited Discoverable") }
        if contains(.leGeneralDiscoverableMode) { part("LE General Discoverable") }
        if contains(.brEdrNotSupported) { part("BR/EDR Not Supported") }
        if contains(.simultaneousLEAndBREDR) { part("LE and BR/EDR simultaneous") }
        let rest = rawValue & 0xF0
        if rest != 0 {
            part("reserved ")
            text.appendPrefixedHex(rest, digits: 2)
        }
        if first { text.appendText("none") }
    }
}

extension ADStructure {
    /// Appends `description`.
    public func writeText(to text: inout [UInt8]) {
        func list(_ uuids: [BluetoothUUID]) {
            for (index, uuid) in uuids.enumerated() {
                if index > 0 { text.appendText(", ") }
                uuid.writeText(to: &text)
            }
        }
        switch self {
        case .flags(let flags):
            text.appendText("Flags: ")
            flags.writeText(to: &text)
        case .incompleteServiceUUIDs(_, let uuids), .completeServiceUUIDs(_, let uuids), .serviceSolicitationUUIDs(_, let uuids):
            text.appendString(type.description)
            text.appendText(": ")
            list(uuids)
        case .shortenedLocalName(let bytes), .completeLocalName(let bytes):
            writeName(type: type, bytes[...], to: &text)
        case .txPowerLevel(let power):
            text.appendText("Tx Power Level: ")
            text.appendDecimal(power)
            text.appendText(" dBm")
        case .peripheralConnectionIntervalRange(let low, let high):
            text.appendText("Peripheral Connection Interval Range: ")
            text.appendPrefixedHex(low, digits: 4)
            text.appendText("–")
            text.appendPrefixedHex(high, digits: 4)
        case .serviceData(let uuid, let bytes):
            text.appendText("Service Data ")
            uuid.writeText(to: &text)
            text.appendText(": ")
            text.appendHexBytes(bytes)
        case .appearance(let value):
            text.appendText("Appearance: ")
            text.appendPrefixedHex(value, digits: 4)
        case .publicTargetAddresses(let list), .randomTargetAddresses(let list):
            text.appendString(type.description)
            text.appendText(": ")
            for (index, address) in list.enumerated() {
                if index > 0 { text.appendText(", ") }
                address.writeText(to: &text)
            }
        case .advertisingInterval(let value):
            text.appendText("Advertising Interval: ")
            writeMilliseconds(Int(value) * 625, scale: 1000, to: &text)
        case .leBluetoothDeviceAddress(let address, let type):
            text.appendText("LE Bluetooth Device Address: ")
            address.writeText(to: &text)
            text.appendText(" (")
            text.appendString(type.description)
            text.append(UInt8(ascii: ")"))
        case .leRole(let role):
            text.appendText("LE Role: ")
            text.appendPrefixedHex(role, digits: 2)
        case .uri(let bytes):
            text.appendText("URI: ")
            text.appendHexBytes(bytes)
        case .manufacturerSpecificData(let company, let bytes):
            text.appendText("Manufacturer Specific Data: company ")
            text.appendPrefixedHex(company, digits: 4)
            text.append(UInt8(ascii: " "))
            text.appendHexBytes(bytes)
        case .other(let type, let bytes):
            text.appendString(type.description)
            text.appendText(": ")
            text.appendHexBytes(bytes)
        }
    }
}

/// `Complete Local Name: …`, the name as `String(decoding:as:)` reads it (invalid UTF-8 becomes
/// U+FFFD).
private func writeName(type: ADType, _ bytes: ArraySlice<UInt8>, to text: inout [UInt8]) {
    text.appendString(type.description)
    text.appendText(": ")
    if bytes.allSatisfy({ $0 < 0x80 }) {
        text.append(contentsOf: bytes)
    } else {
        text.appendString(String(decoding: bytes, as: UTF8.self))
    }
}

/// `-45 dBm`, or `n/a` for the not-available value.
private func writeRSSI(_ rssi: Int8, notAvailable: Int8, to text: inout [UInt8]) {
    if rssi == notAvailable {
        text.appendText("n/a")
    } else {
        text.appendDecimal(rssi)
        text.appendText(" dBm")
    }
}

/// ` data 0201…` or ` no data`.
private func writeData(_ data: [UInt8], to text: inout [UInt8]) {
    if data.isEmpty {
        text.appendText(" no data")
    } else {
        text.appendText(" data ")
        text.appendHexBytes(data)
    }
}

/// `hciMillisecondsText`'s text: `12.50 ms`.
func writeMilliseconds(_ value: Int, scale: Int, to text: inout [UInt8]) {
    let hundredths = value * 100 / scale
    text.appendDecimal(hundredths / 100)
    text.append(UInt8(ascii: "."))
    text.appendDecimal(UInt64(hundredths % 100), width: 2)
    text.appendText(" ms")
}

extension Array where Element == UInt8 {
    /// The text as a String.
    var asText: String { String(decoding: self, as: UTF8.self) }
}

extension ADStructure {
    /// Appends the text of the structure of AD type `type` with data `data`, as
    /// `ADStructure(type:data:)` then `writeText(to:)` give it, without building the value
    /// (no array per structure: the text dump's hot path). Returns false, having written
    /// nothing, when the data does not have the shape the type requires (the caller then
    /// writes it as `.other`, as `AdvertisingData` keeps it).
    public static func writeText(type: ADType, data: ArraySlice<UInt8>, to text: inout [UInt8]) -> Bool {
        let start = text.count
        if writeTextOrPart(type: type, data: data, to: &text) { return true }
        text.removeSubrange(start...)
        return false
    }

    /// `writeText(type:data:to:)`, which may leave part of a refused structure's text.
    private static func writeTextOrPart(type: ADType, data: ArraySlice<UInt8>, to text: inout [UInt8]) -> Bool {
        let n = data.count
        var reader = ByteReader(data)
        func uuids(_ width: Int) -> Bool {
            guard n % width == 0 else { return false }
            text.appendString(type.description)
            text.appendText(": ")
            var first = true
            while !reader.isAtEnd {
                guard let uuid = try? BluetoothUUID(parsing: &reader, width: width) else { return false }
                if !first { text.appendText(", ") }
                first = false
                uuid.writeText(to: &text)
            }
            return true
        }
        switch type.rawValue {
        case 0x01:
            guard n == 1 else { return false }
            text.appendText("Flags: ")
            ADFlags(rawValue: data[data.startIndex]).writeText(to: &text)
        case 0x02, 0x03, 0x14: return uuids(2)
        case 0x04, 0x05, 0x1F: return uuids(4)
        case 0x06, 0x07, 0x15: return uuids(16)
        case 0x08, 0x09:
            writeName(type: type, data, to: &text)
        case 0x0A:
            guard n == 1 else { return false }
            text.appendText("Tx Power Level: ")
            text.appendDecimal(Int8(bitPattern: data[data.startIndex]))
            text.appendText(" dBm")
        case 0x16, 0x20, 0x21:
            let width = type.rawValue == 0x16 ? 2 : type.rawValue == 0x20 ? 4 : 16
            guard n >= width, let uuid = try? BluetoothUUID(parsing: &reader, width: width) else { return false }
            text.appendText("Service Data ")
            uuid.writeText(to: &text)
            text.appendText(": ")
            text.appendHexBytes(data.dropFirst(width))
        case 0x19:
            guard n == 2, let value = try? reader.readUInt16LE() else { return false }
            text.appendText("Appearance: ")
            text.appendPrefixedHex(value, digits: 4)
        case 0xFF:
            guard n >= 2, let company = try? reader.readUInt16LE() else { return false }
            text.appendText("Manufacturer Specific Data: company ")
            text.appendPrefixedHex(company, digits: 4)
            text.append(UInt8(ascii: " "))
            text.appendHexBytes(data.dropFirst(2))
        default:
            // The rarer types: through the value.
            guard let structure = ADStructure(type: type, data: data) else { return false }
            structure.writeText(to: &text)
        }
        return true
    }
}
