import ATT
import Bluetooth
import HCI
import L2CAP

/// One HCI advertising report as it came, with its place in the event.
public struct AdvertisingReportItem: Sendable {
    public enum Report: Sendable {
        case legacy(LEAdvertisingReport)
        case directed(LEDirectedAdvertisingReport)
        case extended(LEExtendedAdvertisingReport)
    }

    public var subevent: LESubeventCode
    /// Position of the report inside its event (0-based).
    public var index: Int
    public var report: Report
}

/// One ATT PDU found in a capture: reassembled from ACL fragments, located by connection and
/// channel, decoded strictly.
public struct ATTItem: Sendable {
    public var direction: CaptureDirection
    public var connectionHandle: UInt16
    public var channelID: UInt16
    /// The whole ATT PDU (opcode first).
    public var bytes: ArraySlice<UInt8>
    /// The strict decode, when it succeeded.
    public var pdu: ATTPDU?
    /// Why the strict decoder refused the PDU.
    public var error: ATTError?
    /// When the strict decoder refused only trailing octets, the PDU read without them (what
    /// Wireshark shows, since it ignores octets after a PDU's last field).
    public var lenientPDU: ATTPDU?
    /// For a Read By Type Response: whether the request it answers asked for characteristic
    /// declarations (type 0x2803 in its 16-bit form), so entries can be read as declarations.
    public var answersCharacteristicDiscovery = false

    /// The opcode octet.
    public var opcode: ATTOpcode { ATTOpcode(rawValue: bytes.first ?? 0) }
}

/// Receives what `CaptureDecoder` finds, in capture order.
public protocol CaptureVisitor {
    /// Every record, decoded at the HCI level (`packet` nil with `error` when it could not be).
    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?)
    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord)
    mutating func visit(att: ATTItem, record: CaptureRecord)
    /// An L2CAP frame on a channel other than ATT (signaling, SMP, dynamic channels).
    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord)
    /// A broken ACL fragment sequence: the partial frame was dropped.
    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord)
    /// A K-frame on an Enhanced ATT channel that did not fit its SDU: the SDU was dropped.
    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord)
}

/// Decodes capture records at every layer (used by `gattclient dump`, replay and monitor): HCI packets, advertising reports, ACL → L2CAP
/// reassembly per connection and direction, ATT on the fixed channel 0x0004.
public struct CaptureDecoder: Sendable {
    /// Separate reassembly per direction: the two sides' fragments interleave on one handle.
    @usableFromInline var sentReassembler = L2CAPReassembler()
    @usableFromInline var receivedReassembler = L2CAPReassembler()
    /// Last Read By Type Request type per (connection, direction it travelled).
    private var readByTypeRequests: [UInt32: BluetoothUUID] = [:]
    /// Enhanced ATT channels opened on LE signaling, and their K-frame reassembly.
    private var creditBasedChannels = CreditBasedChannelTracker()

    public init() {}

    public mutating func decode<V: CaptureVisitor>(_ record: CaptureRecord, visitor: inout V) {
        guard let type = record.packetType else {
            visitor.visit(record: record, packet: nil, error: nil)
            return
        }
        var reader = ByteReader(record.bytes)
        let packet: HCIPacket
        do {
            packet = try HCIPacket(type: type, parsing: &reader)
        } catch {
            visitor.visit(record: record, packet: nil, error: error)
            return
        }
        visitor.visit(record: record, packet: packet, error: nil)
        switch packet {
        case .event(.leMeta(let meta)):
            reports(meta, record: record, visitor: &visitor)
        case .event(.disconnectionComplete(let event)):
            sentReassembler.reset(handle: event.connectionHandle)
            receivedReassembler.reset(handle: event.connectionHandle)
            creditBasedChannels.reset(handle: event.connectionHandle)
        case .acl(let acl):
            self.acl(handle: acl.handle, packetBoundary: acl.packetBoundary.rawValue, data: acl.data[...], record: record,
                     visitor: &visitor, counting: false)
        default:
            break
        }
    }

    private func reports<V: CaptureVisitor>(_ meta: LEMetaEvent, record: CaptureRecord, visitor: inout V) {
        switch meta {
        case .advertisingReport(let event):
            for (index, report) in event.reports.enumerated() {
                visitor.visit(advertisingReport: AdvertisingReportItem(subevent: .advertisingReport, index: index, report: .legacy(report)), record: record)
            }
        case .directedAdvertisingReport(let event):
            for (index, report) in event.reports.enumerated() {
                visitor.visit(advertisingReport: AdvertisingReportItem(subevent: .directedAdvertisingReport, index: index, report: .directed(report)), record: record)
            }
        case .extendedAdvertisingReport(let event):
            for (index, report) in event.reports.enumerated() {
                visitor.visit(advertisingReport: AdvertisingReportItem(subevent: .extendedAdvertisingReport, index: index, report: .extended(report)), record: record)
            }
        default:
            break
        }
    }

