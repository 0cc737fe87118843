import HCI
import Bluetooth
import L2CAP
import ATT

/// One pcapng interface (Interface Description Block) of the current section.
/// - SeeAlso: draft-ietf-opsawg-pcapng §4.2
struct PcapNGInterface: Sendable {
    enum Scale: Sendable {
        case multiply(UInt64)
        case divide(UInt64)
        /// Ticks of 2^-n seconds.
        case binary(UInt8)
    }

    var linkType: PcapLinkType
    var snapLength: UInt32
    var scale: Scale = .multiply(1)
    /// if_tsoffset: seconds added to every timestamp.
    var offsetSeconds: Int64 = 0

    /// Sets the scale from an if_tsresol octet: bit 7 clear, 10^-n seconds; set, 2^-n.
    mutating func setResolution(_ octet: UInt8) {
        let exponent = octet & 0x7F
        if octet & 0x80 != 0 {
            scale = .binary(exponent)
        } else if exponent <= 6 {
            var factor: UInt64 = 1
            for _ in 0..<(6 - exponent) { factor *= 10 }
            scale = .multiply(factor)
        } else if exponent - 6 <= 19 {
            var divisor: UInt64 = 1
            for _ in 0..<(exponent - 6) { divisor *= 10 }
            scale = .divide(divisor)
        } else {
            scale = .divide(0)
        }
    }

    /// Unix microseconds from a timestamp in this interface's ticks (wrapping on absurd values).
    func microseconds(_ ticks: UInt64) -> Int64 {
        let micro: UInt64
        switch scale {
        case .multiply(let factor): micro = ticks &* factor
        case .divide(let divisor): micro = divisor == 0 ? 0 : ticks / divisor
        case .binary(let shift): micro = UInt64(truncatingIfNeeded: (UInt128(ticks) * 1_000_000) >> shift)
        }
        return Int64(bitPattern: micro) &+ offsetSeconds &* 1_000_000
    }
}

/// A block a streaming reader skips through its windows (larger than it holds).
struct PcapNGSkip: Sendable {
    /// File offset of the block.
    var blockStart: Int
    var total: Int
    var bigEndian: Bool
    /// Octets before the trailer still to skip; -1 once skipped.
    var remaining: Int
}

/// The state of the pcapng section being read.
struct PcapNGSection: Sendable {
    var bigEndian = false
    var interfaces: [PcapNGInterface] = []
    var sawSupportedInterface = false
    var firstUnsupportedLinkType: PcapLinkType?
}

/// pcapng blocks: type, total length, body, total length again, all in the section's byte
/// order. Sections (SHB) set the byte order and reset the interfaces; IDBs declare link types
/// and timestamp resolutions; EPB, SPB and the obsolete Packet Block carry packets; every
/// other block is skipped.
/// - SeeAlso: draft-ietf-opsawg-pcapng §3.1 (block layout), §4 (block types)
extension CaptureReader {
    static let pcapngSectionHeader: UInt32 = 0x0A0D_0D0A
    static let pcapngInterfaceDescription: UInt32 = 1
    static let pcapngObsoletePacket: UInt32 = 2
    static let pcapngSimplePacket: UInt32 = 3
    static let pcapngEnhancedPacket: UInt32 = 6

