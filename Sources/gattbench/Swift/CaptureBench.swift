#if canImport(Glibc)
import Glibc
#endif
import HCI

/// The package root, from this file's path (Sources/gattbench/Swift/CaptureBench.swift).
let packageRoot: String = {
    var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(4)
    return parts.joined(separator: "/")
}()

/// Writes a generated capture to `path`.
func generateCapture(records: Int, seed: UInt64, path: String) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw BenchError("cannot create \(path): errno \(errno)") }
    defer { close(descriptor) }
    var generator = try CaptureGenerator(seed: seed)
    try generator.generate(records: records) { bytes in
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBufferPointer { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                throw BenchError("write \(path): errno \(errno)")
            }
            written += result
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One program measured on one capture.
struct CaptureTool {
    var name: String
    /// What the issue compares it with.
    var role: String
    var arguments: (String) -> [String]
}

struct CaptureMeasurement {
    var tool: String
    var records: Int
    var runs: [ProcessRun]
    var failure: String?

    var wall: Double { Double(median(runs.map(\.wallNanoseconds))) }
    var cpu: Double { Double(median(runs.map(\.cpuNanoseconds))) }
    var wallPerRecord: Double { wall / Double(records) }
    var cpuPerRecord: Double { cpu / Double(records) }
    var recordsPerSecond: Double { Double(records) / (wall / 1e9) }
    var maxRSS: Int { runs.map(\.maxRSSKilobytes).max() ?? 0 }
}

struct CaptureBenchmark {
    var directory: String
    var gattclient: String
    var sizes: [Int]
    var repeats: Int
    /// A slow tool stops repeating once its runs on one file add up to this.
    var budgetNanoseconds: UInt64 = 60_000_000_000
    var seed: UInt64 = 10
    /// Roles left out (`btmon`, `tshark`).
    var without: Set<String> = []

    func path(records: Int) -> String { "\(directory)/capture-\(records).btsnoop" }

    func prepare() throws -> String {
        mkdir(directory, 0o755)
        for records in Set(sizes + [10_000]).sorted() where !fileExists(path(records: records)) {
            let start = Clock.monotonic
            try generateCapture(records: records, seed: seed, path: path(records: records))
            print("generated \(path(records: records)) (\(grouped(records)) records) in \(fixed(Double(Clock.monotonic - start) / 1e9, 1)) s")
        }
        let floor = "\(directory)/floor"
        guard let cc = ChildProcess.find("cc") else { throw BenchError("no C compiler (cc) on PATH for the floor parser") }
        let source = "\(packageRoot)/benchmarks/floor.c"
        let build = ChildProcess.run([cc, "-O2", "-o", floor, source], stderr: "\(directory)/floor-build.log")
        guard let build, build.succeeded else {
            throw BenchError("cc -O2 \(source) failed: see \(directory)/floor-build.log")
        }
        return floor
    }

    func tools(floor: String) -> [CaptureTool] {
        var tools = [
            CaptureTool(name: "C floor (floor.c -O2)", role: "floor") { [floor, $0] },
            CaptureTool(name: "gattclient dump --summary", role: "summary") { [gattclient, "dump", "--summary", $0] },
            CaptureTool(name: "gattclient dump --json", role: "json") { [gattclient, "--json", "dump", $0] },
            CaptureTool(name: "gattclient dump (text)", role: "text") { [gattclient, "dump", $0] },
            // Issue 25: the same summary from standard input (a pipe from cat), through the
            // streaming reader's pipe path.
            CaptureTool(name: "cat | gattclient dump - --summary", role: "stdin") {
                ["/bin/sh", "-c", "cat \"$1\" | \"$2\" dump - --summary", "sh", $0, gattclient]
            },
        ]
        if !without.contains("btmon"), let btmon = ChildProcess.find("btmon") {
            tools.append(CaptureTool(name: "btmon -r", role: "btmon") { [btmon, "-r", $0] })
        }
        if !without.contains("tshark"), let tshark = ChildProcess.find("tshark") {
            tools.append(CaptureTool(name: "tshark -r", role: "tshark") { [tshark, "-r", $0] })
        }
        return tools
    }

    func run() throws -> [Int: [String: CaptureMeasurement]] {
        guard access(gattclient, X_OK) == 0 else {
            throw BenchError(
                "no release gattclient at \(gattclient): run `swift build -c release --product gattclient` first")
        }
        let floor = try prepare()
        let tools = tools(floor: floor)
        for tool in tools where tool.role == "btmon" || tool.role == "tshark" {
            let version = ChildProcess.output(tool.role == "btmon" ? [tool.arguments("")[0], "--version"] : [tool.arguments("")[0], "--version"])
            print("\(tool.role): \(version?.split(separator: "\n").first.map(String.init) ?? "version unknown")")
        }
        var results: [Int: [String: CaptureMeasurement]] = [:]
        for records in sizes {
            let file = path(records: records)
            print("\n== capture decoding: \(grouped(records)) records (\(file)), median of up to \(repeats) runs ==")
            var byRole: [String: CaptureMeasurement] = [:]
            for tool in tools {
                var measurement = CaptureMeasurement(tool: tool.name, records: records, runs: [])
                var spent: UInt64 = 0
                while measurement.runs.count < repeats, spent < budgetNanoseconds || measurement.runs.isEmpty {
                    let stderrPath = "\(directory)/\(tool.role)-stderr.txt"
                    guard let run = ChildProcess.run(tool.arguments(file), stderr: stderrPath) else {
                        measurement.failure = "could not start"
                        break
                    }
                    guard run.succeeded else {
                        let message = readText(stderrPath)?.split(separator: "\n").last.map(String.init) ?? ""
                        measurement.failure = "\(run.failureDescription) \(message)"
                        break
                    }
                    measurement.runs.append(run)
                    spent += run.wallNanoseconds
                }
                byRole[tool.role] = measurement
                if let failure = measurement.failure {
                    print("  \(tool.name): FAILED (\(failure))")
                } else {
                    print(
                        "  \(pad(tool.name, 28)) \(pad(perItem(measurement.wallPerRecord), 9, right: true)) wall/record, "
                            + "\(pad(perItem(measurement.cpuPerRecord), 9, right: true)) CPU/record  (\(measurement.runs.count) runs)")
                }
            }
            results[records] = byRole
            printCaptureTable(byRole, tools: tools)
        }
        return results
    }

    func printCaptureTable(_ byRole: [String: CaptureMeasurement], tools: [CaptureTool]) {
        let floor = byRole["floor"]
        var rows: [[String]] = []
        for tool in tools {
            guard let m = byRole[tool.role], m.failure == nil, !m.runs.isEmpty else {
                rows.append([tool.name, "failed", "", "", "", "", "", ""])
                continue
            }
            let vsFloor = floor.map { fixed(m.cpuPerRecord / $0.cpuPerRecord, 1) + "x" } ?? "-"
            let vsFloorWall = floor.map { fixed(m.wallPerRecord / $0.wallPerRecord, 1) + "x" } ?? "-"
            rows.append([
                tool.name, grouped(Int(m.recordsPerSecond)), perItem(m.wallPerRecord), perItem(m.cpuPerRecord),
                vsFloorWall, vsFloor, "\(m.maxRSS / 1024) MB", "\(m.runs.count)",
            ])
        }
        print("")
        printTable(["program", "records/s", "wall/rec", "CPU/rec", "÷floor wall", "÷floor CPU", "max RSS", "runs"], rows)
        print("")
        // The issue's targets.
        func target(_ label: String, _ ours: String, _ reference: String, limit: Double) {
            guard let a = byRole[ours], a.failure == nil, !a.runs.isEmpty else {
                print("  \(label): not measured (\(ours) failed)")
                return
            }
            guard let b = byRole[reference], b.failure == nil, !b.runs.isEmpty else {
                print("  \(label): reference \(reference) not available")
                return
            }
            let wallRatio = a.wallPerRecord / b.wallPerRecord
            let cpuRatio = a.cpuPerRecord / b.cpuPerRecord
            let met = cpuRatio <= limit && wallRatio <= limit
            print(
                "  \(pad(label, 44)) ours/reference = \(fixed(wallRatio, 2)) wall, \(fixed(cpuRatio, 2)) CPU"
                    + "  (target ≤ \(fixed(limit, 2)))  \(met ? "MET" : "MISSED")")
        }
        // Issue 25's goals (issue 10's were 3x the floor and faster than btmon / tshark).
        target("dump --summary within 1.5x of the C floor", "summary", "floor", limit: 1.5)
        target("text dump at most 0.1 of btmon -r", "text", "btmon", limit: 0.1)
        target("JSON dump at most 0.05 of tshark -r", "json", "tshark", limit: 0.05)
        func absolute(_ label: String, _ role: String, microseconds: Double) {
            guard let m = byRole[role], m.failure == nil, !m.runs.isEmpty else { return }
            let cpu = m.cpuPerRecord / 1000
            print(
                "  \(pad(label, 44)) \(fixed(cpu, 2)) µs CPU/record  (target ≤ \(fixed(microseconds, 1)) µs)  "
                    + (cpu <= microseconds ? "MET" : "MISSED"))
        }
        absolute("text dump per record", "text", microseconds: 1.5)
        absolute("JSON dump per record", "json", microseconds: 1.0)
        for role in ["summary", "text", "json", "stdin"] {
            guard let m = byRole[role], m.failure == nil, !m.runs.isEmpty else { continue }
            let mebibytes = Double(m.maxRSS) / 1024
            print(
                "  \(pad("resident memory of " + m.tool, 44)) \(fixed(mebibytes, 1)) MiB  (target < 64 MiB)  "
                    + (mebibytes < 64 ? "MET" : "MISSED"))
        }
        if let text = byRole["text"], let btmon = byRole["btmon"], text.failure == nil, btmon.failure == nil {
            print("  btmon -r / text dump = \(fixed(btmon.cpuPerRecord / text.cpuPerRecord, 1))x CPU")
        }
        if let json = byRole["json"], let tshark = byRole["tshark"], json.failure == nil, tshark.failure == nil {
            print("  tshark -r / JSON dump = \(fixed(tshark.cpuPerRecord / json.cpuPerRecord, 1))x CPU")
        }
    }
}
