import Host
import Capture
import Bluetooth
import CGattBenchMalloc
import HCI
import L2CAP

#if canImport(Glibc)
import Glibc
#endif

/// Issue 10 §5, scanning: advertising reports per second through what `gattclient scan` does
/// with each LE Meta event — HCI event parsing, `ScanAggregator` (ADV and SCAN_RSP merged per
/// device, extended chains joined, the device table bounded) and `ScanFilter` (`--name`,
/// `--min-rssi`) — from 1 000 distinct advertisers (the capture generator's: legacy ADV_IND,
/// ADV_SCAN_IND, ADV_NONCONN_IND, ADV_DIRECT_IND, SCAN_RSP and extended reports, 1–3 per event).
///
/// `soak` replays the same events for minutes and samples the heap: memory must stay flat (the
/// aggregator keeps at most `maximumDevices` devices and `maximumReportsPerDevice` reports each).
struct ScanBenchmark {
    /// Advertising report events, as HCI event packets (event code first).
    let events: [[UInt8]]
    /// Reports in `events`.
    let reportCount: Int

    /// The advertising report events of a generated capture of `records` records (about half
    /// of them).
    init(records: Int, seed: UInt64) throws {
        var generator = try CaptureGenerator(seed: seed)
        var file: [UInt8] = []
        try generator.generate(records: records) { chunk in file += chunk }
        var reader = try CaptureReader(bytes: file)
        var events: [[UInt8]] = []
        var reports = 0
        while let record = reader.next() {
            guard record.packetType == .event, record.bytes.count > 3, record.bytes.first == 0x3E else { continue }
            let subevent = record.bytes[record.bytes.startIndex + 2]
            guard subevent == 0x02 || subevent == 0x0D else { continue }
            events.append(Array(record.bytes))
            reports += Int(record.bytes[record.bytes.startIndex + 3])
        }
        self.events = events
        reportCount = reports
    }

    struct Stage {
        var name: String
        var cpuNanoseconds: UInt64
        var allocations: UInt64
        var reports: Int

        var nanosecondsPerReport: Double { Double(cpuNanoseconds) / Double(max(reports, 1)) }
        var reportsPerSecond: Double { Double(reports) * 1e9 / Double(max(cpuNanoseconds, 1)) }
    }

    /// What one pass of the merged scan produced.
    struct Outcome {
        var discovered = 0
        var updated = 0
        var shown = 0
        var devices = 0
        var evicted = 0
    }

    /// The filter measured: a name fragment most advertisers carry in their scan response
    /// ("Device-…") and an RSSI floor that about 70% of reports clear.
    static let filter = ScanFilter(name: "device-1", minimumRSSI: -80)

    func run() throws {
        print("\n== scanning: \(grouped(reportCount)) advertising reports in \(grouped(events.count)) LE Meta events from 1 000 advertisers ==")
        print("(CPU = thread CPU time of one pass, the median of 3; allocations counted by gattbench's malloc counter)")
        var stages: [Stage] = []
        var outcome = Outcome()
        stages.append(measure("HCI event parsing only") { events in
            var parsed = 0
            for bytes in events {
                if case .leMeta = try? HCIEvent(bytes: bytes) { parsed += 1 }
            }
            blackHole(parsed)
        })
        stages.append(measure("+ ScanAggregator (merged)") { events in
            var aggregator = ScanAggregator()
            var changes = 0
            for bytes in events {
                guard case .leMeta(let meta)? = try? HCIEvent(bytes: bytes) else { continue }
                changes += aggregator.receive(meta).count
            }
            blackHole(changes)
        })
        stages.append(measure("+ ScanFilter (--name device-1 --min-rssi -80)") { events in
            outcome = Self.mergedScan(events, maximumDevices: ScanAggregator.defaultMaximumDevices)
        })
        stages.append(measure("--all-reports: every report filtered on its own") { events in
            var aggregator = ScanAggregator(mode: .allReports)
            var shown = 0
            for bytes in events {
                guard case .leMeta(let meta)? = try? HCIEvent(bytes: bytes) else { continue }
                for event in aggregator.receive(meta) {
                    if case .report(let report) = event, Self.filter.matches(report) { shown += 1 }
                }
            }
            blackHole(shown)
        })
        print("")
        printTable(
            ["stage", "CPU/report", "reports/s", "allocs/report"],
            stages.map { stage in
                [stage.name, perItem(stage.nanosecondsPerReport), grouped(Int(stage.reportsPerSecond)),
                 fixed(Double(stage.allocations) / Double(stage.reports), 2)]
            })
        print("")
        print(
            "merged scan, one pass: \(grouped(outcome.discovered)) discovered, \(grouped(outcome.updated)) updated, "
                + "\(grouped(outcome.shown)) shown by the filter; \(outcome.devices) devices held, \(grouped(outcome.evicted)) evicted "
                + "(1 000 advertisers, table of \(ScanAggregator.defaultMaximumDevices))")
        if let whole = stages.dropFirst(2).first {
            print("scan pipeline: \(grouped(Int(whole.reportsPerSecond))) reports/s on one core (\(perItem(whole.nanosecondsPerReport)) per report)")
        }
    }

