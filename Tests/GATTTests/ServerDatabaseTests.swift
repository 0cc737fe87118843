import ATT
import Bluetooth
import Testing

@testable import GATT

/// The attribute database: layout, handles, declarations and the Database Hash.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3, §7.3 and Appendix B
@Suite("GATT server: attribute database")
struct ServerDatabaseTests {
    /// The example database of Core 5.4 Vol 3 Part G Appendix B: GAP (Device Name writable,
    /// Appearance), GATT (Service Changed + CCCD, Client Supported Features, Database Hash),
    /// Glucose including the secondary Battery service, with its Extended Properties.
    static func appendixB() -> [ServiceDefinition] {
        [
            StandardServices.genericAccess(deviceName: "Device", deviceNameWritable: true),
            StandardServices.genericAttribute(),
            ServiceDefinition(
                uuid: 0x1808, includes: [.service(0x180F)],
                characteristics: [
                    CharacteristicDefinition(
                        uuid: 0x2A18, properties: [.read, .indicate, .extendedProperties],
                        descriptors: [.clientConfiguration(), .extendedProperties([])])
                ]),
            ServiceDefinition(
                uuid: 0x180F, isPrimary: false,
                characteristics: [CharacteristicDefinition(uuid: 0x2A19, properties: [.read], value: [100])]),
        ]
    }

    @Test("Appendix B: the hash message and the Database Hash F1CA2D48ECF58BAC8A8830BBB9FBA990")
    func appendixBHash() throws {
        let database = try AttributeDatabase(services: Self.appendixB())
        // The message of Appendix B (blocks M0–M6), as its handles/types/values lay out.
        let message = DatabaseHash.message(
            attributes: database.attributes.map {
                DatabaseHash.Attribute(handle: $0.handle, type: $0.type, value: $0.value)
            })
        let expected =
            "010000280018020003280a0300002a04000328020500012a0600002801180700"
            + "0328200800052a090002290a0003280a0b00292b0c000328020d002a2b0e0000"
            + "2808180f000228140016000f1810000328a21100182a12000229130000290000"
            + "140001280f1815000328021600192a"
        #expect(Hex.encode(message).lowercased() == expected)
        #expect(database.hash == 0xF1CA_2D48_ECF5_8BAC_8A88_30BB_B9FB_A990)
        // Served least significant octet first at the Database Hash value (0x000D).
        #expect(database.attribute(at: 0x0D)?.value == DatabaseHash.characteristicValue(database.hash))
        var server = GATTServer(database: database)
        let client = server.connect()
        #expect(server.answer("0a 0d00", from: client) == "0b90a9fbb9bb30888aac8bf5ec482dcaf1")
    }

    @Test("a value change does not change the hash; a structure change does")
    func hashTracksStructure() throws {
        var database = try AttributeDatabase(services: Self.appendixB())
        let before = database.hash
        try database.setValue([1, 2, 3], handle: 3)
        #expect(database.hash == before)
        var definitions = Self.appendixB()
        definitions[2].characteristics[0].properties.insert(.notify)
        #expect(try AttributeDatabase(services: definitions).hash != before)
    }

