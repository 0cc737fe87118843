import Emulator
import Synchronization
import Testing
import TestSupport

@testable import BLE

/// Issue 21: many connections on one adapter, and managed devices that reconnect and lose
/// nothing — on `sim:counter*N`, whose devices count what they sent.
@Suite("BLE: managed devices, many connections", .serialized, .timeLimit(.minutes(3)))
struct ManagedDeviceTests {
    /// What one device's event stream delivered.
    final class Tally: Sendable {
        struct Values: Sendable {
            var received: [UInt32] = []
            var reconnects = 0
            var disconnects = 0
            var connected = 0
        }
        let values = Mutex(Values())
    }

    static func counterValue(_ bytes: [UInt8]) -> UInt32 {
        bytes.count == 4 ? UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24 : .max
    }

    static func follow(_ device: ManagedDevice, into tally: Tally) -> Task<Void, Never> {
        let events = device.events()
        return Task {
            for await event in events {
                switch event {
                case .notification(_, _, let value):
                    tally.values.withLock { $0.received.append(counterValue(value.value)) }
                case .reconnected: tally.values.withLock { $0.reconnects += 1 }
                case .state(.disconnected): tally.values.withLock { $0.disconnects += 1 }
                case .state(.connected): tally.values.withLock { $0.connected += 1 }
                default: break
                }
            }
        }
    }

    /// Bounded by `seconds` × TEST_TIMEOUT_SCALE (the sanitizer's run is about four times slower).
    static func waitUntil(_ seconds: Double, _ condition: () -> Bool) async -> Bool {
        for _ in 0..<Int(seconds * testTimeoutScale * 20) {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    @Test("32 counters managed on one adapter: every value once and in order, peripheral-side disconnects reconnected and said")
    func thirtyTwoDevicesLoseNothing() async throws {
        let simulation = try await Simulation.start(devices: [.counter], copies: [.counter: 32])
        let adapter = try await Adapter.simulated(simulation)
        var devices: [ManagedDevice] = []
        var tallies: [Tally] = []
        var followers: [Task<Void, Never>] = []
        for counter in simulation.counters {
            let device = await adapter.manage(PeerAddress(address: counter.address, type: .random))
            try await device.subscribe(to: EmulatedCounter.counter)
            let tally = Tally()
            followers.append(Self.follow(device, into: tally))
            devices.append(device)
            tallies.append(tally)
        }
        #expect(await Self.waitUntil(60) { devices.allSatisfy { $0.state == .connected } }, "every device connected")
        #expect(await Self.waitUntil(10) { tallies.allSatisfy { $0.values.withLock { $0.received.count } >= 10 } })
        // Three devices end their links from their side; each comes back by itself.
        let dropped = [3, 17, 30]
        for index in dropped { await simulation.counters[index].peripheral.disconnect() }
        #expect(await Self.waitUntil(30) {
            dropped.allSatisfy { devices[$0].reconnectionCount == 1 && devices[$0].state == .connected }
        }, "\(dropped.map { devices[$0].state })")
        try await Task.sleep(for: .milliseconds(500))
        // Stop the counters, let the last values arrive, then compare with what they sent.
        for counter in simulation.counters { counter.stop() }
        #expect(await Self.waitUntil(10) {
            zip(simulation.counters, tallies).allSatisfy { counter, tally in
                tally.values.withLock { $0.received.last.map { $0 + 1 } } == counter.next
            }
        }, "the last value sent arrived everywhere")
        for (index, (counter, tally)) in zip(simulation.counters, tallies).enumerated() {
            let values = tally.values.withLock { $0 }
            #expect(zip(values.received, values.received.dropFirst()).allSatisfy { $0 < $1 }, "device \(index): no duplicate, no reordering")
            let gaps = zip(values.received, values.received.dropFirst()).filter { $1 != $0 + 1 }.count
            if dropped.contains(index) {
                #expect(values.reconnects == 1 && values.disconnects == 1, "device \(index): the gap was said")
                #expect(gaps <= 1, "device \(index): at most the one gap of the reconnect")
                // The value the device pushed as its own disconnect went out may be lost with the
                // link (it counts it sent): at most that one.
                #expect(counter.sent - values.received.count <= 1, "device \(index): \(values.received.count) of \(counter.sent)")
            } else {
                #expect(gaps == 0 && values.received.count == counter.sent, "device \(index): \(values.received.count) of \(counter.sent)")
                #expect(values.reconnects == 0)
            }
        }
        await adapter.close()
        for device in devices { #expect(device.state == .removed) }
        for follower in followers { await follower.value }
        await simulation.stop()
    }

    @Test func backoffDoublesUpToItsCap() {
        let options = ManagedDeviceOptions(initialBackoff: .milliseconds(250), maximumBackoff: .seconds(2))
        #expect((1...6).map { options.backoff(after: $0) } == [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(2), .seconds(2)])
    }
}
