import Bluetooth
import Testing

@Suite("FIFOBuffer: order, released elements, storage after a burst")
struct FIFOBufferTests {
    /// Counts live instances, to see when the buffer lets go of taken elements.
    final class Tracked {
        let value: Int
        let onDeinit: () -> Void
        init(_ value: Int, onDeinit: @escaping () -> Void) {
            self.value = value
            self.onDeinit = onDeinit
        }
        deinit { onDeinit() }
    }

    @Test func elementsComeOutInTheOrderTheyWentIn() {
        var buffer = FIFOBuffer<Int>()
        #expect(buffer.isEmpty && buffer.popFirst() == nil)
        var taken: [Int] = []
        var next = 0
        // Interleaved appends and takes across several compactions and drains.
        for round in 0..<50 {
            for _ in 0..<(round * 7 % 40 + 1) {
                buffer.append(next)
                next += 1
            }
            for _ in 0..<(round * 5 % 30) {
                if let value = buffer.popFirst() { taken.append(value) }
            }
            #expect(buffer.count == next - taken.count)
            #expect(Array(buffer.elements) == Array(taken.count..<next))
        }
        while let value = buffer.popFirst() { taken.append(value) }
        #expect(taken == Array(0..<next))
        #expect(buffer.isEmpty && buffer.count == 0)
    }

    @Test func updateFirstChangesTheOldestInPlace() {
        var buffer = FIFOBuffer<Int>()
        #expect(buffer.updateFirst { $0 += 1 } == nil)
        buffer.append(10)
        buffer.append(20)
        #expect(buffer.updateFirst { value -> Int in
            value += 5
            return value
        } == 15)
        #expect(buffer.popFirst() == 15)
        #expect(buffer.popFirst() == 20)
    }

    @Test func moveAllAppendsInOrderOrTradesStorage() {
        var buffer = FIFOBuffer<Int>()
        for value in 0..<40 { buffer.append(value) }
        for _ in 0..<20 { _ = buffer.popFirst() }
        var target = [-1]
        buffer.moveAll(into: &target)
        #expect(target == [-1] + Array(20..<40))
        #expect(buffer.isEmpty)
        for value in 0..<5 { buffer.append(value) }
        var empty: [Int] = []
        buffer.moveAll(into: &empty)
        #expect(empty == Array(0..<5))
        buffer.append(7)
        #expect(buffer.removeAll() == [7])
        #expect(buffer.isEmpty)
    }

    @Test func takenElementsAreReleasedWhileTheConsumerLagsBehind() {
        var live = 0
        var buffer = FIFOBuffer<Tracked>()
        // The consumer takes two for every three appended and never drains the buffer: without
        // compaction, all 9 999 elements would stay referenced by the storage.
        for value in 0..<9_999 {
            live += 1
            buffer.append(Tracked(value) { live -= 1 })
            if value % 3 != 0 { _ = buffer.popFirst() }
        }
        #expect(buffer.count == 3_333)
        #expect(live <= 2 * buffer.count, "\(live) instances alive for \(buffer.count) queued")
        #expect(buffer.popFirst()?.value == 6_666)
    }

    @Test func aDrainedBurstGivesItsStorageBack() {
        var buffer = FIFOBuffer<[UInt8]>()
        for value in 0..<100_000 { buffer.append([UInt8(value & 0xFF)]) }
        while buffer.popFirst() != nil {}
        // What is kept for the next batch is small; the burst's 100 000 slots are not.
        var probe: [[UInt8]] = []
        buffer.append([1])
        buffer.moveAll(into: &probe)  // trades storage: probe now has the buffer's array
        #expect(probe.capacity <= FIFOBuffer<[UInt8]>.retainedCapacity)

        var batch = Array(repeating: [UInt8](), count: 10_000)
        FIFOBuffer.clear(&batch)
        #expect(batch.isEmpty && batch.capacity <= FIFOBuffer<[UInt8]>.retainedCapacity)
        var small = Array(repeating: [UInt8](), count: 10)
        let capacity = small.capacity
        FIFOBuffer.clear(&small)
        #expect(small.isEmpty && small.capacity == capacity, "small batch storage is kept for reuse")
    }
}
