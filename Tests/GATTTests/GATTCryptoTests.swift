import Bluetooth
import Testing

@testable import GATT

@Suite("GATT crypto: AES-CMAC, signed write, Database Hash")
struct GATTCryptoTests {
    static let rfcKey = "2b7e151628aed2a6abf7158809cf4f3c"
    static let rfcMessage =
        "6bc1bee22e409f96e93d7e117393172a" + "ae2d8a571e03ac9c9eb76fac45af8e51"
        + "30c81c46a35ce411e5fbc1191a0a52ef" + "f69f2445df4f9b17ad2b417be66c3710"

    /// RFC 4493 §4, Examples 1–4 (message lengths 0, 16, 40, 64).
    static let rfcVectors: [(Int, String)] = [
        (0, "bb1d6929e95937287fa37d129b756746"),
        (16, "070a16b46b4d4144f79bdd9dd04a287c"),
        (40, "dfa66747de9ae63030ca32611497c827"),
        (64, "51f0bebf7e3b9d92fc49741779363cfe"),
    ]

    @Test(arguments: rfcVectors)
    func rfc4493(_ length: Int, _ expected: String) throws {
        let message = Hex.decode(Self.rfcMessage)!.prefix(length)
        let mac = try AESCMAC.compute(key: Hex.decode(Self.rfcKey)!, message: message)
        #expect(Hex.encode(mac) == expected)
        let key = UInt128(Self.rfcKey, radix: 16)!
        #expect(try AESCMAC.compute(key: key, message: message) == UInt128(expected, radix: 16)!)
    }

