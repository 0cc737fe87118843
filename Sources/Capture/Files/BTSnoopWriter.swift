import HCI
import Bluetooth
import L2CAP
import ATT

import Bluetooth

/// Encodes a btsnoop file (datalink 1002 H4 or 2001 Linux monitor) into a byte buffer.
///
/// `bytes` holds the file header and every record appended since the last `takeBytes()`;
/// `BTSnoopFileWriter` drains it to a file descriptor. What this writes, `CaptureReader`
/// reads back exactly.
/// - SeeAlso: BlueZ doc/btsnoop.rst; RFC 1761 §3
public struct BTSnoopWriter: Sendable {
    public let datalink: BTSnoopDatalink
    /// Encoded octets not yet taken.
    public private(set) var bytes: [UInt8]
    /// Records appended so far.
    public private(set) var recordCount = 0

    /// The 16-octet file header: "btsnoop\0", version 1, datalink.
    public static func header(datalink: BTSnoopDatalink) -> [UInt8] {
        var writer = ByteWriter(capacity: 16)
        writer.writeBytes([0x62, 0x74, 0x73, 0x6E, 0x6F, 0x6F, 0x70, 0x00])
        writer.writeUInt32BE(1)
        writer.writeUInt32BE(datalink.rawValue)
        return writer.bytes
    }

    /// Starts a file; `includeHeader: false` continues one whose header is already written.
    public init(datalink: BTSnoopDatalink = .h4, includeHeader: Bool = true) throws(HCIError) {
        guard datalink.isSupported else { throw HCIError.unsupported(datalink: datalink) }
        self.datalink = datalink
        bytes = includeHeader ? Self.header(datalink: datalink) : []
    }

    /// Appends an HCI packet (without H4 indicator).
    ///
    /// `direction` `.unknown` means sent for commands and received for events; data packets
    /// need a direction. The monitor datalink cannot record a received command or a sent
    /// event. `originalLength` (default: the packet's length) marks a truncated record.
    public mutating func append(
        _ type: HCIPacketType, _ packet: some Collection<UInt8>, direction: CaptureDirection, timestamp: Int64,
        controllerIndex: UInt16 = 0, originalLength: Int? = nil
    ) throws(HCIError) {
        let count = packet.count
        let original = originalLength ?? count
        if datalink == .monitor {
            guard let opcode = MonitorOpcode(packet: type, direction: direction) else {
                throw .captureFile("btsnoop monitor datalink cannot record a \(type) packet with direction \(direction)")
            }
            try appendRecord(
                flags: UInt32(controllerIndex) << 16 | UInt32(opcode.rawValue), timestamp: timestamp,
                indicator: nil, payload: packet, count: count, original: original)
            return
        }
        guard controllerIndex == 0 else {
            throw .captureFile("btsnoop H4 datalink has no controller index (got \(controllerIndex))")
        }
        let received: Bool
        switch (direction, type) {
        case (.sent, _): received = false
        case (.received, _): received = true
        case (.unknown, .command): received = false
        case (.unknown, .event): received = true
        case (.unknown, _): throw .captureFile("btsnoop cannot record a \(type) packet without a direction")
        }
        let commandOrEvent = type == .command || type == .event
        let flags: UInt32 = (received ? 1 : 0) | (commandOrEvent ? 2 : 0)
        try appendRecord(
            flags: flags, timestamp: timestamp, indicator: type.rawValue, payload: packet, count: count,
            original: original + 1)
    }

    /// Appends a monitor note (new index, system note, user logging, …): monitor datalink only.
    public mutating func appendNote(
        _ opcode: MonitorOpcode, payload: some Collection<UInt8>, timestamp: Int64, controllerIndex: UInt16 = 0,
        originalLength: Int? = nil
    ) throws(HCIError) {
        guard datalink == .monitor else {
            throw .captureFile("btsnoop datalink \(datalink) cannot record a monitor note (\(opcode))")
        }
        let count = payload.count
        try appendRecord(
            flags: UInt32(controllerIndex) << 16 | UInt32(opcode.rawValue), timestamp: timestamp, indicator: nil,
            payload: payload, count: count, original: originalLength ?? count)
    }

    /// Appends a record read from any capture (its number is not stored: btsnoop numbers by
    /// position). Unknown-indicator and empty records need the H4 datalink.
    public mutating func append(_ record: CaptureRecord) throws(HCIError) {
        switch record.kind {
        case .packet(let type):
            try append(
                type, record.bytes, direction: record.direction, timestamp: record.timestamp,
                controllerIndex: record.controllerIndex, originalLength: record.originalLength)
        case .note(let opcode):
            try appendNote(
                opcode, payload: record.bytes, timestamp: record.timestamp, controllerIndex: record.controllerIndex,
                originalLength: record.originalLength)
        case .unknown(let indicator):
            guard datalink == .h4, record.direction != .unknown else {
                throw .captureFile("btsnoop datalink \(datalink) cannot record \(record.kind)")
            }
            try appendRecord(
                flags: record.direction == .received ? 1 : 0, timestamp: record.timestamp, indicator: indicator,
                payload: record.bytes, count: record.bytes.count, original: record.originalLength + 1)
        case .empty:
            guard datalink == .h4, record.direction != .unknown else {
                throw .captureFile("btsnoop datalink \(datalink) cannot record \(record.kind)")
            }
            try appendRecord(
                flags: record.direction == .received ? 1 : 0, timestamp: record.timestamp, indicator: nil,
                payload: record.bytes, count: 0, original: record.originalLength == 0 ? 0 : record.originalLength + 1)
        }
    }

    /// Returns the encoded octets and empties the buffer.
    public mutating func takeBytes() -> [UInt8] {
        defer { bytes.removeAll(keepingCapacity: true) }
        return bytes
    }

    private mutating func appendRecord(
        flags: UInt32, timestamp: Int64, indicator: UInt8?, payload: some Collection<UInt8>, count: Int, original: Int
    ) throws(HCIError) {
        let included = count + (indicator == nil ? 0 : 1)
        guard included <= CaptureReader.btsnoopMaximumIncludedLength else {
            throw .captureFile(
                "a btsnoop record holds at most \(CaptureReader.btsnoopMaximumIncludedLength) octets, not \(included)")
        }
        guard original >= included, original <= Int(UInt32.max) else {
            throw .captureFile("btsnoop original length \(original) is below the \(included) octets included")
        }
        var writer = ByteWriter()
        swap(&writer.bytes, &bytes)
        writer.writeUInt32BE(UInt32(original))
        writer.writeUInt32BE(UInt32(included))
        writer.writeUInt32BE(flags)
        writer.writeUInt32BE(0)  // cumulative drops
        writer.writeUInt64BE(CaptureTime.btsnoop(unixMicroseconds: timestamp))
        if let indicator { writer.writeUInt8(indicator) }
        writer.writeBytes(payload)
        swap(&writer.bytes, &bytes)
        recordCount += 1
    }
}
