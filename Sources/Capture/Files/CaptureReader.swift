import HCI
import Bluetooth
import L2CAP
import ATT

/// A lazy reader over the records of a whole capture file held in memory: btsnoop (datalink
/// 1002 H4 and 2001 Linux monitor), classic pcap and pcapng (link types 201, 187 and 254).
///
/// Records are slices of `bytes` (no per-record allocation). A damaged or truncated file
/// decodes up to the damage: iteration then ends and `damage` says where and why, and
/// `nextRecord()` throws it. Iterating with `for record in reader` works on a copy, so use
/// `while let record = try reader.nextRecord()` (or `reader.next()` then `reader.damage`)
/// when the damage matters.
public struct CaptureReader: Sequence, IteratorProtocol, Sendable {
    /// The whole file.
    public let bytes: [UInt8]
    public let format: CaptureFormat
    /// File offset of the next record (or block) header.
    public internal(set) var offset: Int
    /// Packet records consumed so far, including ones skipped for their link type: the number
    /// of the last record returned.
    public internal(set) var recordCount = 0
    /// pcapng packets skipped because their interface's link type is not HCI.
    public internal(set) var skippedCount = 0
    /// Set when decoding stopped before the end of the file.
    public internal(set) var damage: CaptureDamage?

    @usableFromInline enum Mode: Sendable { case btsnoopH4, btsnoopMonitor, pcap, pcapng }
    @usableFromInline let mode: Mode
    @usableFromInline var isFinished = false
    // Classic pcap header facts.
    var pcapLinkType = PcapLinkType(rawValue: 0)
    var pcapBigEndian = false
    var pcapNanosecond = false
    // pcapng section state.
    var section = PcapNGSection()

    /// Largest btsnoop included length: H4 indicator + ACL header + 65535 octets of data.
    public static let btsnoopMaximumIncludedLength = 1 + 4 + 65_535
    /// Largest pcap/pcapng captured length for an HCI link type: 4-octet pseudo-header + H4
    /// indicator + ACL header + 65535 octets of data.
    public static let pcapMaximumCapturedLength = 4 + 1 + 4 + 65_535

    /// Sniffs the format by its magic number and validates the file header.
    public init(bytes: [UInt8]) throws(HCIError) {
        self.bytes = bytes
        guard bytes.count >= 4 else {
            throw .captureFile("not a capture file: only \(bytes.count) octet(s), too short for any file header")
        }
        let magic = bytes.captureUInt32(at: 0, bigEndian: true)
        switch magic {
        case 0x6274_736E:  // "btsn"
            guard bytes.count >= 16 else {
                throw .captureFile("truncated btsnoop file header: \(bytes.count) of 16 octets")
            }
            guard bytes[0..<8].elementsEqual([0x62, 0x74, 0x73, 0x6E, 0x6F, 0x6F, 0x70, 0x00]) else {
                throw .captureFile("not a capture file: bad btsnoop identification pattern")
            }
            let version = bytes.captureUInt32(at: 8, bigEndian: true)
            guard version == 1 else {
                throw .captureFile("btsnoop version \(version) is not supported (expected 1)")
            }
            let datalink = BTSnoopDatalink(rawValue: bytes.captureUInt32(at: 12, bigEndian: true))
            switch datalink {
            case .h4: mode = .btsnoopH4
            case .monitor: mode = .btsnoopMonitor
            default: throw HCIError.unsupported(datalink: datalink)
            }
            format = .btsnoop(datalink)
            offset = 16
        case 0xA1B2_C3D4, 0xD4C3_B2A1, 0xA1B2_3C4D, 0x4D3C_B2A1:
            let bigEndian = magic == 0xA1B2_C3D4 || magic == 0xA1B2_3C4D
            let nanosecond = magic == 0xA1B2_3C4D || magic == 0x4D3C_B2A1
            guard bytes.count >= 24 else {
                throw .captureFile("truncated pcap file header: \(bytes.count) of 24 octets")
            }
            let major = bytes.captureUInt16(at: 4, bigEndian: bigEndian)
            let minor = bytes.captureUInt16(at: 6, bigEndian: bigEndian)
            guard major == 2 else {
                throw .captureFile("pcap version \(major).\(minor) is not supported (expected 2.x)")
            }
            let linkType = PcapLinkType(rawValue: bytes.captureUInt32(at: 20, bigEndian: bigEndian) & 0xFFFF)
            guard linkType.isSupported else { throw HCIError.unsupported(linkType: linkType) }
            mode = .pcap
            pcapLinkType = linkType
            pcapBigEndian = bigEndian
            pcapNanosecond = nanosecond
            format = .pcap(linkType, nanosecond: nanosecond, bigEndian: bigEndian)
            offset = 24
        case 0x0A0D_0D0A:
            mode = .pcapng
            format = .pcapng
            offset = 0
            // Find out before the first record whether any interface carries HCI.
            var probe = self
            if probe.nextHeader() == nil {
                if !probe.section.sawSupportedInterface, let linkType = probe.section.firstUnsupportedLinkType {
                    throw HCIError.unsupported(linkType: linkType)
                }
                // A broken first section header is a bad file header, not damage after records.
                if let damage = probe.damage, damage.offset == 0 { throw .captureFile(damage.description) }
            }
        default:
            throw .captureFile(
                "not a capture file: magic 0x" + String(magic, radix: 16).leftPadded(8)
                    + " is neither btsnoop, pcap nor pcapng")
        }
    }

