import Bluetooth
import ATT

/// The ATT bearer's channel on the fixed ATT CID (0x0004) of an LE connection whose L2CAP runs in
/// user space (`UserSpaceL2CAP`). Made by `UserSpaceL2CAP.connectionOpened(handle:role:)`.
///
/// `send` queues the SDU for the controller at once (it returns when the PDU is queued, not when
/// it is on air) and throws `L2CAPError.queueFull` when the connection's queue is full.
/// `incoming` yields the peer's ATT PDUs in order; it finishes on `close()`, and throws
/// `L2CAPError.disconnected` (with the HCI Disconnection reason) when the link drops,
/// `L2CAPError.transportClosed` when the transport goes. `receiveAll(into:)` takes every PDU
/// already received at once, with the same ending (one reader: use one or the other).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §2.1 and Part F, §3.2.11
public final class UserSpaceATTChannel: ATTBatchReceivingChannel {
    /// The LE connection handle.
    public let handle: UInt16
    public let incoming: AsyncThrowingStream<[UInt8], Error>
    private let id: UInt64
    private let queue: ATTSDUQueue
    private let status: UserSpaceL2CAP.ChannelStatus
    private let host: UserSpaceL2CAP

    init(
        handle: UInt16, id: UInt64, queue: ATTSDUQueue, status: UserSpaceL2CAP.ChannelStatus, host: UserSpaceL2CAP
    ) {
        self.handle = handle
        self.id = id
        self.queue = queue
        self.incoming = AsyncThrowingStream { try await queue.next() }
        self.status = status
        self.host = host
    }

    /// Why the channel can no longer send, once it cannot.
    public var closedError: L2CAPError? { status.error }

    /// The fixed ATT channel has no L2CAP MTU of its own: only ATT_MTU limits.
    public var maximumSDUSize: Int? { nil }

    /// Moves every received PDU not yet taken, in order, to the end of `sdus`, suspending only
    /// while none is buffered. Returns false once the channel has finished; throws as
    /// `incoming` does.
    public func receiveAll(into sdus: inout [[UInt8]]) async throws -> Bool {
        try await queue.receiveAll(into: &sdus)
    }

    /// Queues one ATT PDU. When the link's queue is full (a burst of Write Commands, which ATT
    /// itself never paces), waits — event-driven, as the controller completes packets — until
    /// the link's data has gone, then queues it: back-pressure, not a failure.
    /// - Throws: `L2CAPError` — `.queueFull` when nothing drained within the ATT transaction
    ///   timeout (30 s), `.channelClosed` after `close()`, `.disconnected` or `.transportClosed`
    ///   once the link is gone, `.invalidArgument` for an empty SDU.
    public func send(_ sdu: [UInt8]) async throws {
        do {
            try host.send(sdu, handle: handle, id: id, status: status)
        } catch .queueFull {
            await host.waitUntilSent(handle: handle, timeout: .seconds(30), clock: sendClock)
            try host.send(sdu, handle: handle, id: id, status: status)
        }
    }

    /// The clock that bounds waiting for room in the link's queue.
    private let sendClock: any BluetoothClock = SystemClock()

    /// Typed-throwing form of `send(_:)`, without suspension.
    public func sendNow(_ sdu: [UInt8]) throws(L2CAPError) {
        try host.send(sdu, handle: handle, id: id, status: status)
    }

    /// Closes the channel: `incoming` finishes, later sends fail, and the driver is asked to
    /// disconnect the link (HCI_Disconnect, Remote User Terminated Connection).
    public func close() async {
        host.close(handle: handle, id: id)
    }
}
