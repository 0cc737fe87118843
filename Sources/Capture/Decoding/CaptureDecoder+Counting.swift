import ATT
import HCI
import L2CAP

/// What `CaptureDecoder.count(_:visitor:)` reports for the records it checks in place, without
/// building packet values (for counting, as `dump --summary` does). Every other record, and
/// every record the in-place checks do not accept, goes through the `CaptureVisitor` calls of
/// `decode(_:visitor:)`. The in-place records come as their header only (no slice of the file
/// buffer, so no reference to count per record).
public protocol CaptureCountingVisitor: CaptureVisitor {
    /// A well-formed HCI command packet (checked as `HCIPacket` checks it).
    mutating func count(command opcode: HCIOpcode, record: CaptureRecord.Header)
    /// A well-formed ACL data packet (checked as `ACLDataPacket` checks it); what its L2CAP frame
    /// carries follows.
    mutating func count(aclPacket record: CaptureRecord.Header)
    /// A well-formed Command Complete, Command Status or Number Of Completed Packets event
    /// (checked as `HCIEvent` checks it).
    mutating func count(event code: HCIEventCode, record: CaptureRecord.Header)
    /// A well-formed LE Advertising Report or LE Extended Advertising Report event (checked as
    /// `HCIEvent` checks it); each report's data follows, in order.
    mutating func count(advertisingReportEvent subevent: LESubeventCode, record: CaptureRecord.Header)
    /// One report of that event: its advertising data (in the file buffer, valid during the
    /// call only).
    mutating func count(advertisingReport subevent: LESubeventCode, data: UnsafeBufferPointer<UInt8>, record: CaptureRecord.Header)
    /// An ATT PDU on the fixed channel whose strict decode `CaptureDecoder.inPlaceATTCheck`
    /// decides without building it: its opcode, whether `ATTPDU(decoding:)` accepts it, and for an
    /// accepted Error Response its Error Code. Other ATT PDUs arrive decoded, by `visit(att:record:)`.
    mutating func count(att opcode: ATTOpcode, wellFormed: Bool, errorCode: ATTErrorCode?, record: CaptureRecord.Header)
}

/// Counting: the records `dump --summary` meets most, checked in place in the file buffer with
/// the same rules as their parsers.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4 (HCI packets) and §7.7 (events); Vol 3, Part F,
///   §3.4 (ATT PDUs)
extension CaptureDecoder {
    /// Counts `record` with the same results as `decode(_:visitor:)`, checking the common
    /// records (commands, ACL data, advertising report events, notifications) in place in the
    /// file buffer instead of building their values; the rest are decoded.
    public mutating func count<V: CaptureCountingVisitor>(_ record: CaptureRecord, visitor: inout V) {
        let header = record.header
        let outcome = record.bytes.withUnsafeBufferPointer { bytes in
            countInPlace(bytes, record: header, visitor: &visitor)
        }
        finish(outcome, record: record, visitor: &visitor)
    }

    /// Counts every record of `reader` up to its end or damage, with the same visitor calls as
    /// `while let record = reader.next() { count(record, visitor: &visitor) }`, but the records
    /// checked in place are read from the reader's buffer by their header alone: no
    /// `CaptureRecord` (and no reference to the buffer) is made for them. A stream that has
    /// nothing to read for now (a pipe) is waited for.
    @inlinable
    public mutating func countAll<V: CaptureCountingVisitor>(_ reader: inout CaptureReader, visitor: inout V) {
        while true {
            let file = reader.bytes
            let generation = reader.windowGeneration
            // The first record of a new window (a stream's), counted against that window.
            var moved: CaptureRecord.Header?
            file.withUnsafeBufferPointer { buffer in
                let window = UnsafeRawBufferPointer(buffer)
                while true {
                    // Most records: whole in the window, read in place; the rest through the
                    // reader's general path (refills, damage, other formats).
                    if let header = reader.nextWholeH4Record(in: window) {
                        count(header, in: file, buffer: buffer, visitor: &visitor)
                        continue
                    }
                    guard let header = reader.nextHeader() else { return }
                    if reader.windowGeneration != generation {
                        moved = header
                        return
                    }
                    count(header, in: file, buffer: buffer, visitor: &visitor)
                }
            }
            if let header = moved {
                let window = reader.bytes
                window.withUnsafeBufferPointer { count(header, in: window, buffer: $0, visitor: &visitor) }
                continue
            }
            if reader.isWaiting, reader.waitForInput() { continue }
            return
        }
    }

