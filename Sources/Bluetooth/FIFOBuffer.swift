/// A first-in first-out buffer: appends at the back, takes from a head that moves forward, in
/// amortised O(1) per element.
///
/// What it holds stays bounded by what is queued, not by what has passed through:
/// - taken elements are released once they are half the storage (a consumer that never quite
///   catches up does not keep everything it already took);
/// - storage grown by a burst is given back once the buffer drains (a flood of 100 000
///   notifications does not leave its peak allocation behind for the connection's lifetime).
///   Up to ``retainedCapacity`` elements' worth is kept for the next batch.
public struct FIFOBuffer<Element> {
    /// Storage kept when the buffer drains; more is released.
    public static var retainedCapacity: Int { 256 }

    private var storage: [Element] = []
    /// Index of the first element not yet taken.
    private var head = 0

    public init() {}

    /// Elements queued.
    public var count: Int { storage.count - head }

    public var isEmpty: Bool { head == storage.count }

    /// The queued elements, oldest first.
    public var elements: ArraySlice<Element> { storage[head...] }

    public mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Changes the oldest element in place; nil (and no call) when empty.
    public mutating func updateFirst<Result>(_ body: (inout Element) -> Result) -> Result? {
        guard head < storage.count else { return nil }
        return body(&storage[head])
    }

    /// Takes the oldest element.
    public mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            Self.clear(&storage)
            head = 0
        } else if head >= 16 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Moves every queued element, in order, to the end of `target`. An empty `target` trades
    /// storage with the buffer instead of copying.
    public mutating func moveAll(into target: inout [Element]) {
        if head > 0 {
            storage.removeFirst(head)
            head = 0
        }
        if target.isEmpty {
            swap(&target, &storage)
            Self.clear(&storage)
        } else {
            target.append(contentsOf: storage)
            Self.clear(&storage)
        }
    }

    /// Takes every queued element.
    public mutating func removeAll() -> [Element] {
        var taken: [Element] = []
        moveAll(into: &taken)
        return taken
    }

    /// Empties `array`, keeping its storage only while it is at most ``retainedCapacity``
    /// elements: for batch arrays reused across wake-ups.
    public static func clear(_ array: inout [Element]) {
        array.removeAll(keepingCapacity: array.capacity <= retainedCapacity)
    }
}

extension FIFOBuffer: Sendable where Element: Sendable {}
