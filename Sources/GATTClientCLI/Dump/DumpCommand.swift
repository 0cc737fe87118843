import BLE
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

    public init(options: DumpOptions, json: Bool) {
        self.options = options
        self.json = json
    }

    /// Decodes the file, writing to `output`. Returns the damage message when the file could
    /// not be read to its end (everything before the damage has been written).
    public func run(output: inout BufferedOutput) throws -> String? {
        let database = try options.services.map { try ServicesJSON.load(path: $0) }
        var reader = try CaptureFile.open(path: options.path)
        var decoder = CaptureDecoder()
        var damage: String?
        if options.summary, FilteredSummaryVisitor.filters(options) {
            // The filters decide per record: the full decode, counting what they show.
            var visitor = FilteredSummaryVisitor(options: options)
            while let record = reader.next() { decoder.decode(record, visitor: &visitor) }
            damage = reader.damage?.description
            visitor.summary.write(json: json, file: options.path, damage: damage, output: &output)
        } else if options.summary {
            var visitor = SummaryVisitor()
            decoder.countAll(&reader, visitor: &visitor)
            damage = reader.damage?.description
            visitor.summary.write(json: json, file: options.path, damage: damage, output: &output)
        } else if json {
            var visitor = JSONDumpVisitor(options: options, format: reader.format, output: output, database: database)
            while let record = reader.next() { decoder.decode(record, visitor: &visitor) }
            output = visitor.output
            damage = reader.damage?.description
        } else {
            var visitor = TextDumpVisitor(options: options, output: output, database: database)
            while let record = reader.next() { decoder.decode(record, visitor: &visitor) }
            output = visitor.output
            damage = reader.damage?.description
        }
        output.flush()
        return damage
    }
}

/// The `--conn`, `--handle`, `--att-only`, `--adv-only` filters.
struct DumpFilter {
    var options: DumpOptions

    func shows(att item: ATTItem) -> Bool {
        if options.advOnly { return false }
        if let connection = options.connection, item.connectionHandle != connection { return false }
        if let handle = options.attributeHandle {
            guard let pdu = item.pdu ?? item.lenientPDU else { return false }
            return pdu.mentions(handle: handle)
        }
        return true
    }

    func showsAdvertising() -> Bool {
        !options.attOnly && options.connection == nil && options.attributeHandle == nil
    }

    /// Whether a whole HCI packet line is shown in text mode.
    func shows(packet: HCIPacket?) -> Bool {
        if options.attOnly || options.advOnly || options.attributeHandle != nil { return false }
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
    }

    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
        guard filter.showsAdvertising() else { return }
        json.reset()
        writer.write(advertisingReport, record: record, into: &json)
        output.writeLine(bytes: json.bytes)
    }

    mutating func visit(att: ATTItem, record: CaptureRecord) {
        // Every PDU teaches the annotator, shown or not.
        let annotation = annotator.annotate(att)
        guard filter.shows(att: att) else { return }
        json.reset()
        writer.write(att, record: record, gatt: annotation.map { annotation in { annotation.write(into: &$0) } }, into: &json)
        output.writeLine(bytes: json.bytes)
    }

    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {}
    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {}
    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {}
}
