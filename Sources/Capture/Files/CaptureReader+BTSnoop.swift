import HCI
import Bluetooth
import L2CAP
import ATT

/// btsnoop records: a 24-octet big-endian header (original length, included length, flags,
/// cumulative drops, timestamp in microseconds since 0 AD) then the included octets.
/// Datalink 1002: flags bit 0 is the direction (1 received), bit 1 command/event vs data, and
/// the data starts with the H4 indicator. Datalink 2001: flags are (index << 16) | opcode.
/// - SeeAlso: BlueZ doc/btsnoop.rst; RFC 1761 §3 (record format)
extension CaptureReader {
    @usableFromInline static let btsnoopRecordHeaderLength = 24

    @usableFromInline
    mutating func nextBTSnoop(monitor: Bool) -> CaptureRecord.Header? {
        let headerLength = Self.btsnoopRecordHeaderLength
        var available = fill(headerLength)
        if available == 0 && inputEnded { return end() }
        guard available >= headerLength else {
            return shortOfInput(.truncatedHeader(needed: headerLength, available: available))
        }
        var start = position
        // One bounds-checked access for the whole 24-octet header (checked just above).
        let (original, included, flags, rawTimestamp) = bytes.withUnsafeBytes { raw in
            (
                Int(UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: start, as: UInt32.self))),
                Int(UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self))),
                UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: start + 8, as: UInt32.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: start + 16, as: UInt64.self))
            )
        }
        guard included <= Self.btsnoopMaximumIncludedLength else {
            return stop(
                atIndex: start,
                .lengthTooLarge(field: "included length", value: included, maximum: Self.btsnoopMaximumIncludedLength))
        }
        if included > available - headerLength {
            available = fill(headerLength + included)
            start = position
            guard included <= available - headerLength else {
                return shortOfInput(.truncatedData(needed: included, available: available - headerLength))
            }
        }
        guard included <= original else {
            return stop(atIndex: start, .includedExceedsOriginal(included: included, original: original))
        }
        let dataStart = start + headerLength
        let dataEnd = dataStart + included
        position = dataEnd
        recordsRead += 1
        let timestamp = CaptureTime.unixMicroseconds(btsnoop: rawTimestamp)
        if monitor {
            return monitorRecord(
                number: recordCount, timestamp: timestamp,
                opcode: MonitorOpcode(rawValue: UInt16(truncatingIfNeeded: flags)),
                index: UInt16(truncatingIfNeeded: flags >> 16),
                start: dataStart, end: dataEnd, original: original)
        }
        return h4Record(
            number: recordCount, timestamp: timestamp, direction: flags & 1 == 0 ? .sent : .received,
            start: dataStart, end: dataEnd, original: original)
    }

    /// The next record of an H4 btsnoop when all of it is in `window` (this reader's `bytes`)
    /// and it is not empty: the header `nextBTSnoop(monitor: false)` returns for it, read with
    /// no refill and no damage path. nil when that is not so (at the end of the window, at a
    /// length `nextBTSnoop` refuses, on other formats): `nextHeader()` then reads on as usual.
    /// For the counting loop, which calls it per record.
    @inlinable
    mutating func nextWholeH4Record(in window: UnsafeRawBufferPointer) -> CaptureRecord.Header? {
        let headerLength = Self.btsnoopRecordHeaderLength
        let start = position
        guard mode == .btsnoopH4, !isFinished, window.count - start >= headerLength else { return nil }
        let original = Int(UInt32(bigEndian: window.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
        let included = Int(UInt32(bigEndian: window.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self)))
        let dataStart = start + headerLength
        guard included > 0, included <= original, included <= Self.btsnoopMaximumIncludedLength,
              included <= window.count - dataStart
        else { return nil }
        let flags = window.load(fromByteOffset: start + 11, as: UInt8.self)
        let raw = UInt64(bigEndian: window.loadUnaligned(fromByteOffset: start + 16, as: UInt64.self))
        let indicator = window.load(fromByteOffset: dataStart, as: UInt8.self)
        let dataEnd = dataStart + included
        position = dataEnd
        recordsRead += 1
        let kind: CaptureRecord.Kind
        if let type = HCIPacketType(rawValue: indicator) { kind = .packet(type) } else { kind = .unknown(indicator: indicator) }
        return CaptureRecord.Header(
            number: recordCount, timestamp: CaptureTime.unixMicroseconds(btsnoop: raw),
            direction: flags & 1 == 0 ? .sent : .received, kind: kind,
            range: (dataStart + 1)..<dataEnd, originalLength: original - 1)
    }
}

