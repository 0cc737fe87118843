import Bluetooth
import HCI
import L2CAP

/// Wraps ATT SDUs in synthetic HCI ACL packets (one L2CAP B-frame each) on a fixed connection
/// handle, so traffic that never crossed our HCI (the kernel's L2CAP socket) can be written
/// to an H4 btsnoop file that `gattclient dump`, replay and Wireshark read. Also the
/// synthetic LE Connection Complete and Disconnection Complete events that frame such a
/// recording. Pure: returns packet bytes (without H4 indicator), writes nothing.
///
/// One ACL packet carries a whole B-frame (Data_Total_Length allows 65535 octets); only a
/// frame longer than that is split, into continuation fragments.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.2 (ACL data packets); Vol 3, Part A, §3.1
///   (B-frames)
public struct ATTCaptureFramer: Hashable, Sendable {
    /// The largest B-frame payload: the L2CAP Length field is 16 bits.
    public static let maximumSDUSize = Int(UInt16.max)

    public var connectionHandle: UInt16
    public var channelID: UInt16
    /// The largest ACL Data_Total_Length used before a frame is fragmented.
    public var maximumACLDataLength: Int

    public init(connectionHandle: UInt16 = 0x0001, channelID: UInt16 = 0x0004, maximumACLDataLength: Int = 65_535) {
        self.connectionHandle = connectionHandle
        self.channelID = channelID
        self.maximumACLDataLength = max(1, min(maximumACLDataLength, 65_535))
    }

    /// The ACL packets carrying `sdu` in `direction` (`.sent`: host → controller, first
    /// fragment flagged non-flushable as hosts send on LE; `.received`: controller → host,
    /// flagged flushable as LE controllers deliver). Throws for an SDU over 65535 octets or a
    /// handle over 0x0EFF.
    public func aclPackets(_ sdu: [UInt8], direction: CaptureDirection) throws(HCIError) -> [[UInt8]] {
        guard sdu.count <= Self.maximumSDUSize else {
            throw .invalidArgument(
                context: "ATT capture framing", reason: "an SDU of \(sdu.count) octets exceeds the L2CAP limit of 65535"
            )
        }
        let frame = L2CAPBasicFrame(channelID: channelID, payload: sdu[...]).encode()
        var packets: [[UInt8]] = []
        var offset = 0
        repeat {
            let end = min(offset + maximumACLDataLength, frame.count)
            let boundary: ACLPacketBoundaryFlag =
                offset > 0 ? .continuingFragment : direction == .received ? .firstFlushable : .firstNonFlushable
            let packet = ACLDataPacket(
                handle: connectionHandle, packetBoundary: boundary, data: Array(frame[offset..<end]))
            var writer = ByteWriter(capacity: packet.encodedLength)
            try packet.write(to: &writer)
            packets.append(writer.bytes)
            offset = end
        } while offset < frame.count
        return packets
    }

    /// An HCI_LE_Connection_Complete event (status success) for the recorded connection, with
    /// plausible parameters (30 ms interval, no latency, 2 s supervision timeout).
    public func connectionComplete(
        peerAddress: BluetoothAddress, peerAddressType: LEAddressType, role: LERole = .central
    ) throws(HCIError) -> [UInt8] {
        let event = LEConnectionCompleteEvent(
            status: .success, connectionHandle: connectionHandle, role: role, peerAddressType: peerAddressType,
            peerAddress: peerAddress, connectionInterval: 0x0018, peripheralLatency: 0, supervisionTimeout: 0x00C8,
            centralClockAccuracy: 0)
        return try HCIEvent.leMeta(.connectionComplete(event)).encoded()
    }

    /// An HCI_Disconnection_Complete event (status success) for the recorded connection.
    public func disconnectionComplete(reason: HCIStatus = .connectionTerminatedByLocalHost) throws(HCIError) -> [UInt8]
    {
        let event = DisconnectionCompleteEvent(status: .success, connectionHandle: connectionHandle, reason: reason)
        return try HCIEvent.disconnectionComplete(event).encoded()
    }
}
