import Bluetooth
import HCI

@testable import L2CAP

/// A buffer size the tests can rely on.
func leBufferSize(length: Int = 27, count: Int) -> ACLBufferSize {
    do { return try ACLBufferSize(packetLength: length, packetCount: count) } catch {
        preconditionFailure("test buffer size rejected: \(error)")
    }
}

/// An encoded B-frame on `cid` carrying `payload`.
func leFrame(cid: UInt16, _ payload: [UInt8]) -> [UInt8] {
    L2CAPBasicFrame(channelID: cid, payload: payload[...]).encode()
}

/// A single-fragment ACL data packet from the controller (PB 0b10) carrying one whole B-frame.
func leIncoming(handle: UInt16, cid: UInt16, _ payload: [UInt8]) -> ACLDataPacket {
    ACLDataPacket(handle: handle, packetBoundary: .firstFlushable, data: leFrame(cid: cid, payload))
}

func leCompleted(_ entries: (UInt16, UInt16)...) -> NumberOfCompletedPacketsEvent {
    NumberOfCompletedPacketsEvent(entries: entries.map { .init(connectionHandle: $0.0, numCompletedPackets: $0.1) })
}
