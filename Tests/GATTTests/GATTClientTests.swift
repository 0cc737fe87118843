import ATT
import Bluetooth
import Testing

@testable import GATT

#if canImport(Glibc)
    import Glibc
#endif

/// `GATTClient` over a real `ATTConnection` whose peer is a scripted trace.
@Suite("GATT client over the ATT bearer (scripted peers)")
struct GATTClientTests {
    static let tracesDirectory: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // GATTTests/GATTClientTests.swift, Tests
        return parts.joined(separator: "/") + "/Fixtures/traces"
    }()

    static func loadTrace(_ name: String) throws -> ATTTrace {
        let path = tracesDirectory + "/" + name
        guard let file = fopen(path, "rb") else { throw GATTError.invalidParameter("cannot read \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return try ATTTrace(parsing: String(decoding: bytes, as: UTF8.self))
    }

    static func client(
        _ trace: ATTTrace, matching mode: ScriptedATTChannel.MatchMode = .strict, rxMTU: Int = 517
    ) -> (GATTClient, ScriptedATTChannel) {
        let channel = ScriptedATTChannel(trace: trace, matching: mode)
        let connection = ATTConnection(channel: channel, configuration: ATTBearer.Configuration(rxMTU: rxMTU))
        return (GATTClient(connection: connection, configuration: .manual), channel)
    }

    /// A small peripheral: GAP (Device Name), a UART-like service with TX (notify + CCCD +
    /// user description) and RX (write); then reads and writes on it.
    static let conversation = """
        # Discover All Primary Services (the second group ends at 0xFFFF: no third request)
        > 10 0100 ffff 0028
        < 11 06 0100 0300 0018
        > 10 0400 ffff 0028
        < 11 14 0400 ffff 9ecadc240ee5a9e093f3a3b50100406e
        # No include search: each service declaration is followed by a characteristic
        # declaration, so no include definition can exist (Vol 3 Part G §3.1)
        # Characteristics, once over all services, each request after the last value handle
        > 08 0100 ffff 0328
        < 09 07 0200 02 0300 002a
        > 08 0400 ffff 0328
        < 09 15 0500 10 0600 9ecadc240ee5a9e093f3a3b50300406e
        > 08 0700 ffff 0328
        < 09 15 0900 0c 0a00 9ecadc240ee5a9e093f3a3b50200406e
        > 08 0b00 ffff 0328
        < 01 08 0b00 0a
        # Descriptors of TX (before RX's declaration); GAP's Device Name ends its service
        > 04 0700 0800
        < 05 01 0700 0229 0800 0129
        # RX's definition runs to 0xFFFF: its descriptors are asked for
        > 04 0b00 ffff
        < 01 04 0b00 0a
        # Read, refused read, long read, write, long write
        > 0a 0300
        < 0b 546573745065726970686572616c
        > 0a 0600
        < 01 0a 0600 02
        > 0a 0800
        < 0b 4c6f6e67206465736372697074696f6e206f66205458
        > 0c 0800 1600
        < 0d 2121
        > 12 0a00 6869
        < 13
        > 16 0a00 0000 000102030405060708090a0b0c0d0e0f1011
        < 17 0a00 0000 000102030405060708090a0b0c0d0e0f1011
        > 16 0a00 1200 1213
        < 17 0a00 1200 1213
        > 18 01
        < 19
        """

    @Test func discoverReadWrite() async throws {
        let trace = try ATTTrace(parsing: Self.conversation)
        let (client, channel) = Self.client(trace)
        let database = try await client.discoverDatabase()
        let nus = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        let tx = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
        let rx = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
        #expect(database.services.map(\.uuid) == [0x1800, nus])
        #expect(try database.characteristic(uuid: 0x2A00).valueHandle == 0x0003)
        let txCharacteristic = try database.characteristic(uuid: tx)
        #expect(txCharacteristic.properties == .notify)
        #expect(txCharacteristic.endHandle == 0x0008)
        #expect(
            txCharacteristic.descriptors == [Descriptor(handle: 7, uuid: 0x2902), Descriptor(handle: 8, uuid: 0x2901)])
        #expect(txCharacteristic.clientConfigurationHandle == 0x0007)
        let rxCharacteristic = try database.characteristic(uuid: rx)
        #expect(rxCharacteristic.properties == [.write, .writeWithoutResponse])
        #expect(rxCharacteristic.endHandle == 0xFFFF && rxCharacteristic.descriptors.isEmpty)
        try database.validate()

        #expect(String(decoding: try await client.read(handle: 3), as: UTF8.self) == "TestPeripheral")
        await #expect(throws: GATTError.peerError(request: .readRequest, handle: 6, code: .readNotPermitted)) {
            _ = try await client.read(handle: 6)
        }
        let description = try await client.readLong(handle: 8)
        #expect(String(decoding: description, as: UTF8.self) == "Long description of TX!!")
        #expect(try await client.write(handle: 0x0A, value: Array("hi".utf8)) == 2)
        #expect(try await client.writeLong(handle: 0x0A, value: (0..<20).map(UInt8.init)) == 20)
        await channel.waitUntilComplete()
        #expect(channel.failure == nil)
        #expect(await client.connection.requestsSent == 16)
        await client.connection.close()
    }

    /// Targeted: the TX characteristic by UUID over the whole server, its descriptors up to the
    /// next declaration, then notifications switched on.
    static let targeted = """
        > 08 0100 ffff 0328
        < 09 15 0200 10 0300 9ecadc240ee5a9e093f3a3b50300406e
        > 08 0300 ffff 0328
        < 09 07 0600 02 0700 002a
        > 08 0700 ffff 0328
        < 01 08 0700 0a
        # TX runs to 0x0005; the service declaration at 0x0005 ends its descriptors
        > 04 0400 0500
        < 05 01 0400 0229 0500 0028
        > 12 0400 0100
        < 13
        """

    @Test func findCharacteristicAndSubscribe() async throws {
        let (client, channel) = Self.client(try ATTTrace(parsing: Self.targeted))
        let tx = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
        let found = try await client.findCharacteristics(uuid: tx)
        #expect(found.count == 1)
        let characteristic = try #require(found.first)
        #expect(characteristic.descriptors == [Descriptor(handle: 4, uuid: 0x2902)])
        try await client.configure(characteristic, .notifications)
        await #expect(throws: GATTError.noAttribute(handle: 7)) {
            try await client.configure(
                Characteristic(uuid: 0x2A00, declarationHandle: 6, valueHandle: 7, properties: .read), .notifications)
        }
        await channel.waitUntilComplete()
        #expect(channel.failure == nil)
        await client.connection.close()
    }

    /// A request the peer does not expect: the scripted channel fails the bearer, and the
    /// procedure ends with the bearer's error.
    @Test func bearerFailureEndsProcedure() async throws {
        let trace = try ATTTrace(parsing: "> 0a 0300\n< 0b 01")
        let (client, _) = Self.client(trace)
        do {
            _ = try await client.read(handle: 4)
            Issue.record("read succeeded")
        } catch {
            guard case .att = error else {
                Issue.record("\(error)")
                return
            }
        }
        await client.connection.close()
    }

    /// Recorded Bumble session: the peer's Exchange MTU Request arrives while our first
    /// Read By Group Type Request is outstanding (and a notification before any request); the
    /// bearer answers it and primary service discovery goes on.
    @Test func peerMTURequestDuringDiscovery() async throws {
        let (client, channel) = Self.client(try Self.loadTrace("bumble-peer-mtu-during-discovery.trace"), rxMTU: 247)
        // The answer to our first request is sized for the ATT_MTU the peer negotiated while the
        // request was out: the procedure follows the bearer's current ATT_MTU.
        let services = try await client.discoverPrimaryServices()
        #expect(
            services.map(\.uuid) == [
                0x1800, 0x1801, 0x180A, 0xFFF0, BluetoothUUID("6E400000-B5A3-F393-E0A9-E50E24DC0001")!,
            ])
        #expect(services.map(\.startHandle) == [0x01, 0x06, 0x0E, 0x15, 0x1C])
        #expect(services.map(\.endHandle) == [0x05, 0x0D, 0x14, 0x1B, 0x1F])
        #expect(channel.failure == nil)
        #expect(await client.connection.mtu == 247)
        await client.connection.close()
    }

    /// Recorded Bumble session, matched in any order: every request our client sends for the
    /// first five services was also sent by Bumble's client, and finds its recorded answer
    /// (several ending in Attribute Not Found).
    @Test func discoveryWithAttributeNotFoundErrors() async throws {
        let (client, channel) = Self.client(try Self.loadTrace("bumble-discovery-errors.trace"), matching: .anyOrder)
        let services = try await client.discoverPrimaryServices()
        #expect(services.count == 8)
        #expect(services.last?.endHandle == 0xFFFF)
        var discovered: [Service] = []
        for service in services.prefix(5) {
            discovered.append(try await client.discoverDefinitions(of: service))
        }
        #expect(discovered.map { $0.characteristics.count } == [2, 3, 3, 1, 1])
        #expect(
            discovered.flatMap(\.characteristics).map(\.uuid) == [
                0x2A00, 0x2A01, 0x2A05, 0x2B29, 0x2B2A, 0x2A29, 0x2A24, 0x2A26, 0x2A19, 0xFFE1,
            ])
        #expect(discovered[1].characteristics[0].descriptors == [Descriptor(handle: 0x09, uuid: 0x2902)])
        #expect(discovered[3].characteristics[0].descriptors == [Descriptor(handle: 0x18, uuid: 0x2902)])
        #expect(
            discovered[4].characteristics[0].descriptors == [
                Descriptor(handle: 0x1C, uuid: 0x2901), Descriptor(handle: 0x1D, uuid: 0x2902),
            ])
        #expect(channel.failure == nil)
        await client.connection.close()
    }
}

