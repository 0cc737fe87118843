/// Splits an H4 byte stream (TCP, unix socket, UART) into HCI packets. Sans-I/O: feed what
/// the transport read with `append(_:)`, then call `nextPacket()` until it returns nil
/// ("incomplete: need more bytes").
///
/// Buffering is bounded by the HCI header formats: a packet is returned as soon as its
/// header's length field is satisfied, so a driver that drains after every read holds at
/// most one partial packet (≤ 1 + 4 + 65535 octets) plus its last read. Consumed bytes are
/// skipped with an index and compacted occasionally, so byte-by-byte input costs O(1) per byte.
///
/// An unknown packet indicator means the stream lost framing: there is no way to find the
/// next packet boundary, so the framer becomes unusable. `nextPacket()` throws
/// `HCIError.unknownPacketType` from then on (until `reset()`); the transport should close.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part A, §2
public struct H4Framer: Sendable {
    private var buffer: [UInt8] = []
    /// Index of the first unconsumed octet of `buffer`.
    private var start = 0
    /// Set once the stream lost framing.
    public private(set) var failure: HCIError?

    public init() {}

    /// Octets received but not yet returned as packets.
    public var bufferedCount: Int { buffer.count - start }

    /// Octets held, consumed prefix included (for tests of the compaction).
    var storageCount: Int { buffer.count }

    /// True after an unknown indicator: the stream cannot be framed any more.
    public var isFailed: Bool { failure != nil }

    /// Adds bytes read from the stream (ignored once the framer has failed).
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard failure == nil else { return }
        // Compact when the consumed prefix is at least as large as what is left, so each
        // octet is moved a bounded number of times.
        if start > 0, start >= buffer.count - start {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete packet (type and HCI packet without indicator), or nil when the
    /// buffered bytes do not yet hold one.
    public mutating func nextPacket() throws(HCIError) -> (HCIPacketType, [UInt8])? {
        if let failure { throw failure }
        let available = buffer.count - start
        guard available > 0 else { return nil }
        guard let type = HCIPacketType(rawValue: buffer[start]) else {
            let error = HCIError.unknownPacketType(buffer[start])
            failure = error
            throw error
        }
        let headerLength = H4.headerLength(of: type)
        guard available >= 1 + headerLength else { return nil }
        let header = start + 1
        let payloadLength: Int
        switch type {
        case .command, .sco: payloadLength = Int(buffer[header + 2])
        case .event: payloadLength = Int(buffer[header + 1])
        case .acl: payloadLength = Int(buffer[header + 2]) | Int(buffer[header + 3]) << 8
        // ISO_Data_Load_Length is 14 bits; the top two bits are RFU.
        case .iso: payloadLength = (Int(buffer[header + 2]) | Int(buffer[header + 3]) << 8) & 0x3FFF
        }
        let packetLength = headerLength + payloadLength
        guard available >= 1 + packetLength else { return nil }
        let packet = Array(buffer[header..<(header + packetLength)])
        start = header + packetLength
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 17)
            start = 0
        }
        return (type, packet)
    }

    /// Discards everything buffered and clears a failure (after the transport resynchronised,
    /// e.g. a controller reset on a fresh connection).
    public mutating func reset() {
        buffer.removeAll()
        start = 0
        failure = nil
    }
}
