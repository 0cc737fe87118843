import ATT
import Bluetooth
import Testing

@testable import GATT

/// Write side: stored values, queued writes (limits, offsets, lengths, atomicity), signed
/// writes, Client Supported Features.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.5, §3.4.6; Vol 3, Part G, §4.9, §7.2
@Suite("GATT server: writes and queues")
struct ServerWriteTests {
    @Test("a Write Request stores the value and reports it")
    func writeStores() throws {
        var server = try ServerFixture.server()
        let client = server.connect()
        #expect(server.answer("12 0a00 7879", from: client) == "13")
        #expect(server.answer("0a 0a00", from: client) == "0b7879")
        #expect(server.takeEvents() == [.valueWritten(client, handle: 0x0A, value: [0x78, 0x79])])
        #expect(server.answer("52 0a00 7a", from: client) == nil)
        #expect(server.answer("0a 0a00", from: client) == "0b7a")
    }

    @Test("Prepare + Execute writes the parts in order, all at once")
    func longWrite() throws {
        var server = try ServerFixture.server()
        let client = server.connect()
        #expect(server.answer("16 0a00 0000 41424344", from: client) == "170a00000041424344")
        #expect(server.answer("16 0a00 0400 4546", from: client) == "170a0004004546")
        #expect(server.preparedWriteCount(of: client) == 2)
        // Nothing is written before Execute.
        #expect(server.answer("0a 0a00", from: client) == "0b68656c6c6f")
        #expect(server.answer("18 01", from: client) == "19")
        #expect(server.answer("0a 0a00", from: client) == "0b414243444546")
        #expect(server.preparedWriteCount(of: client) == 0)
        #expect(server.takeEvents() == [.valueWritten(client, handle: 0x0A, value: Array("ABCDEF".utf8))])
    }

    @Test("parts out of order give the same value")
    func outOfOrder() throws {
        var server = try ServerFixture.server()
        let client = server.connect()
        _ = server.answer("16 0a00 0200 4344", from: client)
        _ = server.answer("16 0a00 0000 4142", from: client)
        #expect(server.answer("18 01", from: client) == "19")
        #expect(server.answer("0a 0a00", from: client) == "0b41424344")
    }

    @Test("reliable write over two attributes: one bad part writes nothing")
    func atomic() throws {
        var server = try ServerFixture.server()
        let client = server.connect()
        _ = server.answer("16 0a00 0000 4142", from: client)
        _ = server.answer("16 0b00 0000 0200", from: client)  // indications: not supported → 0xFD
        #expect(server.answer("18 01", from: client) == "01180b00fd")
        #expect(server.answer("0a 0a00", from: client) == "0b68656c6c6f")
        #expect(server.preparedWriteCount(of: client) == 0)
        #expect(server.takeEvents() == [])
    }

    @Test("Execute checks offsets: past the value's end is Invalid Offset")
    func invalidOffset() throws {
        var server = try ServerFixture.server()
        let client = server.connect()
        #expect(server.answer("16 0a00 0600 41", from: client) == "170a00060041")
        #expect(server.answer("18 01", from: client) == "01180a0007")
        #expect(server.preparedWriteCount(of: client) == 0)
        // At the end exactly: appends.
        _ = server.answer("16 0a00 0500 21", from: client)
        #expect(server.answer("18 01", from: client) == "19")
        #expect(server.answer("0a 0a00", from: client) == "0b68656c6c6f21")
    }

    @Test("Execute checks lengths: beyond the maximum is Invalid Attribute Value Length")
    func invalidLength() throws {
        var server = try ServerFixture.server()
        let client = server.connect()
        _ = server.answer("16 0a00 0000 \(String(repeating: "11", count: 10))", from: client)
        _ = server.answer("16 0a00 0a00 \(String(repeating: "22", count: 7))", from: client)
        #expect(server.answer("18 01", from: client) == "01180a000d")
        #expect(server.answer("0a 0a00", from: client) == "0b68656c6c6f")
    }

    @Test("cancel drops the queue")
    func cancel() throws {
        var server = try ServerFixture.server()
        let client = server.connect()
        _ = server.answer("16 0a00 0000 4142", from: client)
        #expect(server.answer("18 00", from: client) == "19")
        #expect(server.answer("18 01", from: client) == "19")
        #expect(server.answer("0a 0a00", from: client) == "0b68656c6c6f")
    }

