import Bluetooth
import Testing

@testable import GATT

@Suite("GATT database model and lookups")
struct GATTDatabaseTests {
    /// Two IR-temperature-like services with the same characteristic UUIDs, plus GAP.
    static let database = GATTDatabase(services: [
        Service(
            uuid: 0xAA00, startHandle: 0x0010, endHandle: 0x0018,
            characteristics: [
                Characteristic(
                    uuid: 0xAA01, declarationHandle: 0x0011, valueHandle: 0x0012, endHandle: 0x0014,
                    properties: [.read, .notify],
                    descriptors: [Descriptor(handle: 0x0013, uuid: 0x2902), Descriptor(handle: 0x0014, uuid: 0x2901)]
                ),
                Characteristic(
                    uuid: 0xAA02, declarationHandle: 0x0015, valueHandle: 0x0016, properties: [.read, .write]),
                Characteristic(
                    uuid: 0xAA03, declarationHandle: 0x0017, valueHandle: 0x0018, properties: [.read, .write]),
            ]),
        Service(
            uuid: 0x1800, startHandle: 0x0001, endHandle: 0x0005,
            characteristics: [
                Characteristic(uuid: 0x2A00, declarationHandle: 0x0002, valueHandle: 0x0003, properties: .read),
                Characteristic(uuid: 0x2A01, declarationHandle: 0x0004, valueHandle: 0x0005, properties: .read),
            ]),
        Service(
            uuid: 0xAA00, startHandle: 0x0020, endHandle: 0x0024, isPrimary: false,
            includes: [IncludedService(handle: 0x0021, startHandle: 0x0001, endHandle: 0x0005, uuid: 0x1800)],
            characteristics: [
                Characteristic(
                    uuid: 0xAA01, declarationHandle: 0x0022, valueHandle: 0x0023, endHandle: 0x0024,
                    properties: .notify, descriptors: [Descriptor(handle: 0x0024, uuid: 0x2902)])
            ]),
    ])

    @Test func sortedAndValid() throws {
        #expect(Self.database.services.map(\.startHandle) == [0x0001, 0x0010, 0x0020])
        try Self.database.validate()
    }

