import HCI
import Bluetooth
import L2CAP
import ATT

/// Which way a captured packet travelled.
public enum CaptureDirection: UInt8, Hashable, Sendable, CustomStringConvertible {
    /// Host → controller (HCI commands, outgoing ACL/SCO/ISO data).
    case sent
    /// Controller → host (HCI events, incoming ACL/SCO/ISO data).
    case received
    /// The capture format does not record a direction (pcap link type 187, monitor notes).
    case unknown

    public var description: String {
        switch self {
        case .sent: return "sent"
        case .received: return "received"
        case .unknown: return "unknown"
        }
    }
}

/// One record of a capture file: an HCI packet (without its H4 indicator) or a monitor note.
///
/// `bytes` is a slice of the reader's file buffer: records share storage, nothing is copied.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part A, §2 (the H4 indicator that `kind` replaces)
public struct CaptureRecord: Hashable, Sendable {
    /// What the record holds.
    public enum Kind: Hashable, Sendable, CustomStringConvertible {
        /// An HCI packet; `bytes` starts with its HCI header (opcode, event code or handle).
        case packet(HCIPacketType)
        /// A BlueZ monitor record that is not an HCI packet (new index, open index, system
        /// note, user logging, …); `bytes` is its payload.
        case note(MonitorOpcode)
        /// An H4 record whose indicator octet is not an HCI packet type; `bytes` follows it.
        case unknown(indicator: UInt8)
        /// A record with no packet bytes at all (zero included length, or shorter than its
        /// link-layer pseudo-header).
        case empty

        public var description: String {
            switch self {
            case .packet(let type): return type.description
            case .note(let opcode): return opcode.description
            case .unknown(let indicator): return "unknown H4 indicator 0x" + String(indicator, radix: 16).leftPadded(2)
            case .empty: return "empty record"
            }
        }
    }

    /// 1-based position in the file, counting every packet record (like Wireshark's frame
    /// numbers, including packets skipped because their interface has another link type).
    public var number: Int
    /// Microseconds since the Unix epoch (1970-01-01 00:00:00 UTC); 0 for pcapng Simple
    /// Packet Blocks, which carry no timestamp. See `CaptureTime` for conversions.
    public var timestamp: Int64
    public var direction: CaptureDirection
    public var kind: Kind
    /// The packet without H4 indicator or pseudo-header (for notes: the payload).
    public var bytes: ArraySlice<UInt8>
    /// BlueZ controller index (monitor captures); 0 for formats without one.
    public var controllerIndex: UInt16
    /// Length of the packet as it was on the wire, in the same units as `bytes.count`
    /// (indicator and pseudo-header excluded). Larger than `bytes.count` when truncated.
    public var originalLength: Int

    public init(
        number: Int, timestamp: Int64, direction: CaptureDirection, kind: Kind,
        bytes: ArraySlice<UInt8>, controllerIndex: UInt16 = 0, originalLength: Int? = nil
    ) {
        self.number = number
        self.timestamp = timestamp
        self.direction = direction
        self.kind = kind
        self.bytes = bytes
        self.controllerIndex = controllerIndex
        self.originalLength = originalLength ?? bytes.count
    }

    /// A record from its header and the file it lies in (`file[header.range]` are its bytes).
    @inlinable
    public init(_ header: Header, in file: [UInt8]) {
        self.init(
            number: header.number, timestamp: header.timestamp, direction: header.direction, kind: header.kind,
            bytes: file[header.range], controllerIndex: header.controllerIndex, originalLength: header.originalLength)
    }

    /// The record's facts, its bytes given by their indices (`bytes.indices`).
    @inlinable
    public var header: Header {
        Header(
            number: number, timestamp: timestamp, direction: direction, kind: kind, range: bytes.indices,
            controllerIndex: controllerIndex, originalLength: originalLength)
    }

    /// The HCI packet type, or nil for notes, unknown indicators and empty records.
    @inlinable
    public var packetType: HCIPacketType? {
        if case .packet(let type) = kind { return type }
        return nil
    }

    /// True when the capture kept fewer bytes than the packet had (snap length).
    @inlinable
    public var isTruncated: Bool { bytes.count < originalLength }
}

extension CaptureRecord {
    /// A record's facts and where its packet lies in the file buffer, without the slice: what
    /// `CaptureReader.nextHeader()` returns, so that a reader walking the file buffer itself
    /// (as `dump --summary` counting does) costs no reference counting per record.
    public struct Header: Hashable, Sendable {
        public var number: Int
        public var timestamp: Int64
        public var direction: CaptureDirection
        public var kind: Kind
        /// The indices of the record's `bytes` in the reader's file buffer.
        public var range: Range<Int>
        public var controllerIndex: UInt16
        public var originalLength: Int

        @inlinable
        public init(
            number: Int, timestamp: Int64, direction: CaptureDirection, kind: Kind, range: Range<Int>,
            controllerIndex: UInt16 = 0, originalLength: Int? = nil
        ) {
            self.number = number
            self.timestamp = timestamp
            self.direction = direction
            self.kind = kind
            self.range = range
            self.controllerIndex = controllerIndex
            self.originalLength = originalLength ?? range.count
        }

        /// The HCI packet type, or nil for notes, unknown indicators and empty records.
        @inlinable
        public var packetType: HCIPacketType? {
            if case .packet(let type) = kind { return type }
            return nil
        }
    }
}
