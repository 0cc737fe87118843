import ATT
import Bluetooth
import Testing

@testable import GATT

#if canImport(Glibc)
    import Glibc
#endif

/// Our client against the answers of a real Bumble GATT server: the ATT PDUs of
/// Fixtures/bumble-sensortag-session.btsnoop (a Bumble client discovering, reading, writing and
/// subscribing on a SensorTag-like Bumble server), served in any order by a scripted channel.
/// Every request we send must be one the Bumble client sent (same bytes); we send fewer.
@Suite("GATT client vs. a recorded Bumble server")
struct GATTBumbleSessionTests {
    static let capture: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/") + "/Fixtures/bumble-sensortag-session.btsnoop"
    }()

    /// The ATT PDUs (CID 0x0004) of a btsnoop file with the H4 datalink (1002), each in one ACL
    /// packet as this capture has them; record flag bit 0 gives the direction. Test-only: the
    /// product's capture reader lives in HCI.
    static func attTrace(_ path: String) throws -> ATTTrace {
        guard let file = fopen(path, "rb") else { throw GATTError.invalidParameter("cannot read \(path)") }
        defer { fclose(file) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            data += buffer[0..<count]
        }
        var reader = ByteReader(data)
        guard try Array(reader.readBytes(8)) == Array("btsnoop\0".utf8), try reader.readUInt32BE() == 1,
            try reader.readUInt32BE() == 1002
        else { throw GATTError.invalidParameter("not an H4 btsnoop file") }
        var entries: [ATTTrace.Entry] = []
        var record = 0
        while !reader.isAtEnd {
            record += 1
            _ = try reader.readUInt32BE()
            let included = Int(try reader.readUInt32BE())
            let flags = try reader.readUInt32BE()
            try reader.skip(12)
            var packet = try reader.subReader(included)
            guard try packet.readUInt8() == 0x02 else { continue }  // ACL only
            _ = try packet.readUInt16LE()
            let aclLength = Int(try packet.readUInt16LE())
            let l2capLength = Int(try packet.readUInt16LE())
            guard try packet.readUInt16LE() == 0x0004 else { continue }
            guard aclLength == l2capLength + 4, packet.remainingCount == l2capLength else {
                throw GATTError.invalidParameter("record \(record): fragmented ACL")
            }
            entries.append(
                ATTTrace.Entry(
                    line: record, direction: flags & 1 == 0 ? .hostToPeer : .peerToHost,
                    bytes: Array(packet.readRemaining())))
        }
        return ATTTrace(entries: entries)
    }

    @Test func sensorTagSession() async throws {
        let trace = try Self.attTrace(Self.capture)
        #expect(trace.entries.count == 47)
        let channel = ScriptedATTChannel(trace: trace, matching: .anyOrder, positionLabel: "record")
        let connection = ATTConnection(channel: channel, configuration: ATTBearer.Configuration(rxMTU: 247))
        let client = GATTClient(connection: connection)
        #expect(try await connection.exchangeMTU(247) == 247)

        // Service by service without includes, as Bumble's client asked (the request-minimal
        // `discoverDatabase()` sends requests this recording cannot answer).
        var services: [Service] = []
        for service in try await client.discoverPrimaryServices() {
            services.append(try await client.discoverDefinitions(of: service, findIncludes: false))
        }
        let database = GATTDatabase(services: services)
        try database.validate()
        let base = "-0451-4000-B000-000000000000"
        #expect(database.services.map(\.uuid) == [0x1800, 0x1801, 0x180F, BluetoothUUID("F000AA00" + base)!])
        #expect(database.services.map(\.endHandle) == [0x05, 0x0D, 0x11, 0x19])
        #expect(database.characteristics.map(\.valueHandle) == [3, 5, 8, 11, 13, 16, 20, 23, 25])
        #expect(
            database.characteristics.map(\.properties.rawValue) == [
                0x02, 0x02, 0x20, 0x0A, 0x02, 0x12, 0x12, 0x0A, 0x0A,
            ])
        #expect(database.characteristics.compactMap(\.clientConfigurationHandle) == [9, 17, 21])

        let battery = try await client.read(uuid: 0x2A19)
        #expect(battery == [ReadByTypeResponse.AttributeData(handle: 16, value: [0x5C])])

        let config = try database.characteristic(uuid: BluetoothUUID("F000AA02" + base)!)
        try await client.write(handle: config.valueHandle, value: [0x01])
        let data = try database.characteristic(uuid: BluetoothUUID("F000AA01" + base)!)
        try await client.configure(data, .notifications)
        var inbound = connection.inbound.makeAsyncIterator()
        var readings: [[UInt8]] = []
        for _ in 0..<5 {
            guard case .handleValueNotification(let notification)? = await inbound.next() else { break }
            #expect(notification.handle == data.valueHandle)
            readings.append(notification.value)
        }
        #expect(readings.map { Hex.encode($0) } == ["680b400c", "6c0b410c", "700b420c", "740b430c", "780b440c"])
        try await client.write(handle: config.valueHandle, value: [0x00])

        #expect(channel.failure == nil)
        // Bumble's client needed 21 requests (Exchange MTU included); we need 17.
        #expect(await connection.requestsSent == 17)
        await connection.close()
    }
}