/// Classic pcap records: a 16-octet header in the file's byte order (seconds, microseconds or
/// nanoseconds, captured length, original length) then the captured octets.
/// - SeeAlso: draft-ietf-opsawg-pcap §5 (Packet Record)
extension CaptureReader {
    @usableFromInline
    mutating func nextPcap() -> CaptureRecord.Header? {
        var available = fill(16)
        if available == 0 && inputEnded { return end() }
        guard available >= 16 else { return shortOfInput(.truncatedHeader(needed: 16, available: available)) }
        var start = position
        let bigEndian = pcapBigEndian
        let seconds = bytes.captureUInt32(at: start, bigEndian: bigEndian)
        let fraction = bytes.captureUInt32(at: start + 4, bigEndian: bigEndian)
        let captured = Int(bytes.captureUInt32(at: start + 8, bigEndian: bigEndian))
        let original = Int(bytes.captureUInt32(at: start + 12, bigEndian: bigEndian))
        guard captured <= Self.pcapMaximumCapturedLength else {
            return stop(
                atIndex: start,
                .lengthTooLarge(field: "captured length", value: captured, maximum: Self.pcapMaximumCapturedLength))
        }
        if captured > available - 16 {
            available = fill(16 + captured)
            start = position
            guard captured <= available - 16 else {
                return shortOfInput(.truncatedData(needed: captured, available: available - 16))
            }
        }
        guard captured <= original else {
            return stop(atIndex: start, .includedExceedsOriginal(included: captured, original: original))
        }
        position = start + 16 + captured
        recordsRead += 1
        let micro = pcapNanosecond ? Int64(fraction / 1000) : Int64(fraction)
        let timestamp = Int64(seconds) * 1_000_000 &+ micro
        return linkLayerRecord(
            linkType: pcapLinkType, number: recordCount, timestamp: timestamp,
            start: start + 16, end: position, original: original)
    }

    /// Decodes the link-layer header of a pcap/pcapng packet of a supported link type.
    func linkLayerRecord(
        linkType: PcapLinkType, number: Int, timestamp: Int64, start: Int, end: Int, original: Int
    ) -> CaptureRecord.Header {
        switch linkType {
        case .bluetoothHCIH4:
            return h4Record(
                number: number, timestamp: timestamp, direction: .unknown, start: start, end: end, original: original)
        case .bluetoothLinuxMonitor:
            guard end - start >= 4 else { return emptyRecord(number: number, timestamp: timestamp, at: end, original: original - 4) }
            return monitorRecord(
                number: number, timestamp: timestamp,
                opcode: MonitorOpcode(rawValue: bytes.captureUInt16(at: start + 2, bigEndian: true)),
                index: bytes.captureUInt16(at: start, bigEndian: true),
                start: start + 4, end: end, original: original - 4)
        default:  // .bluetoothHCIH4WithPHDR: the only other supported type
            guard end - start >= 4 else { return emptyRecord(number: number, timestamp: timestamp, at: end, original: original - 5) }
            let phdr = bytes.captureUInt32(at: start, bigEndian: true)
            return h4Record(
                number: number, timestamp: timestamp, direction: phdr & 1 == 0 ? .sent : .received,
                start: start + 4, end: end, original: original - 4)
        }
    }

    private func emptyRecord(number: Int, timestamp: Int64, at end: Int, original: Int) -> CaptureRecord.Header {
        CaptureRecord.Header(
            number: number, timestamp: timestamp, direction: .unknown, kind: .empty, range: end..<end,
            originalLength: Swift.max(original, 0))
    }
}
