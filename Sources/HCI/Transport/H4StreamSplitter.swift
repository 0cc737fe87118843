/// Splits an H4 byte stream (UART, TCP, unix socket) into packets: indicator, header, then as
/// many octets as the header's length field says. Bytes may arrive in any chunking; a packet is
/// emitted only when whole. An unknown indicator means the stream is out of step and cannot be
/// resynchronised: it is a typed error, and the transport fails.
///
/// Internal to the transports: the same job as the capture module's framer, kept here so the
/// transports do not wait for it.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part A, §2 (UART transport packet indicators) and
///   Vol 4, Part E, §5.4 (HCI packet headers)
struct H4StreamSplitter: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    /// Octets received but not yet part of a whole packet.
    var pendingCount: Int { buffer.count - start }

    /// The header length after the indicator, and where in it the length field sits.
    static func headerLayout(_ type: HCIPacketType) -> (headerLength: Int, lengthOffset: Int, lengthSize: Int) {
        switch type {
        case .command: return (3, 2, 1)
        case .acl: return (4, 2, 2)
        case .sco: return (3, 2, 1)
        case .event: return (2, 1, 1)
        case .iso: return (4, 2, 2)
        }
    }

    /// The body length the header starting at `headerStart` announces (the header must be
    /// present in `bytes`).
    static func declaredBodyLength(_ type: HCIPacketType, in bytes: [UInt8], headerStart: Int) -> Int {
        let layout = headerLayout(type)
        let lengthIndex = headerStart + layout.lengthOffset
        var length = Int(bytes[lengthIndex])
        if layout.lengthSize == 2 { length |= Int(bytes[lengthIndex + 1]) << 8 }
        // ISO_Data_Load_Length is 14 bits; the top two are RFU (Vol 4, Part E, §5.4.5).
        if type == .iso { length &= 0x3FFF }
        return length
    }

    /// Appends received bytes; take the packets out with `nextPacket()`.
    mutating func append<C: Collection<UInt8>>(_ bytes: C) {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole packet, or `nil` until more bytes arrive. Throws
    /// `HCIError.unknownPacketType` at an unknown indicator (every packet before it has been
    /// returned); the stream cannot continue after that.
    mutating func nextPacket() throws(HCIError) -> HCITransportPacket? {
        guard start < buffer.count else { return nil }
        guard let type = HCIPacketType(rawValue: buffer[start]) else {
            throw .unknownPacketType(buffer[start])
        }
        let headerEnd = start + 1 + Self.headerLayout(type).headerLength
        guard buffer.count >= headerEnd else { return nil }
        let end = headerEnd + Self.declaredBodyLength(type, in: buffer, headerStart: start + 1)
        guard buffer.count >= end else { return nil }
        let packet = Array(buffer[(start + 1)..<end])
        start = end
        return (type, packet)
    }

    /// Appends `bytes` and returns every packet now complete, in order.
    mutating func split<C: Collection<UInt8>>(_ bytes: C) throws(HCIError) -> [HCITransportPacket] {
        append(bytes)
        var packets: [HCITransportPacket] = []
        while let packet = try nextPacket() { packets.append(packet) }
        return packets
    }
}
