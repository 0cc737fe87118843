import HCI
import Bluetooth
import L2CAP
import ATT

import Bluetooth

extension CaptureRecord {
    /// Octets of the header the kernel's monitor channel puts before each packet: Opcode,
    /// Controller Index, Length (all little-endian).
    public static let monitorHeaderLength = 6

    /// Parses one datagram read from the kernel HCI monitor channel (`HCI_CHANNEL_MONITOR`):
    /// a 6-octet header (opcode, controller index, length) and the packet or note it announces.
    /// The Length field must match the octets present (a datagram is whole).
    /// - SeeAlso: BlueZ doc/mgmt-api.txt and monitor/ (the monitor channel header)
    public init(monitorDatagram bytes: [UInt8], number: Int, timestamp: Int64) throws(HCIError) {
        var reader = ByteReader(bytes)
        let opcode: MonitorOpcode
        let index: UInt16
        let length: Int
        do {
            opcode = MonitorOpcode(rawValue: try reader.readUInt16LE())
            index = try reader.readUInt16LE()
            length = Int(try reader.readUInt16LE())
        } catch {
            throw HCIError(error, context: "HCI monitor header")
        }
        guard length == reader.remainingCount else {
            throw HCIError.malformed(
                context: "HCI monitor header", reason: .invalidLength(field: "Length", value: length), offset: 4)
        }
        let payload = reader.readRemaining()
        if let packet = opcode.packet {
            self.init(
                number: number, timestamp: timestamp, direction: packet.direction, kind: .packet(packet.type),
                bytes: payload, controllerIndex: index)
        } else {
            self.init(
                number: number, timestamp: timestamp, direction: .unknown, kind: .note(opcode), bytes: payload,
                controllerIndex: index)
        }
    }
}