    /// Counts the record `header` of `file` (whose storage is `buffer`).
    @inlinable
    mutating func count<V: CaptureCountingVisitor>(
        _ header: CaptureRecord.Header, in file: [UInt8], buffer: UnsafeBufferPointer<UInt8>, visitor: inout V
    ) {
        let outcome = countInPlace(UnsafeBufferPointer(rebasing: buffer[header.range]), record: header, visitor: &visitor)
        if case .counted = outcome { return }
        finish(outcome, record: CaptureRecord(header, in: file), visitor: &visitor)
    }

    /// What `countInPlace` left to do.
    @usableFromInline
    enum InPlaceOutcome {
        /// Counted: nothing left.
        case counted
        /// To be decoded in full.
        case decode
        /// A well-formed ACL data packet, already counted, whose fragment goes through `acl`.
        case aclFragment(handle: UInt16, packetBoundary: UInt8)
    }

    /// Does what `countInPlace` left for `record`.
    @usableFromInline
    mutating func finish<V: CaptureCountingVisitor>(_ outcome: InPlaceOutcome, record: CaptureRecord, visitor: inout V) {
        switch outcome {
        case .counted:
            break
        case .decode:
            decode(record, visitor: &visitor)
        case .aclFragment(let handle, let packetBoundary):
            let counted = acl(
                handle: handle, packetBoundary: packetBoundary, data: record.bytes.dropFirst(4), record: record,
                visitor: &visitor, counting: true)
            if let counted {
                visitor.count(att: counted.opcode, wellFormed: counted.wellFormed, errorCode: counted.errorCode, record: record.header)
            }
        }
    }

    /// Counts the record `record` (whose packet is `bytes`) as far as its checks can be made in
    /// place; says what is left.
    @inlinable
    mutating func countInPlace<V: CaptureCountingVisitor>(
        _ bytes: UnsafeBufferPointer<UInt8>, record: CaptureRecord.Header, visitor: inout V
    ) -> InPlaceOutcome {
        switch record.kind {
        case .packet(.acl):
            // ACLDataPacket: Handle ≤ 0x0EFF, Data_Total_Length equal to what follows.
            guard bytes.count >= 4 else { return .decode }
            let field = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
            let handle = field & 0x0FFF
            let length = Int(bytes[2]) | Int(bytes[3]) << 8
            guard handle <= ConnectionHandleRange.max, bytes.count - 4 == length else { return .decode }
            visitor.count(aclPacket: record)
            let packetBoundary = UInt8(field >> 12 & 0b11)
            // A whole B-frame on the ATT channel in one start fragment (L2CAP Length equal to
            // what follows), no partial frame pending in that direction: what the reassembler
            // would return, read in place.
            if packetBoundary & 0b01 == 0, length >= 5, Int(bytes[4]) | Int(bytes[5]) << 8 == length - 4,
               bytes[6] == 0x04, bytes[7] == 0x00,
               let check = Self.inPlaceATTCheck(UnsafeBufferPointer(rebasing: bytes[8...])) {
                let sent = record.direction == .sent
                let idle = sent ? sentReassembler.partialFrameCount == 0 : receivedReassembler.partialFrameCount == 0
                let limit = sent ? sentReassembler.maximumLength : receivedReassembler.maximumLength
                if idle, length - 4 <= limit {
                    visitor.count(att: ATTOpcode(bytes[8]), wellFormed: check.wellFormed, errorCode: check.errorCode, record: record)
                    return .counted
                }
            }
            return .aclFragment(handle: handle, packetBoundary: packetBoundary)
        case .packet(.command):
            // HCIPacket: opcode, Parameter_Total_Length equal to what follows.
            guard bytes.count >= 3, Int(bytes[2]) == bytes.count - 3 else { return .decode }
            visitor.count(command: HCIOpcode(rawValue: UInt16(bytes[0]) | UInt16(bytes[1]) << 8), record: record)
            return .counted
        case .packet(.event):
            // HCIEvent: code, Parameter_Total_Length equal to what follows.
            guard bytes.count >= 2, Int(bytes[1]) == bytes.count - 2 else { return .decode }
            let parameters = UnsafeBufferPointer(rebasing: bytes[2...])
            switch bytes[0] {
            case 0x3E:
                return countLEMeta(parameters, record: record, visitor: &visitor)
            case 0x0E:
                // CommandCompleteEvent: Num_HCI_Command_Packets, Command_Opcode, any return parameters.
                guard parameters.count >= 3 else { return .decode }
            case 0x0F:
                // CommandStatusEvent: Status, Num_HCI_Command_Packets, Command_Opcode, nothing more.
                guard parameters.count == 4 else { return .decode }
            case 0x13:
                // NumberOfCompletedPacketsEvent: Num_Handles, then per handle a Connection_Handle
                // ≤ 0x0EFF and Num_Completed_Packets; nothing more.
                guard let first = parameters.first, parameters.count - 1 == Int(first) * 4 else { return .decode }
                var index = 1
                while index < parameters.count {
                    guard UInt16(parameters[index]) | UInt16(parameters[index + 1]) << 8 <= ConnectionHandleRange.max else {
                        return .decode
                    }
                    index += 4
                }
            default:
                return .decode
            }
            visitor.count(event: HCIEventCode(rawValue: bytes[0]), record: record)
            return .counted
        default:
            return .decode
        }
    }

