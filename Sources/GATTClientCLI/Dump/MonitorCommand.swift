import BLE
import Capture
import Bluetooth
import HCI
import L2CAP

/// `gattclient monitor [hciN]`: every adapter's HCI traffic (bluetoothd's included), live from the
/// kernel's HCI monitor channel, decoded as `dump` decodes a capture, with the same filters;
/// `--record FILE` keeps it as a btsnoop (Linux monitor datalink).
public struct MonitorCommand {
    public var options: MonitorOptions
    public var json: Bool
    public var record: String?
    /// Where skipped-datagram warnings go (standard error by default).
    public var errorDescriptor: Int32 = 2

    public init(options: MonitorOptions, json: Bool, record: String?) {
        self.options = options
        self.json = json
        self.record = record
    }

    /// Reads datagrams from `next` (it returns nil when its bounded wait ended without one) until
    /// `shouldStop` says so or `next` throws; decodes, filters, prints and records them.
    public func run(
        output: inout BufferedOutput, next: () throws -> [UInt8]?, shouldStop: () -> Bool, clock: () -> Int64 = CaptureTime.now
    ) throws -> Int {
        let recorder = try record.map { path throws(HCIError) in try BTSnoopFileWriter(path: path, datalink: .monitor) }
        defer { try? recorder?.close() }
        var decoder = CaptureDecoder()
        var dumpOptions = DumpOptions(path: "monitor")
        dumpOptions.connection = options.connection
        dumpOptions.attributeHandle = options.attributeHandle
        dumpOptions.attOnly = options.attOnly
        dumpOptions.advOnly = options.advOnly
        var text = TextDumpVisitor(options: dumpOptions, output: output)
        var jsonVisitor = JSONDumpVisitor(options: dumpOptions, format: .btsnoop(.monitor), output: output)
        var count = 0
        while !shouldStop() {
            guard let datagram = try next() else { continue }
            let record: CaptureRecord
            do {
                record = try CaptureRecord(monitorDatagram: datagram, number: count + 1, timestamp: clock())
            } catch {
                printError("gattclient: monitor: skipped a datagram: \(error)", to: errorDescriptor)
                continue
            }
            if let index = options.controllerIndex, record.controllerIndex != index { continue }
            count += 1
            try recorder?.append(record)
            if json {
                decoder.decode(record, visitor: &jsonVisitor)
                jsonVisitor.output.flush()
            } else {
                decoder.decode(record, visitor: &text)
                text.output.flush()
            }
        }
        output = json ? jsonVisitor.output : text.output
        return count
    }
}
