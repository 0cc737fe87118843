#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import BLE
import Synchronization
import Capture
import ATT
import GATT
import Bluetooth
import HCI
import L2CAP

/// `gattclient dump FILE`: decodes a capture and prints it as text, JSON Lines or a summary.
public struct DumpCommand {
    public var options: DumpOptions
    public var json: Bool
    /// The streaming reader's window (tests set small ones to cross window boundaries often).
    var windowSize = CaptureReader.windowSize

    public init(options: DumpOptions, json: Bool) {
        self.options = options
        self.json = json
    }

    /// Decodes the capture, writing to `output`. Returns the damage message when the capture
    /// could not be read to its end (everything before the damage has been written). `status`
    /// takes what is said about the work rather than its result (`-w`'s count of records
    /// written): standard error, so that `-w -` or `-w /dev/stdout` keeps a capture whole.
    public func run(output: inout BufferedOutput, status: (String) -> Void = { printError($0) }) throws -> String? {
        let database = try options.services.map { try ServicesJSON.load(path: $0) }
        // Following a file or reading standard input, Ctrl-C (or SIGTERM) is the normal end: it
        // ends the wait through a pipe (or stops the decoding between records), and the dump
        // finishes as at the end of a file (exit 0, everything written).
        let interrupt = options.follow || options.readsStandardInput ? try FollowInterrupt() : nil
        defer { interrupt?.stop() }
        let opened = Result { () throws(HCIError) -> CaptureReader in
            options.readsStandardInput
                ? try CaptureReader(input: CaptureInput(interrupt: interrupt?.descriptor ?? -1), windowSize: windowSize)
                : try CaptureFile.open(
                    path: options.path, follow: options.follow, interrupt: interrupt?.descriptor ?? -1, windowSize: windowSize)
        }
        var reader: CaptureReader
        switch opened {
        case .success(let opened): reader = opened
        case .failure(let error):
            // Interrupted before the capture's header came: nothing to decode, nothing wrong.
            if interrupt?.happened == true { return nil }
            throw error
        }
        var decoder = CaptureDecoder()
        let name = options.readsStandardInput ? "standard input" : options.path
        let stop = { interrupt?.happened == true }
        if let writePath = options.writePath {
            // The first record read before the file is made: a pcapng's interfaces say its datalink.
            var first = reader.next()
            while first == nil, reader.isWaiting, !stop(), reader.waitForInput() { first = reader.next() }
            output.flush()
            var visitor = try FilteredWriteVisitor(
                options: options, path: writePath,
                datalink: FilteredWriteVisitor.datalink(format: reader.format, hciLinkType: reader.hciLinkType),
                standardOutput: output.fileDescriptor)
            if let first { decoder.decode(first, visitor: &visitor) }
            Self.decodeAll(&reader, &decoder, &visitor, stop: stop) { $0.release() }
            try visitor.finish()
            let target = writePath == "-" ? "standard output" : writePath
            var message = "\(visitor.writtenCount) of \(reader.recordCount) record\(reader.recordCount == 1 ? "" : "s") written to \(target)"
            if visitor.givenUpCount > 0 {
                message += " (\(visitor.givenUpCount) fragment\(visitor.givenUpCount == 1 ? "" : "s") of frames left incomplete over \(FilteredWriteVisitor.heldLimit) records given up)"
            }
            status(message)
        } else if options.summary, FilteredSummaryVisitor.filters(options) {
            // The filters decide per record: the full decode, counting what they show.
            var visitor = FilteredSummaryVisitor(options: options)
            Self.decodeAll(&reader, &decoder, &visitor, stop: stop) { _ in }
            visitor.summary.write(json: json, file: name, damage: reader.damage?.description, output: &output)
        } else if options.summary {
            var visitor = SummaryVisitor()
            decoder.countAll(&reader, visitor: &visitor)
            visitor.summary.write(json: json, file: name, damage: reader.damage?.description, output: &output)
        } else if json {
            var visitor = JSONDumpVisitor(options: options, format: reader.format, output: output, database: database)
            Self.decodeAll(&reader, &decoder, &visitor, stop: stop) { $0.output.flush() }
            output = visitor.output
        } else {
            var visitor = TextDumpVisitor(options: options, output: output, database: database)
            Self.decodeAll(&reader, &decoder, &visitor, stop: stop) { $0.output.flush() }
            output = visitor.output
        }
        output.flush()
        return reader.damage?.description
    }

