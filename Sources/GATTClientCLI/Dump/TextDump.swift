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

    /// Writes the record's line head (`#N`, its time, its direction) into the output buffer.
    mutating func writePrefix(_ record: CaptureRecord) {
        let start = origin ?? record.timestamp
        if origin == nil { origin = start }
        guard localTime == nil else {
            // "#N" padded to 8 columns, the local time right-aligned in 12.
            let head = output.buffer.count
            output.buffer.append(UInt8(ascii: "#"))
            output.buffer.appendDecimal(record.number)
            let frameWidth = output.buffer.count - head
            if frameWidth < 8 { output.buffer.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 8 - frameWidth)) }
            let text = localTime!.text(record.timestamp)
            let timeWidth = text.utf8.count
            if timeWidth < 12 { output.buffer.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 12 - timeWidth)) }
            output.buffer.appendString(text)
            writeDirection(record)
            return
        }
        // "#N" padded to 8 columns, then the seconds since the first record right-aligned in
        // 12 (`S.uuuuuu`, a minus sign before a negative S): one region.
        let delta = record.timestamp - start
        let seconds = delta / 1_000_000
        let micros = UInt64((delta % 1_000_000).magnitude)
        let frameDigits = TextDigits.decimalCount(UInt64(record.number))
        let secondsDigits = TextDigits.decimalCount(seconds.magnitude) + (seconds < 0 ? 1 : 0)
        let timeWidth = secondsDigits + 7
        let frameWidth = max(8, frameDigits + 1)
        let width = frameWidth + max(12, timeWidth)
        output.buffer.appendRegion(width) { p in
            p[0] = UInt8(ascii: "#")
            TextDigits.putDecimal(UInt64(record.number), digits: frameDigits, at: p + 1)
            var n = frameDigits + 1
            while n < frameWidth {
                p[n] = UInt8(ascii: " ")
                n += 1
            }
            while n < width - timeWidth {
                p[n] = UInt8(ascii: " ")
                n += 1
            }
            if seconds < 0 {
                p[n] = UInt8(ascii: "-")
                n += 1
            }
            TextDigits.putDecimal(seconds.magnitude, digits: secondsDigits - (seconds < 0 ? 1 : 0), at: p + n)
            n += secondsDigits - (seconds < 0 ? 1 : 0)
            p[n] = UInt8(ascii: ".")
            TextDigits.putDecimal(micros, digits: 6, at: p + n + 1)
            return n + 7
        }
        writeDirection(record)
    }

    private mutating func writeDirection(_ record: CaptureRecord) {
        switch record.direction {
        case .sent: output.buffer.appendText(" < ")
        case .received: output.buffer.appendText(" > ")
        case .unknown: output.buffer.appendText(" = ")
        }
    }

    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        filter.enter(record)
        if origin == nil { origin = record.timestamp }
        shownRecord = filter.shows(packet: packet)
        guard shownRecord else { return }
        writePrefix(record)
        if let packet {
            switch packet {
            case .command(let opcode, let parameters):
                if let command = try? AnyHCICommand(HCICommandPacket(opcode: opcode, parameters: parameters)) {
                    output.buffer.appendString("HCI Command: \(command)")
                } else {
                    output.buffer.appendString("HCI " + packet.description)
                }
            case .event(.commandComplete(let event)):
                if let typed = try? event.typedReturn {
                    output.buffer.appendString("HCI Event: Command Complete: \(event.opcode) ncmd \(event.numHCICommandPackets): \(typed)")
                } else {
                    output.buffer.appendString("HCI Event: \(HCIEvent.commandComplete(event)) (return parameters malformed)")
                }
            case .event(.leMeta(.advertisingReport(let event))):
                output.buffer.appendText("HCI Event: LE Advertising Report (")
                writeReportCount(event.reports.count)
            case .event(.leMeta(.directedAdvertisingReport(let event))):
                output.buffer.appendText("HCI Event: LE Directed Advertising Report (")
                writeReportCount(event.reports.count)
            case .event(.leMeta(.extendedAdvertisingReport(let event))):
                output.buffer.appendText("HCI Event: LE Extended Advertising Report (")
                writeReportCount(event.reports.count)
            case .event(let event):
                output.buffer.appendString("HCI Event: \(event)")
            case .acl(let acl):
                output.buffer.appendText("ACL Data: handle ")
                output.buffer.appendPrefixedHex(acl.handle, digits: 4)
                output.buffer.appendText(" flags ")
                output.buffer.appendPrefixedHex(acl.packetBoundary.rawValue, digits: 2)
                output.buffer.appendText(" dlen ")
                output.buffer.appendDecimal(acl.data.count)
            case .sco, .iso:
                output.buffer.appendString(packet.description)
            }
        } else if let error {
            output.buffer.appendString("\(record.kind): malformed: \(error) [" + Hex.encode(record.bytes) + "]")
        } else {
            output.buffer.appendString("\(record.kind)" + (record.bytes.isEmpty ? "" : ": " + printable(record.bytes)))
        }
        if record.originalLength > record.bytes.count {
            output.buffer.appendString(" (truncated: \(record.bytes.count) of \(record.originalLength) octets captured)")
        }
        output.endLine()
    }

    /// `N report)` or `N reports)`.
    private mutating func writeReportCount(_ count: Int) {
        output.buffer.appendDecimal(count)
        output.buffer.appendText(count == 1 ? " report)" : " reports)")
    }

    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
        guard filter.showsAdvertising() else { return }
        if shownRecord {
            output.buffer.appendText("                       ")  // 8 + 15 columns
        } else {
            writePrefix(record)
        }
        output.buffer.appendText("  report ")
        output.buffer.appendDecimal(advertisingReport.index)
        output.buffer.appendText(": ")
        let data: [UInt8]
        switch advertisingReport.report {
        case .legacy(let report):
            report.writeText(to: &output.buffer)
            data = report.data
        case .directed(let report):
            output.buffer.appendString("\(report)")
            data = []
        case .extended(let report):
            report.writeText(to: &output.buffer)
            data = report.data
        }
        output.endLine()
        guard !data.isEmpty else { return }
        writeAdvertisingData(data[...])
    }

    /// One line per AD structure, then one per problem, as `AdvertisingData(data)` lists them
    /// (walked in place: no value per structure).
    private mutating func writeAdvertisingData(_ data: ArraySlice<UInt8>) {
        var problems: [ADProblem] = []
        var index = data.startIndex
        while index < data.endIndex {
            let length = Int(data[index])
            if length == 0 { break }
            let available = data.endIndex - index - 1
            guard length <= available else {
                problems.append(.lengthOverrun(offset: index - data.startIndex, length: length, available: available))
                break
            }
            let type = ADType(rawValue: data[index + 1])
            let body = data[(index + 2)..<(index + 1 + length)]
            output.buffer.appendText("                           ")  // 27 columns
            let start = output.buffer.count
            if !ADStructure.writeText(type: type, data: body, to: &output.buffer) {
                problems.append(.invalidContent(offset: index - data.startIndex, type: type, length: length - 1))
                ADStructure.other(type, Array(body)).writeText(to: &output.buffer)
            }
            escapeControlCharacters(from: start)
            output.endLine()
            index += 1 + length
        }
        for problem in problems {
            output.writeLine(textIndent27 + "malformed AD: \(problem)")
        }
    }

    /// `visible()` on the text written since `start`: control characters as `\xNN`.
    private mutating func escapeControlCharacters(from start: Int) {
        let clean = output.buffer.withUnsafeBufferPointer { buffer in
            !containsControl(UnsafeBufferPointer(rebasing: buffer[start...]))
        }
        if clean { return }
        let text = Array(output.buffer[start...])
        output.buffer.removeSubrange(start...)
        appendVisible(text, to: &output.buffer)
    }

    mutating func visit(att: ATTItem, record: CaptureRecord) {
        let annotation = annotator.annotate(att)
        guard filter.shows(att: att) else { return }
        if shownRecord {
            output.buffer.appendText("                       ")  // 23 columns
        } else {
            writePrefix(record)
        }
        output.buffer.appendText("  ATT conn ")
        output.buffer.appendPrefixedHex(att.connectionHandle, digits: 4)
        output.buffer.append(UInt8(ascii: " "))
        if att.channelID != L2CAPBasicFrame.attributeProtocolCID {
            output.buffer.appendText("EATT cid ")
            output.buffer.appendPrefixedHex(att.channelID, digits: 4)
            output.buffer.append(UInt8(ascii: " "))
        }
        if let pdu = att.pdu {
            pdu.writeText(to: &output.buffer, titled: false)  // without the "ATT " its description starts with
        } else if let pdu = att.lenientPDU, let error = att.error {
            pdu.writeText(to: &output.buffer, titled: false)
            output.buffer.appendString(" (malformed for a strict reader: \(error))")
        } else if let error = att.error {
            output.buffer.appendString("malformed: \(error) [" + Hex.encode(att.bytes) + "]")
        }
        if let annotation {
            output.buffer.appendText("  [")
            let start = output.buffer.count
            annotation.writeText(to: &output.buffer)
            if output.buffer.count == start {
                output.buffer.removeLast(3)  // an empty annotation shows nothing
            } else {
                output.buffer.append(UInt8(ascii: "]"))
            }
        }
        output.endLine()
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
    guard text.utf8.contains(where: isControl) else { return text }
    var out: [UInt8] = []
    appendVisible(text.utf8, to: &out)
    return String(decoding: out, as: UTF8.self)
}