    /// One pass of `gattclient scan --name … --min-rssi …`'s per-event work, from a new
    /// aggregator.
    static func mergedScan(_ events: [[UInt8]], maximumDevices: Int) -> Outcome {
        var aggregator = ScanAggregator(maximumDevices: maximumDevices)
        var outcome = Outcome()
        feed(events, to: &aggregator, outcome: &outcome)
        outcome.devices = aggregator.devices.count
        outcome.evicted = aggregator.evictedDevices
        return outcome
    }

    /// Each event through `aggregator`, each discovered or updated device through the filter.
    static func feed(_ events: [[UInt8]], to aggregator: inout ScanAggregator, outcome: inout Outcome) {
        for bytes in events {
            guard case .leMeta(let meta)? = try? HCIEvent(bytes: bytes) else { continue }
            for event in aggregator.receive(meta) {
                switch event {
                case .discovered(let device):
                    outcome.discovered += 1
                    if filter.matches(device) { outcome.shown += 1 }
                case .updated(let device):
                    outcome.updated += 1
                    if filter.matches(device) { outcome.shown += 1 }
                case .report:
                    break
                }
            }
        }
    }

    private func measure(_ name: String, _ body: ([[UInt8]]) -> Void) -> Stage {
        body(events)  // warm-up
        var times: [UInt64] = []
        var allocations: UInt64 = 0
        for _ in 0..<3 {
            let before = gattbench_allocation_count()
            let start = Clock.threadCPU
            body(events)
            times.append(Clock.threadCPU - start)
            allocations = gattbench_allocation_count() - before
        }
        return Stage(name: name, cpuNanoseconds: median(times), allocations: allocations, reports: reportCount)
    }

    /// The soak: the merged scan over and over for `seconds`, the heap sampled every
    /// `interval` seconds. Prints each sample and whether the heap stayed flat.
    func soak(seconds: Int, interval: Int = 30) {
        print("== scan soak: the merged scan of \(grouped(reportCount)) reports from 1 000 advertisers, repeated for \(seconds) s ==")
        print(pad("elapsed", 9) + pad("reports", 16, right: true) + pad("heap in use", 14, right: true) + pad("resident", 12, right: true) + pad("devices", 9, right: true))
        let start = Clock.monotonic
        var next = start
        var reports = 0
        var samples: [Int] = []
        var aggregator = ScanAggregator()
        var outcome = Outcome()
        var passes = 0
        while true {
            let now = Clock.monotonic
            if now >= next {
                let heap = heapInUse()
                samples.append(heap)
                print(
                    pad("\((now - start) / 1_000_000_000) s", 9) + pad(grouped(reports), 16, right: true)
                        + pad("\(heap / 1024) KiB", 14, right: true) + pad("\(residentBytes() / 1_048_576) MiB", 12, right: true)
                        + pad("\(aggregator.devices.count)", 9, right: true))
                if now - start >= UInt64(seconds) * 1_000_000_000 { break }
                next += UInt64(interval) * 1_000_000_000
            }
            // One pass through the events, the aggregator kept across passes (a scan that never
            // stops), every change filtered.
            Self.feed(events, to: &aggregator, outcome: &outcome)
            reports += reportCount
            passes += 1
        }
        // The first sample is taken before the table fills; compare from the second on.
        let steady = samples.dropFirst()
        if let low = steady.min(), let high = steady.max(), let first = steady.first, let last = steady.last {
            print(
                "\(grouped(outcome.updated)) updates, \(grouped(outcome.shown)) shown by the filter; "
                    + "heap in use after the first pass: \(first / 1024) KiB → \(last / 1024) KiB over \(passes) passes "
                    + "(range \(low / 1024)–\(high / 1024) KiB, \(fixed(Double(high - low) / 1024, 0)) KiB): "
                    + (high - low < 1_048_576 ? "FLAT" : "GREW"))
        }
    }

    private func heapInUse() -> Int { Int(gattbench_heap_in_use()) }

    private func residentBytes() -> Int {
        guard let text = readText("/proc/self/statm") else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
