import MQTT
import Testing

/// The gateway's bounded queue (sans I/O): arrival order, advertisements dropped first, values
/// and states only when nothing else can go, and counted.
@Suite struct MQTTOutboxTests {
    static func message(_ name: String, _ kind: MQTTMessage.Kind) -> MQTTMessage {
        MQTTMessage(topic: name, payload: Array(name.utf8), kind: kind)
    }

    @Test func messagesLeaveInArrivalOrderWhateverTheirKind() {
        var outbox = MQTTOutbox(capacity: 10)
        for (name, kind) in [("a1", MQTTMessage.Kind.advertisement), ("v1", .value), ("s1", .state), ("a2", .advertisement), ("v2", .value)] {
            #expect(outbox.enqueue(Self.message(name, kind)) == nil)
        }
        var order: [String] = []
        while let next = outbox.dequeue() { order.append(next.topic) }
        #expect(order == ["a1", "v1", "s1", "a2", "v2"])
        #expect(outbox.isEmpty && outbox.droppedAdvertisements == 0 && outbox.droppedValues == 0)
    }

    @Test func whenFullTheOldestAdvertisementGoesFirstThenTheOldestValueCounted() {
        var outbox = MQTTOutbox(capacity: 3)
        outbox.enqueue(Self.message("a1", .advertisement))
        outbox.enqueue(Self.message("v1", .value))
        outbox.enqueue(Self.message("a2", .advertisement))
        #expect(outbox.enqueue(Self.message("v2", .value))?.topic == "a1")
        #expect(outbox.enqueue(Self.message("s1", .state))?.topic == "a2")
        #expect(outbox.droppedAdvertisements == 2 && outbox.droppedValues == 0)
        // Only values and states wait: a new advertisement is the one that goes.
        #expect(outbox.enqueue(Self.message("a3", .advertisement))?.topic == "a3")
        #expect(outbox.droppedAdvertisements == 3 && outbox.count == 3)
        // A value makes room by dropping the oldest value (counted).
        #expect(outbox.enqueue(Self.message("v3", .value))?.topic == "v1")
        #expect(outbox.droppedValues == 1)
        var order: [String] = []
        while let next = outbox.dequeue() { order.append(next.topic) }
        #expect(order == ["v2", "s1", "v3"])
    }

    @Test func aMessageNotTakenGoesFirstAgain() {
        var outbox = MQTTOutbox(capacity: 4)
        outbox.enqueue(Self.message("v1", .value))
        outbox.enqueue(Self.message("v2", .value))
        let first = outbox.dequeue()
        #expect(first?.topic == "v1")
        outbox.putBack(first!)
        #expect(outbox.count == 2)
        #expect(outbox.dequeue()?.topic == "v1" && outbox.dequeue()?.topic == "v2" && outbox.dequeue() == nil)
    }

    @Test func aCapacityBelowOneIsOne() {
        var outbox = MQTTOutbox(capacity: 0)
        #expect(outbox.capacity == 1)
        outbox.enqueue(Self.message("v1", .value))
        #expect(outbox.enqueue(Self.message("v2", .value))?.topic == "v1")
    }
}
