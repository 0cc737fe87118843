import Capture
import HCI

#if canImport(Glibc)
import Glibc
#endif

/// Issue 10 §6, start-up: the time from process start to the first HCI command sent, for
/// `gattclient --transport sim scan`. The command's `--record` file stamps every HCI packet
/// with the wall clock when it is sent; the benchmark notes the wall clock just before
/// `posix_spawn` and subtracts. Beside it, the whole life (start, read a one-record capture,
/// print, exit) of the C floor binary: what any process costs here.
struct StartupBenchmark {
    let gattclient: String
    let directory: String
    /// The C floor binary (built by the capture benchmark) and a one-record capture for it.
    let floor: String?
    let oneRecordCapture: String?
    var repeats = 11

    static func realtimeMicroseconds() -> Int64 { Int64(Clock.nanoseconds(CLOCK_REALTIME) / 1000) }

    func run() throws {
        print("\n== start-up: process start → first HCI command sent (gattclient --transport sim scan), median of \(repeats) ==")
        let record = "\(directory)/startup.btsnoop"
        var startups: [UInt64] = []
        var cpu: [UInt64] = []
        for _ in 0..<repeats {
            unlink(record)
            let spawned = Self.realtimeMicroseconds()
            guard let run = ChildProcess.run([gattclient, "--transport", "sim", "--record", record, "scan", "--duration", "0.2"]),
                run.succeeded
            else { throw BenchError("\(gattclient) --transport sim --record \(record) scan failed") }
            var reader = try CaptureReader(bytes: try CaptureFile.readAll(path: record))
            var first: Int64?
            while let packet = reader.next() {
                if packet.packetType == .command {
                    first = packet.timestamp
                    break
                }
            }
            guard let first else { throw BenchError("\(record) holds no HCI command") }
            startups.append(UInt64(max(0, first - spawned)) * 1000)
            cpu.append(run.cpuNanoseconds)
        }
        var rows = [["gattclient: start → first HCI command (Reset)", perItem(Double(median(startups))), "-"]]
        rows.append(["gattclient scan --duration 0.2: whole process", "-", perItem(Double(median(cpu)))])
        if let floor, let oneRecordCapture {
            var walls: [UInt64] = []
            var cpus: [UInt64] = []
            for _ in 0..<repeats {
                guard let run = ChildProcess.run([floor, oneRecordCapture]), run.succeeded else { break }
                walls.append(run.wallNanoseconds)
                cpus.append(run.cpuNanoseconds)
            }
            if !walls.isEmpty {
                rows.append(["C floor, whole life on a one-record capture", perItem(Double(median(walls))), perItem(Double(median(cpus)))])
            }
        }
        printTable(["what", "wall", "CPU"], rows)
        print("(the first command is sent after argument parsing, the simulation's start and the transport's; the scan itself then runs 0.2 s)")
    }
}
