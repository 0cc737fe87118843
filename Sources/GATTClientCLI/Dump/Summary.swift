import BLE
import Capture
import ATT
import Bluetooth
import HCI
import L2CAP

/// `dump --summary`: every record decoded at every layer, only counts printed.
///
/// Counting is by raw codes in flat tables (`SummaryTables`; they are turned into name → count
/// dictionaries, a name per code seen, only when printing), so a record costs no string
/// building or hashing.
struct CaptureSummary {
    var records = 0
    // The per-code tables, indexed by the code (empty until `SummaryTables.fill` sets them).
    /// Per H4 packet type (raw value).
    var packetTypeCounts: [Int] = []
    /// Records that are not HCI packets (unknown indicator, empty), by description.
    var otherRecordKinds: [String: Int] = [:]
    /// Per `HCIEvent.summaryKey` (named by `HCIEvent.summaryName(key:)`).
    var eventCounts: [Int] = []
    /// Per command opcode (its 16 bits: no hashing per record).
    var commandCounts: [Int] = []
    /// Advertising reports per LE Meta subevent code.
    var advertisingReportCounts: [Int] = []
    var malformedAdvertisingData = 0
    var attOpcodeCounts: [Int] = []
    var attErrorCounts: [Int] = []
    var attMalformed = 0
    var otherL2CAP: [UInt16: Int] = [:]
    var l2capDrops = 0
    var malformedPackets = 0
    var notes = 0
    /// The dump filters the counts follow (`--conn 0x0040 --att-only`), nil when none.
    var filter: String?

    var packetsByType: [String: Int] {
        var table = otherRecordKinds
        for (raw, count) in packetTypeCounts.enumerated() where count > 0 {
            let name = HCIPacketType(rawValue: UInt8(raw)).map(\.description) ?? "packet type \(raw)"
            table[name, default: 0] += count
        }
        return table
    }

    var eventsByName: [String: Int] {
        var table: [String: Int] = [:]
        for (key, count) in eventCounts.enumerated() where count > 0 {
            table[HCIEvent.summaryName(key: key), default: 0] += count
        }
        return table
    }

    var commandsByName: [String: Int] {
        var table: [String: Int] = [:]
        for (opcode, count) in commandCounts.enumerated() where count > 0 {
            table[HCIOpcode(rawValue: UInt16(opcode)).description, default: 0] += count
        }
        return table
    }

    var advertisingReports: [String: Int] {
        var table: [String: Int] = [:]
        for (subevent, count) in advertisingReportCounts.enumerated() where count > 0 {
            table[OracleRecordWriter.subeventNames[UInt8(subevent)] ?? "?", default: 0] += count
        }
        return table
    }

    var attByOpcode: [UInt8: Int] {
        var table: [UInt8: Int] = [:]
        for (opcode, count) in attOpcodeCounts.enumerated() where count > 0 { table[UInt8(opcode)] = count }
        return table
    }

    var attErrors: [UInt8: Int] {
        var table: [UInt8: Int] = [:]
        for (code, count) in attErrorCounts.enumerated() where count > 0 { table[UInt8(code)] = count }
        return table
    }

