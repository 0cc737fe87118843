import Bluetooth
import HCI

/// Encodes a pcapng file into a byte buffer: one Section Header Block, one Interface
/// Description Block, then an Enhanced Packet Block per record. Little-endian, microsecond
/// timestamps (the default `if_tsresol`), no options.
///
/// The interface's link type is LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR (201: a 4-octet direction,
/// network order, 0 sent / 1 received, then the H4 indicator and packet) or, for records of a
/// Linux monitor capture, LINKTYPE_BLUETOOTH_LINUX_MONITOR (254: controller index and opcode,
/// network order, then the payload). What this writes, `CaptureReader` reads back.
/// - SeeAlso: draft-ietf-opsawg-pcapng §4.1 (SHB), §4.2 (IDB), §4.3 (EPB); tcpdump.org link types
public struct PcapNGWriter: Sendable {
    /// Encoded octets not yet taken.
    public private(set) var bytes: [UInt8]
    /// Records appended so far.
    public private(set) var recordCount = 0
    /// The interface's link type.
    public let linkType: PcapLinkType

    /// Starts a file whose interface has `linkType` (`.bluetoothHCIH4WithPHDR` or
    /// `.bluetoothLinuxMonitor`).
    public init(linkType: PcapLinkType = .bluetoothHCIH4WithPHDR) throws(HCIError) {
        guard linkType == .bluetoothHCIH4WithPHDR || linkType == .bluetoothLinuxMonitor else {
            throw .captureFile("pcapng is written with link type 201 (H4 with direction) or 254 (Linux monitor), not \(linkType)")
        }
        self.linkType = linkType
        var writer = ByteWriter(capacity: 48)
        // Section Header Block: byte-order magic, version 1.0, section length unknown (-1).
        writer.writeUInt32LE(0x0A0D_0D0A)
        writer.writeUInt32LE(28)
        writer.writeUInt32LE(0x1A2B_3C4D)
        writer.writeUInt16LE(1)
        writer.writeUInt16LE(0)
        writer.writeUInt64LE(UInt64.max)
        writer.writeUInt32LE(28)
        // Interface Description Block: link type, reserved, snap length 0 (no limit).
        writer.writeUInt32LE(1)
        writer.writeUInt32LE(20)
        writer.writeUInt16LE(UInt16(linkType.rawValue))
        writer.writeUInt16LE(0)
        writer.writeUInt32LE(0)
        writer.writeUInt32LE(20)
        bytes = writer.bytes
    }

    /// Appends a record read from any capture (an H4 packet, an unknown-indicator or empty
    /// record on link type 201; a packet or note on 254).
    public mutating func append(_ record: CaptureRecord) throws(HCIError) {
        var header = ByteWriter(capacity: 5)
        let pseudoOriginal: Int
        if linkType == .bluetoothLinuxMonitor {
            let opcode: MonitorOpcode
            switch record.kind {
            case .packet(let type):
                guard let packetOpcode = MonitorOpcode(packet: type, direction: record.direction) else {
                    throw .captureFile("a Linux monitor record cannot hold a \(type) packet with direction \(record.direction)")
                }
                opcode = packetOpcode
            case .note(let note): opcode = note
            case .unknown, .empty: throw .captureFile("a Linux monitor record cannot hold \(record.kind)")
            }
            header.writeUInt16BE(record.controllerIndex)
            header.writeUInt16BE(opcode.rawValue)
            pseudoOriginal = 4
        } else {
            let received: Bool
            switch (record.direction, record.kind) {
            case (.sent, _): received = false
            case (.received, _): received = true
            case (.unknown, .packet(.command)): received = false
            case (.unknown, .packet(.event)): received = true
            default: throw .captureFile("link type 201 needs a direction for \(record.kind)")
            }
            header.writeUInt32BE(received ? 1 : 0)
            switch record.kind {
            case .packet(let type):
                header.writeUInt8(type.rawValue)
                pseudoOriginal = 5
            case .unknown(let indicator):
                header.writeUInt8(indicator)
                pseudoOriginal = 5
            case .empty:
                pseudoOriginal = 4
            case .note(let note):
                throw .captureFile("link type 201 (H4) cannot hold a monitor note (\(note)); the capture's notes need 254")
            }
        }
        guard record.timestamp >= 0 else { throw .captureFile("record \(record.number) is timed before 1970") }
        let captured = header.bytes.count + record.bytes.count
        let original = max(record.originalLength + pseudoOriginal, captured)
        guard original <= Int(UInt32.max) - 64 else { throw .captureFile("record \(record.number) is too long for pcapng") }
        let padding = (4 - captured % 4) % 4
        let total = UInt32(32 + captured + padding)
        var writer = ByteWriter()
        swap(&writer.bytes, &bytes)
        writer.writeUInt32LE(6)
        writer.writeUInt32LE(total)
        writer.writeUInt32LE(0)  // interface 0
        let time = UInt64(record.timestamp)
        writer.writeUInt32LE(UInt32(truncatingIfNeeded: time >> 32))
        writer.writeUInt32LE(UInt32(truncatingIfNeeded: time))
        writer.writeUInt32LE(UInt32(captured))
        writer.writeUInt32LE(UInt32(original))
        writer.writeBytes(header.bytes)
        writer.writeBytes(record.bytes)
        for _ in 0..<padding { writer.writeUInt8(0) }
        writer.writeUInt32LE(total)
        swap(&writer.bytes, &bytes)
        recordCount += 1
    }

    /// Returns the encoded octets and empties the buffer.
    public mutating func takeBytes() -> [UInt8] {
        defer { bytes.removeAll(keepingCapacity: true) }
        return bytes
    }
}
