import BLE
import Bluetooth
import CGattBenchMalloc

#if canImport(Glibc)
    import Glibc
#endif

/// `gattbench scan-cache [--records N]` (issue 36, hole 6; benchmarks/scan_cache.py runs it): N
/// distinct random advertiser addresses (default 1 000 000) through an adapter's scan hub (the
/// devices replayed to later scans, one scan's `given`) and the address-type cache, as the
/// adapter feeds them, with the default ``ScanCacheLimits`` (4 096 devices, 300 s). One
/// advertisement per address, 1 µs apart on the given clock (so the cap, not the expiry, bounds
/// them); then 301 s later one more device: the expiry. Prints the entries, what was forgotten,
/// the heap in use and the resident memory before, at every 100 000, and after; one JSON line last.
struct ScanCacheBenchmark {
    var count: Int

    func run() {
        var hub = ScanHub()
        var types = ExpiringCache<BluetoothAddress, AddressType>()
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: Advertisement.self, bufferingPolicy: .bufferingNewest(1))
        _ = hub.add(ScanOptions(), continuation, now: .zero)
        var generator = SystemRandomNumberGenerator()
        let data: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x0F, 0x18]
        let heapBefore = Int(gattbench_heap_in_use())
        let residentBefore = residentBytes()
        print(
            pad("addresses", 11, right: true) + pad("hub devices", 13, right: true)
                + pad("largest cache", 15, right: true)
                + pad("evicted", 11, right: true) + pad("heap in use", 14, right: true)
                + pad("resident", 12, right: true))
        func sample(_ done: Int) {
            print(
                pad(grouped(done), 11, right: true) + pad(grouped(hub.statistics.devices), 13, right: true)
                    + pad(grouped(max(hub.largestCache, types.count)), 15, right: true)
                    + pad(grouped(hub.statistics.evicted + types.evicted), 11, right: true)
                    + pad("\(Int(gattbench_heap_in_use()) / 1024) KiB", 14, right: true)
                    + pad("\(residentBytes() / 1024) KiB", 12, right: true))
        }
        sample(0)
        let started = Clock.monotonic
        for n in 1...count {
            let random = UInt64.random(in: 0...0xFFFF_FFFF_FFFF, using: &generator)
            // A random static or private address: either type, any bits.
            let peer = PeerAddress(address: BluetoothAddress(rawValue: random)!, type: .random)
            let now = Duration.microseconds(n)
            types.set(peer.address, .random, now: now)
            hub.deliver(Advertisement(peer: peer, rssi: -60, isConnectable: true, data: data), now: now)
            if n % 100_000 == 0 { sample(n) }
        }
        let elapsed = Double(Clock.monotonic - started) / 1e9
        let full = (devices: hub.statistics.devices, largest: max(hub.largestCache, types.count))
        let heapFull = Int(gattbench_heap_in_use())
        let residentFull = residentBytes()
        // 301 s after the last: every device has expired; one heard now is the only one left.
        let later = Duration.microseconds(count) + .seconds(301)
        types.set(BluetoothAddress(rawValue: 1)!, .random, now: later)
        hub.deliver(
            Advertisement(
                peer: PeerAddress(address: BluetoothAddress(rawValue: 1)!, type: .random), rssi: -60,
                isConnectable: true, data: data), now: later)
        let statistics = hub.statistics
        print(
            "after \(grouped(count)) distinct addresses: \(grouped(full.devices)) devices in the hub, the largest cache \(grouped(full.largest)) "
                + "entries (cap \(ScanCacheLimits.defaultMaximumDevices)); heap \(heapBefore / 1024) → \(heapFull / 1024) KiB, resident "
                + "\(residentBefore / 1024) → \(residentFull / 1024) KiB; \(fixed(elapsed * 1e9 / Double(count), 0)) ns an address"
        )
        print(
            "301 s later, one more device: \(statistics.devices) in the hub (\(grouped(statistics.expired + types.expired)) expired, "
                + "\(grouped(statistics.evicted + types.evicted)) evicted in all)")
        print(
            "{\"addresses\": \(count), \"hubDevices\": \(full.devices), \"largestCache\": \(full.largest), \"heapBeforeKiB\": \(heapBefore / 1024), "
                + "\"heapAfterKiB\": \(heapFull / 1024), \"residentBeforeKiB\": \(residentBefore / 1024), \"residentAfterKiB\": \(residentFull / 1024), "
                + "\"devicesAfterExpiry\": \(statistics.devices), \"expired\": \(statistics.expired + types.expired), "
                + "\"nanosecondsPerAddress\": \(Int(elapsed * 1e9 / Double(count)))}")
        hub.finishAll()
        _ = stream
    }

    private func residentBytes() -> Int {
        guard let text = readText("/proc/self/statm") else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
