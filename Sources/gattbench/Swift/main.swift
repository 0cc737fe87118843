import Bluetooth
#if canImport(Glibc)
import Glibc
#endif
import CGattBenchMalloc

/// gattbench: the performance suite of issue 10. See benchmarks/README.md.
let usage = """
    usage: gattbench [all] [--quick] [--repeats N] [--dir DIR] [--gattclient PATH]
           gattbench generate --records N [--seed S] OUT.btsnoop
           gattbench capture [--sizes N,N] [--repeats N] [--dir DIR] [--gattclient PATH] [--without btmon,tshark]
           gattbench codec [--iterations N]
           gattbench notify [--count N]
           gattbench discovery [--trace]
           gattbench scan [--records N]
           gattbench scan-soak [--minutes N]
           gattbench scan-cache [--records N]                (benchmarks/scan_cache.py runs it)
           gattbench startup [--repeats N] [--dir DIR] [--gattclient PATH]
           gattbench decoder FILE.btsnoop
           gattbench managed TRANSPORT SECONDS ADDRESS,...   (benchmarks/many_devices.py runs it)
           gattbench mqtt-count PORT PREFIX                  (benchmarks/mqtt_gateway.py runs it)

    all (default): capture decoding on the 100k and 1M files (gattclient dump --summary, --json,
    text; the C floor; btmon -r and tshark -r when installed), PDU codec micro-benchmarks,
    notifications through the user-space stack, ATT requests of discovery, scanning (reports/s
    through parsing, merging and filtering from 1 000 advertisers), start-up to the first HCI
    command. --quick: 10k and 100k files, 1 run each. --without leaves those programs out (tshark
    -r on a 10M-record file runs for more than 19 minutes of CPU and 1.6 GB).
    scan-soak (not in `all`): the merged scan repeated for N minutes (default 10), heap sampled
    every 30 s: memory must stay flat.
    Build the gattclient it measures first: swift build -c release --product gattclient
    """

struct Options {
    var command = "all"
    var quick = false
    var trace = false
    var repeats = 3
    var directory = "/tmp/gattbench"
    var gattclient = "\(packageRoot)/.build/release/gattclient"
    var sizes = [100_000, 1_000_000]
    var records: Int?
    var seed: UInt64 = 10
    var iterations = 200_000
    var count = 100_000
    var minutes = 10
    var positional: [String] = []
    /// Reference programs left out of `capture` (btmon, tshark).
    var without: Set<String> = []
}

func parse(_ arguments: [String]) throws -> Options {
    var options = Options()
    var rest = arguments[...]
    if let first = rest.first, !first.hasPrefix("-") {
        options.command = first
        rest = rest.dropFirst()
    }
    func value(_ flag: String) throws -> String {
        guard let next = rest.popFirst() else { throw BenchError("\(flag) needs a value") }
        return next
    }
    func number(_ flag: String) throws -> Int {
        let text = try value(flag).replacingOccurrences("_", "")
        guard let n = Int(text), n > 0 else { throw BenchError("\(flag) needs a positive number") }
        return n
    }
    while let argument = rest.popFirst() {
        switch argument {
        case "--quick": options.quick = true
        case "--trace": options.trace = true
        case "--repeats": options.repeats = try number(argument)
        case "--without": options.without = Set(try value(argument).split(separator: ",").map(String.init))
        case "--dir": options.directory = try value(argument)
        case "--gattclient": options.gattclient = try value(argument)
        case "--sizes": options.sizes = try value(argument).split(separator: ",").map { part in
                guard let n = Int(part), n > 0 else { throw BenchError("--sizes: bad size \(part)") }
                return n
            }
        case "--records": options.records = try number(argument)
        case "--seed": options.seed = UInt64(try number(argument))
        case "--iterations": options.iterations = try number(argument)
        case "--count": options.count = try number(argument)
        case "--minutes": options.minutes = try number(argument)
        case "-h", "--help":
            print(usage)
            exit(0)
        default:
            if argument.hasPrefix("-") { throw BenchError("unknown option \(argument)") }
            options.positional.append(argument)
        }
    }
    return options
}

