import ATT
import Bluetooth
import HCI
import L2CAP

/// One ATT bearer found in a capture: a connection handle and the L2CAP channel carrying ATT
/// (the fixed channel 0x0004, or an Enhanced ATT channel). A handle reused after a
/// Disconnection Complete starts a new bearer.
///
/// An Enhanced ATT channel has a CID at each end: frames travelling to the capture's host
/// carry `channelID` (the host's own CID), frames it sends carry `peerChannelID`. Both are
/// learnt from the L2CAP_CREDIT_BASED_CONNECTION_REQ/RSP pair that opened the channel.
public struct ReplayBearer: Hashable, Sendable, CustomStringConvertible {
    public var connectionHandle: UInt16
    /// The CID frames to the capture's host carry (0x0004 for the fixed ATT channel).
    public var channelID: UInt16
    /// The CID frames from the capture's host carry (0x0004 for the fixed ATT channel).
    public var peerChannelID: UInt16
    /// Record number of its first ATT PDU.
    public var firstRecord: Int
    /// ATT PDUs on it, both ways.
    public var pduCount: Int
    /// The remote device, when the capture holds the LE (Enhanced) Connection Complete event
    /// of the connection.
    public var peerAddress: BluetoothAddress?
    public var peerAddressType: LEAddressType?
    /// An Enhanced ATT bearer's ATT_MTU: the smaller of the two MTUs its credit-based
    /// connection request and response gave; nil for the unenhanced bearer.
    public var enhancedMTU: Int?

    public init(
        connectionHandle: UInt16, channelID: UInt16, peerChannelID: UInt16? = nil, firstRecord: Int, pduCount: Int
    ) {
        self.connectionHandle = connectionHandle
        self.channelID = channelID
        self.peerChannelID = peerChannelID ?? channelID
        self.firstRecord = firstRecord
        self.pduCount = pduCount
    }

    public var description: String {
        let peer = peerChannelID == channelID ? "" : " (peer CID \(replayHex(peerChannelID)))"
        let address = peerAddress.map { " to \($0)" } ?? ""
        return "connection handle \(replayHex(connectionHandle))\(address), CID \(replayHex(channelID))\(peer)"
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

    /// The bearer to replay: the first one, or the first matching what is given: its
    /// `connectionHandle`, `channelID` (either CID of an Enhanced ATT channel), `peerAddress`
    /// (known from the capture's Connection Complete). Throws `noATT` or `noSuchBearer`.
    public func bearer(
        connectionHandle: UInt16? = nil, channelID: UInt16? = nil, peerAddress: BluetoothAddress? = nil
    ) throws(ReplayError) -> ReplayBearer {
        guard !bearers.isEmpty else {
            throw ReplayError(capture: name, .noATT(records: recordCount, advertisingReports: advertisingReports.count))
        }
        let found = bearers.first { bearer in
            (connectionHandle.map { $0 == bearer.connectionHandle } ?? true)
                && (channelID.map { $0 == bearer.channelID || $0 == bearer.peerChannelID } ?? true)
                && (peerAddress.map { $0 == bearer.peerAddress } ?? true)
        }
        guard let found else {
            throw ReplayError(
                capture: name,
                .noSuchBearer(
                    connectionHandle: connectionHandle, channelID: channelID, peerAddress: peerAddress,
                    available: bearers))
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
                .noSuchBearer(
                    connectionHandle: bearer.connectionHandle, channelID: bearer.channelID, peerAddress: nil,
                    available: bearers))
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
        /// Open bearers: (handle << 16 | host CID) → index.
        var open: [UInt32: Int] = [:]
        /// Enhanced ATT channels: (handle << 16 | peer CID) → host CID, and back.
        var hostCIDs: [UInt32: UInt16] = [:]
        var peerCIDs: [UInt32: UInt16] = [:]
        /// Credit based connection requests awaiting their response: (handle, direction the
        /// request went, identifier) → Source_CIDs and the requester's MTU.
        var pendingRequests: [UInt32: (sources: [UInt16], mtu: UInt16)] = [:]
        /// Enhanced ATT channels' ATT_MTU: (handle << 16 | host CID) → the smaller MTU.
        var enhancedMTUs: [UInt32: Int] = [:]
        /// Peers of the open connections, from their Connection Complete events.
        var peers: [UInt16: (address: BluetoothAddress, type: LEAddressType)] = [:]

        static func key(_ handle: UInt16, _ cid: UInt16) -> UInt32 { UInt32(handle) << 16 | UInt32(cid) }

        mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
            switch packet {
            case .event(.leMeta(.connectionComplete(let event)))? where event.status == .success:
                peers[event.connectionHandle] = (event.peerAddress, event.peerAddressType)
            case .event(.leMeta(.enhancedConnectionComplete(let event)))? where event.status == .success:
                peers[event.connectionHandle] = (event.peerAddress, event.peerAddressType)
            default:
                break
            }
            guard case .event(.disconnectionComplete(let event))? = packet, event.status == .success else { return }
            peers[event.connectionHandle] = nil
            let handle = UInt32(event.connectionHandle)
            open = open.filter { $0.key >> 16 != handle }
            hostCIDs = hostCIDs.filter { $0.key >> 16 != handle }
            enhancedMTUs = enhancedMTUs.filter { $0.key >> 16 != handle }
            peerCIDs = peerCIDs.filter { $0.key >> 16 != handle }
            pendingRequests = pendingRequests.filter { $0.key >> 16 != handle }
        }

        mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
            reports.append(
                ReplayAdvertisingReport(record: record.number, timestamp: record.timestamp, item: advertisingReport))
        }

