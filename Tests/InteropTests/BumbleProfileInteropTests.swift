import BLE
import Bluetooth
import Foundation
import Testing
import TestSupport

/// Issue 22: the shipped standard models against Bumble's own profile servers
/// (`bumble.profiles.heart_rate_service`, `battery_service`, `device_information_service`;
/// `scripts/bumble_peer.py --device profiles`) over H4/TCP: every value equals what Bumble serves,
/// notifications come typed and in order, and a retrieved model keeps its values coming across a
/// Bumble-side disconnect with no app code.
@Suite(
    "Interop: device models against Bumble's profile servers",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() }, .serialized)
struct BumbleProfileInteropTests {
    /// A heart-rate belt as an app would declare it, from the shipped services only.
    struct HeartRateBelt: BluetoothDevice {
        @Service var heartRate = HeartRateService()
        @Service var battery = BatteryService()
        @Service var deviceInformation = DeviceInformationService()
        @Service var access = GenericAccessService()
        @DeviceState(\.state) var state: PeripheralState
        @DeviceAction(\.connect) var connect: ConnectAction
        @DeviceAction(\.disconnect) var disconnect: DisconnectAction
        init() {}
    }

    /// `RESULT ok hr-state next=N energy=E resets=R` → (N, E, R).
    static func state(_ peer: BumblePeer) async throws -> (next: Int, energy: Int, resets: Int) {
        let words = try await peer.command("hr-state profiles").split(separator: " ")
        func value(_ key: String) -> Int? {
            words.first { $0.hasPrefix(key + "=") }.flatMap { Int($0.dropFirst(key.count + 1)) }
        }
        guard let next = value("next"), let energy = value("energy"), let resets = value("resets") else {
            throw BumblePeer.StartFailure(description: "hr-state: \(words)")
        }
        return (next, energy, resets)
    }

    /// The measurement Bumble's script sends as number `n` with `energy` kJ: 60 + n % 100 bpm,
    /// contact detected, one RR-Interval of (1024 × 60) / bpm in 1/1024 s.
    static func expected(_ n: Int, energy: Int) -> HeartRateMeasurement {
        let bpm = 60 + n % 100
        return HeartRateMeasurement(
            heartRate: bpm, sensorContact: .detected, energyExpended: energy, rrIntervals: [Double((1024 * 60) / bpm) / 1024])
    }

    static func take<T: Sendable>(_ count: Int, from stream: AsyncStream<T>) async -> [T] {
        var taken: [T] = []
        var iterator = stream.makeAsyncIterator()
        while taken.count < count, let value = await iterator.next() { taken.append(value) }
        return taken
    }

    @Test func everyValueEqualsWhatBumbleServesAndNotificationsAreTyped() async throws {
        let peer = try await BumblePeer.start(devices: ["profiles"], lifetime: 120)
        defer { peer.stop() }
        let address = try #require(peer.devices["profiles"])
        try await withTimeout(90, "the profile models against Bumble") {
            let adapter = try await Adapter.open("\(peer.uri)")
            let belt = try await adapter.connect(to: PeerAddress(address: address, type: .random), as: HeartRateBelt.self)
            // Read on connecting: what scripts/bumble_peer.py gave Bumble's service classes.
            let info = belt.deviceInformation
            #expect(info.manufacturerName == "Bumble Labs" && info.modelNumber == "HR-1" && info.serialNumber == "SN-0042")
            #expect(info.hardwareRevision == "1.0" && info.firmwareRevision == "2.3.4" && info.softwareRevision == "5.6")
            #expect(info.systemID == SystemID(manufacturerIdentifier: 0x01_2345_6789, organizationallyUniqueIdentifier: 0xABCDEF))
            #expect(info.systemID?.encoded() == [0x89, 0x67, 0x45, 0x23, 0x01, 0xEF, 0xCD, 0xAB])
            // Bumble 0.0.236 serves no PnP ID: absent, and its accessors say so.
            #expect(!info.$pnpID.isPresent && info.pnpID == nil)
            await #expect(throws: BLEError.self) { _ = try await info.$pnpID.read() }
            #expect(belt.battery.level == 87)
            #expect(belt.heartRate.bodySensorLocation == .chest)
            #expect(belt.access.deviceName == "Bumble HR" && belt.access.appearance == Appearance(rawValue: 0x0341))

            // Notifications: Bumble's encoder, our decoder, in order.
            let before = try await Self.state(peer)
            let measurements = belt.heartRate.$measurement.values()
            #expect(try await peer.command("hr-notify profiles 5").hasPrefix("ok hr-notify 5"))
            let received = await Self.take(5, from: measurements)
            #expect(received == (0..<5).map { Self.expected(before.next + $0, energy: before.energy + 10 * $0) })
            #expect(belt.heartRate.measurement == received.last && belt.heartRate.$measurement.decodeFailures == 0)

            let levels = belt.battery.$level.values()
            #expect(try await peer.command("battery profiles 55") == "ok battery 55")
            #expect(await Self.take(1, from: levels) == [55])
            #expect(try await belt.battery.$level.read() == 55)

            // The control point: Reset Energy Expended, then a value Bumble refuses (0x80).
            try await belt.heartRate.$controlPoint.write(HeartRateService.resetEnergyExpended)
            let after = try await Self.state(peer)
            #expect(after.resets == before.resets + 1 && after.energy == 0)
            do throws(BLEError) {
                try await belt.heartRate.$controlPoint.write(0x02)
                Issue.record("Bumble accepted control point value 0x02")
            } catch {
                #expect(error.attError == ATTErrorCode(rawValue: 0x80))
            }
            await belt.disconnect()
            await adapter.close()
        }
    }

