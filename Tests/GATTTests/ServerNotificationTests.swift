import ATT
import Bluetooth
import Testing

@testable import GATT

/// Client Characteristic Configuration per client, notifications and indications, Service
/// Changed and robust caching.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §3.3.3.3, §4.10, §4.11, §7.1, §2.5.2.1
@Suite("GATT server: configurations and server-initiated PDUs")
struct ServerNotificationTests {
    @Test("each client has its own Client Characteristic Configuration")
    func perClient() throws {
        var server = try ServerFixture.server()
        let a = server.connect()
        let b = server.connect()
        #expect(server.answer("12 0b00 0100", from: a) == "13")
        #expect(server.answer("0a 0b00", from: a) == "0b0100")
        #expect(server.answer("0a 0b00", from: b) == "0b0000")
        #expect(server.answer("08 0100 ffff 0229", from: a) == "0904 0700 0000 0b00 0100".filter { $0 != " " })
        #expect(server.clientConfiguration(ofValue: 0x0A, for: a) == .notifications)
        #expect(server.clientConfiguration(ofValue: 0x0A, for: b) == [])
        #expect(server.takeEvents() == [.clientConfigurationChanged(a, valueHandle: 0x0A, .notifications)])
        // The stored default is untouched.
        #expect(server.database.attribute(at: 0x0B)?.value == [0, 0])
    }

    @Test("a value update notifies the subscribed clients only, cut to ATT_MTU − 3")
    func notifications() throws {
        var server = try ServerFixture.server()
        let a = server.connect(mtu: 23)
        let b = server.connect(mtu: 23)
        let c = server.connect(mtu: 100)
        _ = server.answer("12 0b00 0100", from: a)
        _ = server.answer("12 0b00 0100", from: c)
        let value = Array(0..<30).map { UInt8($0) }
        // `outbound` computes what a (computed, unstored) value produces.
        let out = server.outbound(value: value, handle: 0x0A)
        #expect(
            out == [
                GATTServer.Outbound(
                    client: a,
                    pdu: .handleValueNotification(HandleValueNotification(handle: 0x0A, value: Array(value[0..<20])))),
                GATTServer.Outbound(
                    client: c, pdu: .handleValueNotification(HandleValueNotification(handle: 0x0A, value: value))),
            ])
        #expect(!out.contains { $0.client == b })
        #expect(
            try server.updateValue([7, 8], handle: 0x0A)
                == [
                    .init(
                        client: a, pdu: .handleValueNotification(HandleValueNotification(handle: 0x0A, value: [7, 8]))),
                    .init(
                        client: c, pdu: .handleValueNotification(HandleValueNotification(handle: 0x0A, value: [7, 8]))),
                ])
        #expect(server.answer("0a 0a00", from: b) == "0b0708")
        // Unsubscribe: nothing more.
        _ = server.answer("12 0b00 0000", from: a)
        #expect(try server.updateValue([1], handle: 0x0A).map(\.client) == [c])
        // Beyond the maximum length: refused, nothing sent.
        #expect(throws: GATTError.valueTooLong(length: 17, maximum: 16)) {
            _ = try server.updateValue([UInt8](repeating: 0, count: 17), handle: 0x0A)
        }
    }

    @Test("indications when the client asks for them and the characteristic can indicate")
    func indications() throws {
        let database = try AttributeDatabase(services: [
            ServiceDefinition(
                uuid: 0x1809,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: 0x2A1C, properties: [.notify, .indicate], permissions: [], value: [],
                        descriptors: [.clientConfiguration()])
                ])
        ])
        var server = GATTServer(database: database)
        let a = server.connect()
        let b = server.connect()
        let c = server.connect()
        // 0x0003 value, 0x0004 CCCD.
        #expect(server.answer("12 0400 0200", from: a) == "13")
        #expect(server.answer("12 0400 0100", from: b) == "13")
        #expect(server.answer("12 0400 0300", from: c) == "13")
        let out = try server.updateValue([0x42], handle: 3)
        #expect(
            out == [
                .init(client: a, pdu: .handleValueIndication(HandleValueIndication(handle: 3, value: [0x42]))),
                .init(client: b, pdu: .handleValueNotification(HandleValueNotification(handle: 3, value: [0x42]))),
                .init(client: c, pdu: .handleValueIndication(HandleValueIndication(handle: 3, value: [0x42]))),
            ])
    }

    @Test("Service Changed is indicated to the clients that enabled it when the database changes")
    func serviceChanged() throws {
        var server = try ServerFixture.server()
        let a = server.connect()
        let b = server.connect()
        _ = server.answer("12 0700 0200", from: a)
        _ = server.answer("12 0b00 0100", from: a)
        _ = server.answer("16 0a00 0000 41", from: a)
        var definitions = ServerFixture.definitions()
        definitions.removeLast()
        let out = server.replaceDatabase(try AttributeDatabase(services: definitions), changed: 0x0010...0xFFFF)
        #expect(
            out == [
                .init(
                    client: a,
                    pdu: .handleValueIndication(HandleValueIndication(handle: 6, value: [0x10, 0x00, 0xFF, 0xFF])))
            ])
        #expect(!out.contains { $0.client == b })
        // The Service Changed configuration stays; others and the queue are dropped.
        #expect(server.clientConfiguration(ofValue: 6, for: a) == .indications)
        #expect(server.clientConfiguration(ofValue: 0x0A, for: a) == [])
        #expect(server.preparedWriteCount(of: a) == 0)
        #expect(server.answer("0a 1300", from: a) == "010a130001")
    }

    @Test("robust caching: a change-unaware client gets Database Out Of Sync once")
    func robustCaching() throws {
        let definitions = [StandardServices.genericAccess(deviceName: "A"), StandardServices.genericAttribute()]
        var server = GATTServer(database: try AttributeDatabase(services: definitions))
        let robust = server.connect()
        let plain = server.connect()
        // GATT service at 0x0006: CSF value at 0x000B, Database Hash value at 0x000D.
        #expect(server.answer("12 0b00 01", from: robust) == "13")
        let changed = definitions + [ServiceDefinition(uuid: 0x180F)]
        _ = server.replaceDatabase(try AttributeDatabase(services: changed))
        #expect(!server.isChangeAware(robust))
        #expect(server.isChangeAware(plain))
        #expect(server.answer("0a 0300", from: plain) == "0b41")
        // Commands are ignored while change-unaware; the first request gets 0x12.
        #expect(server.answer("52 0300 42", from: robust) == nil)
        #expect(server.answer("0a 0300", from: robust) == "010a000012")
        #expect(server.answer("0a 0300", from: robust) == "0b41")
        #expect(server.isChangeAware(robust))
    }

    @Test("robust caching: reading the Database Hash by type makes the client change-aware")
    func robustCachingHashRead() throws {
        let definitions = [StandardServices.genericAccess(deviceName: "A"), StandardServices.genericAttribute()]
        var server = GATTServer(database: try AttributeDatabase(services: definitions))
        let client = server.connect()
        _ = server.answer("12 0b00 01", from: client)
        let changed = try AttributeDatabase(services: definitions + [ServiceDefinition(uuid: 0x180F)])
        _ = server.replaceDatabase(changed)
        let hash = Hex.encode(changed.databaseHashValue).lowercased()
        #expect(server.answer("08 0100 ffff 2a2b", from: client) == "0912" + "0d00" + hash)
        #expect(server.isChangeAware(client))
        server.serviceChangedConfirmed(by: client)
        #expect(server.isChangeAware(client))
    }
}