    /// A start fragment carrying a whole B-frame (Length equal to what follows, within the
    /// reassemblers' default limit), as `L2CAPReassembler.receive` returns it.
    private static func wholeFrame(packetBoundary: UInt8, data: ArraySlice<UInt8>, limit: Int) -> L2CAPBasicFrame? {
        guard packetBoundary & 0b01 == 0, data.count >= 4 else { return nil }
        let start = data.startIndex
        let length = Int(data[start]) | Int(data[start + 1]) << 8
        guard data.count == 4 + length, length <= limit else { return nil }
        return L2CAPBasicFrame(channelID: UInt16(data[start + 2]) | UInt16(data[start + 3]) << 8, payload: data.dropFirst(4))
    }

    /// An ATT PDU `count(_:visitor:)` checked in place instead of decoding it.
    struct CountedATT {
        var opcode: ATTOpcode
        var wellFormed: Bool
        var errorCode: ATTErrorCode?
    }

    /// The fragment of an ACL data packet. When `counting` (from `count(_:visitor:)`), an ATT PDU
    /// on the fixed channel that `inPlaceATTCheck` decides is neither decoded nor visited: it is
    /// returned (nil otherwise).
    @discardableResult
    mutating func acl<V: CaptureVisitor>(
        handle: UInt16, packetBoundary: UInt8, data: ArraySlice<UInt8>, record: CaptureRecord, visitor: inout V, counting: Bool
    ) -> CountedATT? {
        let sent = record.direction == .sent
        let frame: L2CAPBasicFrame
        let idle = sent ? sentReassembler.partialFrameCount == 0 : receivedReassembler.partialFrameCount == 0
        let limit = sent ? sentReassembler.maximumLength : receivedReassembler.maximumLength
        if idle, let whole = Self.wholeFrame(packetBoundary: packetBoundary, data: data, limit: limit) {
            // What the reassembler would return for it (no partial frame to drop, nothing to
            // keep), without asking it.
            frame = whole
        } else {
            let output: L2CAPReassembler.Output
            if sent {
                output = sentReassembler.receive(handle: handle, packetBoundary: packetBoundary, data: data)
            } else {
                output = receivedReassembler.receive(handle: handle, packetBoundary: packetBoundary, data: data)
            }
            if let drop = output.drop { visitor.visit(l2capDrop: drop, record: record) }
            guard let complete = output.frame else { return nil }
            frame = complete
        }
        if frame.channelID == L2CAPBasicFrame.attributeProtocolCID {
            let payload = frame.payload
            if counting, let check = payload.withUnsafeBufferPointer({ Self.inPlaceATTCheck($0) }) {
                return CountedATT(opcode: ATTOpcode(payload[payload.startIndex]), wellFormed: check.wellFormed, errorCode: check.errorCode)
            }
            visitor.visit(att: att(payload, handle: handle, channel: frame.channelID, direction: record.direction), record: record)
            return nil
        }
        let direction: CreditBasedChannelTracker.Direction = record.direction == .received ? .incoming : .outgoing
        if frame.channelID == L2CAPBasicFrame.leSignalingCID {
            creditBasedChannels.signaling(frame.payload, handle: handle, direction: direction)
        } else if frame.channelID >= 0x0040,
                  creditBasedChannels.carriesATT(handle: handle, direction: direction, cid: frame.channelID) {
            switch creditBasedChannels.kFrame(frame.payload, handle: handle, direction: direction, cid: frame.channelID) {
            case .sdu(let sdu):
                visitor.visit(att: att(sdu[...], handle: handle, channel: frame.channelID, direction: record.direction), record: record)
            case .incomplete:
                break
            case .dropped(let reason):
                visitor.visit(sduDrop: reason, connectionHandle: handle, channelID: frame.channelID, record: record)
            }
            return nil
        }
        visitor.visit(l2capFrame: frame, connectionHandle: handle, direction: record.direction, record: record)
        return nil
    }

    private mutating func att(_ bytes: ArraySlice<UInt8>, handle: UInt16, channel: UInt16, direction: CaptureDirection) -> ATTItem {
        var item = ATTItem(direction: direction, connectionHandle: handle, channelID: channel, bytes: bytes)
        do {
            item.pdu = try ATTPDU(decoding: bytes)
        } catch {
            item.error = error
            if case .malformed(_, _, let offset, .trailingBytes) = error, offset > 0, offset < bytes.count {
                item.lenientPDU = try? ATTPDU(decoding: bytes.prefix(offset))
            }
        }
        let key = UInt32(handle) << 8 | UInt32(direction.rawValue)
        switch item.pdu ?? item.lenientPDU {
        case .readByTypeRequest(let request)?:
            readByTypeRequests[key] = request.attributeType
        case .readByTypeResponse?:
            let requestDirection: CaptureDirection = direction == .sent ? .received : .sent
            let requestKey = UInt32(handle) << 8 | UInt32(requestDirection.rawValue)
            if case .bit16(0x2803)? = readByTypeRequests[requestKey] { item.answersCharacteristicDiscovery = true }
        default:
            break
        }
        return item
    }
}