    @usableFromInline
    mutating func nextPcapNG() -> CaptureRecord.Header? {
        while true {
            if pcapngSkip != nil {
                guard skipBlock() else { return isFinished ? nil : shortOfInput(.truncatedHeader(needed: 0, available: 0)) }
                continue
            }
            var available = fill(12)
            if available == 0 && inputEnded {
                // A stream whose first 16 MiB did not show whether it carries HCI: at its end,
                // what opening a whole file with no HCI interface says.
                if input != nil, !section.sawSupportedInterface, let linkType = section.firstUnsupportedLinkType {
                    return stop(atIndex: position, .inputFailed(HCIError.unsupportedMessage(linkType: linkType)))
                }
                return end()
            }
            guard available >= 12 else { return shortOfInput(.truncatedHeader(needed: 12, available: available)) }
            var start = position
            // The section header's type reads the same in both byte orders.
            let type = bytes.captureUInt32(at: start, bigEndian: section.bigEndian)
            if type == Self.pcapngSectionHeader {
                switch bytes.captureUInt32(at: start + 8, bigEndian: true) {
                case 0x1A2B_3C4D: section.bigEndian = true
                case 0x4D3C_2B1A: section.bigEndian = false
                case let magic:
                    return stop(
                        atIndex: start,
                        .invalidBlock("section header block has byte-order magic 0x\(String(magic, radix: 16))"))
                }
            }
            let bigEndian = section.bigEndian
            let total = Int(bytes.captureUInt32(at: start + 4, bigEndian: bigEndian))
            guard total >= 12, total % 4 == 0 else {
                return stop(atIndex: start, .invalidBlock("block total length \(total) is not a multiple of 4 of at least 12"))
            }
            if total > available {
                // A stream holds a block whole in its window, up to a bound; a larger block of a
                // type it does not use is skipped through the windows (its trailer checked).
                if input != nil && total > Self.largestHeldBlock {
                    let used = [
                        Self.pcapngSectionHeader, Self.pcapngInterfaceDescription, Self.pcapngEnhancedPacket,
                        Self.pcapngSimplePacket, Self.pcapngObsoletePacket,
                    ]
                    guard !used.contains(type) else {
                        return stop(
                            atIndex: start,
                            .lengthTooLarge(field: "block total length", value: total, maximum: Self.largestHeldBlock))
                    }
                    pcapngSkip = PcapNGSkip(
                        blockStart: windowOffset + start, total: total, bigEndian: bigEndian, remaining: total - 4)
                    continue
                }
                available = fill(total)
                start = position
                guard total <= available else { return shortOfInput(.truncatedData(needed: total, available: available)) }
            }
            let trailer = Int(bytes.captureUInt32(at: start + total - 4, bigEndian: bigEndian))
            guard trailer == total else {
                return stop(atIndex: start, .invalidBlock("block trailing length \(trailer) differs from its total length \(total)"))
            }
            let bodyEnd = start + total - 4
            switch type {
            case Self.pcapngSectionHeader:
                guard total >= 28 else { return stop(atIndex: start, .invalidBlock("section header block of \(total) octets")) }
                let major = bytes.captureUInt16(at: start + 12, bigEndian: bigEndian)
                guard major == 1 else {
                    let minor = bytes.captureUInt16(at: start + 14, bigEndian: bigEndian)
                    return stop(atIndex: start, .invalidBlock("pcapng version \(major).\(minor) is not supported (expected 1.x)"))
                }
                section.interfaces.removeAll()
            case Self.pcapngInterfaceDescription:
                guard total >= 20 else { return stop(atIndex: start, .invalidBlock("interface description block of \(total) octets")) }
                var interface = PcapNGInterface(
                    linkType: PcapLinkType(rawValue: UInt32(bytes.captureUInt16(at: start + 8, bigEndian: bigEndian))),
                    snapLength: bytes.captureUInt32(at: start + 12, bigEndian: bigEndian))
                if let problem = readInterfaceOptions(into: &interface, from: start + 16, to: bodyEnd, bigEndian: bigEndian) {
                    return stop(atIndex: start, .invalidBlock(problem))
                }
                if interface.linkType.isSupported {
                    section.sawSupportedInterface = true
                } else if section.firstUnsupportedLinkType == nil {
                    section.firstUnsupportedLinkType = interface.linkType
                }
                section.interfaces.append(interface)
            case Self.pcapngEnhancedPacket, Self.pcapngObsoletePacket:
                guard total >= 32 else { return stop(atIndex: start, .invalidBlock("packet block of \(total) octets")) }
                let interfaceID: Int
                if type == Self.pcapngEnhancedPacket {
                    interfaceID = Int(bytes.captureUInt32(at: start + 8, bigEndian: bigEndian))
                } else {
                    interfaceID = Int(bytes.captureUInt16(at: start + 8, bigEndian: bigEndian))
                }
                let high = UInt64(bytes.captureUInt32(at: start + 12, bigEndian: bigEndian))
                let low = UInt64(bytes.captureUInt32(at: start + 16, bigEndian: bigEndian))
                let captured = Int(bytes.captureUInt32(at: start + 20, bigEndian: bigEndian))
                let original = Int(bytes.captureUInt32(at: start + 24, bigEndian: bigEndian))
                guard captured <= bodyEnd - (start + 28) else {
                    return stop(atIndex: start, .invalidBlock("captured length \(captured) overruns its \(total)-octet block"))
                }
                if let record = packet(
                    interfaceID: interfaceID, ticks: high << 32 | low, start: start + 28, captured: captured,
                    original: original, blockStart: start, blockEnd: start + total)
                {
                    return record
                }
                if isFinished { return nil }
                continue
            case Self.pcapngSimplePacket:
                guard total >= 16 else { return stop(atIndex: start, .invalidBlock("simple packet block of \(total) octets")) }
                guard let interface = section.interfaces.first else {
                    return stop(atIndex: start, .invalidBlock("simple packet block before any interface description"))
                }
                let original = Int(bytes.captureUInt32(at: start + 8, bigEndian: bigEndian))
                var captured = Swift.min(original, bodyEnd - (start + 12))
                if interface.snapLength != 0 { captured = Swift.min(captured, Int(interface.snapLength)) }
                if let record = packet(
                    interfaceID: 0, ticks: nil, start: start + 12, captured: captured, original: original,
                    blockStart: start, blockEnd: start + total)
                {
                    return record
                }
                if isFinished { return nil }
                continue
            default:
                break
            }
            position = start + total
        }
    }

