import Bluetooth
import HCI

/// Host-to-controller ACL data flow control for LE connections, as a sans-I/O state machine.
///
/// The host holds one credit per controller ACL buffer (`ACLBufferSize.packetCount`). Each ACL
/// data packet handed to the controller takes a credit; HCI_Number_Of_Completed_Packets gives
/// them back, and HCI_Disconnection_Complete gives back every credit of that connection.
/// Outgoing L2CAP PDUs wait in a bounded queue per connection and are fragmented lazily, one
/// ACL data packet at a time, taking connections in turn (round robin, one packet each) so one
/// busy connection cannot starve the others. A full queue refuses the PDU with
/// `L2CAPError.queueFull`; nothing is dropped silently.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §4.1.1 and §7.7.19
public struct ACLFlowControl: Sendable {
    /// A Number_Of_Completed_Packets entry (or part of one) that returned no credit.
    public struct IgnoredCompletion: Hashable, Sendable {
        public enum Reason: Hashable, Sendable {
            /// No connection with that handle is known.
            case unknownHandle
            /// More packets reported complete than the connection had in the controller.
            case moreThanInFlight
        }

        public var handle: UInt16
        /// Packets of the entry that were ignored.
        public var count: Int
        public var reason: Reason
    }

    /// What an HCI_Number_Of_Completed_Packets event did.
    public struct Completion: Hashable, Sendable {
        /// Credits given back to the host.
        public var returnedCredits: Int
        /// Entries, or excess counts, that returned nothing.
        public var ignored: [IgnoredCompletion]
    }

    /// What removing a connection (on Disconnection Complete) released and dropped.
    public struct Removal: Hashable, Sendable {
        public var handle: UInt16
        /// Credits of packets the controller held for the connection, now the host's again.
        public var returnedCredits: Int
        /// PDUs still queued, now dropped (a partly sent one included).
        public var droppedFrames: Int
        /// Octets of those PDUs not yet handed to the controller.
        public var droppedOctets: Int
        /// Whether the first dropped PDU had some of its fragments sent already.
        public var partiallySent: Bool
    }

    private struct QueuedFrame: Sendable {
        var bytes: [UInt8]
        /// Octets already handed out as ACL data packets.
        var sent = 0
    }

    private struct Connection: Sendable {
        var handle: UInt16
        var frames = FIFOBuffer<QueuedFrame>()
        /// ACL data packets the controller holds for this connection.
        var inFlight = 0

        var queuedCount: Int { frames.count }
    }

    public let bufferSize: ACLBufferSize
    /// Largest number of PDUs waiting per connection.
    public let maximumQueuedFrames: Int
    /// Credits the host holds: packets it may hand to the controller now.
    public private(set) var availableCredits: Int
    /// Connections in round-robin order.
    private var connections: [Connection] = []
    private var indexByHandle: [UInt16: Int] = [:]
    /// Index in `connections` of the one served next.
    private var cursor = 0
    /// PDUs waiting on every connection.
    private var totalQueued = 0

    public init(bufferSize: ACLBufferSize, maximumQueuedFrames: Int = 64) {
        precondition(maximumQueuedFrames > 0, "a queue must hold at least one frame")
        self.bufferSize = bufferSize
        self.maximumQueuedFrames = maximumQueuedFrames
        self.availableCredits = bufferSize.packetCount
    }

    // MARK: connections

    /// Starts tracking a connection (on LE Connection Complete).
    public mutating func addConnection(handle: UInt16) throws(L2CAPError) {
        guard indexByHandle[handle] == nil else { throw L2CAPError.connectionExists(handle: handle) }
        indexByHandle[handle] = connections.count
        connections.append(Connection(handle: handle))
    }

    /// Forgets a connection (on Disconnection Complete): its credits come back, its queue is
    /// dropped and reported. `nil` when the handle is unknown.
    public mutating func removeConnection(handle: UInt16) -> Removal? {
        guard let index = indexByHandle.removeValue(forKey: handle) else { return nil }
        let connection = connections.remove(at: index)
        for i in index..<connections.count { indexByHandle[connections[i].handle] = i }
        if cursor > index { cursor -= 1 }
        if cursor >= connections.count { cursor = 0 }
        availableCredits += connection.inFlight
        let dropped = connection.frames.elements
        totalQueued -= dropped.count
        return Removal(
            handle: handle, returnedCredits: connection.inFlight, droppedFrames: dropped.count,
            droppedOctets: dropped.reduce(0) { $0 + $1.bytes.count - $1.sent },
            partiallySent: (dropped.first?.sent ?? 0) > 0)
    }

