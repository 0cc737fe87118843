import HCI

/// Splits an L2CAP PDU into HCI ACL data packets of at most the controller's buffer size: the
/// first with Packet_Boundary_Flag 0b00 (first non-automatically-flushable packet, the value a
/// host uses on LE), the rest with 0b01 (continuing fragment).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §7.2 (fragmentation) and Vol 4, Part E, §5.4.2
public enum ACLFragmenter {
    /// Number of ACL data packets a PDU of `pduLength` octets needs (at least one).
    public static func fragmentCount(pduLength: Int, maximumDataLength: Int) -> Int {
        precondition(maximumDataLength > 0, "ACL data packet length must be positive")
        return max(1, (pduLength + maximumDataLength - 1) / maximumDataLength)
    }

    /// The fragment of `pdu` that starts at `offset` (0 for the first).
    public static func fragment(of pdu: [UInt8], at offset: Int, handle: UInt16, maximumDataLength: Int)
        -> ACLDataPacket
    {
        precondition(maximumDataLength > 0, "ACL data packet length must be positive")
        let boundary: ACLPacketBoundaryFlag = offset == 0 ? .firstNonFlushable : .continuingFragment
        if offset == 0 && pdu.count <= maximumDataLength {
            // The common case: the whole PDU in one packet, sharing the array's storage.
            return ACLDataPacket(handle: handle, packetBoundary: boundary, data: pdu)
        }
        let end = min(pdu.count, offset + maximumDataLength)
        return ACLDataPacket(handle: handle, packetBoundary: boundary, data: Array(pdu[offset..<end]))
    }

    /// Every fragment of `pdu`, in order.
    public static func fragments(of pdu: [UInt8], handle: UInt16, maximumDataLength: Int) -> [ACLDataPacket] {
        var packets: [ACLDataPacket] = []
        packets.reserveCapacity(fragmentCount(pduLength: pdu.count, maximumDataLength: maximumDataLength))
        var offset = 0
        repeat {
            let packet = fragment(of: pdu, at: offset, handle: handle, maximumDataLength: maximumDataLength)
            offset += packet.data.count
            packets.append(packet)
        } while offset < pdu.count
        return packets
    }
}