    @Test("handles are assigned in order and the model matches")
    func assignedHandles() throws {
        let database = try ServerFixture.database()
        #expect(database.attributes.map(\.handle) == Array(1...0x13))
        let services = database.model.services
        #expect(services.map(\.startHandle) == [0x01, 0x04, 0x08, 0x0D, 0x10])
        #expect(services.map(\.endHandle) == [0x03, 0x07, 0x0C, 0x0F, 0x13])
        #expect(services.map(\.isPrimary) == [true, true, true, false, true])
        #expect(
            services[4].includes == [IncludedService(handle: 0x11, startHandle: 0x0D, endHandle: 0x0F, uuid: 0x180F)])
        let characteristic = try #require(database.model.characteristic(valueHandle: 0x0A))
        #expect(characteristic.declarationHandle == 0x09)
        #expect(characteristic.endHandle == 0x0C)
        #expect(characteristic.descriptors.map(\.handle) == [0x0B, 0x0C])
        #expect(database.clientConfigurationHandle(ofValue: 0x0A) == 0x0B)
        #expect(database.attribute(at: 0x08)?.groupEndHandle == 0x0C)
        #expect(database.attribute(at: 0x09)?.value == [0x1A, 0x0A, 0x00] + ServerFixture.u2.littleEndianBytes)
        try database.model.validate()
    }

    @Test("given handles are kept, gaps and End Group Handles included")
    func givenHandles() throws {
        let database = try AttributeDatabase(services: [
            ServiceDefinition(
                uuid: 0x1800, handle: 0x0100, endHandle: 0x01FF,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: 0x2A00, properties: [.read], value: [0x41], declarationHandle: 0x0110, valueHandle: 0x0112
                    )
                ]),
            ServiceDefinition(uuid: 0x1801),
            ServiceDefinition(uuid: 0x180A, handle: 0xFFFF),
        ])
        #expect(database.attributes.map(\.handle) == [0x0100, 0x0110, 0x0112, 0x0200, 0xFFFF])
        #expect(database.attribute(at: 0x0110)?.value == [0x02, 0x12, 0x01, 0x00, 0x2A])
        #expect(database.model.services.map(\.endHandle) == [0x01FF, 0x0200, 0xFFFF])
        var server = GATTServer(database: database)
        let client = server.connect()
        #expect(
            server.answer("10 0100 ffff 0028", from: client) == "1106" + "0001ff010018" + "000200020118"
                + "ffffffff0a18")
        #expect(server.answer("0a 1101", from: client) == "010a110101")
    }

    @Test("inconsistent definitions are refused")
    func refused() {
        #expect(throws: GATTError.self) {
            _ = try AttributeDatabase(services: [
                ServiceDefinition(uuid: 0x1800, handle: 5), ServiceDefinition(uuid: 0x1801, handle: 5),
            ])
        }
        #expect(throws: GATTError.self) {
            _ = try AttributeDatabase(services: [
                ServiceDefinition(
                    uuid: 0x1800, handle: 0xFFFF,
                    characteristics: [
                        CharacteristicDefinition(uuid: 0x2A00, properties: [.read])
                    ])
            ])
        }
        #expect(throws: GATTError.self) {
            _ = try AttributeDatabase(services: [ServiceDefinition(uuid: 0x1800, includes: [.service(0x1234)])])
        }
        #expect(throws: GATTError.self) {
            _ = try AttributeDatabase(services: [
                ServiceDefinition(
                    uuid: 0x1800, handle: 1, endHandle: 1,
                    characteristics: [
                        CharacteristicDefinition(uuid: 0x2A00, properties: [.read])
                    ])
            ])
        }
        #expect(throws: GATTError.self) {
            _ = try AttributeDatabase(services: [
                ServiceDefinition(
                    uuid: 0x1800,
                    characteristics: [
                        CharacteristicDefinition(uuid: 0x2A00, properties: [.read], value: [1, 2, 3], maximumLength: 2)
                    ])
            ])
        }
        #expect(throws: GATTError.self) {
            _ = try AttributeDatabase(services: [ServiceDefinition(uuid: 0x1800, handle: 0)])
        }
    }

    @Test("the standard services")
    func standardServices() throws {
        let database = try AttributeDatabase(services: [
            StandardServices.genericAccess(deviceName: "Pen", appearance: 0x03C0),
            StandardServices.genericAttribute(serverSupportedFeatures: 0x01),
        ])
        var server = GATTServer(database: database)
        let client = server.connect()
        #expect(server.answer("0a 0300", from: client) == "0b50656e")
        #expect(server.answer("0a 0500", from: client) == "0bc003")
        #expect(server.answer("12 0300 41", from: client) == "0112030003")
        // Service Changed is not readable; its CCCD is.
        #expect(server.answer("0a 0800", from: client) == "010a080002")
        #expect(server.answer("0a 0900", from: client) == "0b0000")
        // Client Supported Features 0x000B, Database Hash 0x000D, Server Supported Features 0x000F.
        #expect(server.answer("0a 0f00", from: client) == "0b01")
        #expect(database.valueHandle(of: GATTUUID.databaseHash) == 0x0D)
        #expect(database.attribute(at: 0x0D)?.value == database.databaseHashValue)
    }

    @Test("32-bit UUIDs travel in their 128-bit form")
    func uuid32() throws {
        let database = try AttributeDatabase(services: [ServiceDefinition(uuid: .bit32(0x1234_5678))])
        var server = GATTServer(database: database)
        let client = server.connect()
        #expect(
            server.answer("10 0100 ffff 0028", from: client)
                == "1114 0100 0100 fb349b5f8000008000100000 78563412".filter { $0 != " " })
    }
}
