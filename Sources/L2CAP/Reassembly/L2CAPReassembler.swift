import Bluetooth

/// Rebuilds L2CAP B-frames from the fragments of ACL data packets, per connection handle.
///
/// Sans-I/O: feed each ACL packet's handle, Packet_Boundary_Flag and data; get back the
/// completed frame, if any, and a report for any partial frame that had to be dropped. A broken
/// fragment sequence drops that frame only; the connection goes on.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.2 (Packet_Boundary_Flag) and Vol 3, Part A, §7.2
public struct L2CAPReassembler: Sendable {
    /// Why a partial frame, or a fragment, was discarded.
    public enum DropReason: Hashable, Sendable, CustomStringConvertible {
        /// A continuing fragment arrived with no frame started on that handle.
        case continuationWithoutStart
        /// A new first fragment arrived before the previous frame was complete.
        case interruptedByNewStart(received: Int, expected: Int)
        /// A fragment carried more octets than the frame's Length field announced.
        case overrun(received: Int, expected: Int)
        /// The Length field exceeds the configured bound.
        case tooLong(length: Int, limit: Int)
        /// More handles had partial frames than the configured bound.
        case tooManyPartialFrames(limit: Int)
        /// A Packet_Boundary_Flag value LE does not use (0b11).
        case invalidBoundaryFlag(UInt8)

        public var description: String {
            switch self {
            case .continuationWithoutStart: return "continuing fragment without a start"
            case .interruptedByNewStart(let received, let expected):
                return "frame interrupted by a new start after \(received) of \(expected) octets"
            case .overrun(let received, let expected): return "fragments carry \(received) octets, Length says \(expected)"
            case .tooLong(let length, let limit): return "L2CAP Length \(length) exceeds the limit \(limit)"
            case .tooManyPartialFrames(let limit): return "more than \(limit) connections with partial frames"
            case .invalidBoundaryFlag(let flag): return "Packet_Boundary_Flag 0b\(String(flag, radix: 2)) is not used on LE"
            }
        }
    }

    public struct Drop: Hashable, Sendable {
        public var handle: UInt16
        public var reason: DropReason
    }

    /// What one fragment produced: at most one dropped partial frame and at most one frame.
    public struct Output: Hashable, Sendable {
        public var frame: L2CAPBasicFrame?
        public var drop: Drop?
    }

    private struct Partial: Sendable {
        var handle: UInt16
        var bytes: [UInt8]
        /// Header + payload length once the 4-octet header has arrived.
        var expected: Int?
    }

    /// Largest L2CAP payload accepted (Length field value).
    public let maximumLength: Int
    /// Largest number of connection handles with an incomplete frame at once.
    public let maximumPartialFrames: Int
    /// The incomplete frames, at most one per handle, in no order. A handful at once (one per
    /// connection with a frame in flight, at most `maximumPartialFrames`): a linear search
    /// costs less than hashing the handle, and a fragment is appended in place.
    private var partials: [Partial] = []

    public init(maximumLength: Int = 65_535, maximumPartialFrames: Int = 64) {
        self.maximumLength = maximumLength
        self.maximumPartialFrames = maximumPartialFrames
    }

    /// Number of handles with an incomplete frame.
    public var partialFrameCount: Int { partials.count }

    /// Feeds one ACL packet. `packetBoundary` is the 2-bit Packet_Boundary_Flag: 0b00 or 0b10
    /// start a frame (host→controller non-flushable / controller→host first), 0b01 continues.
    public mutating func receive(handle: UInt16, packetBoundary: UInt8, data: ArraySlice<UInt8>) -> Output {
        switch packetBoundary & 0b11 {
        case 0b00, 0b10:
            var drop: Drop?
            if let index = index(of: handle) {
                let previous = remove(at: index)
                drop = Drop(handle: handle, reason: .interruptedByNewStart(
                    received: previous.bytes.count, expected: previous.expected ?? 4))
            }
            var expected: Int?
            if data.count >= 4 {
                let length = Int(data[data.startIndex]) | Int(data[data.startIndex + 1]) << 8
                let channel = UInt16(data[data.startIndex + 2]) | UInt16(data[data.startIndex + 3]) << 8
                if length > maximumLength {
                    return Output(frame: nil, drop: drop ?? Drop(handle: handle, reason: .tooLong(length: length, limit: maximumLength)))
                }
                // Fast path: the whole frame in one fragment, returned without copying.
                if data.count == 4 + length {
                    return Output(frame: L2CAPBasicFrame(channelID: channel, payload: data.dropFirst(4)), drop: drop)
                }
                if data.count > 4 + length {
                    return Output(frame: nil, drop: drop ?? Drop(handle: handle, reason: .overrun(received: data.count - 4, expected: length)))
                }
                expected = 4 + length
            }
            guard partials.count < maximumPartialFrames else {
                return Output(frame: nil, drop: drop ?? Drop(handle: handle, reason: .tooManyPartialFrames(limit: maximumPartialFrames)))
            }
            // The whole frame's room at once when its length is known (one allocation).
            var bytes: [UInt8] = []
            bytes.reserveCapacity(expected ?? data.count)
            bytes.append(contentsOf: data)
            partials.append(Partial(handle: handle, bytes: bytes, expected: expected))
            return Output(frame: nil, drop: drop)
        case 0b01:
            guard let index = index(of: handle) else {
                return Output(frame: nil, drop: Drop(handle: handle, reason: .continuationWithoutStart))
            }
            partials[index].bytes.append(contentsOf: data)
            if partials[index].expected == nil {
                partials[index].expected = Self.expectedLength(partials[index].bytes)
                if let expected = partials[index].expected {
                    if expected - 4 > maximumLength {
                        remove(at: index)
                        return Output(frame: nil, drop: Drop(handle: handle, reason: .tooLong(length: expected - 4, limit: maximumLength)))
                    }
                    partials[index].bytes.reserveCapacity(expected)
                }
            }
            // Incomplete: it stays where it is.
            guard let expected = partials[index].expected, partials[index].bytes.count >= expected else {
                return Output(frame: nil, drop: nil)
            }
            let partial = remove(at: index)
            if partial.bytes.count > expected {
                return Output(frame: nil, drop: Drop(handle: handle, reason: .overrun(received: partial.bytes.count - 4, expected: expected - 4)))
            }
            let channel = UInt16(partial.bytes[2]) | UInt16(partial.bytes[3]) << 8
            return Output(frame: L2CAPBasicFrame(channelID: channel, payload: partial.bytes[4...]), drop: nil)
        default:
            return Output(frame: nil, drop: Drop(handle: handle, reason: .invalidBoundaryFlag(packetBoundary & 0b11)))
        }
    }

    /// Where `handle`'s partial frame is held, if it has one.
    private func index(of handle: UInt16) -> Int? {
        var index = 0
        while index < partials.count {
            if partials[index].handle == handle { return index }
            index += 1
        }
        return nil
    }

    /// Takes the partial frame at `index` out (the last one moves into its place).
    @discardableResult
    private mutating func remove(at index: Int) -> Partial {
        partials.swapAt(index, partials.count - 1)
        return partials.removeLast()
    }

    /// Forgets a connection's partial frame (on disconnection). Returns whether one was pending.
    @discardableResult
    public mutating func reset(handle: UInt16) -> Bool {
        guard let index = index(of: handle) else { return false }
        remove(at: index)
        return true
    }

    private static func expectedLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        return 4 + (Int(bytes[0]) | Int(bytes[1]) << 8)
    }
}
