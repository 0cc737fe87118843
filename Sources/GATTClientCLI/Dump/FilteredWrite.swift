#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Capture
import ATT
import Bluetooth
import HCI
import L2CAP

/// `dump … -w OUT.btsnoop` (`-w OUT.pcapng`: pcapng; `-w -`: btsnoop on standard output): the
/// records the filters match, written in the order they were read. A record matches when the dump would show it: its packet line (no
/// filter, `--conn`), an advertising report it carries (`--adv-only`), or an ATT PDU it
/// completes (`--att-only`, `--handle`, `--conn`) — then with every ACL fragment that PDU came
/// in, so that the file decodes on its own. `--from`/`--to` bound all of these.
///
/// The datalink follows the input: Linux monitor (btsnoop 2001, pcap/pcapng 254) stays monitor,
/// keeping controller indexes and notes; H4 otherwise (pcapng: H4 with direction, 201). A record
/// waiting for its frame holds a copy of its octets (not the reader's window).
struct FilteredWriteVisitor: CaptureVisitor {
    /// The file format written: btsnoop or pcapng (one of the two is set; each is changed in
    /// place, never copied with its buffer).
    struct Encoder {
        var btsnoop: BTSnoopWriter?
        var pcapng: PcapNGWriter?

        var pendingCount: Int { pcapng?.bytes.count ?? btsnoop?.bytes.count ?? 0 }

        mutating func append(_ record: CaptureRecord) throws(HCIError) {
            if pcapng != nil { try pcapng?.append(record) } else { try btsnoop?.append(record) }
        }

        mutating func takeBytes() -> [UInt8] {
            pcapng?.takeBytes() ?? btsnoop?.takeBytes() ?? []
        }
    }

    private var filter: DumpFilter
    private var encoder: Encoder
    private let descriptor: Int32
    /// Standard output (`-w -`): written, not closed.
    private let ownsDescriptor: Bool
    private let path: String
    private(set) var writtenCount = 0
    /// Fragments given up because their frame stayed incomplete over `heldLimit` records.
    private(set) var givenUpCount = 0
    /// The first record that could not be written, or the first failed write (the file then
    /// ends before it).
    private(set) var failure: HCIError?

    /// Records read but not yet decided or not yet written, in file order: an ACL fragment
    /// waits for the frame it belongs to, and every record behind a waiting one waits too.
    private var held: [Held] = []
    private var heldStart = 0
    /// Sequence numbers (positions in `held` plus `heldBase`) of the waiting fragments of the
    /// L2CAP frame being reassembled, per connection handle and direction.
    private var frames: [UInt32: [Int]] = [:]
    private var heldBase = 0
    /// The record being visited: its sequence number, and the frame key of its ACL fragment.
    private var current: Int?
    private var currentFrame: UInt32?
    private var currentChosen = false

    /// Records that may be held behind a waiting fragment before that fragment is given up (a
    /// frame never completed must not hold every later record in memory).
    static let heldLimit = 4096

    private struct Held {
        var record: CaptureRecord
        var state: State
    }

    private enum State { case waiting, chosen, dropped }

    /// The btsnoop datalink for records of this capture.
    static func datalink(format: CaptureFormat, hciLinkType: PcapLinkType?) -> BTSnoopDatalink {
        switch format {
        case .btsnoop(let link): return link
        case .pcap, .pcapng: return hciLinkType == .bluetoothLinuxMonitor ? .monitor : .h4
        }
    }

    /// Whether `path` names a pcapng file (`.pcapng`, any case).
    static func writesPcapNG(_ path: String) -> Bool { path.lowercased().hasSuffix(".pcapng") }

