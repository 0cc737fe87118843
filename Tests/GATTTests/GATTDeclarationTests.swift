import Bluetooth
import Testing

@testable import GATT

@Suite("GATT declaration and descriptor value codecs")
struct GATTDeclarationTests {
    struct CharacteristicVector: Sendable, CustomTestStringConvertible {
        let hex: String
        let properties: CharacteristicProperties
        let valueHandle: UInt16
        let uuid: BluetoothUUID
        var testDescription: String { hex }
    }

    static let characteristicVectors: [CharacteristicVector] = [
        // service_db_1 of the BlueZ vectors: Device Name, read only.
        .init(hex: "020300002a", properties: .read, valueHandle: 0x0003, uuid: 0x2A00),
        // Manufacturer Name, read + write.
        .init(hex: "0a0700292a", properties: [.read, .write], valueHandle: 0x0007, uuid: 0x2A29),
        // Every property bit.
        .init(
            hex: "ff3412ffff", properties: CharacteristicProperties(rawValue: 0xFF), valueHandle: 0x1234, uuid: 0xFFFF),
        // SensorTag IR temperature data F000AA01-0451-4000-B000-000000000000, read + notify.
        .init(
            hex: "122500" + "000000000000" + "00b0" + "0040" + "5104" + "01aa00f0",
            properties: [.read, .notify], valueHandle: 0x0025,
            uuid: BluetoothUUID("F000AA01-0451-4000-B000-000000000000")!),
    ]

    @Test(arguments: characteristicVectors)
    func characteristicDeclarationRoundTrip(_ vector: CharacteristicVector) throws {
        let bytes = Hex.decode(vector.hex)!
        let declaration = try CharacteristicDeclaration(decoding: bytes)
        #expect(declaration.properties == vector.properties)
        #expect(declaration.valueHandle == vector.valueHandle)
        #expect(declaration.uuid == vector.uuid)
        #expect(declaration.encoded == bytes)
        #expect(declaration.encodedLength == bytes.count)
    }