@Suite struct GATTProcedureMTUTests {
    /// A Read By Group Type Response of 42 octets is over an ATT_MTU of 23 but fine after the
    /// bearer's MTU grew to 247 mid-procedure: both the single procedure and the discovery
    /// engine follow `updateMTU`.
    @Test func proceduresFollowTheBearerMTU() throws {
        let response = ATTPDU.readByGroupTypeResponse(
            try ReadByGroupTypeResponse(
                decoding: [0x11, 0x14, 0x01, 0x00, 0x10, 0x00] + Array(repeating: 0xAB, count: 16)
                    + [0x11, 0x00, 0xFF, 0xFF] + Array(repeating: 0xCD, count: 16)))
        var strict = DiscoverAllPrimaryServices(mtu: 23)
        _ = strict.start()
        guard case .fail = strict.receive(response) else {
            Issue.record("a 42-octet response must not fit an ATT_MTU of 23")
            return
        }
        var procedure = DiscoverAllPrimaryServices(mtu: 23)
        _ = procedure.start()
        procedure.updateMTU(247)
        guard case .done(let services) = procedure.receive(response) else {
            Issue.record("procedure did not accept the response after the MTU grew")
            return
        }
        #expect(services.count == 2)
        var discovery = DatabaseDiscovery(mtu: 23, findIncludes: false)
        _ = discovery.start()
        discovery.updateMTU(247)
        #expect(discovery.mtu == 247)
        if case .fail(let error) = discovery.receive(response) { Issue.record("\(error)") }
    }
}
