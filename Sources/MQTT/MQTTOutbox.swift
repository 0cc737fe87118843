import Bluetooth

/// One message for the broker.
public struct MQTTMessage: Hashable, Sendable {
    /// What the outbox may drop first when it is full: advertisements (the next report says the
    /// same), never a value or a state without counting it.
    public enum Kind: Hashable, Sendable {
        case advertisement
        case value
        case state
    }

    public var topic: String
    public var payload: [UInt8]
    public var qos: Int
    public var retain: Bool
    public var kind: Kind

    public init(topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = false, kind: Kind = .value) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.kind = kind
    }
}

/// The messages waiting for the broker, bounded (sans I/O). In arrival order; when full, the
/// oldest advertisement makes room, and only when none waits the oldest value or state does
/// (counted: `droppedValues`). Messages the client could not hand over go back to the front.
public struct MQTTOutbox: Sendable {
    public let capacity: Int
    private var advertisements = FIFOBuffer<(sequence: UInt64, message: MQTTMessage)>()
    private var others = FIFOBuffer<(sequence: UInt64, message: MQTTMessage)>()
    /// Returned by the client (not accepted by libmosquitto): sent before anything else.
    private var returned: [MQTTMessage] = []
    private var sequence: UInt64 = 0
    public private(set) var droppedAdvertisements = 0
    public private(set) var droppedValues = 0

    /// `capacity`: at least 1.
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    public var count: Int { advertisements.count + others.count + returned.count }
    public var isEmpty: Bool { count == 0 }

    /// Adds `message`; returns what had to go to make room (nil: nothing).
    @discardableResult
    public mutating func enqueue(_ message: MQTTMessage) -> MQTTMessage? {
        var dropped: MQTTMessage?
        if count >= capacity {
            if let oldest = advertisements.popFirst() {
                droppedAdvertisements += 1
                dropped = oldest.message
            } else if message.kind == .advertisement {
                // Full of values and states: the new advertisement is the one that goes.
                droppedAdvertisements += 1
                return message
            } else if let oldest = others.popFirst() {
                droppedValues += 1
                dropped = oldest.message
            } else if !returned.isEmpty {
                droppedValues += 1
                dropped = returned.removeFirst()
            }
        }
        sequence += 1
        if message.kind == .advertisement {
            advertisements.append((sequence, message))
        } else {
            others.append((sequence, message))
        }
        return dropped
    }

    /// The next message to send, oldest first.
    public mutating func dequeue() -> MQTTMessage? {
        if !returned.isEmpty { return returned.removeFirst() }
        switch (advertisements.elements.first?.sequence, others.elements.first?.sequence) {
        case (let a?, let o?): return a < o ? advertisements.popFirst()?.message : others.popFirst()?.message
        case (.some, nil): return advertisements.popFirst()?.message
        case (nil, .some): return others.popFirst()?.message
        case (nil, nil): return nil
        }
    }

    /// `message` was taken but not sent: it goes first again.
    public mutating func putBack(_ message: MQTTMessage) {
        returned.append(message)
    }
}