    @Test func aRetrievedModelKeepsItsValuesAcrossABumbleSideDisconnect() async throws {
        let peer = try await BumblePeer.start(devices: ["profiles"], lifetime: 120)
        defer { peer.stop() }
        let address = PeerAddress(address: try #require(peer.devices["profiles"]), type: .random)
        try await withTimeout(90, "a retrieved model across Bumble's disconnect") {
            let adapter = try await Adapter.open("\(peer.uri)")
            // The adapter's managed device for the peer (the one retrieve uses): its events say
            // when the link is back and the subscriptions restored.
            let events = await adapter.manage(address).events()
            let belt = await adapter.retrieve(HeartRateBelt.self, peer: address)
            let measurements = belt.heartRate.$measurement.values()
            try await belt.connect()
            #expect(belt.state == .connected && belt.deviceInformation.modelNumber == "HR-1")
            let first = try await Self.state(peer)
            #expect(try await peer.command("hr-notify profiles 3").hasPrefix("ok hr-notify 3"))
            var iterator = measurements.makeAsyncIterator()
            var received: [HeartRateMeasurement] = []
            while received.count < 3, let value = await iterator.next() { received.append(value) }

            // The level changes without a notification: the model keeps 87 until it reads again
            // (each value read or notified reaches onChange).
            let (levels, level) = AsyncStream.makeStream(of: UInt8.self)
            belt.battery.$level.onChange { level.yield($0) }
            #expect(try await peer.command("battery-set profiles 42") == "ok battery-set 42")
            #expect(belt.battery.level == 87)
            // Bumble ends the link and advertises again; the model reconnects, re-subscribes
            // (Bumble forgot the CCCD), reads again, and the same stream goes on.
            #expect(try await peer.command("disconnect profiles") == "ok disconnect")
            for await event in events {
                if case .reconnected = event { break }
            }
            let second = try await Self.state(peer)
            #expect(try await peer.command("hr-notify profiles 3").hasPrefix("ok hr-notify 3"))
            while received.count < 6, let value = await iterator.next() { received.append(value) }
            let expected =
                (0..<3).map { Self.expected(first.next + $0, energy: first.energy + 10 * $0) }
                + (0..<3).map { Self.expected(second.next + $0, energy: second.energy + 10 * $0) }
            #expect(received == expected)
            var reads = levels.makeAsyncIterator()
            while let value = await reads.next(), value != 42 {}
            #expect(belt.state == .connected && belt.battery.level == 42, "read again on the new link")
            await belt.disconnect()
            #expect(await iterator.next() == nil, "disconnect ends the stream")
            await adapter.close()
        }
    }
}