extension String {
    func replacingOccurrences(_ target: Character, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}

func machineDescription() -> String {
    var name = utsname()
    uname(&name)
    let release = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let machine = withUnsafeBytes(of: name.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let model = readText("/proc/cpuinfo")?.split(separator: "\n").first { $0.hasPrefix("model name") }
        .map { String($0.split(separator: ":", maxSplits: 1).last ?? "").trimmingSpaces } ?? "unknown CPU"
    let loadavg = readText("/proc/loadavg")?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
    return "\(model), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs, Linux \(release) \(machine); load average \(loadavg)"
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

func printReferences() {
    print("""

        Reference figures from issue 10 (2-core Debian 12, whole process, per record):
          C header parser 67 ns · PureSwift/Bluetooth decoders 1.1–2.7 µs · btmon -r 12.3 µs ·
          Bumble's parsers 12.6 µs · tshark -r 5–40 µs
        """)
}

/// The start-up benchmark, with the C floor binary (built by the capture benchmark, when it ran)
/// and a one-record capture as its reference.
func startupBenchmark(_ options: Options) throws -> StartupBenchmark {
    mkdir(options.directory, 0o755)
    let one = "\(options.directory)/capture-1.btsnoop"
    if !fileExists(one) { try generateCapture(records: 1, seed: options.seed, path: one) }
    let floor = "\(options.directory)/floor"
    return StartupBenchmark(
        gattclient: options.gattclient, directory: options.directory, floor: fileExists(floor) ? floor : nil,
        oneRecordCapture: one, repeats: options.quick ? 3 : 11)
}

do {
    let options = try parse(Array(CommandLine.arguments.dropFirst()))
    gattbench_line_buffer_stdout()
    switch options.command {
    case "generate":
        guard let records = options.records, options.positional.count == 1 else { throw BenchError(usage) }
        let start = Clock.monotonic
        try generateCapture(records: records, seed: options.seed, path: options.positional[0])
        print("wrote \(grouped(records)) records to \(options.positional[0]) in \(fixed(Double(Clock.monotonic - start) / 1e9, 2)) s")
    case "capture":
        print("machine: \(machineDescription())")
        var bench = CaptureBenchmark(
            directory: options.directory, gattclient: options.gattclient, sizes: options.sizes, repeats: options.repeats)
        bench.seed = options.seed
        bench.without = options.without
        _ = try bench.run()
        printReferences()
    case "codec":
        _ = try CodecBenchmark(iterations: options.iterations).run()
    case "notify":
        _ = try await NotificationBenchmark(count: options.count).run()
    case "discovery":
        try DiscoveryBenchmark(trace: options.trace).run()
    case "scan":
        try ScanBenchmark(records: options.records ?? 200_000, seed: options.seed).run()
    case "scan-soak":
        try ScanBenchmark(records: options.records ?? 200_000, seed: options.seed).soak(seconds: options.minutes * 60)
    case "scan-cache":
        ScanCacheBenchmark(count: options.records ?? 1_000_000).run()
    case "startup":
        try startupBenchmark(options).run()
    case "decoder":
        guard options.positional.count == 1 else { throw BenchError(usage) }
        try DecoderBenchmark(path: options.positional[0]).run()
    case "managed":
        guard options.positional.count == 3, let seconds = Double(options.positional[1]) else { throw BenchError(usage) }
        let addresses = options.positional[2].split(separator: ",").compactMap { BluetoothAddress(String($0)) }
        try await ManagedBenchmark(transport: options.positional[0], seconds: seconds, addresses: addresses).run()
    case "mqtt-count":
        guard options.positional.count == 2, let port = Int(options.positional[0]) else { throw BenchError(usage) }
        try await MQTTCountBenchmark(port: port, prefix: options.positional[1]).run()
    case "all":
        let started = Clock.monotonic
        print("gattbench — issue 10 performance suite")
        print("machine: \(machineDescription())")
        print("note: a shared, noisy machine gives noisy wall times; CPU times (rusage, clock_gettime) are steadier.")
        var bench = CaptureBenchmark(
            directory: options.directory, gattclient: options.gattclient,
            sizes: options.quick ? [10_000, 100_000] : options.sizes, repeats: options.quick ? 1 : options.repeats)
        bench.seed = options.seed
        bench.without = options.without
        _ = try bench.run()
        printReferences()
        try DecoderBenchmark(path: bench.path(records: bench.sizes[0])).run()
        _ = try CodecBenchmark(iterations: options.quick ? 20_000 : options.iterations).run()
        _ = try await NotificationBenchmark(count: options.count).run()
        try DiscoveryBenchmark().run()
        try ScanBenchmark(records: options.quick ? 50_000 : 200_000, seed: options.seed).run()
        try startupBenchmark(options).run()
        print("\nsuite finished in \(fixed(Double(Clock.monotonic - started) / 1e9, 0)) s")
    default:
        throw BenchError("unknown command \(options.command)\n\(usage)")
    }
} catch {
    gattbench_print_error("gattbench: \(error)\n")
    exit(1)
}
