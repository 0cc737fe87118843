import ATT
import Bluetooth
import HCI

/// One ATT bearer found in a capture: a connection handle and the L2CAP channel carrying ATT
/// (the fixed channel 0x0004, or an Enhanced ATT channel). A handle reused after a
/// Disconnection Complete starts a new bearer.
public struct ReplayBearer: Hashable, Sendable, CustomStringConvertible {
    public var connectionHandle: UInt16
    public var channelID: UInt16
    /// Record number of its first ATT PDU.
    public var firstRecord: Int
    /// ATT PDUs on it, both ways.
    public var pduCount: Int

    public init(connectionHandle: UInt16, channelID: UInt16, firstRecord: Int, pduCount: Int) {
        self.connectionHandle = connectionHandle
        self.channelID = channelID
        self.firstRecord = firstRecord
        self.pduCount = pduCount
    }

    public var description: String {
        "connection handle \(replayHex(connectionHandle)), CID \(replayHex(channelID))"
            + " (\(pduCount) ATT PDUs from record \(firstRecord))"
    }
}

/// One HCI advertising report of a capture, in capture order (what `scan` over replay delivers).
public struct ReplayAdvertisingReport: Sendable {
    /// The capture record (frame) number of the event that carried it.
    public var record: Int
    /// Microseconds since the Unix epoch.
    public var timestamp: Int64
    public var item: AdvertisingReportItem

    public init(record: Int, timestamp: Int64, item: AdvertisingReportItem) {
        self.record = record
        self.timestamp = timestamp
        self.item = item
    }
}

/// What replay needs from a capture (btsnoop H4 or Linux monitor, and whatever else
/// `CaptureReader` reads): every ATT bearer with its PDUs, and the advertising reports.
///
/// HCI and L2CAP framing are decoded by ``CaptureDecoder`` (ACL reassembly per direction,
/// Enhanced ATT K-frames), never compared: a recorded session replays the same whatever ACL
/// fragment size or controller it went through. A capture damaged at its end (a recording cut
/// short) yields what precedes the damage; ``damage`` says where it stopped.
public struct ReplayCapture: Sendable {
    /// One ATT PDU of a bearer.
    struct PDU: Sendable {
        var record: Int
        var direction: CaptureDirection
        var bytes: [UInt8]
    }

    /// The file name (or the name given with the bytes), for messages.
    public let name: String
    /// The ATT bearers, in order of their first PDU.
    public private(set) var bearers: [ReplayBearer] = []
    /// Every advertising report, in capture order.
    public private(set) var advertisingReports: [ReplayAdvertisingReport] = []
    /// Records read.
    public private(set) var recordCount = 0
    /// Where reading stopped early, if the file is damaged.
    public private(set) var damage: CaptureDamage?
    /// PDUs per bearer, same indices as `bearers`.
    private var pdus: [[PDU]] = []

    /// Reads the capture at `path`.
    public init(path: String) throws(ReplayError) {
        let name = String(path.split(separator: "/").last ?? Substring(path))
        let reader: CaptureReader
        do {
            reader = try CaptureFile.open(path: path)
        } catch {
            throw ReplayError(capture: name, .capture(error))
        }
        self.init(reader: reader, name: name)
    }

    /// Reads a capture held in memory.
    public init(bytes: [UInt8], name: String) throws(ReplayError) {
        let reader: CaptureReader
        do {
            reader = try CaptureReader(bytes: bytes)
        } catch {
            throw ReplayError(capture: name, .capture(error))
        }
        self.init(reader: reader, name: name)
    }

    /// Decodes every record of `reader`.
    public init(reader: CaptureReader, name: String) {
        self.name = name
        var reader = reader
        var decoder = CaptureDecoder()
        var collector = Collector()
        while let record = reader.next() {
            decoder.decode(record, visitor: &collector)
        }
        damage = reader.damage
        recordCount = reader.recordCount
        bearers = collector.bearers
        pdus = collector.pdus
        advertisingReports = collector.reports
    }

    /// The advertising reports of the capture at `path`, in order.
    public static func advertisingReports(path: String) throws(ReplayError) -> [ReplayAdvertisingReport] {
        try ReplayCapture(path: path).advertisingReports
    }

    /// The bearer to replay: the first one, or the first on `connectionHandle` (and
    /// `channelID`) when given. Throws `noATT` or `noSuchBearer`.
    public func bearer(connectionHandle: UInt16? = nil, channelID: UInt16? = nil) throws(ReplayError)
        -> ReplayBearer
    {
        guard !bearers.isEmpty else {
            throw ReplayError(capture: name, .noATT(records: recordCount, advertisingReports: advertisingReports.count))
        }
        let found = bearers.first { bearer in
            (connectionHandle.map { $0 == bearer.connectionHandle } ?? true)
                && (channelID.map { $0 == bearer.channelID } ?? true)
        }
        guard let found else {
            throw ReplayError(
                capture: name, .noSuchBearer(connectionHandle: connectionHandle, channelID: channelID, available: bearers))
        }
        return found
    }

    /// The bearer's PDUs as a script: what the capture's host sent (host → controller) is
    /// `>` (our side), what it received is `<` (the peer); each entry's `line` is its record
    /// number. Throws `unknownDirection` for a capture that does not record directions.
    public func trace(of bearer: ReplayBearer) throws(ReplayError) -> ATTTrace {
        guard let index = bearers.firstIndex(of: bearer) else {
            throw ReplayError(
                capture: name,
                .noSuchBearer(connectionHandle: bearer.connectionHandle, channelID: bearer.channelID, available: bearers))
        }
        var entries: [ATTTrace.Entry] = []
        entries.reserveCapacity(pdus[index].count)
        for pdu in pdus[index] {
            let direction: ATTTrace.Direction
            switch pdu.direction {
            case .sent: direction = .hostToPeer
            case .received: direction = .peerToHost
            case .unknown: throw ReplayError(capture: name, .unknownDirection(record: pdu.record))
            }
            entries.append(ATTTrace.Entry(line: pdu.record, direction: direction, bytes: pdu.bytes))
        }
        return ATTTrace(entries: entries)
    }

    /// Collects bearers, PDUs and reports as `CaptureDecoder` finds them.
    private struct Collector: CaptureVisitor {
        var bearers: [ReplayBearer] = []
        var pdus: [[PDU]] = []
        var reports: [ReplayAdvertisingReport] = []
        /// Open bearers: (handle << 16 | CID) → index.
        var open: [UInt32: Int] = [:]

        mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
            guard case .event(.disconnectionComplete(let event))? = packet, event.status == .success else { return }
            open = open.filter { $0.key >> 16 != UInt32(event.connectionHandle) }
        }

        mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
            reports.append(ReplayAdvertisingReport(record: record.number, timestamp: record.timestamp, item: advertisingReport))
        }

        mutating func visit(att: ATTItem, record: CaptureRecord) {
            let key = UInt32(att.connectionHandle) << 16 | UInt32(att.channelID)
            let index: Int
            if let existing = open[key] {
                index = existing
            } else {
                index = bearers.count
                open[key] = index
                bearers.append(
                    ReplayBearer(
                        connectionHandle: att.connectionHandle, channelID: att.channelID, firstRecord: record.number,
                        pduCount: 0))
                pdus.append([])
            }
            bearers[index].pduCount += 1
            pdus[index].append(PDU(record: record.number, direction: att.direction, bytes: Array(att.bytes)))
        }

        mutating func visit(
            l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord
        ) {}
        mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {}
        mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {}
    }
}