    /// Decodes every record of `reader`; when a stream has nothing more for now (a pipe, a
    /// followed file), `beforeWaiting` (a flush) and then a wait for more.
    /// `stop` (a Ctrl-C) ends it between records.
    static func decodeAll<V: CaptureVisitor>(
        _ reader: inout CaptureReader, _ decoder: inout CaptureDecoder, _ visitor: inout V, stop: () -> Bool,
        beforeWaiting: (inout V) -> Void
    ) {
        while true {
            while let record = reader.next() {
                decoder.decode(record, visitor: &visitor)
                if stop() { return }
            }
            guard reader.isWaiting, !stop() else { return }
            beforeWaiting(&visitor)
            guard reader.waitForInput() else { return }
        }
    }
}

/// SIGINT and SIGTERM onto a pipe whose read end a followed capture's (or standard input's)
/// wait watches, and a flag the decoding checks between records.
final class FollowInterrupt: Sendable {
    let descriptor: Int32
    /// The write end, -1 once stopped (the handler writes under the lock, so never to a
    /// descriptor closed or reused after `stop()`).
    private let writeEnd: Mutex<Int32>
    private let signaled = Atomic<Bool>(false)
    private let signals = SignalWatch()

    /// Whether a signal came.
    var happened: Bool { signaled.load(ordering: .relaxed) }

    init() throws(HCIError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw .system(operation: "pipe", errno: .current) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // A full pipe must not block the handler (one octet is enough to wake the wait).
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        descriptor = ends[0]
        writeEnd = Mutex(ends[1])
        signals.start { [self] _ in
            signaled.store(true, ordering: .relaxed)
            writeEnd.withLock { end in
                guard end >= 0 else { return }
                var byte: UInt8 = 1
                _ = Glibc.write(end, &byte, 1)
            }
        }
    }

    func stop() {
        signals.stop()
        writeEnd.withLock { end in
            if end >= 0 { _ = Glibc.close(end) }
            end = -1
        }
        _ = Glibc.close(descriptor)
    }
}

/// The `--conn`, `--handle`, `--att-only`, `--adv-only`, `--from` and `--to` filters. The time
/// bounds apply to the record `enter(_:)` was last given.
struct DumpFilter {
    var options: DumpOptions
    /// The first record's time (`--from`/`--to` in seconds count from it).
    private(set) var origin: Int64?
    /// Whether the current record lies within `--from`/`--to`.
    private(set) var inTime = true
    private var low = Int64.min
    private var high = Int64.max
    private let bounded: Bool

    init(options: DumpOptions) {
        self.options = options
        bounded = options.from != nil || options.to != nil
    }

    /// Takes the next record's time.
    @inline(__always)
    mutating func enter(_ record: CaptureRecord) {
        guard bounded else { return }
        if origin == nil {
            origin = record.timestamp
            low = options.from?.unixMicroseconds(origin: record.timestamp) ?? .min
            high = options.to?.unixMicroseconds(origin: record.timestamp) ?? .max
        }
        inTime = record.timestamp >= low && record.timestamp <= high
    }

    func shows(att item: ATTItem) -> Bool {
        if options.advOnly || !inTime { return false }
        if let connection = options.connection, item.connectionHandle != connection { return false }
        if let handle = options.attributeHandle {
            guard let pdu = item.pdu ?? item.lenientPDU else { return false }
            return pdu.mentions(handle: handle)
        }
        return true
    }

    func showsAdvertising() -> Bool {
        !options.attOnly && options.connection == nil && options.attributeHandle == nil && inTime
    }