    func write(json: Bool, file: String, damage: String?, output: inout BufferedOutput) {
        let attTotal = attOpcodeCounts.reduce(0, +)
        let advTotal = advertisingReportCounts.reduce(0, +)
        let attByOpcode = self.attByOpcode, attErrors = self.attErrors, packetsByType = self.packetsByType
        let eventsByName = self.eventsByName, commandsByName = self.commandsByName
        let advertisingReports = self.advertisingReports
        let opcodes = attByOpcode.sorted { $0.key < $1.key }.map { (ATTOpcode(rawValue: $0.key).wiresharkName, $0.value) }
        let errors = attErrors.sorted { $0.key < $1.key }.map { code, count in
            (ATTErrorCode(rawValue: code).name ?? "0x" + hex(UInt16(code), 2), count)
        }
        if json {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("kind", "summary")
            writer.field("file", file)
            if let filter { writer.field("filter", filter) }
            writer.field("records", records)
            object("packets", packetsByType.sorted { $0.key < $1.key }, &writer)
            object("commands", commandsByName.sorted { $0.key < $1.key }, &writer)
            object("events", eventsByName.sorted { $0.key < $1.key }, &writer)
            writer.field("advReports", advTotal)
            object("advReportsBySubevent", advertisingReports.sorted { $0.key < $1.key }, &writer)
            writer.field("advMalformed", malformedAdvertisingData)
            writer.field("att", attTotal)
            object("attByOp", opcodes, &writer)
            object("attErrors", errors, &writer)
            writer.field("attMalformed", attMalformed)
            object("otherL2CAPChannels", otherL2CAP.sorted { $0.key < $1.key }.map { ("0x" + hex($0.key, 4), $0.value) }, &writer)
            writer.field("l2capDrops", l2capDrops)
            writer.field("malformedPackets", malformedPackets)
            writer.field("notes", notes)
            if let damage { writer.field("damage", damage) }
            writer.endObject()
            output.writeLine(bytes: writer.bytes)
            return
        }
        var names: [String] = opcodes.map(\.0) + errors.map(\.0)
        for table in [packetsByType, commandsByName, eventsByName, advertisingReports] { names += table.keys }
        let longest: Int = names.map(\.count).max() ?? 0
        let width = max(longest, 24) + 2
        output.writeLine("\(file): \(records) records" + (filter.map { " shown by \($0)" } ?? ""))
        section("packets", packetsByType.sorted { $0.key < $1.key }, width, &output)
        section("HCI commands", commandsByName.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }, width, &output)
        section("HCI events", eventsByName.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }, width, &output)
        output.writeLine("advertising reports: \(advTotal) (\(malformedAdvertisingData) with malformed AD)")
        for (name, count) in advertisingReports.sorted(by: { $0.key < $1.key }) { output.writeLine("  " + name.padding(toLength: width) + "\(count)") }
        output.writeLine("ATT PDUs: \(attTotal) (\(attMalformed) malformed)")
        for (name, count) in opcodes { output.writeLine("  " + name.padding(toLength: width) + "\(count)") }
        section("ATT errors", errors, width, &output)
        section("other L2CAP channels", otherL2CAP.sorted { $0.key < $1.key }.map { ("cid 0x" + hex($0.key, 4), $0.value) }, width, &output)
        if l2capDrops > 0 { output.writeLine("L2CAP partial frames dropped: \(l2capDrops)") }
        if malformedPackets > 0 { output.writeLine("malformed HCI packets: \(malformedPackets)") }
        if notes > 0 { output.writeLine("monitor notes: \(notes)") }
        if let damage { output.writeLine("damage: \(damage)") }
    }

    private func object(_ key: String, _ pairs: [(String, Int)], _ writer: inout JSONWriter) {
        writer.beginObject(JSONKey(key))
        for (name, count) in pairs { writer.field(JSONKey(name), count) }
        writer.endObject()
    }

    private func section(_ title: String, _ pairs: [(String, Int)], _ width: Int, _ output: inout BufferedOutput) {
        guard !pairs.isEmpty else { return }
        output.writeLine(title + ":")
        for (name, count) in pairs { output.writeLine("  " + name.padding(toLength: width) + "\(count)") }
    }
}

/// The summary of what `--conn`, `--handle`, `--att-only` and `--adv-only` show (the same
/// choices as the text and JSON dumps make), from the full decode.
struct FilteredSummaryVisitor: CaptureVisitor {
    var counter = SummaryVisitor()
    var filter: DumpFilter

    init(options: DumpOptions) {
        filter = DumpFilter(options: options)
        var words: [String] = []
        if let connection = options.connection { words.append("--conn 0x" + hex(connection, 4)) }
        if let handle = options.attributeHandle { words.append("--handle 0x" + hex(handle, 4)) }
        if options.attOnly { words.append("--att-only") }
        if options.advOnly { words.append("--adv-only") }
        if let from = options.from { words.append("--from \(from)") }
        if let to = options.to { words.append("--to \(to)") }
        counter.filter = words.joined(separator: " ")
    }

    /// Whether a filter is set (else the fast count serves).
    static func filters(_ options: DumpOptions) -> Bool {
        options.connection != nil || options.attributeHandle != nil || options.attOnly || options.advOnly
            || options.from != nil || options.to != nil
    }

    /// L2CAP frames and drops other than ATT: shown with the whole packets.
    private func showsL2CAP(_ connectionHandle: UInt16?) -> Bool {
        let options = filter.options
        guard !options.attOnly, !options.advOnly, options.attributeHandle == nil, filter.inTime else { return false }
        guard let connection = options.connection else { return true }
        return connectionHandle == connection
    }

    /// Whether the current record is counted as shown: its whole packet, or an ATT PDU or an
    /// advertising report it carries (`--att-only` shows no packet line, and its ATT PDUs are
    /// counted in records shown all the same).
    private var recordCounted = false

