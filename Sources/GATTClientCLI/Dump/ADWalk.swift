import BLE
import Bluetooth
import HCI

/// Non-allocating checks over advertising data, for counting without building
/// `AdvertisingData`: a walk over the Length octets that applies the same rules as
/// `AdvertisingData.init(_:)` and `ADStructure.init?(type:data:)`.
///
/// Agreement with `AdvertisingData.isWellFormed` is tested on every report of the shared
/// captures and on random data (`DumpADWalkTests`).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §11; Core Specification Supplement 11, Part A
enum ADWalk {
    /// Whether `AdvertisingData(bytes).isWellFormed`: no Length runs past the end and every
    /// structure of a known type has the shape its type requires. A zero Length ends the data
    /// early (the rest is padding, not a problem).
    static func isWellFormed(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let count = buffer.count
        while index < count {
            let length = Int(buffer[index])
            if length == 0 { return true }
            guard length <= count - index - 1 else { return false }
            let type = buffer[index + 1]
            let dataCount = length - 1
            guard hasValidShape(type: type, dataCount: dataCount, lastOctet: dataCount > 0 ? buffer[index + length] : 0)
            else { return false }
            index += 1 + length
        }
        return true
    }

    static func isWellFormed(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBufferPointer { isWellFormed($0) }
    }

    static func isWellFormed(_ bytes: [UInt8]) -> Bool { isWellFormed(bytes[...]) }

    /// Whether a structure of AD type `type` with `dataCount` data octets (the last being
    /// `lastOctet`) parses as its typed `ADStructure`; unknown types always do (as `.other`).
    @inline(__always)
    static func hasValidShape(type: UInt8, dataCount n: Int, lastOctet: UInt8) -> Bool {
        switch type {
        case 0x01, 0x0A, 0x1C: return n == 1  // Flags, TX Power Level, LE Role
        case 0x02, 0x03, 0x14: return n % 2 == 0  // 16-bit UUID lists, solicitation
        case 0x04, 0x05, 0x1F: return n % 4 == 0  // 32-bit UUID lists, solicitation
        case 0x06, 0x07, 0x15: return n % 16 == 0  // 128-bit UUID lists, solicitation
        case 0x12: return n == 4  // Peripheral Connection Interval Range
        case 0x16: return n >= 2  // Service Data - 16-bit UUID
        case 0x20: return n >= 4  // Service Data - 32-bit UUID
        case 0x21: return n >= 16  // Service Data - 128-bit UUID
        case 0x17, 0x18: return n > 0 && n % 6 == 0  // Public / Random Target Address
        case 0x19, 0x1A: return n == 2  // Appearance, Advertising Interval
        case 0x1B: return n == 7 && AddressType(rawValue: lastOctet) != nil  // LE Bluetooth Device Address
        case 0xFF: return n >= 2  // Manufacturer Specific Data
        default: return true  // names, URI and unknown types: any length
        }
    }
}