    /// The next record; nil at the end of the file or at damage (then `damage` is set).
    public mutating func next() -> CaptureRecord? {
        guard let header = nextHeader() else { return nil }
        return CaptureRecord(header, in: bytes)
    }

    /// The next record's header (its bytes are `bytes[header.range]`), as `next()` would return
    /// the record: for walking the file buffer without a slice (and its reference) per record.
    /// (Inlinable: the counting loop of another module calls it per record.)
    @inlinable
    public mutating func nextHeader() -> CaptureRecord.Header? {
        // Each decoder sets `isFinished` at the end of the file and at damage.
        if isFinished { return nil }
        switch mode {
        case .btsnoopH4: return nextBTSnoop(monitor: false)
        case .btsnoopMonitor: return nextBTSnoop(monitor: true)
        case .pcap: return nextPcap()
        case .pcapng: return nextPcapNG()
        }
    }

    /// The next record, nil at a clean end of file; throws `HCIError.captureFile` describing
    /// the damage (record number, file offset, reason) when the file is damaged.
    public mutating func nextRecord() throws(HCIError) -> CaptureRecord? {
        if let record = next() { return record }
        if let damage { throw .captureFile(damage.description) }
        return nil
    }

    /// Every record, or the damage error.
    public mutating func readAll() throws(HCIError) -> [CaptureRecord] {
        var records: [CaptureRecord] = []
        while let record = try nextRecord() { records.append(record) }
        return records
    }

    /// Ends iteration at a clean end of file.
    mutating func end() -> CaptureRecord.Header? {
        isFinished = true
        return nil
    }

    /// Ends iteration with `reason` at `offset`, for the record that would have been next.
    mutating func stop(at offset: Int, _ reason: CaptureDamage.Reason) -> CaptureRecord.Header? {
        isFinished = true
        damage = CaptureDamage(recordNumber: recordCount + 1, offset: offset, reason: reason)
        return nil
    }

    /// A record whose packet begins with an H4 indicator at `start` (btsnoop 1002, pcap 187
    /// and 201). `original` counts the indicator.
    @inline(__always)
    func h4Record(
        number: Int, timestamp: Int64, direction: CaptureDirection, start: Int, end: Int, original: Int
    ) -> CaptureRecord.Header {
        guard start < end else {
            return CaptureRecord.Header(
                number: number, timestamp: timestamp, direction: direction, kind: .empty,
                range: end..<end, originalLength: Swift.max(original - 1, 0))
        }
        let indicator = bytes[start]
        let kind: CaptureRecord.Kind
        if let type = HCIPacketType(rawValue: indicator) { kind = .packet(type) } else { kind = .unknown(indicator: indicator) }
        return CaptureRecord.Header(
            number: number, timestamp: timestamp, direction: direction, kind: kind,
            range: (start + 1)..<end, originalLength: original - 1)
    }

    /// A BlueZ monitor record (btsnoop 2001, pcap 254) whose payload is `start..<end`.
    func monitorRecord(
        number: Int, timestamp: Int64, opcode: MonitorOpcode, index: UInt16, start: Int, end: Int, original: Int
    ) -> CaptureRecord.Header {
        let kind: CaptureRecord.Kind
        let direction: CaptureDirection
        if let packet = opcode.packet {
            kind = .packet(packet.type)
            direction = packet.direction
        } else {
            kind = .note(opcode)
            direction = .unknown
        }
        return CaptureRecord.Header(
            number: number, timestamp: timestamp, direction: direction, kind: kind,
            range: start..<end, controllerIndex: index, originalLength: original)
    }
}

extension Array where Element == UInt8 {
    // Unaligned loads for the capture readers' hot path. Callers check bounds first; the
    // precondition only guards against a bug in this module, never against file contents.
    @inline(__always)
    func captureUInt16(at offset: Int, bigEndian: Bool) -> UInt16 {
        precondition(offset >= 0 && offset <= count - 2)
        let raw = withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt16.self) }
        return bigEndian ? UInt16(bigEndian: raw) : UInt16(littleEndian: raw)
    }

    @inline(__always)
    func captureUInt32(at offset: Int, bigEndian: Bool) -> UInt32 {
        precondition(offset >= 0 && offset <= count - 4)
        let raw = withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
        return bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw)
    }

    @inline(__always)
    func captureUInt64(at offset: Int, bigEndian: Bool) -> UInt64 {
        precondition(offset >= 0 && offset <= count - 8)
        let raw = withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
        return bigEndian ? UInt64(bigEndian: raw) : UInt64(littleEndian: raw)
    }
}
