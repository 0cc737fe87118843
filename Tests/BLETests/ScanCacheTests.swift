import Bluetooth
import TestSupport
import Testing

@testable import BLE

/// Issue 36, hole 6: what the scans remember of the devices they heard is bounded in size and
/// age (``ScanCacheLimits``); the time is given (the adapter's clock), so nothing here waits.
@Suite("Scan caches")
struct ScanCacheTests {
    static func address(_ n: Int) -> BluetoothAddress { BluetoothAddress(rawValue: 0xC000_0000_0000 | UInt64(n))! }

    static func advertisement(_ n: Int, data: [UInt8] = [0x02, 0x01, 0x06]) -> Advertisement {
        Advertisement(peer: PeerAddress(address: address(n), type: .random), rssi: -60, isConnectable: true, data: data)
    }

    @Test func manyDistinctKeysStayAtTheCapAndTheLeastRecentGo() {
        var cache = ExpiringCache<BluetoothAddress, Int>(
            limits: ScanCacheLimits(maximumDevices: 100, expiry: .seconds(60)))
        for n in 0..<10_000 { cache.set(Self.address(n), n, now: .milliseconds(n)) }
        #expect(cache.count == 100 && cache.slotCount == 100)
        #expect(cache.evicted == 9_900 && cache.expired == 0)
        // The 100 heard last are the ones kept, oldest first.
        #expect(cache.entries.map(\.value) == Array(9_900..<10_000))
        #expect(cache[Self.address(9_899)] == nil && cache[Self.address(9_999)] == 9_999)
    }

    @Test func aDeviceHeardAgainIsKeptWhileOthersAreEvicted() {
        var cache = ExpiringCache<BluetoothAddress, Int>(
            limits: ScanCacheLimits(maximumDevices: 10, expiry: .seconds(60)))
        for n in 0..<1_000 {
            cache.set(Self.address(1_000_000), -1, now: .milliseconds(n))  // heard all the time
            cache.set(Self.address(n), n, now: .milliseconds(n))
        }
        #expect(cache.count == 10 && cache[Self.address(1_000_000)] == -1)
    }

    @Test func aDeviceNotHeardForTheExpiryIsForgotten() {
        var cache = ExpiringCache<BluetoothAddress, Int>(
            limits: ScanCacheLimits(maximumDevices: 100, expiry: .seconds(5)))
        for n in 0..<10 { cache.set(Self.address(n), n, now: .seconds(n)) }
        cache.expire(now: .seconds(12))  // heard at 8, 9 s: younger than 5 s at 12 s
        #expect(cache.entries.map(\.value) == [8, 9], "heard at 7 s: exactly 5 s old at 12 s, expired")
        #expect(cache.expired == 8 && cache.evicted == 0)
        // Hearing a device again refreshes it; inserting expires the rest first.
        cache.set(Self.address(9), 9, now: .seconds(13))  // address 8 (heard at 8 s) is 5 s old: expired
        cache.set(Self.address(50), 50, now: .seconds(14))
        #expect(cache.entries.map(\.value) == [9, 50] && cache.expired == 9)
        cache.expire(now: .seconds(60))
        #expect(cache.isEmpty && cache.expired == 11)
        // Slots are reused, never more than the cap.
        for n in 0..<1_000 { cache.set(Self.address(n), n, now: .seconds(100)) }
        #expect(cache.count == 100 && cache.slotCount == 100)
    }

