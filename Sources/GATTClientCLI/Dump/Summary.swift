import ATT
import Bluetooth
import HCI
import L2CAP

/// `dump --summary`: every record decoded at every layer, only counts printed.
struct CaptureSummary {
    var records = 0
    var packetsByType: [String: Int] = [:]
    var eventsByName: [String: Int] = [:]
    var commandsByName: [String: Int] = [:]
    var advertisingReports: [String: Int] = [:]
    var malformedAdvertisingData = 0
    var attByOpcode: [UInt8: Int] = [:]
    var attErrors: [UInt8: Int] = [:]
    var attMalformed = 0
    var otherL2CAP: [UInt16: Int] = [:]
    var l2capDrops = 0
    var malformedPackets = 0
    var notes = 0

    func write(json: Bool, file: String, damage: String?, output: inout BufferedOutput) {
        let attTotal = attByOpcode.values.reduce(0, +)
        let advTotal = advertisingReports.values.reduce(0, +)
        let opcodes = attByOpcode.sorted { $0.key < $1.key }.map { (ATTOpcode(rawValue: $0.key).wiresharkName, $0.value) }
        let errors = attErrors.sorted { $0.key < $1.key }.map { code, count in
            (ATTErrorCode(rawValue: code).name ?? "0x" + hex(UInt16(code), 2), count)
        }
        if json {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("file", file)
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
        output.writeLine("\(file): \(records) records")
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
        writer.beginObject(key)
        for (name, count) in pairs { writer.field(name, count) }
        writer.endObject()
    }

    private func section(_ title: String, _ pairs: [(String, Int)], _ width: Int, _ output: inout BufferedOutput) {
        guard !pairs.isEmpty else { return }
        output.writeLine(title + ":")
        for (name, count) in pairs { output.writeLine("  " + name.padding(toLength: width) + "\(count)") }
    }
}

struct SummaryVisitor: CaptureVisitor {
    var summary = CaptureSummary()

    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        summary.records += 1
        switch record.kind {
        case .packet(let type):
            summary.packetsByType[type.description, default: 0] += 1
        case .note:
            summary.notes += 1
        case .unknown, .empty:
            summary.packetsByType["\(record.kind)", default: 0] += 1
        }
        if error != nil { summary.malformedPackets += 1 }
        switch packet {
        case .command(let opcode, _)?: summary.commandsByName[opcode.description, default: 0] += 1
        case .event(let event)?: summary.eventsByName[event.summaryName, default: 0] += 1
        default: break
        }
    }

    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
        summary.advertisingReports[OracleRecordWriter.subeventNames[advertisingReport.subevent.rawValue] ?? "?", default: 0] += 1
        let data: [UInt8]
        switch advertisingReport.report {
        case .legacy(let report): data = report.data
        case .extended(let report): data = report.data
        case .directed: data = []
        }
        if !AdvertisingData(data).isWellFormed { summary.malformedAdvertisingData += 1 }
    }

    mutating func visit(att: ATTItem, record: CaptureRecord) {
        summary.attByOpcode[att.opcode.rawValue, default: 0] += 1
        if att.pdu == nil { summary.attMalformed += 1 }
        if case .errorResponse(let response)? = att.pdu { summary.attErrors[response.errorCode.rawValue, default: 0] += 1 }
    }

    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {
        summary.otherL2CAP[l2capFrame.channelID, default: 0] += 1
    }

    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {
        summary.l2capDrops += 1
    }

    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {
        summary.l2capDrops += 1
    }
}

extension HCIEvent {
    /// The event's name for counting (LE Meta events by subevent).
    var summaryName: String {
        switch self {
        case .commandComplete: return "Command Complete"
        case .commandStatus: return "Command Status"
        case .disconnectionComplete: return "Disconnection Complete"
        case .numberOfCompletedPackets: return "Number Of Completed Packets"
        case .hardwareError: return "Hardware Error"
        case .encryptionChange: return "Encryption Change"
        case .dataBufferOverflow: return "Data Buffer Overflow"
        case .leMeta(let meta): return "LE Meta: \(meta.subeventCode)"
        case .unknown(let code, _): return "event 0x" + hex(UInt16(code.rawValue), 2)
        }
    }
}
