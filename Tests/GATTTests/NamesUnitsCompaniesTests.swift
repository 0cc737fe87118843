import Bluetooth
import Testing

@testable import GATT

@Suite("GATT names: units and company identifiers")
struct NamesUnitsCompaniesTests {
    @Test(arguments: [
        (UInt16(0x2700), "unitless"),
        (0x2701, "length (metre)"),
        (0x2705, "thermodynamic temperature (kelvin)"),
        (0x2724, "pressure (pascal)"),
        (0x272F, "Celsius temperature (degree Celsius)"),
        (0x27AD, "percentage"),
        (0x27AC, "thermodynamic temperature (degree Fahrenheit)"),
        (0x27C8, "Electrical Apparent Power (volt ampere)"),
    ])
    func units(code: UInt16, name: String) {
        #expect(GATTNames.unit(code) == name)
        #expect(GATTNames.unit(for: .bit16(code)) == name)
    }

    @Test func unitTableShape() {
        let codes = GATTNames.allUnitCodes
        #expect(codes.count >= 120)
        #expect(codes.allSatisfy { $0 >= 0x2700 && $0 <= 0x27FF })
        #expect(GATTNames.unit(0x2A19) == nil)
        #expect(GATTNames.unit(0x27FF) == nil)
        // A unit UUID spelt as 128 bits on the Bluetooth base.
        #expect(GATTNames.unit(for: BluetoothUUID("0000272F-0000-1000-8000-00805F9B34FB")!) == GATTNames.unit(0x272F))
    }

    @Test(arguments: [
        (UInt16(0x004C), "Apple, Inc."),
        (0x0006, "Microsoft"),
        (0x0059, "Nordic Semiconductor ASA"),
        (0x000D, "Texas Instruments Inc."),
        (0x00E0, "Google"),
        (0x0075, "Samsung Electronics Co. Ltd."),
        (0x02E5, "Espressif Systems (Shanghai) Co., Ltd."),
        (0x0822, "adafruit industries"),
    ])
    func companies(identifier: UInt16, name: String) {
        #expect(GATTNames.company(identifier) == name)
        #expect(CompanyIdentifiers.name(for: identifier) == name)
    }

    @Test func unknownCompany() {
        #expect(CompanyIdentifiers.name(for: 0xFFFF) == nil)
        #expect(CompanyIdentifiers.allIdentifiers.count >= 30)
        #expect(CompanyIdentifiers.allIdentifiers == CompanyIdentifiers.allIdentifiers.sorted())
    }
}