    /// `path` `-` writes btsnoop to `standardOutput`.
    init(options: DumpOptions, path: String, datalink: BTSnoopDatalink, standardOutput: Int32 = STDOUT_FILENO) throws(HCIError) {
        filter = DumpFilter(options: options)
        if Self.writesPcapNG(path) {
            encoder = Encoder(
                pcapng: try PcapNGWriter(linkType: datalink == .monitor ? .bluetoothLinuxMonitor : .bluetoothHCIH4WithPHDR))
        } else {
            encoder = Encoder(btsnoop: try BTSnoopWriter(datalink: datalink))
        }
        if path == "-" {
            descriptor = standardOutput
            ownsDescriptor = false
            self.path = "standard output"
            return
        }
        // Never truncate the capture being read.
        var input = stat()
        var output = stat()
        if !options.readsStandardInput, stat(options.path, &input) == 0, stat(path, &output) == 0,
            input.st_dev == output.st_dev, input.st_ino == output.st_ino
        {
            throw .captureFile("-w \(path) is the capture being read; write the filtered records to another file")
        }
        let descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .system(operation: "create \(path)", errno: .current) }
        self.descriptor = descriptor
        ownsDescriptor = true
        self.path = path
    }

    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        close()
        filter.enter(record)
        let sequence = heldBase + held.count - heldStart
        held.append(Held(record: record, state: .waiting))
        current = sequence
        currentChosen = filter.shows(packet: packet)
        currentFrame = nil
        // A link that ended ends the frames it had in progress (the decoder drops them).
        if case .event(.disconnectionComplete(let event))? = packet {
            for direction in [CaptureDirection.sent, .received, .unknown] {
                resolveFrame(UInt32(event.connectionHandle) << 8 | UInt32(direction.rawValue), chosen: false)
            }
        }
        if case .acl(let acl)? = packet {
            let key = UInt32(acl.handle) << 8 | UInt32(record.direction.rawValue)
            currentFrame = key
            frames[key, default: []].append(sequence)
        }
    }

    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) {
        if filter.showsAdvertising() { currentChosen = true }
    }

    mutating func visit(att: ATTItem, record: CaptureRecord) {
        let shown = filter.shows(att: att)
        if shown { currentChosen = true }
        resolveFrame(UInt32(att.connectionHandle) << 8 | UInt32(record.direction.rawValue), chosen: shown)
    }

    mutating func visit(l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord) {
        resolveFrame(UInt32(connectionHandle) << 8 | UInt32(direction.rawValue), chosen: false)
    }

    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) {
        let key = UInt32(l2capDrop.handle) << 8 | UInt32(record.direction.rawValue)
        resolveFrame(key, chosen: false)
        // A new first fragment ended the old frame: it begins the next one.
        if case .interruptedByNewStart = l2capDrop.reason, let current {
            frames[key] = [current]
            currentFrame = key
        }
    }

    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {
        resolveFrame(UInt32(connectionHandle) << 8 | UInt32(record.direction.rawValue), chosen: false)
    }

    /// The fragments of a frame that completed: written with it, or dropped.
    private mutating func resolveFrame(_ key: UInt32, chosen: Bool) {
        guard let sequences = frames.removeValue(forKey: key) else { return }
        for sequence in sequences where sequence >= heldBase {
            let index = heldStart + sequence - heldBase
            if sequence == current {
                // The current record is decided when it closes (it may be chosen for itself).
                if !chosen { currentFrame = nil }
                continue
            }
            held[index].state = chosen ? .chosen : .dropped
        }
        if chosen, current != nil { currentChosen = true }
        if sequences.last == current { currentFrame = nil }
    }

    /// Decides the record last visited (its decode is complete), then writes what can be
    /// written: before a wait, so that a follower's file is not a record behind.
    mutating func release() {
        close()
        if failure == nil {
            do {
                try flush()
            } catch {
                failure = error
            }
        }
    }

    /// Decides the current record: chosen, waiting for its frame, or dropped.
    private mutating func close() {
        guard let sequence = current else { return }
        let index = heldStart + sequence - heldBase
        if currentChosen {
            held[index].state = .chosen
        } else if currentFrame != nil {
            held[index].state = .waiting
            // Held past this call: a copy, not a slice keeping the reader's window alive.
            held[index].record.bytes = ArraySlice(Array(held[index].record.bytes))
        } else {
            held[index].state = .dropped
        }
        current = nil
        writeDecided()
    }

    /// Writes (or forgets) the decided records at the head, in order.
    private mutating func writeDecided() {
        while heldStart < held.count {
            let waitingCount = held.count - heldStart
            if held[heldStart].state == .waiting {
                guard waitingCount > Self.heldLimit else { break }
                held[heldStart].state = .dropped
                givenUpCount += 1
            }
            if held[heldStart].state == .chosen { append(held[heldStart].record) }
            heldStart += 1
            heldBase += 1
        }
        // Compact now and then (amortised: the array never holds more than twice what waits).
        if heldStart > 1024, heldStart * 2 > held.count {
            held.removeFirst(heldStart)
            heldStart = 0
        }
        if encoder.pendingCount >= 1 << 20, failure == nil {
            do {
                try flush()
            } catch {
                failure = error
            }
        }
    }

    private mutating func append(_ record: CaptureRecord) {
        guard failure == nil else { return }
        do {
            try encoder.append(record)
            writtenCount += 1
        } catch {
            failure = .captureFile("record \(record.number) cannot be written to \(path): \(error)")
        }
    }

    /// Writes the encoded records to the file.
    mutating func flush() throws(HCIError) {
        let pending = encoder.takeBytes()
        var written = 0
        while written < pending.count {
            do {
                written += try Errno.retryingSyscall {
                    pending.withUnsafeBufferPointer { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
                }
            } catch {
                throw .system(operation: "write \(path)", errno: error)
            }
        }
    }

    /// Decides the last record, drops fragments of frames never completed, writes everything
    /// and closes the file; throws the first record that could not be written.
    mutating func finish() throws(HCIError) {
        close()
        for index in heldStart..<held.count where held[index].state == .waiting { held[index].state = .dropped }
        writeDecided()
        defer { if ownsDescriptor { _ = Glibc.close(descriptor) } }
        if failure == nil { try flush() }
        if let failure { throw failure }
    }
}