    public func isTracking(handle: UInt16) -> Bool { indexByHandle[handle] != nil }

    /// PDUs waiting on a connection (0 for an unknown handle).
    public func queuedFrames(handle: UInt16) -> Int {
        indexByHandle[handle].map { connections[$0].queuedCount } ?? 0
    }

    /// ACL data packets the controller holds for a connection (0 for an unknown handle).
    public func packetsInFlight(handle: UInt16) -> Int {
        indexByHandle[handle].map { connections[$0].inFlight } ?? 0
    }

    /// Whether a packet could be sent now (a credit and a waiting PDU).
    public var canSend: Bool { availableCredits > 0 && totalQueued > 0 }

    // MARK: sending

    /// Queues one whole L2CAP PDU (header included) for a connection.
    /// - Throws: `.unknownConnection`, `.queueFull`, or `.invalidArgument` for an empty PDU.
    public mutating func enqueue(pdu: [UInt8], handle: UInt16) throws(L2CAPError) {
        guard let index = indexByHandle[handle] else { throw L2CAPError.unknownConnection(handle: handle) }
        guard !pdu.isEmpty else {
            throw L2CAPError.invalidArgument(context: "ACL data", reason: "an L2CAP PDU is never empty")
        }
        guard connections[index].queuedCount < maximumQueuedFrames else {
            throw L2CAPError.queueFull(handle: handle, limit: maximumQueuedFrames)
        }
        connections[index].frames.append(QueuedFrame(bytes: pdu))
        totalQueued += 1
    }

    /// The next ACL data packet to hand to the controller, taking a credit; `nil` when no credit
    /// is left or nothing waits.
    public mutating func dequeue() -> ACLDataPacket? {
        guard availableCredits > 0, totalQueued > 0 else { return nil }
        let count = connections.count
        for step in 0..<count {
            let index = (cursor + step) % count
            guard connections[index].queuedCount > 0 else { continue }
            cursor = (index + 1) % count
            return takePacket(from: index)
        }
        return nil
    }

    /// Every packet the credits allow now, in order, appended to `packets`.
    public mutating func dequeueAll(into packets: inout [ACLDataPacket]) {
        while let packet = dequeue() { packets.append(packet) }
    }

    /// The next fragment of the connection's oldest PDU; nil when none is queued.
    private mutating func takePacket(from index: Int) -> ACLDataPacket? {
        let handle = connections[index].handle
        let maximumDataLength = bufferSize.packetLength
        let next = connections[index].frames.updateFirst { frame in
            let packet = ACLFragmenter.fragment(of: frame.bytes, at: frame.sent, handle: handle, maximumDataLength: maximumDataLength)
            frame.sent += packet.data.count
            return (packet, frame.sent >= frame.bytes.count)
        }
        guard let (packet, finished) = next else { return nil }
        if finished {
            _ = connections[index].frames.popFirst()
            totalQueued -= 1
        }
        connections[index].inFlight += 1
        availableCredits -= 1
        return packet
    }

    // MARK: credits

    /// Applies HCI_Number_Of_Completed_Packets: each entry gives back at most the packets its
    /// connection has in the controller; unknown handles and excess counts are ignored and
    /// reported, so the credits never exceed the controller's buffers.
    public mutating func completed(_ event: NumberOfCompletedPacketsEvent) -> Completion {
        var result = Completion(returnedCredits: 0, ignored: [])
        for entry in event.entries {
            let count = Int(entry.numCompletedPackets)
            guard let index = indexByHandle[entry.connectionHandle] else {
                if count > 0 {
                    result.ignored.append(
                        IgnoredCompletion(handle: entry.connectionHandle, count: count, reason: .unknownHandle))
                }
                continue
            }
            let returned = min(count, connections[index].inFlight)
            connections[index].inFlight -= returned
            availableCredits += returned
            result.returnedCredits += returned
            if returned < count {
                result.ignored.append(
                    IgnoredCompletion(
                        handle: entry.connectionHandle, count: count - returned, reason: .moreThanInFlight))
            }
        }
        return result
    }
}