/// Whether a UTF-8 octet is a control character (below 0x20, or DEL): in UTF-8 those octets are
/// only ever those characters.
private func isControl(_ octet: UInt8) -> Bool { octet < 0x20 || octet == 0x7F }

/// Whether `octets` hold a control character, eight at a time: a word has an octet below 0x20
/// when `(w − 0x20…20) & ~w & 0x80…80` is not zero, and an octet 0x7F when that test for zero
/// holds for `w ^ 0x7F…7F` (a borrow only starts at an octet that matches, so the answer is
/// exact).
@inline(__always)
func containsControl(_ octets: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let base = octets.baseAddress else { return false }
    let raw = UnsafeRawPointer(base)
    let count = octets.count
    var index = 0
    while index + 8 <= count {
        let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        let below = (word &- 0x2020_2020_2020_2020) & ~word & 0x8080_8080_8080_8080
        let flipped = word ^ 0x7F7F_7F7F_7F7F_7F7F
        let delete = (flipped &- 0x0101_0101_0101_0101) & ~flipped & 0x8080_8080_8080_8080
        if below | delete != 0 { return true }
        index += 8
    }
    while index < count {
        if isControl(octets[index]) { return true }
        index += 1
    }
    return false
}

/// Appends `text`'s octets with each control character as `\xNN`.
private func appendVisible(_ text: some Sequence<UInt8>, to out: inout [UInt8]) {
    for octet in text {
        if isControl(octet) {
            out.appendText("\\x")
            out.appendHex(octet, digits: 2)
        } else {
            out.append(octet)
        }
    }
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
private let textIndent23 = String(repeating: " ", count: 23)
private let textIndent27 = String(repeating: " ", count: 27)