    var summary: CaptureSummary { counter.summary }

    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        filter.enter(record)
        recordCounted = filter.shows(packet: packet)
        if recordCounted { counter.visit(record: record, packet: packet, error: error) }
    }

    /// Counts the record carrying a shown item, once.
    private mutating func countCarrier(_ record: CaptureRecord) {
        guard !recordCounted else { return }
        recordCounted = true
        counter.visit(carrier: record)
    }

    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
        if filter.showsAdvertising() {
            countCarrier(record)
            counter.visit(advertisingReport: advertisingReport, record: record)
        }
    }

    mutating func visit(att: ATTItem, record: CaptureRecord) {
        if filter.shows(att: att) {
            countCarrier(record)
            counter.visit(att: att, record: record)
        }
    }

    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {
        if showsL2CAP(connectionHandle) {
            counter.visit(l2capFrame: l2capFrame, connectionHandle: connectionHandle, direction: direction, record: record)
        }
    }

    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {
        if showsL2CAP(nil) { counter.visit(l2capDrop: l2capDrop, record: record) }
    }

    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {
        if showsL2CAP(connectionHandle) {
            counter.visit(sduDrop: reason, connectionHandle: connectionHandle, channelID: channelID, record: record)
        }
    }
}

struct SummaryVisitor: CaptureCountingVisitor {
    /// The counts other than the per-code tables (those are in `tables` until `summary`).
    private var totals = CaptureSummary()
    /// The per-code tables, counted in place.
    private let tables = SummaryTables()

    /// The dump filters the counts follow, for the summary's heading.
    var filter: String? {
        get { totals.filter }
        set { totals.filter = newValue }
    }

    /// What has been counted, as a value.
    var summary: CaptureSummary {
        var summary = totals
        tables.fill(&summary)
        return summary
    }

    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        totals.records += 1
        switch record.kind {
        case .packet(let type):
            tables.add(SummaryTables.packetTypes, type.rawValue)
        case .note:
            totals.notes += 1
        case .unknown, .empty:
            totals.otherRecordKinds["\(record.kind)", default: 0] += 1
        }
        if error != nil { totals.malformedPackets += 1 }
        switch packet {
        case .command(let opcode, _)?:
            tables.add(SummaryTables.commands, Int(opcode.rawValue))
        case .event(let event)?:
            tables.add(SummaryTables.events, event.summaryKey)
        default: break
        }
    }

    /// A record whose own line a filter hides and which carries a shown ATT PDU or advertising
    /// report: counted among the records shown and their packet types.
    mutating func visit(carrier record: CaptureRecord) {
        totals.records += 1
        if case .packet(let type) = record.kind { tables.add(SummaryTables.packetTypes, type.rawValue) }
    }

    // The records `CaptureDecoder.count` checks in place: the same counts as above.

    mutating func count(command opcode: HCIOpcode, record: CaptureRecord.Header) {
        totals.records += 1
        tables.add(SummaryTables.packetTypes, HCIPacketType.command.rawValue)
        tables.add(SummaryTables.commands, Int(opcode.rawValue))
    }

    mutating func count(aclPacket record: CaptureRecord.Header) {
        totals.records += 1
        tables.add(SummaryTables.packetTypes, HCIPacketType.acl.rawValue)
    }

    mutating func count(event code: HCIEventCode, record: CaptureRecord.Header) {
        totals.records += 1
        tables.add(SummaryTables.packetTypes, HCIPacketType.event.rawValue)
        tables.add(SummaryTables.events, HCIEvent.summaryKey(code: code))
    }

    mutating func count(advertisingReportEvent subevent: LESubeventCode, record: CaptureRecord.Header) {
        totals.records += 1
        tables.add(SummaryTables.packetTypes, HCIPacketType.event.rawValue)
        // HCIEvent.summaryKey of an LE Meta event.
        tables.add(SummaryTables.events, 0x100 | Int(subevent.rawValue))
    }

    mutating func count(advertisingReport subevent: LESubeventCode, data: UnsafeBufferPointer<UInt8>, record: CaptureRecord.Header) {
        tables.add(SummaryTables.advertisingReports, subevent.rawValue)
        if !ADWalk.isWellFormed(data) { totals.malformedAdvertisingData += 1 }
    }

    mutating func count(att opcode: ATTOpcode, wellFormed: Bool, errorCode: ATTErrorCode?, record: CaptureRecord.Header) {
        tables.add(SummaryTables.attOpcodes, opcode.rawValue)
        if !wellFormed { totals.attMalformed += 1 }
        if let errorCode { tables.add(SummaryTables.attErrors, errorCode.rawValue) }
    }

    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
        tables.add(SummaryTables.advertisingReports, advertisingReport.subevent.rawValue)
        let wellFormed: Bool
        switch advertisingReport.report {
        case .legacy(let report): wellFormed = ADWalk.isWellFormed(report.data[...])
        case .extended(let report): wellFormed = ADWalk.isWellFormed(report.data[...])
        case .directed: wellFormed = true
        }
        if !wellFormed { totals.malformedAdvertisingData += 1 }
    }

    mutating func visit(att: ATTItem, record: CaptureRecord) {
        tables.add(SummaryTables.attOpcodes, att.opcode.rawValue)
        if att.pdu == nil { totals.attMalformed += 1 }
        if case .errorResponse(let response)? = att.pdu { tables.add(SummaryTables.attErrors, response.errorCode.rawValue) }
    }

    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {
        totals.otherL2CAP[l2capFrame.channelID, default: 0] += 1
    }

    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {
        totals.l2capDrops += 1
    }

    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {
        totals.l2capDrops += 1
    }
}