    @Test func characteristicDeclarationTruncationSweep() {
        let full = Hex.decode("122500000000000000b000405104" + "01aa00f0")!
        for length in 0..<full.count where length != 5 {
            #expect(
                throws: GATTError.invalidAttributeValue(
                    type: GATTUUID.characteristic, handle: 0x0024, reason: .invalidLength(length, allowed: [5, 19]))
            ) {
                _ = try CharacteristicDeclaration(decoding: full.prefix(length), handle: 0x0024)
            }
        }
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        let hex: String
        let error: GATTError
        var testDescription: String { hex }
    }

    static let malformedCharacteristics: [Malformed] = [
        .init(
            hex: "0200000a2a",
            error: .invalidAttributeValue(
                type: GATTUUID.characteristic, handle: nil,
                reason: .zeroHandle(field: "Characteristic Value Attribute Handle"))),
        .init(
            hex: "02030000",
            error: .invalidAttributeValue(
                type: GATTUUID.characteristic, handle: nil, reason: .invalidLength(4, allowed: [5, 19]))),
        .init(
            hex: "020300002a00",
            error: .invalidAttributeValue(
                type: GATTUUID.characteristic, handle: nil, reason: .invalidLength(6, allowed: [5, 19]))),
        // A 32-bit UUID is not allowed in a declaration (7 octets).
        .init(
            hex: "020300aafe0000",
            error: .invalidAttributeValue(
                type: GATTUUID.characteristic, handle: nil, reason: .invalidLength(7, allowed: [5, 19]))),
    ]

    @Test(arguments: malformedCharacteristics)
    func malformedCharacteristicDeclaration(_ vector: Malformed) {
        #expect(throws: vector.error) { _ = try CharacteristicDeclaration(decoding: Hex.decode(vector.hex)!) }
    }

    @Test func serviceDeclaration() throws {
        #expect(try ServiceDeclaration(decoding: [0x0F, 0x18]).uuid == 0x180F)
        let nus = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        let value = ServiceDeclaration(uuid: nus).encoded
        #expect(value.count == 16)
        #expect(value == nus.littleEndianBytes)
        #expect(try ServiceDeclaration(decoding: value).uuid == nus)
        // A 128-bit UUID inside the Base UUID is written in its 16-bit form.
        #expect(ServiceDeclaration(uuid: .bit128(BluetoothUUID.bit16(0x180D).uuid128)).encoded == [0x0D, 0x18])
        for length in [0, 1, 3, 4, 15, 17] {
            #expect(
                throws: GATTError.invalidAttributeValue(
                    type: GATTUUID.primaryService, handle: 7, reason: .invalidLength(length, allowed: [2, 16]))
            ) { _ = try ServiceDeclaration(decoding: [UInt8](repeating: 1, count: length), handle: 7) }
        }
    }

    @Test func includeDeclaration() throws {
        let short = try IncludeDeclaration(decoding: Hex.decode("050008000118")!)
        #expect(short == IncludeDeclaration(includedServiceHandle: 5, endGroupHandle: 0x0008, uuid: 0x1801))
        let long = try IncludeDeclaration(decoding: Hex.decode("05000800")!)
        #expect(long.uuid == nil)
        #expect(long.encoded == Hex.decode("05000800")!)
        #expect(short.encoded == Hex.decode("050008000118")!)
        #expect(
            throws: GATTError.invalidAttributeValue(
                type: GATTUUID.include, handle: nil, reason: .invalidRange(start: 9, end: 8))
        ) { _ = try IncludeDeclaration(decoding: Hex.decode("09000800")!) }
        #expect(
            throws: GATTError.invalidAttributeValue(
                type: GATTUUID.include, handle: nil, reason: .zeroHandle(field: "Included Service Attribute Handle"))
        ) { _ = try IncludeDeclaration(decoding: Hex.decode("00000800")!) }
        #expect(
            throws: GATTError.invalidAttributeValue(
                type: GATTUUID.include, handle: nil, reason: .zeroHandle(field: "End Group Handle"))
        ) { _ = try IncludeDeclaration(decoding: Hex.decode("01000000")!) }
        for length in [0, 1, 2, 3, 5, 7, 20] {
            #expect(
                throws: GATTError.invalidAttributeValue(
                    type: GATTUUID.include, handle: nil, reason: .invalidLength(length, allowed: [4, 6]))
            ) { _ = try IncludeDeclaration(decoding: [UInt8](repeating: 1, count: length)) }
        }
    }

    static let cccdVectors: [(String, ClientCharacteristicConfiguration)] = [
        ("0000", ClientCharacteristicConfiguration()),
        ("0100", .notifications),
        ("0200", .indications),
        ("0300", [.notifications, .indications]),
        ("0480", ClientCharacteristicConfiguration(rawValue: 0x8004)),
    ]

    @Test(arguments: cccdVectors)
    func clientCharacteristicConfiguration(_ hex: String, _ expected: ClientCharacteristicConfiguration) throws {
        let bytes = Hex.decode(hex)!
        let value = try ClientCharacteristicConfiguration(decoding: bytes)
        #expect(value == expected)
        #expect(value.encoded == bytes)
    }

    @Test func clientCharacteristicConfigurationLength() {
        for length in [0, 1, 3, 4] {
            #expect(
                throws: GATTError.invalidAttributeValue(
                    type: GATTUUID.clientCharacteristicConfiguration, handle: 0x0F,
                    reason: .invalidLength(length, allowed: [2]))
            ) {
                _ = try ClientCharacteristicConfiguration(
                    decoding: [UInt8](repeating: 0, count: length), handle: 0x0F)
            }
        }
    }

    @Test func extendedProperties() throws {
        let value = try CharacteristicExtendedProperties(decoding: [0x03, 0x00])
        #expect(value == [.reliableWrite, .writableAuxiliaries])
        #expect(value.encoded == [0x03, 0x00])
        #expect(
            throws: GATTError.invalidAttributeValue(
                type: GATTUUID.characteristicExtendedProperties, handle: nil, reason: .invalidLength(1, allowed: [2]))
        ) { _ = try CharacteristicExtendedProperties(decoding: [0x01]) }
    }

    @Test func propertyNames() {
        let all = CharacteristicProperties(rawValue: 0xFF)
        #expect(
            all.names == [
                "read", "write", "writeWithoutResponse", "notify", "indicate", "authenticatedSignedWrites",
                "broadcast", "extendedProperties",
            ])
        #expect(CharacteristicProperties([.notify, .read]).names == ["read", "notify"])
        #expect(CharacteristicProperties(names: ["write", "broadcast"]) == [.write, .broadcast])
        #expect(CharacteristicProperties(names: ["read", "fly"]) == nil)
        for bit in 0..<8 {
            let property = CharacteristicProperties(rawValue: 1 << bit)
            #expect(property.names.count == 1)
            #expect(CharacteristicProperties(names: property.names) == property)
        }
    }
}
