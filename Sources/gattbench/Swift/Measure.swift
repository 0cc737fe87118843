#if canImport(Glibc)
import Glibc
#endif

/// Clocks, child processes and table formatting shared by the benchmarks.
enum Clock {
    /// Nanoseconds of `clock`.
    static func nanoseconds(_ clock: clockid_t) -> UInt64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    static var monotonic: UInt64 { nanoseconds(CLOCK_MONOTONIC) }
    static var processCPU: UInt64 { nanoseconds(CLOCK_PROCESS_CPUTIME_ID) }
    static var threadCPU: UInt64 { nanoseconds(CLOCK_THREAD_CPUTIME_ID) }
}

/// Keeps a value alive and opaque to the optimiser.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// One finished child process.
struct ProcessRun {
    var wallNanoseconds: UInt64
    /// User + system CPU of the child (wait4 rusage).
    var cpuNanoseconds: UInt64
    var maxRSSKilobytes: Int
    var exitStatus: Int32
    /// Set when the child died of a signal.
    var signal: Int32?

    var succeeded: Bool { signal == nil && exitStatus == 0 }

    var failureDescription: String {
        if let signal { return "killed by signal \(signal)" }
        return "exit status \(exitStatus)"
    }
}

enum ChildProcess {
    /// Runs `arguments` (argv[0] a path, or a name looked up on PATH) with stdin from
    /// /dev/null, stdout to `stdout` (default /dev/null) and stderr to `stderr`, and waits.
    static func run(_ arguments: [String], stdout: String = "/dev/null", stderr: String = "/dev/null") -> ProcessRun? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let start = Clock.monotonic
        let result = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        guard result == 0 else { return nil }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { return nil }
        }
        let wall = Clock.monotonic - start
        func ns(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1000 }
        let termSignal = status & 0x7F
        return ProcessRun(
            wallNanoseconds: wall, cpuNanoseconds: ns(usage.ru_utime) + ns(usage.ru_stime),
            maxRSSKilobytes: usage.ru_maxrss, exitStatus: (status >> 8) & 0xFF,
            signal: termSignal == 0 ? nil : termSignal)
    }

    /// Runs a command and returns its standard output (for version strings and checks).
    static func output(_ arguments: [String]) -> String? {
        let path = "/tmp/gattbench-output-\(getpid()).txt"
        defer { unlink(path) }
        guard let run = run(arguments, stdout: path), run.succeeded else { return nil }
        return readText(path)
    }

    /// Whether `name` is an executable on PATH (or an executable path).
    static func find(_ name: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}

func readText(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

func median(_ values: [UInt64]) -> UInt64 {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    if sorted.count % 2 == 1 { return sorted[sorted.count / 2] }
    return (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Fixed-point text without Foundation.
func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "-" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (abs(value) * scale).rounded()
    let integer = Int(rounded / scale)
    let fraction = Int(rounded) - integer * Int(scale)
    var text = (value < 0 && rounded != 0 ? "-" : "") + String(integer)
    if digits > 0 {
        let digitsText = String(fraction)
        text += "." + String(repeating: "0", count: digits - digitsText.count) + digitsText
    }
    return text
}

/// Groups thousands: 1234567 → "1 234 567".
func grouped(_ value: Int) -> String {
    let digits = Array(String(value))
    var text = ""
    for (index, digit) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { text += " " }
        text.append(digit)
    }
    return text
}

func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let gap = max(0, width - text.count)
    return right ? String(repeating: " ", count: gap) + text : text + String(repeating: " ", count: gap)
}

/// Prints a table with a header row, columns padded to their widest cell (numbers right-aligned).
func printTable(_ header: [String], _ rows: [[String]]) {
    var widths = header.map(\.count)
    for row in rows { for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) } }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { index, cell in
            pad(cell, widths[index], right: index > 0)
        }.joined(separator: "  ")
    }
    print(line(header))
    print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
    for row in rows { print(line(row)) }
}

/// Human duration per item: "67 ns", "1.20 µs", "12.3 µs", "5.47 ms".
func perItem(_ nanoseconds: Double) -> String {
    if nanoseconds < 1000 { return fixed(nanoseconds, nanoseconds < 10 ? 1 : 0) + " ns" }
    if nanoseconds < 10_000 { return fixed(nanoseconds / 1000, 2) + " µs" }
    if nanoseconds < 1_000_000 { return fixed(nanoseconds / 1000, 1) + " µs" }
    return fixed(nanoseconds / 1_000_000, 2) + " ms"
}
