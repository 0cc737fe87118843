import BLE
import Bluetooth
import Synchronization
import Testing
import TestSupport

/// Issue 24, link control against Bumble's controller over H4/TCP: LE Connection Update and LE
/// Read PHY, which it implements; LE Set PHY, LE Set Data Length and Read RSSI, which it does
/// not (refused as Unknown HCI Command by bumble_peer.py's strict controller, or — as stock
/// Bumble does — LE Set PHY never answered): a warning, the command's credit back, and the link
/// goes on. Skipped where python3 cannot import bumble.
@Suite(
    "Interop: link control against Bumble's controller", .serialized,
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct BumbleLinkControlInteropTests {
    static let sensorTag = PeerAddress(address: BluetoothAddress("54:6C:0E:12:34:56")!, type: .public)

    /// An adapter on the peer asking every link for 20 ms, LE 2M and 251 octets; its warnings.
    static func adapter(_ peer: BumblePeer) async throws -> (Adapter, Said) {
        let warnings = Said()
        var options = AdapterOptions()
        options.timeout = .seconds(20)
        options.warning = { message in warnings.lines.withLock { $0.append(message) } }
        options.link = LinkPreferences(
            connectionParameters: ConnectionParameterRequest(interval: .milliseconds(20)), phy: .le2M, dataLength: 251)
        return (try await Adapter.open(peer.uri.description, options: options), warnings)
    }

    @Test func implementedCommandsWorkAndRefusedOnesLeaveTheLinkUp() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], lifetime: 90)
        defer { peer.stop() }
        try await withTimeout(60, "link control against Bumble") {
            let (adapter, warnings) = try await Self.adapter(peer)
            let device = try await adapter.connect(to: Self.sensorTag)
            // LE Create Connection asked for 20 ms: Bumble's connection uses it.
            #expect(device.connectionParameters?.intervalMilliseconds == 20)
            let said = warnings.lines.withLock { $0 }
            #expect(said.contains { $0.contains("the controller does not know LE Set PHY LE 2M") }, "\(said)")
            #expect(said.contains { $0.contains("the controller does not know LE Set Data Length 251 octets") }, "\(said)")
            #expect(device.phy == LinkPHY(tx: .le1M, rx: .le1M))
            #expect(try await device.readPHY() == LinkPHY(tx: .le1M, rx: .le1M))
            // LE Connection Update: Bumble completes with Interval Max.
            let updated = try await device.updateConnectionParameters(
                ConnectionParameterRequest(minimumInterval: .milliseconds(45), maximumInterval: .milliseconds(60)))
            #expect(updated.intervalMilliseconds == 60)
            #expect(device.connectionParameters == updated)
            await #expect(throws: BLEError.self) { _ = try await device.readRSSI() }
            // The link went on through every refusal.
            #expect(try await device.read(BluetoothUUID.bit16(0x2A00)) == Array("CC2650 SensorTag".utf8))
            await device.disconnect()
            await adapter.close()
        }
    }

    /// Stock Bumble never answers LE Set PHY: the command times out (2 s, the host's command
    /// timeout), its credit comes back, a warning says so, and the link goes on.
    @Test func anUnansweredSetPHYTimesOutAndTheLinkGoesOn() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], lifetime: 90, arguments: ["--stock-unknown-commands"])
        defer { peer.stop() }
        try await withTimeout(60, "an unanswered LE Set PHY") {
            let (adapter, warnings) = try await Self.adapter(peer)
            let started = ContinuousClock.now
            let device = try await adapter.connect(to: Self.sensorTag)
            #expect(ContinuousClock.now - started >= .seconds(2), "the connect waited for the command timeout")
            let said = warnings.lines.withLock { $0 }
            #expect(said.contains { $0.contains("the controller did not answer LE Set PHY LE 2M") }, "\(said)")
            #expect(device.phy == LinkPHY(tx: .le1M, rx: .le1M))
            // Commands still flow (the credit came back) and ATT works.
            #expect(try await device.readPHY() == LinkPHY(tx: .le1M, rx: .le1M))
            #expect(try await device.read(BluetoothUUID.bit16(0x2A00)) == Array("CC2650 SensorTag".utf8))
            await device.disconnect()
            await adapter.close()
        }
    }
}

/// What the library said (its warnings), as they came.
final class Said: Sendable {
    let lines = Mutex<[String]>([])
}