        mutating func visit(att: ATTItem, record: CaptureRecord) {
            var hostCID = att.channelID
            if att.channelID != L2CAPBasicFrame.attributeProtocolCID, att.direction == .sent {
                hostCID = hostCIDs[Self.key(att.connectionHandle, att.channelID)] ?? att.channelID
            }
            let key = Self.key(att.connectionHandle, hostCID)
            let index: Int
            if let existing = open[key] {
                index = existing
            } else {
                index = bearers.count
                open[key] = index
                bearers.append(
                    ReplayBearer(
                        connectionHandle: att.connectionHandle, channelID: hostCID, peerChannelID: peerCIDs[key],
                        firstRecord: record.number, pduCount: 0))
                bearers[index].peerAddress = peers[att.connectionHandle]?.address
                bearers[index].peerAddressType = peers[att.connectionHandle]?.type
                bearers[index].enhancedMTU = enhancedMTUs[key]
                pdus.append([])
            }
            bearers[index].pduCount += 1
            pdus[index].append(PDU(record: record.number, direction: att.direction, bytes: Array(att.bytes)))
        }

        /// Pairs the two CIDs of each Enhanced ATT channel from LE signaling (the decoder
        /// follows the same commands to find the channels; it reports each frame under the CID
        /// its header carries, which differs by direction).
        /// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.25 and §4.26
        mutating func visit(
            l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord
        ) {
            guard l2capFrame.channelID == L2CAPBasicFrame.leSignalingCID, direction != .unknown else { return }
            var reader = ByteReader(l2capFrame.payload)
            while reader.remainingCount >= 4 {
                guard let code = try? reader.readUInt8(), let identifier = try? reader.readUInt8(),
                    let length = try? reader.readUInt16LE(), var data = try? reader.subReader(Int(length))
                else { return }
                let pendingKey = { (direction: CaptureDirection) in
                    UInt32(connectionHandle) << 16 | UInt32(direction.rawValue) << 8 | UInt32(identifier)
                }
                switch code {
                case CreditBasedChannelTracker.creditBasedConnectionRequest:
                    // SPSM, MTU, MPS, Initial_Credits, Source_CIDs.
                    guard let spsm = try? data.readUInt16LE(), spsm == CreditBasedChannelTracker.eattSPSM,
                        let mtu = try? data.readUInt16LE(), (try? data.skip(4)) != nil, pendingRequests.count < 64
                    else { continue }
                    var sources: [UInt16] = []
                    while let cid = try? data.readUInt16LE() { sources.append(cid) }
                    pendingRequests[pendingKey(direction)] = (sources, mtu)
                case CreditBasedChannelTracker.creditBasedConnectionResponse:
                    // MTU, MPS, Initial_Credits, Result, Destination_CIDs (0x0000: refused).
                    let requestDirection: CaptureDirection = direction == .sent ? .received : .sent
                    guard let request = pendingRequests.removeValue(forKey: pendingKey(requestDirection)),
                        let mtu = try? data.readUInt16LE(), (try? data.skip(6)) != nil
                    else { continue }
                    var destinations: [UInt16] = []
                    while let cid = try? data.readUInt16LE() { destinations.append(cid) }
                    for (source, destination) in zip(request.sources, destinations) where destination != 0 {
                        // The requester's CID is its Source_CID.
                        let (host, peer) = requestDirection == .sent ? (source, destination) : (destination, source)
                        hostCIDs[Self.key(connectionHandle, peer)] = host
                        peerCIDs[Self.key(connectionHandle, host)] = peer
                        enhancedMTUs[Self.key(connectionHandle, host)] = Int(min(mtu, request.mtu))
                    }
                default:
                    continue
                }
            }
        }

        mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {}
        mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord)
        {}
    }
}