    @Test func keyLength() {
        for length in [0, 15, 17, 32] {
            #expect(throws: GATTError.invalidParameter("AES-CMAC key of \(length) octets (16 needed)")) {
                _ = try AESCMAC.compute(key: [UInt8](repeating: 0, count: length), message: [1, 2, 3])
            }
        }
    }

    // MARK: Signed write

    /// BlueZ unit/test-gatt.c, TP/GAW/CL/BV-02-C: CSRK (stored least significant octet first)
    /// d8515948451fea320dc05a2e88308188, SignCounter 0, ATT_SIGNED_WRITE_CMD to handle 0x0007
    /// with value 01 02 03; the PDU BlueZ sends ends with 00000000 311f0acd1c3a5b0a.
    static let csrk = ConnectionSignatureResolvingKey(littleEndian: Hex.decode("d8515948451fea320dc05a2e88308188")!)!
    static let signedMessage = Hex.decode("d20700010203")!

    @Test func signedWriteBlueZVector() throws {
        let signature = try ATTSigning.authenticationSignature(
            csrk: Self.csrk, message: Self.signedMessage, signCounter: 0)
        #expect(Hex.encode(signature) == "00000000311f0acd1c3a5b0a")
        #expect(
            try ATTSigning.mac(csrk: Self.csrk, message: Self.signedMessage, signCounter: 0) == 0x0A5B_3A1C_CD0A_1F31)
        let pdu = try ATTSigning.sign(csrk: Self.csrk, message: Self.signedMessage, signCounter: 0)
        #expect(Hex.encode(pdu) == "d20700010203" + "00000000311f0acd1c3a5b0a")
        #expect(try ATTSigning.verify(csrk: Self.csrk, signedPDU: pdu))
        #expect(ATTSigning.signCounter(of: pdu) == 0)
    }

    @Test func signedWriteTampering() throws {
        let pdu = try ATTSigning.sign(csrk: Self.csrk, message: Self.signedMessage, signCounter: 0x0102_0304)
        #expect(Array(pdu[6..<10]) == [0x04, 0x03, 0x02, 0x01])
        #expect(ATTSigning.signCounter(of: pdu) == 0x0102_0304)
        #expect(try ATTSigning.verify(csrk: Self.csrk, signedPDU: pdu))
        // Any flipped bit, in the message, the counter or the MAC, fails verification.
        for index in pdu.indices {
            var tampered = pdu
            tampered[index] ^= 0x01
            #expect(try !ATTSigning.verify(csrk: Self.csrk, signedPDU: tampered), "octet \(index)")
        }
        let otherKey = ConnectionSignatureResolvingKey(Self.csrk.value ^ 1)
        #expect(try !ATTSigning.verify(csrk: otherKey, signedPDU: pdu))
        // The counter takes part in the MAC.
        let next = try ATTSigning.mac(csrk: Self.csrk, message: Self.signedMessage, signCounter: 1)
        #expect(next != (try ATTSigning.mac(csrk: Self.csrk, message: Self.signedMessage, signCounter: 0)))
        #expect(try !ATTSigning.verify(csrk: Self.csrk, signedPDU: [0xD2] + [UInt8](repeating: 0, count: 11)))
        #expect(ATTSigning.signCounter(of: [1, 2, 3]) == nil)
        #expect(ConnectionSignatureResolvingKey(littleEndian: [1, 2, 3]) == nil)
    }

    /// The signed-write case of the shared BlueZ vectors, when /work/shared is present.
    @Test func signedWriteSharedVector() throws {
        guard let cases = try SharedVectors.clientCases() else {
            print("skipped: \(SharedVectors.missingMessage)")
            return
        }
        let signed = cases.filter { $0.procedure == "signed_write_without_response" }
        let pdus = signed.flatMap(\.pdus).filter { $0.dir == "c2s" && $0.bytes.first == 0xD2 }
        try #require(!pdus.isEmpty)
        for pdu in pdus {
            #expect(try ATTSigning.verify(csrk: Self.csrk, signedPDU: pdu.bytes), "\(Hex.encode(pdu.bytes))")
        }
    }

    // MARK: Database Hash

    /// GAP (1800) with Device Name (read, with a CUD) and GATT (1801) with Service Changed
    /// (indicate, CCCD), Database Hash and a secondary service included from GATT.
    static let database = GATTDatabase(services: [
        Service(
            uuid: 0x1800, startHandle: 0x0001, endHandle: 0x0004,
            characteristics: [
                Characteristic(
                    uuid: 0x2A00, declarationHandle: 0x0002, valueHandle: 0x0003, endHandle: 0x0004, properties: .read,
                    descriptors: [Descriptor(handle: 0x0004, uuid: 0x2901)])
            ]),
        Service(
            uuid: 0x1801, startHandle: 0x0005, endHandle: 0x000C,
            includes: [IncludedService(handle: 0x0006, startHandle: 0x000D, endHandle: 0x000F, uuid: 0x180F)],
            characteristics: [
                Characteristic(
                    uuid: 0x2A05, declarationHandle: 0x0007, valueHandle: 0x0008, endHandle: 0x000A,
                    properties: [.indicate, .extendedProperties],
                    descriptors: [Descriptor(handle: 0x0009, uuid: 0x2902), Descriptor(handle: 0x000A, uuid: 0x2900)]),
                Characteristic(uuid: 0x2B2A, declarationHandle: 0x000B, valueHandle: 0x000C, properties: .read),
            ]),
        Service(
            uuid: 0x180F, startHandle: 0x000D, endHandle: 0x000F, isPrimary: false,
            characteristics: [
                Characteristic(
                    uuid: 0x2A19, declarationHandle: 0x000E, valueHandle: 0x000F, properties: [.read, .notify])
            ]),
    ])

    static let expectedMessage =
        "0100" + "0028" + "0018"  // primary service 1800
        + "0200" + "0328" + "020300002a"  // characteristic Device Name
        + "0400" + "0129"  // CUD: handle and type only
        + "0500" + "0028" + "0118"  // primary service 1801
        + "0600" + "0228" + "0d000f000f18"  // include of 180F
        + "0700" + "0328" + "a00800052a"  // characteristic Service Changed
        + "0900" + "0229"  // CCCD
        + "0a00" + "0029" + "0100"  // Extended Properties with its value
        + "0b00" + "0328" + "020c002a2b"  // characteristic Database Hash
        + "0d00" + "0128" + "0f18"  // secondary service 180F
        + "0e00" + "0328" + "120f00192a"  // characteristic Battery Level

    @Test func databaseHashMessage() throws {
        let attributes = try DatabaseHash.attributes(
            of: Self.database, extendedProperties: [0x000A: .reliableWrite])
        let message = DatabaseHash.message(attributes: attributes)
        #expect(Hex.encode(message) == Self.expectedMessage)
        // Characteristic values and other descriptors never take part; order is by handle.
        var withValues =
            attributes.reversed() + [
                DatabaseHash.Attribute(handle: 0x0003, type: 0x2A00, value: Array("name".utf8)),
                DatabaseHash.Attribute(handle: 0x0010, type: 0x2906, value: [1, 2]),
            ]
        withValues.shuffle()
        #expect(DatabaseHash.message(attributes: withValues) == message)
        let hash = try DatabaseHash.compute(database: Self.database, extendedProperties: [0x000A: .reliableWrite])
        #expect(try hash == AESCMAC.compute(key: UInt128(0), message: message))
        #expect(
            Hex.encode(DatabaseHash.characteristicValue(hash)) == Hex.encode(AESCMAC.bigEndianBytes(hash).reversed()))
    }

    @Test func databaseHashSensitivity() throws {
        let base = try DatabaseHash.compute(database: Self.database, extendedProperties: [0x000A: .reliableWrite])
        #expect(try DatabaseHash.compute(database: Self.database, extendedProperties: [0x000A: []]) != base)
        var services = Self.database.services
        services[0].characteristics[0].properties.insert(.write)
        #expect(
            try DatabaseHash.compute(
                database: GATTDatabase(services: services), extendedProperties: [0x000A: .reliableWrite]) != base)
        #expect(throws: GATTError.valueUnknown(handle: 0x000A)) {
            _ = try DatabaseHash.compute(database: Self.database)
        }
        #expect(try DatabaseHash.compute(attributes: []) == AESCMAC.compute(key: UInt128(0), message: [UInt8]()))
    }

    /// A known answer from an independent implementation: Bumble 0.0.236's
    /// `GenericAttributeProfileService.get_database_hash` over this attribute table (its
    /// default GAP and GATT services, a second GATT service, Battery, a SensorTag-like IR
    /// service with a CUD, a CCCD and an Extended Properties descriptor, and a secondary
    /// service) returned these 16 octets as the characteristic value.
    static let bumbleTable: [(UInt16, String, String)] = [
        (0x01, "2800", "0018"), (0x02, "2803", "020300002a"), (0x03, "2a00", "4343323635302053656e736f72546167"),
        (0x04, "2803", "020500012a"), (0x05, "2a01", "0000"), (0x06, "2800", "0118"), (0x07, "2803", "200800052a"),
        (0x08, "2a05", ""), (0x09, "2902", ""), (0x0A, "2803", "0a0b00292b"), (0x0B, "2b29", "00"),
        (0x0C, "2803", "020d002a2b"), (0x0D, "2b2a", ""), (0x0E, "2800", "0118"), (0x0F, "2803", "201000052a"),
        (0x10, "2a05", ""), (0x11, "2902", ""), (0x12, "2803", "0a1300292b"), (0x13, "2b29", "00"),
        (0x14, "2803", "0215002a2b"), (0x15, "2b2a", ""), (0x16, "2800", "0f18"), (0x17, "2803", "121800192a"),
        (0x18, "2a19", "5c"), (0x19, "2902", ""), (0x1A, "2800", "00000000000000b00040510400aa00f0"),
        (0x1B, "2803", "121c0000000000000000b00040510401aa00f0"),
        (0x1C, "F000AA01-0451-4000-B000-000000000000", "00000000"), (0x1D, "2901", "49522054656d702e2044617461"),
        (0x1E, "2902", ""), (0x1F, "2803", "8a200000000000000000b00040510402aa00f0"),
        (0x20, "F000AA02-0451-4000-B000-000000000000", "00"), (0x21, "2900", "0100"), (0x22, "2801", "3412"),
        (0x23, "2803", "0224007856"), (0x24, "5678", "01"),
    ]
    static let bumbleHash = "7775f69c31aa8351e03e7ea99c8d2acd"

    @Test func databaseHashMatchesBumble() throws {
        let attributes = Self.bumbleTable.map {
            DatabaseHash.Attribute(handle: $0.0, type: BluetoothUUID($0.1)!, value: Hex.decode($0.2)!)
        }
        let hash = try DatabaseHash.compute(attributes: attributes)
        #expect(Hex.encode(DatabaseHash.characteristicValue(hash)) == Self.bumbleHash)

        // The same database as a discovered model gives the same hash.
        let base = "-0451-4000-B000-000000000000"
        let gattService = { (start: UInt16) in
            Service(
                uuid: 0x1801, startHandle: start, endHandle: start + 7,
                characteristics: [
                    Characteristic(
                        uuid: 0x2A05, declarationHandle: start + 1, valueHandle: start + 2, endHandle: start + 3,
                        properties: .indicate, descriptors: [Descriptor(handle: start + 3, uuid: 0x2902)]),
                    Characteristic(
                        uuid: 0x2B29, declarationHandle: start + 4, valueHandle: start + 5, properties: [.read, .write]),
                    Characteristic(
                        uuid: 0x2B2A, declarationHandle: start + 6, valueHandle: start + 7, properties: .read),
                ])
        }
        let database = GATTDatabase(services: [
            Service(
                uuid: 0x1800, startHandle: 0x01, endHandle: 0x05,
                characteristics: [
                    Characteristic(uuid: 0x2A00, declarationHandle: 0x02, valueHandle: 0x03, properties: .read),
                    Characteristic(uuid: 0x2A01, declarationHandle: 0x04, valueHandle: 0x05, properties: .read),
                ]),
            gattService(0x06), gattService(0x0E),
            Service(
                uuid: 0x180F, startHandle: 0x16, endHandle: 0x19,
                characteristics: [
                    Characteristic(
                        uuid: 0x2A19, declarationHandle: 0x17, valueHandle: 0x18, endHandle: 0x19,
                        properties: [.read, .notify], descriptors: [Descriptor(handle: 0x19, uuid: 0x2902)])
                ]),
            Service(
                uuid: BluetoothUUID("F000AA00" + base)!, startHandle: 0x1A, endHandle: 0x21,
                characteristics: [
                    Characteristic(
                        uuid: BluetoothUUID("F000AA01" + base)!, declarationHandle: 0x1B, valueHandle: 0x1C,
                        endHandle: 0x1E, properties: [.read, .notify],
                        descriptors: [Descriptor(handle: 0x1D, uuid: 0x2901), Descriptor(handle: 0x1E, uuid: 0x2902)]),
                    Characteristic(
                        uuid: BluetoothUUID("F000AA02" + base)!, declarationHandle: 0x1F, valueHandle: 0x20,
                        endHandle: 0x21, properties: [.read, .write, .extendedProperties],
                        descriptors: [Descriptor(handle: 0x21, uuid: 0x2900)]),
                ]),
            Service(
                uuid: 0x1234, startHandle: 0x22, endHandle: 0x24, isPrimary: false,
                characteristics: [
                    Characteristic(uuid: 0x5678, declarationHandle: 0x23, valueHandle: 0x24, properties: .read)
                ]),
        ])
        try database.validate()
        let modelHash = try DatabaseHash.compute(database: database, extendedProperties: [0x21: .reliableWrite])
        #expect(Hex.encode(DatabaseHash.characteristicValue(modelHash)) == Self.bumbleHash)
    }
}

@Suite("GATT crypto: libcrypto loaded on first use")
struct GATTCryptoLoadingTests {
    @Test func aMissingLibcryptoIsNamedWithTheFix() {
        #expect(
            GATTError.crypto(code: -7).description
                == "AES-CMAC needs OpenSSL 3's libcrypto.so.3, which could not be loaded (apt-get install libssl3)")
        #expect(GATTError.crypto(code: -4).description == "AES-CMAC failed (libcrypto error -4)")
    }

    @Test func concurrentFirstUsesAllSucceed() async throws {
        // The first call loads the library (once, under pthread_once); calls racing it must all
        // get the same MAC (RFC 4493 example 2).
        let key = Hex.decode("2b7e151628aed2a6abf7158809cf4f3c")!
        let message = Hex.decode("6bc1bee22e409f96e93d7e117393172a")!
        let macs = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<8 { group.addTask { try AESCMAC.compute(key: key, message: message) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(macs.count == 8)
        #expect(macs.allSatisfy { $0 == Hex.decode("070a16b46b4d4144f79bdd9dd04a287c")! })
    }
}