    /// Counts an LE Meta event whose parameters (subevent code first) are `p` when it is a
    /// well-formed advertising report event; says what is left.
    @inlinable
    func countLEMeta<V: CaptureCountingVisitor>(
        _ p: UnsafeBufferPointer<UInt8>, record: CaptureRecord.Header, visitor: inout V
    ) -> InPlaceOutcome {
        guard p.count >= 2 else { return .decode }
        let subevent = LESubeventCode(rawValue: p[0])
        let parameters = UnsafeBufferPointer(rebasing: p[1...])
        switch subevent.rawValue {
        case 0x02:
            guard Self.isWellFormedLegacyReports(parameters) else { return .decode }
            visitor.count(advertisingReportEvent: subevent, record: record)
            var index = 1
            for _ in 0..<Int(parameters[0]) {
                let length = Int(parameters[index + 8])
                let data = UnsafeBufferPointer(rebasing: parameters[(index + 9)..<(index + 9 + length)])
                visitor.count(advertisingReport: subevent, data: data, record: record)
                index += 10 + length
            }
            return .counted
        case 0x0D:
            guard Self.isWellFormedExtendedReports(parameters) else { return .decode }
            visitor.count(advertisingReportEvent: subevent, record: record)
            let fixed = LEExtendedAdvertisingReport.fixedLength
            var index = 1
            for _ in 0..<Int(parameters[0]) {
                let length = Int(parameters[index + fixed - 1])
                let data = UnsafeBufferPointer(rebasing: parameters[(index + fixed)..<(index + fixed + length)])
                visitor.count(advertisingReport: subevent, data: data, record: record)
                index += fixed + length
            }
            return .counted
        default:
            return .decode
        }
    }