    @Test func lookupsByUUID() throws {
        let db = Self.database
        #expect(db.services(uuid: 0xAA00).count == 2)
        #expect(db.characteristics(uuid: 0xAA01).map(\.valueHandle) == [0x0012, 0x0023])
        #expect(throws: GATTError.ambiguousUUID(0xAA01, handles: [0x0012, 0x0023])) {
            _ = try db.characteristic(uuid: 0xAA01)
        }
        #expect(throws: GATTError.notFound(0xBEEF)) { _ = try db.characteristic(uuid: 0xBEEF) }
        #expect(try db.characteristic(uuid: 0xAA02).valueHandle == 0x0016)
        // The 128-bit spelling of a 16-bit UUID finds the same characteristic.
        #expect(try db.characteristic(uuid: .bit128(BluetoothUUID.bit16(0x2A00).uuid128)).valueHandle == 0x0003)
    }

    @Test func lookupsByHandle() {
        let db = Self.database
        #expect(db.service(containing: 0x0000) == nil)
        #expect(db.service(containing: 0x0001)?.uuid == 0x1800)
        #expect(db.service(containing: 0x0005)?.uuid == 0x1800)
        #expect(db.service(containing: 0x0006) == nil)
        #expect(db.service(containing: 0x0018)?.startHandle == 0x0010)
        #expect(db.service(containing: 0xFFFF) == nil)
        #expect(db.characteristic(valueHandle: 0x0012)?.uuid == 0xAA01)
        #expect(db.characteristic(valueHandle: 0x0011) == nil)
        #expect(db.characteristic(handle: 0x0011)?.valueHandle == 0x0012)
        #expect(db.characteristic(handle: 0x0013) == nil)
        #expect(db.characteristic(containing: 0x0014)?.valueHandle == 0x0012)
        #expect(db.descriptor(handle: 0x0013)?.uuid == 0x2902)
        #expect(db.descriptor(handle: 0x0012) == nil)
        #expect(db.characteristic(valueHandle: 0x0012)?.clientConfigurationHandle == 0x0013)
        #expect(db.characteristic(valueHandle: 0x0016)?.clientConfigurationHandle == nil)
        #expect(db.characteristic(valueHandle: 0x0016)?.descriptorRange == nil)
        #expect(db.characteristic(valueHandle: 0x0012)?.descriptorRange == 0x0013...0x0014)
    }

    @Test func attributeKinds() throws {
        let db = Self.database
        guard case .service(let s) = db.attribute(at: 0x0020) else {
            Issue.record("no service")
            return
        }
        #expect(!s.isPrimary)
        guard case .include(let include, _) = db.attribute(at: 0x0021) else {
            Issue.record("no include")
            return
        }
        #expect(include.startHandle == 0x0001)
        guard case .characteristicDeclaration(let c) = db.attribute(at: 0x0022) else {
            Issue.record("no declaration")
            return
        }
        #expect(c.valueHandle == 0x0023)
        guard case .characteristicValue = db.attribute(at: 0x0023) else {
            Issue.record("no value")
            return
        }
        guard case .descriptor(let d, _) = db.attribute(at: 0x0024) else {
            Issue.record("no descriptor")
            return
        }
        #expect(d.uuid == 0x2902)
        #expect(db.attribute(at: 0x0019) == nil)
    }

    static let invalid: [(Service, GATTError)] = [
        (
            Service(uuid: 0x1800, startHandle: 5, endHandle: 4),
            .inconsistentDatabase(handle: 5, reason: "service ends before it starts")
        ),
        (
            Service(uuid: 0x1800, startHandle: 0, endHandle: 4),
            .inconsistentDatabase(handle: 0, reason: "service starts at handle 0x0000")
        ),
        (
            Service(
                uuid: 0x1800, startHandle: 1, endHandle: 4,
                characteristics: [Characteristic(uuid: 0x2A00, declarationHandle: 2, valueHandle: 5, properties: .read)]
            ),
            .inconsistentDatabase(handle: 2, reason: "characteristic outside its service")
        ),
        (
            Service(
                uuid: 0x1800, startHandle: 1, endHandle: 9,
                characteristics: [Characteristic(uuid: 0x2A00, declarationHandle: 2, valueHandle: 2, properties: .read)]
            ),
            .inconsistentDatabase(handle: 2, reason: "characteristic outside its service")
        ),
        (
            Service(
                uuid: 0x1800, startHandle: 1, endHandle: 9,
                characteristics: [
                    Characteristic(uuid: 0x2A00, declarationHandle: 2, valueHandle: 3, endHandle: 4, properties: .read),
                    Characteristic(uuid: 0x2A01, declarationHandle: 4, valueHandle: 5, properties: .read),
                ]),
            .inconsistentDatabase(handle: 4, reason: "characteristics overlap")
        ),
        (
            Service(
                uuid: 0x1800, startHandle: 1, endHandle: 9,
                characteristics: [
                    Characteristic(
                        uuid: 0x2A00, declarationHandle: 2, valueHandle: 3, endHandle: 4, properties: .read,
                        descriptors: [Descriptor(handle: 3, uuid: 0x2902)])
                ]),
            .inconsistentDatabase(handle: 3, reason: "descriptor outside its characteristic")
        ),
        (
            Service(
                uuid: 0x1800, startHandle: 1, endHandle: 9,
                includes: [IncludedService(handle: 10, startHandle: 20, endHandle: 30, uuid: nil)]),
            .inconsistentDatabase(handle: 10, reason: "include outside its service")
        ),
    ]

    @Test(arguments: invalid)
    func invalidDatabase(_ service: Service, _ error: GATTError) {
        #expect(throws: error) { try GATTDatabase(services: [service]).validate() }
    }

    @Test func overlappingServices() {
        let db = GATTDatabase(services: [
            Service(uuid: 0x1800, startHandle: 1, endHandle: 5), Service(uuid: 0x1801, startHandle: 5, endHandle: 9),
        ])
        #expect(throws: GATTError.inconsistentDatabase(handle: 5, reason: "services overlap")) { try db.validate() }
    }
}
