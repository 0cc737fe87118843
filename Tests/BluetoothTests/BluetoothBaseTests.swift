import Testing
@testable import Bluetooth

@Suite struct ByteReaderTests {
    @Test func readsLittleAndBigEndian() throws {
        var reader = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07])
        #expect(try reader.readUInt8() == 0x01)
        #expect(try reader.readUInt16LE() == 0x0302)
        #expect(try reader.readUInt16BE() == 0x0405)
        #expect(reader.offset == 5)
        #expect(throws: ByteReaderError(.truncated(needed: 4, available: 2), offset: 5)) {
            try reader.readUInt32LE()
        }
        #expect(throws: ByteReaderError(.trailingBytes(count: 2), offset: 5)) { try reader.expectEnd() }
        #expect(Array(reader.readRemaining()) == [0x06, 0x07])
        try reader.expectEnd()
    }

    @Test func subReaderReportsEnclosingOffsets() throws {
        var reader = ByteReader([0xAA, 0xBB, 0x01, 0x02, 0xCC])
        try reader.skip(2)
        var inner = try reader.subReader(2)
        #expect(inner.offset == 2)
        #expect(try inner.readUInt16LE() == 0x0201)
        #expect(throws: ByteReaderError(.truncated(needed: 1, available: 0), offset: 4)) { try inner.readUInt8() }
        #expect(try reader.readUInt8() == 0xCC)
    }

    @Test func negativeCountIsTruncationNotTrap() {
        var reader = ByteReader([0x00])
        #expect(throws: ByteReaderError.self) { try reader.readBytes(-1) }
    }

    @Test func writerRoundTrip() throws {
        var writer = ByteWriter()
        writer.writeUInt8(0xFE)
        writer.writeUInt16LE(0x1234)
        writer.writeUInt24LE(0xABCDEF)
        writer.writeUInt32BE(0x0102_0304)
        writer.writeUInt16LE(0)
        writer.setUInt16LE(0xBEEF, at: 10)
        #expect(writer.bytes == [0xFE, 0x34, 0x12, 0xEF, 0xCD, 0xAB, 0x01, 0x02, 0x03, 0x04, 0xEF, 0xBE])
        var reader = ByteReader(writer.bytes)
        _ = try reader.readUInt8()
        #expect(try reader.readUInt16LE() == 0x1234)
        #expect(try reader.readUInt24LE() == 0xABCDEF)
    }

    @Test(arguments: [
        ("00", [UInt8(0)] as [UInt8]?), ("0x01aB", [0x01, 0xAB]), ("01 02:03", [1, 2, 3]),
        ("012", nil), ("zz", nil), ("", []),
    ])
    func hex(text: String, bytes: [UInt8]?) {
        #expect(Hex.decode(text) == bytes)
        if let bytes { #expect(Hex.decode(Hex.encode(bytes)) == bytes) }
    }
}

@Suite struct AddressTests {
    @Test func parseAndFormat() throws {
        let address = try #require(BluetoothAddress("54:6c:0e:12:34:56"))
        #expect(address.description == "54:6C:0E:12:34:56")
        #expect(address.format(uppercase: false) == "54:6c:0e:12:34:56")
        #expect(address.littleEndianBytes == [0x56, 0x34, 0x12, 0x0E, 0x6C, 0x54])
        var reader = ByteReader(address.littleEndianBytes)
        #expect(try BluetoothAddress(parsingLittleEndian: &reader) == address)
        var writer = ByteWriter()
        address.write(littleEndian: &writer)
        #expect(writer.bytes == address.littleEndianBytes)
    }

    @Test(arguments: ["", "54:6C:0E:12:34", "54:6C:0E:12:34:5G", "546C0E123456", "54:6C:0E:12:34:567"])
    func rejects(text: String) { #expect(BluetoothAddress(text) == nil) }

    @Test func randomSubtypes() throws {
        #expect(try #require(BluetoothAddress("C0:00:00:00:00:01")).randomAddressKind == .staticAddress)
        #expect(try #require(BluetoothAddress("40:00:00:00:00:01")).randomAddressKind == .resolvablePrivate)
        #expect(try #require(BluetoothAddress("3F:00:00:00:00:01")).randomAddressKind == .nonResolvablePrivate)
        #expect(try #require(BluetoothAddress("80:00:00:00:00:01")).randomAddressKind == .reserved)
    }
}

@Suite struct UUIDTests {
    @Test func baseUUIDAliases() throws {
        let battery: BluetoothUUID = 0x180F
        let long = try #require(BluetoothUUID("0000180F-0000-1000-8000-00805F9B34FB"))
        #expect(battery == long)
        #expect(battery.hashValue == long.hashValue)
        #expect(long.shortened.description == "180F")
        #expect(long.uuid16 == 0x180F)
        #expect(BluetoothUUID.bit32(0x0001_2345).shortened == .bit32(0x0001_2345))
        #expect(BluetoothUUID.bit32(0x0000_2A00).shortened.byteWidth == 2)
    }

    @Test func textForms() throws {
        let nus = try #require(BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e"))
        #expect(nus.description == "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
        #expect(nus.text(uppercase: false) == "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
        #expect(BluetoothUUID.bit16(0x2a00).text(uppercase: false) == "2a00")
        #expect(BluetoothUUID("0x2902") == .bit16(0x2902))
        #expect(BluetoothUUID("6e400001b5a3f393e0a9e50e24dcca9e") == nus)
        for bad in ["", "123", "12345", "6e400001-b5a3-f393-e0a9e50e24dcca9e", "zzzz"] {
            #expect(BluetoothUUID(bad) == nil, "\(bad)")
        }
    }

    @Test func wireOrder() throws {
        let nus = try #require(BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        let wire = nus.littleEndianBytes
        #expect(wire.first == 0x9E && wire.last == 0x6E && wire.count == 16)
        #expect(BluetoothUUID(littleEndian: wire) == nus)
        #expect(BluetoothUUID(littleEndian: [0x0F, 0x18]) == .bit16(0x180F))
        #expect(BluetoothUUID(littleEndian: [0x0F, 0x18, 0x00]) == nil)
    }
}