    /// Goes on skipping `pcapngSkip`'s block; true when it was skipped whole and its trailer
    /// matched (false: waiting, or stopped at damage).
    mutating func skipBlock() -> Bool {
        guard var skip = pcapngSkip else { return true }
        defer { pcapngSkip = skip.remaining < 0 ? nil : skip }
        while skip.remaining > 0 {
            var available = bytes.count - position
            if available == 0 {
                available = fill(Swift.min(skip.remaining, windowCapacity))
                if available == 0 {
                    if inputEnded && readFailure == nil {
                        let seen = skip.total - 4 - skip.remaining
                        _ = stop(at: skip.blockStart, .truncatedData(needed: skip.total, available: seen))
                    } else if readFailure != nil {
                        _ = shortOfInput(.truncatedHeader(needed: 0, available: 0))
                    }
                    return false
                }
            }
            let step = Swift.min(available, skip.remaining)
            position += step
            skip.remaining -= step
        }
        let available = fill(4)
        guard available >= 4 else {
            if inputEnded && readFailure == nil {
                _ = stop(at: skip.blockStart, .truncatedData(needed: skip.total, available: skip.total - 4 + available))
            } else if readFailure != nil {
                _ = shortOfInput(.truncatedHeader(needed: 0, available: 0))
            }
            return false
        }
        let trailer = Int(bytes.captureUInt32(at: position, bigEndian: skip.bigEndian))
        guard trailer == skip.total else {
            _ = stop(at: skip.blockStart, .invalidBlock("block trailing length \(trailer) differs from its total length \(skip.total)"))
            return false
        }
        position += 4
        skip.remaining = -1
        return true
    }

    /// Validates and consumes one packet block; nil when it was skipped or damaged.
    private mutating func packet(
        interfaceID: Int, ticks: UInt64?, start: Int, captured: Int, original: Int, blockStart: Int, blockEnd: Int
    ) -> CaptureRecord.Header? {
        guard interfaceID < section.interfaces.count else {
            return stop(
                atIndex: blockStart,
                .invalidBlock("packet on interface \(interfaceID), but the section describes \(section.interfaces.count)"))
        }
        let interface = section.interfaces[interfaceID]
        guard captured <= original else {
            return stop(atIndex: blockStart, .includedExceedsOriginal(included: captured, original: original))
        }
        position = blockEnd
        recordsRead += 1
        guard interface.linkType.isSupported else {
            skippedCount += 1
            return nil
        }
        guard captured <= Self.pcapMaximumCapturedLength else {
            recordsRead -= 1
            return stop(
                atIndex: blockStart,
                .lengthTooLarge(field: "captured length", value: captured, maximum: Self.pcapMaximumCapturedLength))
        }
        // A Simple Packet Block has no timestamp.
        let timestamp = ticks.map { interface.microseconds($0) } ?? 0
        return linkLayerRecord(
            linkType: interface.linkType, number: recordCount, timestamp: timestamp, start: start,
            end: start + captured, original: original)
    }

    /// Reads if_tsresol (9) and if_tsoffset (14); returns what is wrong with the options.
    private func readInterfaceOptions(
        into interface: inout PcapNGInterface, from start: Int, to end: Int, bigEndian: Bool
    ) -> String? {
        var position = start
        while end - position >= 4 {
            let code = bytes.captureUInt16(at: position, bigEndian: bigEndian)
            let length = Int(bytes.captureUInt16(at: position + 2, bigEndian: bigEndian))
            let value = position + 4
            let padded = (length + 3) & ~3
            guard padded <= end - value else {
                return "interface option \(code) of \(length) octets overruns its block"
            }
            switch code {
            case 0:
                return nil  // opt_endofopt
            case 9:
                guard length == 1 else { return "if_tsresol option of \(length) octets (expected 1)" }
                interface.setResolution(bytes[value])
            case 14:
                guard length == 8 else { return "if_tsoffset option of \(length) octets (expected 8)" }
                interface.offsetSeconds = Int64(bitPattern: bytes.captureUInt64(at: value, bigEndian: bigEndian))
            default:
                break
            }
            position = value + padded
        }
        return nil
    }
}