    @Test("the queue is bounded in entries: Prepare Queue Full")
    func queueFullEntries() throws {
        var server = try ServerFixture.server(configuration: GATTServer.Configuration(preparedWriteLimit: 3))
        let client = server.connect()
        for offset in 0..<3 { #expect(server.answer("16 0a00 0\(offset)00 41", from: client) != nil) }
        #expect(server.answer("16 0a00 0300 41", from: client) == "01160a0009")
        #expect(server.preparedWriteCount(of: client) == 3)
    }

    @Test("the queue is bounded in octets per attribute: Prepare Queue Full")
    func queueFullOctets() throws {
        var server = try ServerFixture.server(configuration: GATTServer.Configuration(preparedOctetsPerAttribute: 8))
        let client = server.connect()
        #expect(server.answer("16 0a00 0000 0102030405", from: client) != nil)
        #expect(server.answer("16 0a00 0500 060708", from: client) == "170a000500060708")
        #expect(server.answer("16 0a00 0800 09", from: client) == "01160a0009")
    }

    @Test("queues are per client")
    func queuesPerClient() throws {
        var server = try ServerFixture.server()
        let a = server.connect()
        let b = server.connect()
        _ = server.answer("16 0a00 0000 4141", from: a)
        _ = server.answer("16 0a00 0000 4242", from: b)
        #expect(server.answer("18 00", from: b) == "19")
        #expect(server.answer("18 01", from: a) == "19")
        #expect(server.answer("0a 0a00", from: b) == "0b4141")
        server.disconnect(a)
        #expect(server.preparedWriteCount(of: a) == 0)
    }

    // MARK: Signed writes (the README vector of TP/GAW/CL/BV-02-C)

    static let csrk = ConnectionSignatureResolvingKey(littleEndian: Hex.decode("d8515948451fea320dc05a2e88308188")!)!

    static func signedServer() throws -> GATTServer {
        let database = try AttributeDatabase(services: [
            ServiceDefinition(
                uuid: 0x1815, handle: 0x0005,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: 0x2A56, properties: [.read, .authenticatedSignedWrites], permissions: .readWrite,
                        value: [0x00], declarationHandle: 0x0006, valueHandle: 0x0007)
                ])
        ])
        return GATTServer(database: database)
    }

    @Test("a Signed Write Command with a valid signature writes")
    func signedWrite() throws {
        var server = try Self.signedServer()
        let client = server.connect()
        server.setSigningKey(Self.csrk, for: client)
        #expect(server.answer("d2 0700 010203 00000000 311f0acd1c3a5b0a", from: client) == nil)
        #expect(server.database.attribute(at: 7)?.value == [1, 2, 3])
        #expect(server.lastSignCounter(of: client) == 0)
        #expect(server.takeEvents() == [.valueWritten(client, handle: 7, value: [1, 2, 3])])
        // The same counter again: a replay, dropped.
        _ = server.answer("d2 0700 040506 00000000 311f0acd1c3a5b0a", from: client)
        #expect(server.database.attribute(at: 7)?.value == [1, 2, 3])
        #expect(server.takeEvents().count == 1)
    }

    @Test("a counter above the last, properly signed, is accepted")
    func signedCounterIncreases() throws {
        var server = try Self.signedServer()
        let client = server.connect()
        server.setSigningKey(Self.csrk, lastSignCounter: 4, for: client)
        let message: [UInt8] = [0xD2, 0x07, 0x00, 0x09]
        let signature = try ATTSigning.authenticationSignature(csrk: Self.csrk, message: message, signCounter: 5)
        _ = server.respond(to: try ATTPDU(decoding: message + signature), from: client)
        #expect(server.database.attribute(at: 7)?.value == [9])
        #expect(server.lastSignCounter(of: client) == 5)
        // Counter 3 (below the last) with a valid MAC: dropped.
        let old = try ATTSigning.authenticationSignature(
            csrk: Self.csrk, message: [0xD2, 0x07, 0x00, 0x08], signCounter: 3)
        _ = server.respond(to: try ATTPDU(decoding: [0xD2, 0x07, 0x00, 0x08] + old), from: client)
        #expect(server.database.attribute(at: 7)?.value == [9])
    }

    @Test("without a CSRK, or with a bad MAC, a Signed Write Command is dropped silently")
    func signedRejected() throws {
        var server = try Self.signedServer()
        let client = server.connect()
        #expect(server.answer("d2 0700 010203 00000000 311f0acd1c3a5b0a", from: client) == nil)
        #expect(server.database.attribute(at: 7)?.value == [0])
        server.setSigningKey(Self.csrk, for: client)
        #expect(server.answer("d2 0700 010203 00000000 311f0acd1c3a5b0b", from: client) == nil)
        #expect(server.database.attribute(at: 7)?.value == [0])
        let events = server.takeEvents()
        #expect(events.count == 2)
        #expect(events.allSatisfy { if case .signedWriteRejected = $0 { return true } else { return false } })
    }

    // MARK: Client Supported Features (Vol 3 Part G §7.2)

    @Test("Client Supported Features: per client, bits cannot be cleared, reserved bits dropped")
    func clientSupportedFeatures() throws {
        var server = GATTServer(
            database: try AttributeDatabase(services: [StandardServices.genericAttribute()]))
        let a = server.connect()
        let b = server.connect()
        // 0x0001 GATT, 0x0002/3 Service Changed, 0x0004 CCCD, 0x0005/6 CSF, 0x0007/8 Hash.
        #expect(server.answer("12 0600 81", from: a) == "13")
        #expect(server.answer("0a 0600", from: a) == "0b01")
        #expect(server.answer("0a 0600", from: b) == "0b00")
        #expect(server.answer("12 0600 00", from: a) == "0112060013")
        #expect(server.answer("12 0600 03", from: a) == "13")
        #expect(server.answer("0a 0600", from: a) == "0b03")
    }
}
