import Bluetooth
import Testing

@testable import GATT

@Suite("GATT SIG and vendor UUID names")
struct GATTNamesTests {
    static let known: [(String, String, GATTNames.Kind)] = [
        ("1800", "Generic Access", .service),
        ("1801", "Generic Attribute", .service),
        ("180A", "Device Information", .service),
        ("180F", "Battery", .service),
        ("180D", "Heart Rate", .service),
        ("1826", "Fitness Machine", .service),
        ("181A", "Environmental Sensing", .service),
        ("2800", "Primary Service", .declaration),
        ("2803", "Characteristic", .declaration),
        ("2902", "Client Characteristic Configuration", .descriptor),
        ("2901", "Characteristic User Description", .descriptor),
        ("2A19", "Battery Level", .characteristic),
        ("2A05", "Service Changed", .characteristic),
        ("2A29", "Manufacturer Name String", .characteristic),
        ("2A37", "Heart Rate Measurement", .characteristic),
        ("2ACC", "Fitness Machine Feature", .characteristic),
        ("2AD2", "Indoor Bike Data", .characteristic),
        ("2B2A", "Database Hash", .characteristic),
        ("2B3A", "Server Supported Features", .characteristic),
        ("2A6E", "Temperature", .characteristic),
        ("00002A19-0000-1000-8000-00805F9B34FB", "Battery Level", .characteristic),
        ("F000AA00-0451-4000-B000-000000000000", "SensorTag IR Temperature", .service),
        ("F000AA01-0451-4000-B000-000000000000", "SensorTag IR Temperature Data", .characteristic),
        ("F000AA02-0451-4000-B000-000000000000", "SensorTag IR Temperature Config", .characteristic),
        ("F000AA03-0451-4000-B000-000000000000", "SensorTag IR Temperature Period", .characteristic),
        ("F000AA44-0451-4000-B000-000000000000", "SensorTag Barometer Period", .characteristic),
        ("F000AA64-0451-4000-B000-000000000000", "SensorTag IO", .service),
        ("F000AA81-0451-4000-B000-000000000000", "SensorTag Movement Data", .characteristic),
        ("FFE0", "SensorTag Simple Keys", .service),
        ("FFE1", "SensorTag Simple Keys Data", .characteristic),
        ("6E400001-B5A3-F393-E0A9-E50E24DCCA9E", "Nordic UART Service", .service),
        ("6E400002-B5A3-F393-E0A9-E50E24DCCA9E", "Nordic UART RX", .characteristic),
        ("6e400003-b5a3-f393-e0a9-e50e24dcca9e", "Nordic UART TX", .characteristic),
    ]

    @Test(arguments: known)
    func knownName(_ text: String, _ name: String, _ kind: GATTNames.Kind) throws {
        let uuid = try #require(BluetoothUUID(text))
        #expect(GATTNames.name(for: uuid) == name)
        #expect(GATTNames.entry(for: uuid)?.kind == kind)
    }

    @Test func unknownUUIDs() {
        #expect(GATTNames.name(for: 0x0000) == nil)
        #expect(GATTNames.name(for: 0x2A0B) == nil)
        #expect(GATTNames.name(for: BluetoothUUID("F000AA04-0451-4000-B000-000000000000")!) == nil)
        #expect(GATTNames.name(for: BluetoothUUID("6E400004-B5A3-F393-E0A9-E50E24DCCA9E")!) == nil)
        #expect(GATTNames.name(for: .bit32(0x0001_180F)) == nil)
        // A 32-bit alias of a 16-bit number is the same UUID.
        #expect(GATTNames.name(for: .bit32(0x0000_180F)) == "Battery")
    }

    /// Every SIG line parsed, each in the block its number belongs to, with a clean name.
    @Test func tableIntegrity() {
        let lines = GATTNames.sigTable.split(separator: "\n")
        #expect(GATTNames.sig.count == lines.count)
        #expect(GATTNames.sig.count > 300)
        for (value, entry) in GATTNames.sig {
            let expected: GATTNames.Kind
            switch value {
            case 0x1800...0x18FF: expected = .service
            case 0x2800...0x28FF: expected = .declaration
            case 0x2900...0x29FF: expected = .descriptor
            default: expected = .characteristic
            }
            #expect(entry.kind == expected, "\(hex4(value))")
            #expect(!entry.name.isEmpty && entry.name.first != " " && entry.name.last != " ")
            #expect(!entry.isVendor)
        }
        let all = GATTNames.allEntries
        #expect(Set(all.map(\.uuid)).count == all.count)
        #expect(GATTNames.vendor.count == 34 + 3)
    }
}
