import BLE
import Capture
import ATT
import GATT
import Bluetooth
import Security
import HCI
import L2CAP

/// `dump` without `--json`: one btmon-like line per packet, and indented lines for what the
/// packet carries (advertising reports, reassembled ATT PDUs, other L2CAP frames).
struct TextDumpVisitor: CaptureVisitor {
    var filter: DumpFilter
    var output: BufferedOutput
    var origin: Int64?
    /// Whether the current record's own line was shown (its details are indented under it).
    var shownRecord = false

    var annotator: GATTAnnotator
    /// `-t` / `-T`: local time instead of seconds since the first record.
    var localTime: LocalTimeColumn?

    init(options: DumpOptions, output: BufferedOutput, database: GATTDatabase? = nil) {
        filter = DumpFilter(options: options)
        self.output = output
        annotator = GATTAnnotator(database: database)
        switch options.time {
        case .relative: localTime = nil
        case .timeOfDay: localTime = LocalTimeColumn(withDate: false)
        case .dateAndTime: localTime = LocalTimeColumn(withDate: true)
        }
    }

    mutating func prefix(_ record: CaptureRecord) -> String {
        let start = origin ?? record.timestamp
        if origin == nil { origin = start }
        let time: String
        if localTime != nil {
            time = localTime!.text(record.timestamp)
        } else {
            let delta = record.timestamp - start
            let seconds = String(delta / 1_000_000)
            let micros = String((delta % 1_000_000).magnitude)
            time = seconds + "." + String(repeating: "0", count: 6 - micros.count) + micros
        }
        let frame = "#\(record.number)"
        let arrow: String
        switch record.direction {
        case .sent: arrow = "<"
        case .received: arrow = ">"
        case .unknown: arrow = "="
        }
        return frame.padding(toLength: 8) + time.leftPadding(toLength: 12) + " " + arrow + " "
    }

    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        filter.enter(record)
        let start = prefix(record)
        shownRecord = filter.shows(packet: packet)
        guard shownRecord else { return }
        var line = start
        if let packet {
            switch packet {
            case .command(let opcode, let parameters):
                if let command = try? AnyHCICommand(HCICommandPacket(opcode: opcode, parameters: parameters)) {
                    line += "HCI Command: \(command)"
                } else {
                    line += "HCI " + packet.description
                }
            case .event(.commandComplete(let event)):
                if let typed = try? event.typedReturn {
                    line += "HCI Event: Command Complete: \(event.opcode) ncmd \(event.numHCICommandPackets): \(typed)"
                } else {
                    line += "HCI Event: \(HCIEvent.commandComplete(event)) (return parameters malformed)"
                }
            case .event(.leMeta(.advertisingReport(let event))):
                line += "HCI Event: LE Advertising Report (\(event.reports.count) report\(event.reports.count == 1 ? "" : "s"))"
            case .event(.leMeta(.directedAdvertisingReport(let event))):
                line += "HCI Event: LE Directed Advertising Report (\(event.reports.count) report\(event.reports.count == 1 ? "" : "s"))"
            case .event(.leMeta(.extendedAdvertisingReport(let event))):
                line += "HCI Event: LE Extended Advertising Report (\(event.reports.count) report\(event.reports.count == 1 ? "" : "s"))"
            case .event(let event):
                line += "HCI Event: \(event)"
            case .acl(let acl):
                line += "ACL Data: handle 0x" + hex(acl.handle, 4) + " flags 0x" + hex(UInt16(acl.packetBoundary.rawValue), 2)
                    + " dlen \(acl.data.count)"
            case .sco, .iso:
                line += packet.description
            }
        } else if let error {
            line += "\(record.kind): malformed: \(error) [" + Hex.encode(record.bytes) + "]"
        } else {
            line += "\(record.kind)" + (record.bytes.isEmpty ? "" : ": " + printable(record.bytes))
        }
        if record.originalLength > record.bytes.count {
            line += " (truncated: \(record.bytes.count) of \(record.originalLength) octets captured)"
        }
        output.writeLine(line)
    }

    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
        guard filter.showsAdvertising() else { return }
        var line = shownRecord ? "        " + textIndent15 : prefix(record)
        let data: [UInt8]
        switch advertisingReport.report {
        case .legacy(let report):
            line += "  report \(advertisingReport.index): \(report)"
            data = report.data
        case .directed(let report):
            line += "  report \(advertisingReport.index): \(report)"
            data = []
        case .extended(let report):
            line += "  report \(advertisingReport.index): \(report)"
            data = report.data
        }
        output.writeLine(line)
        guard !data.isEmpty else { return }
        let ad = AdvertisingData(data)
        for structure in ad.structures {
            output.writeLine(textIndent27 + visible("\(structure)"))
        }
        for problem in ad.problems {
            output.writeLine(textIndent27 + "malformed AD: \(problem)")
        }
    }

    mutating func visit(att: ATTItem, record: CaptureRecord) {
        let annotation = annotator.annotate(att)
        guard filter.shows(att: att) else { return }
        let head = shownRecord ? textIndent23 : prefix(record)
        var line = head + "  ATT conn 0x" + hex(att.connectionHandle, 4) + " "
            + (att.channelID == L2CAPBasicFrame.attributeProtocolCID ? "" : "EATT cid 0x" + hex(att.channelID, 4) + " ")
        if let pdu = att.pdu {
            line += pdu.description.dropFirst(4)  // without the "ATT " its description starts with
        } else if let pdu = att.lenientPDU, let error = att.error {
            line += pdu.description.dropFirst(4) + " (malformed for a strict reader: \(error))"
        } else if let error = att.error {
            line += "malformed: \(error) [" + Hex.encode(att.bytes) + "]"
        }
        if let annotation, !annotation.text.isEmpty { line += "  [" + annotation.text + "]" }
        output.writeLine(line)
    }

    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {
        guard shownRecord else { return }
        let name: String
        switch l2capFrame.channelID {
        case L2CAPBasicFrame.leSignalingCID: name = "LE Signaling"
        case L2CAPBasicFrame.securityManagerCID:
            // Every SMP command decoded, keys in hex (a capture of a pairing holds them in clear).
            if let pdu = try? SecurityManagerPDU(decoding: l2capFrame.payload) {
                output.writeLine(textIndent23 + "  " + pdu.description)
                return
            }
            name = "SMP"
        default: name = "L2CAP"
        }
        output.writeLine(textIndent23 + "  \(name) cid 0x" + hex(l2capFrame.channelID, 4)
            + " len \(l2capFrame.payload.count): " + Hex.encode(l2capFrame.payload))
    }

    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {
        guard filter.shows(packet: nil) || filter.options.connection == l2capDrop.handle else { return }
        output.writeLine(textIndent23 + "  L2CAP handle 0x" + hex(l2capDrop.handle, 4)
            + ": partial frame dropped: \(l2capDrop.reason)")
    }

    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {
        guard filter.shows(packet: nil) || filter.options.connection == connectionHandle else { return }
        output.writeLine(textIndent23 + "  EATT handle 0x" + hex(connectionHandle, 4) + " cid 0x"
            + hex(channelID, 4) + ": SDU dropped: \(reason)")
    }

    private func printable(_ bytes: ArraySlice<UInt8>) -> String {
        if bytes.allSatisfy({ (0x20..<0x7F).contains($0) || $0 == 0 || $0 == 0x0A }) {
            return visible(String(decoding: bytes.filter { $0 != 0 }, as: UTF8.self))
        }
        return Hex.encode(bytes)
    }
}

/// Text with control characters shown as `\xNN`, so names from the air cannot drive the terminal.
func visible(_ text: String) -> String {
    guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
        if scalar.value < 0x20 || scalar.value == 0x7F {
            out += "\\x" + hex(UInt16(scalar.value), 2)
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

func hex(_ value: UInt16, _ digits: Int) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}

extension String {
    func padding(toLength length: Int) -> String {
        count >= length ? self : self + String(repeating: " ", count: length - count)
    }

    func leftPadding(toLength length: Int) -> String {
        count >= length ? self : String(repeating: " ", count: length - count) + self
    }
}

// Indents built once (not per line).
private let textIndent15 = String(repeating: " ", count: 15)
private let textIndent23 = String(repeating: " ", count: 23)
private let textIndent27 = String(repeating: " ", count: 27)
