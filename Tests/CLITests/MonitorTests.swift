import Capture
import Bluetooth
import Foundation
import HCI
import Testing
@testable import GATTClientCLI

@Suite struct MonitorCommandTests {
    /// The Bumble fixture's records as the kernel's monitor channel would deliver them.
    static func datagrams(index: UInt16 = 0) throws -> [[UInt8]] {
        var reader = try CaptureFile.open(path: Paths.fixture("bumble-sensortag-session.btsnoop"))
        var out: [[UInt8]] = []
        while let record = try reader.nextRecord() {
            guard let type = record.packetType, let opcode = MonitorOpcode(packet: type, direction: record.direction) else { continue }
            var writer = ByteWriter()
            writer.writeUInt16LE(opcode.rawValue)
            writer.writeUInt16LE(index)
            writer.writeUInt16LE(UInt16(record.bytes.count))
            writer.writeBytes(record.bytes)
            out.append(writer.bytes)
        }
        return out
    }

    func run(_ options: MonitorOptions, json: Bool, record: String? = nil, datagrams: [[UInt8]]) throws -> (lines: [String], count: Int) {
        var output = BufferedOutput.capturing()
        var queue = datagrams[...]
        let count = try MonitorCommand(options: options, json: json, record: record).run(
            output: &output, next: { queue.popFirst() }, shouldStop: { queue.isEmpty })
        output.flush()
        return (output.capturedLines, count)
    }

    @Test func decodesLikeDumpAndRecordsAMonitorCapture() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("monitor-\(getpid()).btsnoop").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let datagrams = try Self.datagrams()
        let live = try run(MonitorOptions(), json: true, record: path, datagrams: datagrams)
        #expect(live.count == 110)
        let fromFile = try dump(Paths.fixture("bumble-sensortag-session.btsnoop")).lines
        func strip(_ lines: [String]) throws -> [Any] {
            try jsonObjects(lines).map { $0.filter { !["time", "t", "transport"].contains($0.key) } }
        }
        #expect(sameJSON(try strip(live.lines), try strip(fromFile)))
        // The recording is a Linux-monitor btsnoop that dump reads back the same way.
        let replayed = try dump(path).lines
        #expect(sameJSON(try strip(replayed), try strip(fromFile)))
        #expect(replayed.first?.contains("\"transport\":\"hci_mon\"") == true)
    }

    @Test func adapterFilterAndBadDatagrams() throws {
        var options = MonitorOptions()
        options.controllerIndex = 1
        let other = try run(options, json: false, datagrams: try Self.datagrams(index: 0))
        #expect(other.count == 0 && other.lines.isEmpty)
        let mine = try run(options, json: false, datagrams: try Self.datagrams(index: 1))
        #expect(mine.count == 110)
        // A datagram whose Length disagrees with its size is skipped, not fatal.
        let broken = try run(MonitorOptions(), json: false, datagrams: [[0x02, 0x00, 0x00, 0x00, 0x09, 0x00, 0x03, 0x0C, 0x00]] + (try Self.datagrams()).prefix(1))
        #expect(broken.count == 1)
    }

    @Test func monitorDatagramParsing() throws {
        let note = try CaptureRecord(monitorDatagram: [0x0C, 0x00, 0xFF, 0xFF, 0x02, 0x00, 0x68, 0x69], number: 1, timestamp: 0)
        #expect(note.kind == .note(.systemNote))
        #expect(note.controllerIndex == 0xFFFF)
        let event = try CaptureRecord(monitorDatagram: [0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x0E, 0x00], number: 2, timestamp: 0)
        #expect(event.kind == .packet(.event) && event.direction == .received && Array(event.bytes) == [0x0E, 0x00])
        #expect(throws: HCIError.self) { try CaptureRecord(monitorDatagram: [0x03, 0x00, 0x00], number: 3, timestamp: 0) }
    }

    @Test func parsesItsCommandLine() throws {
        var expected = MonitorOptions()
        expected.controllerIndex = 1
        expected.duration = 2
        expected.attOnly = true
        #expect(try parse(["monitor", "hci1", "--duration", "2", "--att-only"]).command == .monitor(expected))
        #expect(throws: UsageError("monitor: 'usb0' is not an adapter name like hci0")) { try parse(["monitor", "usb0"]) }
    }

    /// On this project's CI the kernel has no Bluetooth: the command says so and exits 69. On a
    /// machine with Bluetooth it runs for the duration (0) or lacks the capability (77).
    @Test func exitsWithAClearCodeWithoutBluetooth() async {
        let code = await runGATTClientQuietly(["monitor", "--duration", "0.2"])
        #expect([0, 69, 77].contains(code))
    }
}