/// `SummaryVisitor`'s per-code counters: one block of memory counted in place, with no
/// copy-on-write or bounds check per count (a few a record on the counting path). Every index
/// is a code of fixed width within its table's size: an H4 packet type, an event's
/// `summaryKey`, a 16-bit opcode, an 8-bit subevent, ATT opcode or Error Code. A reference:
/// copies of one visitor count into the same tables (`SummaryVisitor.summary` is the value).
final class SummaryTables {
    // Where each table starts, and the size of the whole.
    static let packetTypes = 0
    static let events = 0x100
    static let commands = 0x100 + 0x300
    static let advertisingReports = 0x100 + 0x300 + 0x1_0000
    static let attOpcodes = 0x100 + 0x300 + 0x1_0000 + 0x100
    static let attErrors = 0x100 + 0x300 + 0x1_0000 + 0x200
    static let size = 0x100 + 0x300 + 0x1_0000 + 0x300

    private let counts: UnsafeMutablePointer<Int>

    init() {
        assert(Self.commands - Self.events == HCIEvent.summaryKeyCount)
        counts = .allocate(capacity: Self.size)
        counts.initialize(repeating: 0, count: Self.size)
    }

    deinit { counts.deallocate() }

    /// Counts code `code` of the table at `table`.
    @inline(__always)
    func add(_ table: Int, _ code: Int) {
        counts[table + code] &+= 1
    }

    @inline(__always)
    func add(_ table: Int, _ code: UInt8) { add(table, Int(code)) }

    /// The table at `table`, `size` counts long, as an array.
    private func table(_ table: Int, size: Int) -> [Int] {
        Array(UnsafeBufferPointer(start: counts + table, count: size))
    }

    /// Puts the tables into `summary`.
    func fill(_ summary: inout CaptureSummary) {
        summary.packetTypeCounts = table(Self.packetTypes, size: 0x100)
        summary.eventCounts = table(Self.events, size: HCIEvent.summaryKeyCount)
        summary.commandCounts = table(Self.commands, size: 0x1_0000)
        summary.advertisingReportCounts = table(Self.advertisingReports, size: 0x100)
        summary.attOpcodeCounts = table(Self.attOpcodes, size: 0x100)
        summary.attErrorCounts = table(Self.attErrors, size: 0x100)
    }
}

extension HCIEvent {
    /// Size of the `summaryKey` space.
    static let summaryKeyCount = 0x300

    /// A small integer naming the event's `summaryName(key:)` (the same key always has the same
    /// name): 0–6 for the decoded events, 0x100 + subevent code for LE Meta, 0x200 + event code
    /// for the others.
    var summaryKey: Int {
        switch self {
        case .commandComplete: return 0
        case .commandStatus: return 1
        case .disconnectionComplete: return 2
        case .numberOfCompletedPackets: return 3
        case .hardwareError: return 4
        case .encryptionChange: return 5
        case .dataBufferOverflow: return 6
        case .leMeta(let meta): return 0x100 | Int(meta.subeventCode.rawValue)
        case .unknown(let code, _): return 0x200 | Int(code.rawValue)
        }
    }

    /// The `summaryKey` of a well-formed event with code `code` other than LE Meta (whose key
    /// needs the subevent), without building it: what `CaptureDecoder.count` gives.
    static func summaryKey(code: HCIEventCode) -> Int {
        switch code.rawValue {
        case 0x0E: return 0
        case 0x0F: return 1
        case 0x05: return 2
        case 0x13: return 3
        case 0x10: return 4
        case 0x08, 0x59: return 5
        case 0x1A: return 6
        default: return 0x200 | Int(code.rawValue)
        }
    }

    /// The `summaryName` of a key.
    static func summaryName(key: Int) -> String {
        if key & 0x300 == 0x100 { return "LE Meta: \(LESubeventCode(rawValue: UInt8(key & 0xFF)))" }
        switch key {
        case 0: return "Command Complete"
        case 1: return "Command Status"
        case 2: return "Disconnection Complete"
        case 3: return "Number Of Completed Packets"
        case 4: return "Hardware Error"
        case 5: return "Encryption Change"
        case 6: return "Data Buffer Overflow"
        default: return "event 0x" + hex(UInt16(key & 0xFF), 2)
        }
    }
}