    /// Whether `ATTPDU(decoding:)` (no MTU) accepts `pdu`, for the opcodes whose parsers are a
    /// fixed length, a fixed head and any value, or a list of same-size entries (the Error Code
    /// too, for an Error Response); nil for the others, which must be decoded.
    @inlinable
    public static func inPlaceATTCheck(_ pdu: UnsafeBufferPointer<UInt8>) -> (wellFormed: Bool, errorCode: ATTErrorCode?)? {
        guard let opcode = pdu.first else { return nil }
        let count = pdu.count
        switch opcode {
        case 0x01:  // Error Response: Request Opcode In Error, Attribute Handle In Error, Error Code.
            return count == 5 ? (true, ATTErrorCode(pdu[4])) : (false, nil)
        case 0x02, 0x03:  // Exchange MTU Request / Response: one 16-bit MTU.
            return (count == 3, nil)
        case 0x04:  // Find Information Request: Starting Handle, Ending Handle.
            return (count == 5, nil)
        case 0x06:  // Find By Type Value Request: handles, 16-bit Attribute Type, any value.
            return (count >= 7, nil)
        case 0x0A:  // Read Request: Attribute Handle.
            return (count == 3, nil)
        case 0x0C:  // Read Blob Request: Attribute Handle, Value Offset.
            return (count == 5, nil)
        case 0x0E:  // Read Multiple Request: a whole number of 16-bit handles.
            return ((count - 1) % 2 == 0, nil)
        case 0x05:  // Find Information Response: Format, then handle–UUID pairs of its width.
            guard count >= 2 else { return (false, nil) }
            switch pdu[1] {
            case 0x01: return (isWellFormedList(pdu, head: 2, entry: 4, ranged: false), nil)
            case 0x02: return (isWellFormedList(pdu, head: 2, entry: 18, ranged: false), nil)
            default: return (false, nil)
            }
        case 0x07:  // Find By Type Value Response: Found Attribute Handle–Group End Handle pairs.
            return (isWellFormedList(pdu, head: 1, entry: 4, ranged: true), nil)
        case 0x09:  // Read By Type Response: Length ≥ 2, then handle–value entries of that length.
            guard count >= 2, pdu[1] >= 2 else { return (false, nil) }
            return (isWellFormedList(pdu, head: 2, entry: Int(pdu[1]), ranged: false), nil)
        case 0x11:  // Read By Group Type Response: Length ≥ 4, then handle–end–value entries.
            guard count >= 2, pdu[1] >= 4 else { return (false, nil) }
            return (isWellFormedList(pdu, head: 2, entry: Int(pdu[1]), ranged: true), nil)
        case 0x0B, 0x0D, 0x0F:  // Read Response, Read Blob Response, Read Multiple Response: any value.
            return (true, nil)
        case 0x10:  // Read By Group Type Request: handles, a 16-bit or 128-bit UUID.
            // (Not Read By Type Request: `att` remembers its type for the response.)
            return (count == 7 || count == 21, nil)
        case 0x12, 0x52:  // Write Request, Write Command: Attribute Handle (any), any value.
            return (count >= 3, nil)
        case 0x13, 0x1E:  // Write Response, Handle Value Confirmation: the opcode alone.
            return (count == 1, nil)
        case 0x1B, 0x1D:  // Handle Value Notification / Indication: a non-zero handle, any value.
            return (count >= 3 && (pdu[1] != 0 || pdu[2] != 0), nil)
        default:
            return nil
        }
    }

    /// Whether `pdu` from `head` on is what the ATT list responses' parsers accept: at least one
    /// entry of `entry` octets (≥ 2, or ≥ 4 when `ranged`), no partial entry, each entry starting
    /// with a non-zero handle and, when `ranged`, a second handle not below it.
    @inlinable
    static func isWellFormedList(_ pdu: UnsafeBufferPointer<UInt8>, head: Int, entry: Int, ranged: Bool) -> Bool {
        let remaining = pdu.count - head
        guard remaining > 0, remaining % entry == 0 else { return false }
        var index = head
        while index < pdu.count {
            let handle = UInt16(pdu[index]) | UInt16(pdu[index + 1]) << 8
            guard handle != 0 else { return false }
            if ranged, handle > UInt16(pdu[index + 2]) | UInt16(pdu[index + 3]) << 8 { return false }
            index += entry
        }
        return true
    }

    /// LE Advertising Report parameters as `LEAdvertisingReportEvent` accepts them: Num_Reports
    /// 1–25, each report 9 octets, Data_Length ≤ 31, data, RSSI; nothing after the last.
    @inlinable
    static func isWellFormedLegacyReports(_ p: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = p.first else { return false }
        let count = Int(first)
        guard LEAdvertisingReportEvent.reportCountRange.contains(count), p.count - 1 >= count * 10 else { return false }
        var index = 1
        for _ in 0..<count {
            guard p.count - index >= 10 else { return false }
            let length = Int(p[index + 8])
            guard length <= LEAdvertisingReport.maxDataLength, p.count - index >= 10 + length else { return false }
            index += 10 + length
        }
        return index == p.count
    }

    /// LE Extended Advertising Report parameters as `LEExtendedAdvertisingReportEvent` accepts
    /// them: Num_Reports 1–10, each report 23 octets, Data_Length, data; nothing after the last.
    @inlinable
    static func isWellFormedExtendedReports(_ p: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = p.first else { return false }
        let count = Int(first)
        let fixed = LEExtendedAdvertisingReport.fixedLength
        guard LEExtendedAdvertisingReportEvent.reportCountRange.contains(count), p.count - 1 >= count * fixed else {
            return false
        }
        var index = 1
        for _ in 0..<count {
            guard p.count - index >= fixed else { return false }
            let length = Int(p[index + fixed - 1])
            guard p.count - index >= fixed + length else { return false }
            index += fixed + length
        }
        return index == p.count
    }
}