    /// Whether a whole HCI packet line is shown in text mode.
    func shows(packet: HCIPacket?) -> Bool {
        if options.attOnly || options.advOnly || options.attributeHandle != nil || !inTime { return false }
        guard let connection = options.connection else { return true }
        switch packet {
        case .acl(let acl)?: return acl.handle == connection
        default: return false
        }
    }
}

extension ATTPDU {
    /// Whether the PDU names `handle`: as its attribute handle, in a handle list, in a list
    /// response's entries, or inside a request's handle range.
    func mentions(handle: UInt16) -> Bool {
        switch self {
        case .errorResponse(let p): return p.handle == handle
        case .findInformationRequest(let p): return (p.startingHandle...max(p.startingHandle, p.endingHandle)).contains(handle)
        case .findInformationResponse(let p): return p.entries.contains { $0.handle == handle }
        case .findByTypeValueRequest(let p): return (p.startingHandle...max(p.startingHandle, p.endingHandle)).contains(handle)
        case .findByTypeValueResponse(let p):
            return p.entries.contains { ($0.foundAttributeHandle...max($0.foundAttributeHandle, $0.groupEndHandle)).contains(handle) }
        case .readByTypeRequest(let p): return (p.startingHandle...max(p.startingHandle, p.endingHandle)).contains(handle)
        case .readByTypeResponse(let p): return p.entries.contains { $0.handle == handle }
        case .readByGroupTypeRequest(let p): return (p.startingHandle...max(p.startingHandle, p.endingHandle)).contains(handle)
        case .readByGroupTypeResponse(let p):
            return p.entries.contains { ($0.handle...max($0.handle, $0.endGroupHandle)).contains(handle) }
        case .readRequest(let p): return p.handle == handle
        case .readBlobRequest(let p): return p.handle == handle
        case .readMultipleRequest(let p): return p.handles.contains(handle)
        case .readMultipleVariableRequest(let p): return p.handles.contains(handle)
        case .writeRequest(let p): return p.handle == handle
        case .writeCommand(let p): return p.handle == handle
        case .signedWriteCommand(let p): return p.handle == handle
        case .prepareWriteRequest(let p): return p.handle == handle
        case .prepareWriteResponse(let p): return p.handle == handle
        case .handleValueNotification(let p): return p.handle == handle
        case .handleValueIndication(let p): return p.handle == handle
        case .multipleHandleValueNotification(let p): return p.entries.contains { $0.handle == handle }
        default: return false
        }
    }
}

/// `dump --json`: the oracle schema, one record per ATT PDU and per advertising report.
struct JSONDumpVisitor: CaptureVisitor {
    var filter: DumpFilter
    var writer: OracleRecordWriter
    var output: BufferedOutput
    var json = JSONWriter(capacity: 1024)
    var annotator: GATTAnnotator

    init(options: DumpOptions, format: CaptureFormat, output: BufferedOutput, database: GATTDatabase? = nil) {
        filter = DumpFilter(options: options)
        writer = OracleRecordWriter(format: format)
        self.output = output
        annotator = GATTAnnotator(database: database)
    }

    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        // Every record moves the time origin, as Wireshark's `time` counts from frame 1.
        writer.noteTime(of: record)
        filter.enter(record)
    }

    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
        guard filter.showsAdvertising() else { return }
        // Written straight into the output buffer, lent to the JSON writer.
        swap(&json.bytes, &output.buffer)
        json.resetContainers()
        writer.write(advertisingReport, record: record, into: &json)
        swap(&json.bytes, &output.buffer)
        output.endLine()
    }

    mutating func visit(att: ATTItem, record: CaptureRecord) {
        // Every PDU teaches the annotator, shown or not.
        let annotation = annotator.annotate(att)
        guard filter.shows(att: att) else { return }
        swap(&json.bytes, &output.buffer)
        json.resetContainers()
        writer.write(att, record: record, gatt: annotation, into: &json)
        swap(&json.bytes, &output.buffer)
        output.endLine()
    }

    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {}
    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {}
    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {}
}
