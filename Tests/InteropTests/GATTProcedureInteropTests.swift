import Host
import ATT
import Bluetooth
import GATT
import HCI
import L2CAP
import Testing
import TestSupport

/// The GATT client's long and reliable writes, indications and a notification flood against
/// Bumble's GATT server, through our whole user-space host.
@Suite(
    "GATT procedures against Bumble's server",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct GATTProcedureInteropTests {
    static func session(_ peer: BumblePeer, maximumBufferedSDUs: Int? = nil) async throws
        -> (LEHost, GATTClient, LEConnection)
    {
        let host = try await BumbleGATTInteropTests.open(peer, maximumBufferedSDUs: maximumBufferedSDUs)
        let link = try await BumbleGATTInteropTests.connect(host, peer, "sensortag")
        let client = GATTClient(connection: ATTConnection(channel: link.channel))
        return (host, client, link)
    }

    @Test func writeLongAndReliableWrite() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], mtu: 23)
        defer { peer.stop() }
        let (host, client, _) = try await Self.session(peer)
        // IO Data (AA65): Bumble's server does not enforce its length (see the notes).
        let io = try #require(try await client.findCharacteristics(uuid: BumbleGATTInteropTests.ti(0xAA65)).first)
        let long = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let written = try await withTimeout(20) { try await client.writeLong(handle: io.valueHandle, value: long) }
        #expect(written == long.count)
        #expect(try await client.readLong(handle: io.valueHandle) == long, "Prepare Write queue executed in order")
        let reliable = (0..<40).map { UInt8($0) }
        _ = try await withTimeout(20) {
            try await client.reliableWrite([ReliableWrites.Write(handle: io.valueHandle, value: reliable)])
        }
        #expect(try await client.readLong(handle: io.valueHandle) == reliable)
        await host.close()
    }

    @Test func indicationsAreConfirmedInOrder() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"])
        defer { peer.stop() }
        let (host, client, _) = try await Self.session(peer)
        let serviceChanged = try await client.locateCharacteristic(uuid: 0x2A05)
        let subscription = try await client.subscribe(characteristic: serviceChanged, indications: true)
        // Bumble awaits each confirmation before sending the next: 20 answered means 20 confirmed.
        let result = try await peer.command("indicate sensortag \(serviceChanged.valueHandle) 20", timeout: 30)
        #expect(result == "ok indicate 20")
        var numbers: [UInt32] = []
        for try await notification in subscription {
            #expect(notification.isIndication)
            numbers.append(notification.value.reduce(0) { $0 << 8 | UInt32($1) })
            if numbers.count == 20 { break }
        }
        #expect(numbers == Array(0..<20))
        await host.close()
    }

    @Test func tenThousandNotificationsNoneLostNoneReordered() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], lifetime: 120)
        defer { peer.stop() }
        // Bumble over loopback TCP sends as fast as the socket goes, far beyond any radio; on 2
        // shared cores the reader can lag the default 1024 SDUs, which ends the link by design
        // (L2CAPError.receiveQueueOverflow, tested in L2CAPTests). This test is about loss and
        // order, so the channel may hold the whole flood.
        let total = 10_000
        let (host, client, _) = try await Self.session(peer, maximumBufferedSDUs: total)
        let keys = try await client.locateCharacteristic(uuid: 0xFFE1)
        let subscription = try await client.subscribe(characteristic: keys, bufferLimit: 20_000)
        let flood = Task { try await peer.command("notify sensortag \(keys.valueHandle) \(total)", timeout: 100) }
        let (received, outOfOrder) = try await withTimeout(100) { () -> (Int, Int) in
            var count = 0, outOfOrder = 0
            var expected: UInt32 = 0
            for try await notification in subscription {
                let number = notification.value.reduce(0) { $0 << 8 | UInt32($1) }
                if number != expected { outOfOrder += 1 }
                expected = number + 1
                count += 1
                if count == total { break }
            }
            return (count, outOfOrder)
        }
        #expect(try await flood.value == "ok notify \(total)")
        #expect(received == total)
        #expect(outOfOrder == 0)
        #expect(host.statistics.dataBufferOverflows == 0)
        await host.close()
    }
}
