import Capture
import ATT
import HCI
import L2CAP

/// What `dump --summary` counts, as seen by each of `CaptureDecoder`'s three paths: `decode`
/// (every record's values built), `count` (record by record, the common records checked in
/// place) and `countAll` (the file buffer walked by record header). The capture target requires
/// the three tallies to be equal: the in-place checks must accept exactly what the strict
/// decoders accept, and report the same opcodes, codes and data.
struct CaptureTally: CaptureCountingVisitor, Equatable {
    var records: [String: Int] = [:]
    var events: [String: Int] = [:]
    var advertisingData: [String: Int] = [:]
    var att: [String: Int] = [:]
    var l2cap: [String: Int] = [:]

    // Decode path.

    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        records["\(record.kind) malformed=\(error != nil)", default: 0] += 1
        switch packet {
        case .command(let opcode, _)?: records["command \(opcode.rawValue)", default: 0] += 1
        case .event(let event)?:
            if case .leMeta(let meta) = event {
                events["LE Meta \(meta.subeventCode.rawValue)", default: 0] += 1
            } else {
                // The event code octet as recorded (Encryption Change v1 and v2 share a value).
                events["event \(record.bytes.first ?? 0)", default: 0] += 1
            }
        default: break
        }
    }

    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
        let data: [UInt8]
        switch advertisingReport.report {
        case .legacy(let report): data = report.data
        case .extended(let report): data = report.data
        case .directed: data = []
        }
        advertisingData["\(advertisingReport.subevent.rawValue) \(data)", default: 0] += 1
    }

    mutating func visit(att: ATTItem, record: CaptureRecord) {
        var errorCode: ATTErrorCode?
        if case .errorResponse(let response)? = att.pdu { errorCode = response.errorCode }
        tallyATT(att.opcode, wellFormed: att.pdu != nil, errorCode: errorCode)
    }

    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {
        l2cap["channel \(l2capFrame.channelID)", default: 0] += 1
    }

    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {
        l2cap["drop", default: 0] += 1
    }

    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {
        l2cap["sdu drop", default: 0] += 1
    }

    // Counting paths: the same keys.

    mutating func count(command opcode: HCIOpcode, record: CaptureRecord.Header) {
        records["\(record.kind) malformed=false", default: 0] += 1
        records["command \(opcode.rawValue)", default: 0] += 1
    }

    mutating func count(aclPacket record: CaptureRecord.Header) {
        records["\(record.kind) malformed=false", default: 0] += 1
    }

    mutating func count(event code: HCIEventCode, record: CaptureRecord.Header) {
        records["\(record.kind) malformed=false", default: 0] += 1
        events["event \(code.rawValue)", default: 0] += 1
    }

    mutating func count(advertisingReportEvent subevent: LESubeventCode, record: CaptureRecord.Header) {
        records["\(record.kind) malformed=false", default: 0] += 1
        events["LE Meta \(subevent.rawValue)", default: 0] += 1
    }

    mutating func count(advertisingReport subevent: LESubeventCode, data: UnsafeBufferPointer<UInt8>, record: CaptureRecord.Header) {
        advertisingData["\(subevent.rawValue) \(Array(data))", default: 0] += 1
    }

    mutating func count(att opcode: ATTOpcode, wellFormed: Bool, errorCode: ATTErrorCode?, record: CaptureRecord.Header) {
        tallyATT(opcode, wellFormed: wellFormed, errorCode: errorCode)
    }

    private mutating func tallyATT(_ opcode: ATTOpcode, wellFormed: Bool, errorCode: ATTErrorCode?) {
        att["\(opcode.rawValue) wellFormed=\(wellFormed) error=\(errorCode.map { "\($0.rawValue)" } ?? "-")", default: 0] += 1
    }
}