    @Test func smallerLimitsDropTheExcessAtOnce() {
        var cache = ExpiringCache<BluetoothAddress, Int>(
            limits: ScanCacheLimits(maximumDevices: 100, expiry: .seconds(60)))
        for n in 0..<100 { cache.set(Self.address(n), n, now: .milliseconds(n)) }
        cache.setLimits(ScanCacheLimits(maximumDevices: 10, expiry: .seconds(60)), now: .seconds(1))
        #expect(cache.entries.map(\.value) == Array(90..<100) && cache.evicted == 90)
        #expect(
            ScanCacheLimits(maximumDevices: 0, expiry: .zero)
                == ScanCacheLimits(maximumDevices: 1, expiry: .milliseconds(1)))
        #expect(ScanCacheLimits().maximumDevices == 4096 && ScanCacheLimits().expiry == .seconds(300))
    }

    /// Through the adapter's scan hub: the devices it replays to later scans and what each scan
    /// was given stay at the cap under 100 000 distinct random addresses, and go when not heard.
    @Test func theScanHubStaysAtTheCapAndForgetsTheUnheard() async throws {
        var hub = ScanHub(limits: ScanCacheLimits(maximumDevices: 64, expiry: .seconds(10)))
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: Advertisement.self, bufferingPolicy: .bufferingNewest(1))
        _ = hub.add(ScanOptions(), continuation, now: .zero)
        var generator = SystemRandomNumberGenerator()
        for n in 0..<100_000 {
            let random = Int(UInt64.random(in: 0...0xFFFF_FFFF_FFFF, using: &generator) & 0x3FFF_FFFF_FFFF)
            hub.deliver(Self.advertisement(random), now: .microseconds(n))
        }
        #expect(hub.statistics.devices == 64 && hub.largestCache == 64)
        #expect(
            hub.statistics.evicted >= 2 * (100_000 - 64 - 10), "the known devices' and the scan's caches both evicted")
        // A device heard again unchanged is not given again; changed, it is.
        let (counted, countedContinuation) = AsyncThrowingStream.makeStream(of: Advertisement.self)
        let second = hub.add(ScanOptions(), countedContinuation, now: .seconds(1))  // 64 replayed
        hub.deliver(Self.advertisement(1), now: .seconds(2))
        hub.deliver(Self.advertisement(1), now: .seconds(3))
        hub.deliver(Self.advertisement(1, data: [0x02, 0x01, 0x04]), now: .seconds(4))
        hub.remove(second)
        countedContinuation.finish()
        var given = 0
        for try await _ in counted { given += 1 }
        #expect(given == 64 + 2)
        // 10 s after the last advertisement: a new scan is given nothing, one device heard now is
        // the only one remembered.
        let (late, lateContinuation) = AsyncThrowingStream.makeStream(of: Advertisement.self)
        let third = hub.add(ScanOptions(), lateContinuation, now: .seconds(14))
        #expect(hub.statistics.devices == 0 && hub.statistics.expired >= 64)
        hub.deliver(Self.advertisement(2), now: .seconds(15))
        #expect(hub.statistics.devices == 1)
        hub.remove(third)
        lateContinuation.finish()
        var lateGiven = 0
        for try await _ in late { lateGiven += 1 }
        #expect(lateGiven == 1)
        hub.finishAll()
        _ = stream
    }

    /// Through an adapter on the simulation, its time from the injected clock: with a cap of one
    /// device, the advertisers take turns in the caches (each new to the scan again, evictions
    /// counted); once the manual clock has moved past the expiry, the remembered one has expired
    /// for a scan that joins then.
    @Test func theAdapterBoundsItsCachesOnItsOwnClock() async throws {
        let clock = ManualClock()
        var options = AdapterOptions()
        options.clock = clock
        options.scanCache = ScanCacheLimits(maximumDevices: 1, expiry: .seconds(10))
        let adapter = try await Adapter.open("sim:sensortag,counter*2", options: options)
        let scan = await adapter.scan(ScanOptions())
        let (given, counted) = AsyncStream.makeStream(of: PeerAddress.self)
        let reader = Task {
            do {
                for try await advertisement in scan { counted.yield(advertisement.peer) }
            } catch {}
            counted.finish()
        }
        func next(_ what: String) async throws {
            let arrived = try await withTimeout(20, what) {
                for await _ in given { return true }
                return false
            }
            try #require(arrived, "the scan ended before \(what)")
        }
        // Three advertisements given: more than one device seen through a cache of one.
        for index in 1...3 { try await next("advertisement \(index)") }
        var statistics = await adapter.scanCacheStatistics
        #expect(statistics.devices == 1 && statistics.evicted >= 2, "\(statistics)")
        #expect(await adapter.largestScanCache == 1)
        #expect(statistics.expired == 0, "the manual clock has not moved")
        await clock.advance(by: .seconds(11))
        // A scan that joins now: the device remembered 11 s ago (by the manual clock; the
        // simulation keeps advertising in real time) has expired, none is replayed to it.
        let late = await adapter.scan(ScanOptions())
        statistics = await adapter.scanCacheStatistics
        #expect(statistics.expired >= 1 && statistics.devices == 0, "\(statistics)")
        _ = late
        reader.cancel()
        await adapter.close()
    }
}
