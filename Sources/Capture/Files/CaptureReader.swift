import HCI
import Bluetooth
import L2CAP
import ATT

/// A lazy reader over the records of a capture: btsnoop (datalink 1002 H4 and 2001 Linux
/// monitor), classic pcap and pcapng (link types 201, 187 and 254).
///
/// It reads either a whole file held in memory (`init(bytes:)`) or a stream (`init(input:)`:
/// a file, a pipe, standard input, a followed file) through a bounded window: memory stays
/// flat whatever the size of the capture. Records are slices of the window (no per-record
/// allocation); a record keeps its window alive while it is kept.
///
/// A damaged or truncated capture decodes up to the damage: iteration then ends and `damage`
/// says where and why, and `nextRecord()` throws it. Iterating with `for record in reader`
/// works on a copy, so use `while let record = try reader.nextRecord()` (or `reader.next()`
/// then `reader.damage`) when the damage matters. A streaming reader is single-pass: copies
/// share its input.
///
/// A stream that has nothing more to read for now (a pipe, a followed file at its current end)
/// ends `next()` with `isWaiting` set: `waitForInput()` blocks until there may be more, then
/// `next()` goes on where it stopped.
public struct CaptureReader: Sequence, IteratorProtocol, Sendable {
    /// The octets the reader holds: the whole file for `init(bytes:)`; for a stream, the window
    /// the last record lies in. `CaptureRecord.Header.range` indexes it until the next call.
    public private(set) var bytes: [UInt8]
    public let format: CaptureFormat
    /// File offset of `bytes[0]` (0 for a whole file in memory).
    public private(set) var windowOffset = 0
    /// Index in `bytes` of the next record (or block) header.
    @usableFromInline var position: Int
    /// File offset of the next record (or block) header.
    public var offset: Int { windowOffset + position }
    /// Packet records consumed so far, including ones skipped for their link type: the number
    /// of the last record returned.
    public var recordCount: Int { recordsRead }
    /// `recordCount`'s storage (set by the record parsers, some inlined into callers).
    @usableFromInline var recordsRead = 0
    /// pcapng packets skipped because their interface's link type is not HCI.
    public internal(set) var skippedCount = 0
    /// Set when decoding stopped before the end of the file.
    public internal(set) var damage: CaptureDamage?
    /// Set when `next()` returned nil because a stream has nothing more to read yet (not its end).
    public private(set) var isWaiting = false
    /// The HCI link type of a pcap, or of the current pcapng section's first HCI interface (nil
    /// for btsnoop, and for a pcapng before its interfaces are read).
    public var hciLinkType: PcapLinkType? {
        switch mode {
        case .pcap: return pcapLinkType
        case .pcapng: return section.interfaces.first(where: { $0.linkType.isSupported })?.linkType
        case .btsnoopH4, .btsnoopMonitor: return nil
        }
    }
    /// Whether `waitForInput()` waits for a writer still writing (a followed file).
    public var isFollowing: Bool { input?.isFollowing ?? false }

    @usableFromInline enum Mode: Sendable { case btsnoopH4, btsnoopMonitor, pcap, pcapng }
    @usableFromInline let mode: Mode
    @usableFromInline var isFinished = false
    /// The stream read, nil for a whole file in memory.
    let input: CaptureInput?
    /// Whether everything the input will give is in `bytes` (always, for a file in memory).
    @usableFromInline var inputEnded: Bool
    // Classic pcap header facts.
    var pcapLinkType = PcapLinkType(rawValue: 0)
    var pcapBigEndian = false
    var pcapNanosecond = false
    // pcapng section state.
    var section = PcapNGSection()
    /// A large pcapng block being skipped by a streaming reader.
    var pcapngSkip: PcapNGSkip?

    /// Octets a streaming reader asks of its input at a time (its window, beyond what one
    /// record or block needs).
    public static let windowSize = 1 << 20
    /// This reader's window size (`init(input:windowSize:)`).
    private(set) var windowCapacity = CaptureReader.windowSize
    /// Largest pcapng block a streaming reader holds (larger section header, interface and
    /// packet blocks are damage; larger blocks of other types are skipped through the windows).
    public static let largestHeldBlock = 16 << 20

    /// Largest btsnoop included length: H4 indicator + ACL header + 65535 octets of data.
    public static let btsnoopMaximumIncludedLength = 1 + 4 + 65_535
    /// Largest pcap/pcapng captured length for an HCI link type: 4-octet pseudo-header + H4
    /// indicator + ACL header + 65535 octets of data.
    public static let pcapMaximumCapturedLength = 4 + 1 + 4 + 65_535

