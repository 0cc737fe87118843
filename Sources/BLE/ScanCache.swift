/// The bounds of what an adapter remembers of the devices its scans heard (the devices replayed
/// to a scan that joins later, what each scan was last given of each device, the address type
/// each address was last seen with, the identities private addresses resolved to): at most
/// `maximumDevices` devices in each (the one heard least recently is forgotten when a new one
/// arrives, counted), and a device not heard for `expiry` is forgotten (counted). A forgotten
/// device heard again is new to the scans. Time is the adapter's clock.
public struct ScanCacheLimits: Hashable, Sendable {
    /// The default bound: ``ScanAggregator``'s device table's (a crowded hall of advertisers).
    public static let defaultMaximumDevices = 4096
    /// The default expiry: five minutes without an advertisement.
    public static let defaultExpiry: Duration = .seconds(300)

    /// Devices remembered at most (at least 1).
    public var maximumDevices: Int
    /// A device not heard for this long is forgotten (at least 1 ms).
    public var expiry: Duration

    public init(maximumDevices: Int = defaultMaximumDevices, expiry: Duration = defaultExpiry) {
        self.maximumDevices = max(1, maximumDevices)
        self.expiry = max(.milliseconds(1), expiry)
    }
}

/// What the adapter's scan caches hold and have forgotten (``Adapter/scanCacheStatistics``).
public struct ScanCacheStatistics: Hashable, Sendable {
    /// Devices remembered now (the devices of the current controller scan).
    public var devices = 0
    /// Entries forgotten because a cache was full (every cache counted).
    public var evicted = 0
    /// Entries forgotten because their device was not heard for the expiry.
    public var expired = 0

    public init(devices: Int = 0, evicted: Int = 0, expired: Int = 0) {
        self.devices = devices
        self.evicted = evicted
        self.expired = expired
    }
}

/// A map bounded in size and age, sans-I/O (the caller says what time it is): entries in the
/// order they were last heard (a doubly linked list through an array of slots, reused), so
/// inserting, refreshing, evicting the least recent and expiring the old are O(1) each, and its
/// memory never exceeds `maximumDevices` slots.
package struct ExpiringCache<Key: Hashable, Value> {
    private struct Slot {
        var key: Key
        var value: Value
        var heard: Duration
        /// The next older and the next newer slot (-1: none).
        var older: Int
        var newer: Int
    }

    package private(set) var limits: ScanCacheLimits
    private var index: [Key: Int] = [:]
    private var slots: [Slot?] = []
    private var free: [Int] = []
    /// The least and the most recently heard slots (-1: empty).
    private var oldest = -1
    private var newest = -1
    /// Entries forgotten because the cache was full.
    package private(set) var evicted = 0
    /// Entries forgotten because they were not heard for `limits.expiry`.
    package private(set) var expired = 0

    package init(limits: ScanCacheLimits = ScanCacheLimits()) {
        self.limits = limits
    }

    package var count: Int { index.count }
    /// Slots allocated (live and free): never more than `limits.maximumDevices`.
    package var slotCount: Int { slots.count }
    package var isEmpty: Bool { index.isEmpty }

    /// The value kept for `key` (it does not count as hearing it).
    package subscript(key: Key) -> Value? {
        index[key].flatMap { slots[$0]?.value }
    }

    /// The keys and values, least recently heard first.
    package var entries: [(key: Key, value: Value)] {
        var result: [(key: Key, value: Value)] = []
        result.reserveCapacity(count)
        var at = oldest
        while at >= 0, let slot = slots[at] {
            result.append((slot.key, slot.value))
            at = slot.newer
        }
        return result
    }

    /// Keeps `value` for `key`, heard `now`: the old entries go first (expired), then the least
    /// recently heard one if a new key finds the cache full (evicted).
    package mutating func set(_ key: Key, _ value: Value, now: Duration) {
        expire(now: now)
        if let at = index[key] {
            unlink(at)
            slots[at]?.value = value
            slots[at]?.heard = now
            linkNewest(at)
            return
        }
        if index.count >= limits.maximumDevices, oldest >= 0 {
            remove(at: oldest)
            evicted += 1
        }
        let slot = Slot(key: key, value: value, heard: now, older: -1, newer: -1)
        let at: Int
        if let reused = free.popLast() {
            at = reused
            slots[at] = slot
        } else {
            at = slots.count
            slots.append(slot)
        }
        index[key] = at
        linkNewest(at)
    }

    /// `key` heard `now` (its value unchanged): the old entries go first (expired); false when
    /// `key` is not kept.
    @discardableResult
    package mutating func touch(_ key: Key, now: Duration) -> Bool {
        expire(now: now)
        guard let at = index[key] else { return false }
        unlink(at)
        slots[at]?.heard = now
        linkNewest(at)
        return true
    }

    /// Changes every value in place (their times unchanged).
    package mutating func updateAll(_ body: (Key, inout Value) -> Void) {
        for at in index.values {
            guard var slot = slots[at] else { continue }
            slots[at] = nil
            body(slot.key, &slot.value)
            slots[at] = slot
        }
    }

    /// Forgets what was not heard for `limits.expiry` by `now`.
    package mutating func expire(now: Duration) {
        while oldest >= 0, let slot = slots[oldest], now - slot.heard >= limits.expiry {
            remove(at: oldest)
            expired += 1
        }
    }

    /// New limits: the excess goes at once (least recently heard first, counted as evicted).
    package mutating func setLimits(_ limits: ScanCacheLimits, now: Duration) {
        self.limits = limits
        expire(now: now)
        while index.count > limits.maximumDevices, oldest >= 0 {
            remove(at: oldest)
            evicted += 1
        }
        if index.isEmpty { compact() }
    }

    /// Forgets everything (not counted: nothing was lost to a bound).
    package mutating func removeAll() {
        index = [:]
        slots = []
        free = []
        oldest = -1
        newest = -1
    }

    private mutating func remove(at position: Int) {
        guard let slot = slots[position] else { return }
        unlink(position)
        index.removeValue(forKey: slot.key)
        slots[position] = nil
        free.append(position)
    }

    /// The slot arrays back to nothing once the cache is empty.
    private mutating func compact() {
        slots = []
        free = []
    }

    private mutating func unlink(_ position: Int) {
        guard let slot = slots[position] else { return }
        if slot.older >= 0 { slots[slot.older]?.newer = slot.newer } else { oldest = slot.newer }
        if slot.newer >= 0 { slots[slot.newer]?.older = slot.older } else { newest = slot.older }
        slots[position]?.older = -1
        slots[position]?.newer = -1
    }

    private mutating func linkNewest(_ position: Int) {
        slots[position]?.older = newest
        slots[position]?.newer = -1
        if newest >= 0 { slots[newest]?.newer = position } else { oldest = position }
        newest = position
    }
}