    /// Sniffs the format of a whole capture held in memory by its magic number and validates
    /// the file header.
    public init(bytes: [UInt8]) throws(HCIError) {
        try self.init(window: bytes, input: nil, inputEnded: true, authoritative: true)
    }

    /// Reads the capture `input` gives, `windowSize` octets at a time (more when one record
    /// needs more): sniffs its format from the first octets (waiting for them on a pipe or a
    /// followed file that is still empty).
    public init(input: CaptureInput, windowSize: Int = CaptureReader.windowSize) throws(HCIError) {
        let size = Swift.max(windowSize, 1)
        // Enough for any file header, and what the first read gives beyond it.
        var (window, ended) = try Self.read(adding: size, to: [], atLeast: 24, from: input)
        // pcapng: whether any interface carries HCI is known at the first packet on one (or at
        // the end): read on until then, as the whole-file reader sees it, up to the bound on
        // what a stream holds.
        var authoritative = ended
        if window.count >= 4, window.captureUInt32(at: 0, bigEndian: true) == Self.pcapngSectionHeader {
            while !ended, window.count < Self.largestHeldBlock {
                var probe = try CaptureReader(window: window, input: nil, inputEnded: false, authoritative: false)
                if probe.nextHeader() != nil { break }
                // Damage other than the held octets running out is damage however much follows.
                if let damage = probe.damage, !damage.reason.isTruncation {
                    authoritative = true
                    break
                }
                (window, ended) = try Self.read(adding: Swift.max(size, window.count), to: window, atLeast: window.count + 1, from: input)
            }
            authoritative = authoritative || ended
        }
        try self.init(window: window, input: input, inputEnded: ended, authoritative: authoritative)
        windowCapacity = size
    }

    /// `window` and what `input` gives after it, `adding` octets at most, waiting until there
    /// are `atLeast` octets or the input ends; whether it ended.
    private static func read(
        adding count: Int, to window: [UInt8], atLeast minimum: Int, from input: CaptureInput
    ) throws(HCIError) -> ([UInt8], Bool) {
        var window = window
        var ended = false
        let capacity = window.count + count
        while !ended && window.count < minimum {
            var outcome = CaptureInput.ReadOutcome.end
            window = Self.window(keeping: window[...], capacity: Swift.max(capacity, window.count + 1), from: input, outcome: &outcome)
            switch outcome {
            case .end: ended = true
            case .failed(let error): throw .system(operation: "read \(input.name)", errno: error)
            case .wouldWait:
                guard window.count < minimum else { break }
                switch input.wait() {
                case .ready: break
                case .gone, .interrupted: ended = true
                case .failed(let error): throw .system(operation: "wait for \(input.name)", errno: error)
                }
            case .data: break
            }
        }
        return (window, ended)
    }

    /// `authoritative`: whether what `bytes` holds decides if a pcapng carries HCI at all (the
    /// whole file, or damage before its first HCI packet).
    private init(window bytes: [UInt8], input: CaptureInput?, inputEnded: Bool, authoritative: Bool) throws(HCIError) {
        self.bytes = bytes
        self.input = input
        self.inputEnded = inputEnded
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
            position = 16
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
            position = 24
        case 0x0A0D_0D0A:
            mode = .pcapng
            format = .pcapng
            position = 0
            // Find out before the first record whether any interface carries HCI: in what is
            // held (for a stream, what its first read gave; the answer counts only when that
            // is the whole stream).
            var probe = self
            probe.inputEnded = true
            if probe.nextHeader() == nil, authoritative {
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

    /// The next record; nil at the end of the file, at damage (then `damage` is set), or while
    /// a stream has nothing more yet (then `isWaiting` is set).
    public mutating func next() -> CaptureRecord? {
        guard let header = nextHeader() else { return nil }
        return CaptureRecord(header, in: bytes)
    }

    /// After `next()` returned nil with `isWaiting`: blocks until the input may have more (a
    /// followed file changed, a pipe became readable). A followed file that was deleted is read
    /// to its end, which is then the end (a partial record there is damage). Returns false when
    /// the wait was interrupted (the input's interrupt descriptor), when it failed or a followed
    /// file shrank (`damage` says so), or when the reader was not waiting.
    public mutating func waitForInput() -> Bool {
        guard isWaiting, let input else { return false }
        isWaiting = false
        switch input.wait() {
        case .ready:
            if let size = input.currentSize(), size < windowOffset + bytes.count {
                _ = stop(at: offset, .inputFailed("the file shrank to \(size) octets while it was read (truncated or replaced)"))
                return false
            }
            return true
        case .gone:
            // Whatever was written before the deletion is still read; then the end is the end.
            followEnded = true
            return true
        case .interrupted:
            return false
        case .failed(let error):
            _ = stop(at: offset, .inputFailed("waiting for \(input.name) failed: \(error)"))
            return false
        }
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

    /// Ends iteration with `reason` at file offset `offset`, for the record that would have
    /// been next.
    mutating func stop(at offset: Int, _ reason: CaptureDamage.Reason) -> CaptureRecord.Header? {
        isFinished = true
        damage = CaptureDamage(recordNumber: recordCount + 1, offset: offset, reason: reason)
        return nil
    }

    /// Ends iteration with `reason` at index `index` of `bytes`.
    mutating func stop(atIndex index: Int, _ reason: CaptureDamage.Reason) -> CaptureRecord.Header? {
        stop(at: windowOffset + index, reason)
    }

    // MARK: - The window

    /// Makes `count` octets from `position` available if the input has them: for a stream, a
    /// new window holding the octets not yet read and what the input gives beyond them
    /// (`position` moves to 0 of it). Returns the octets available from `position`: fewer than
    /// `count` at the end of the input, or with `isWaiting` set when a stream has nothing more
    /// for now, or at a read failure (`readFailure` set).
    @inline(__always) @usableFromInline
    mutating func fill(_ count: Int) -> Int {
        let available = bytes.count - position
        if available >= count || inputEnded { return available }
        return refill(count)
    }

    @usableFromInline
    mutating func refill(_ count: Int) -> Int {
        isWaiting = false
        guard let input, readFailure == nil else { return bytes.count - position }
        var outcome = CaptureInput.ReadOutcome.end
        let window = Self.window(
            keeping: bytes[position...], capacity: Swift.max(windowCapacity, count), from: input, outcome: &outcome)
        windowOffset += position
        bytes = window
        position = 0
        windowGeneration &+= 1
        switch outcome {
        case .end: inputEnded = true
        case .wouldWait:
            if followEnded {
                inputEnded = true
            } else if bytes.count < count {
                isWaiting = true
            }
        case .failed(let error): readFailure = error
        case .data: break
        }
        return bytes.count
    }

    /// Set when a followed file was deleted: its current end is then its end.
    var followEnded = false

    /// A new window of `capacity` octets at most: `kept`, then what `input` gives without
    /// waiting. `outcome` is the last read's (`.data` when the window filled up).
    static func window(
        keeping kept: ArraySlice<UInt8>, capacity: Int, from input: CaptureInput, outcome: inout CaptureInput.ReadOutcome
    ) -> [UInt8] {
        var last = CaptureInput.ReadOutcome.data(0)
        let window = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            kept.withUnsafeBufferPointer { old in
                if let source = old.baseAddress, old.count > 0 { buffer.baseAddress!.initialize(from: source, count: old.count) }
            }
            initialized = kept.count
            while initialized < capacity {
                last = input.read(into: buffer.baseAddress! + initialized, count: capacity - initialized)
                guard case .data(let count) = last else { break }
                initialized += count
            }
        }
        outcome = last
        // A pipe's few octets do not keep a whole window allocated (records held by a caller
        // keep their window alive).
        if window.count < capacity / 4 { return Array(window) }
        return window
    }

    /// Counts the windows a stream has had: a record's `Header.range` indexes the window of
    /// the generation current when it was returned.
    public private(set) var windowGeneration = 0

    /// The read(2) failure that ended a stream, if one did.
    @usableFromInline var readFailure: Errno? = nil

    /// What a parser does when fewer octets than a record needs are held at `position`: waits
    /// (nil, `isWaiting`), stops at a read failure, or (at the end of the input) reports
    /// `truncation`.
    @usableFromInline
    mutating func shortOfInput(_ truncation: CaptureDamage.Reason) -> CaptureRecord.Header? {
        if isWaiting { return nil }
        if let readFailure {
            return stop(atIndex: position, .inputFailed("reading \(input?.name ?? "the input") failed: \(readFailure)"))
        }
        return stop(atIndex: position, truncation)
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
