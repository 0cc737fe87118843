/// What a Central accepts when its peer asks for new connection parameters (the L2CAP
/// Connection Parameter Update Request, or the link layer's Connection Parameters Request seen as
/// LE Remote Connection Parameter Request): never anything invalid (the ranges and the
/// supervision-timeout rule of Vol 6, Part B, §4.5.2), and beyond that the limits set here.
/// A request whose interval range overlaps `intervals` is accepted and narrowed to the overlap;
/// one outside them, with a larger latency or a supervision timeout outside `supervisionTimeouts`,
/// is refused.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.20, §4.21; Vol 4, Part E, §7.8.31, §7.8.32
public struct ConnectionParameterRequestPolicy: Hashable, Sendable, CustomStringConvertible {
    /// False: every request is refused.
    public var accepts: Bool
    /// Connection intervals allowed, in 1.25 ms units.
    public var intervals: ClosedRange<UInt16>
    /// The largest peripheral latency allowed.
    public var maximumLatency: UInt16
    /// Supervision timeouts allowed, in 10 ms units.
    public var supervisionTimeouts: ClosedRange<UInt16>

    public init(
        accepts: Bool = true, intervals: ClosedRange<UInt16> = ConnectionParameterUpdateRequest.intervalRange,
        maximumLatency: UInt16 = ConnectionParameterUpdateRequest.peripheralLatencyRange.upperBound,
        supervisionTimeouts: ClosedRange<UInt16> = ConnectionParameterUpdateRequest.timeoutMultiplierRange
    ) {
        self.accepts = accepts
        self.intervals = intervals
        self.maximumLatency = maximumLatency
        self.supervisionTimeouts = supervisionTimeouts
    }

    /// Every valid request accepted (the default).
    public static let acceptValid = ConnectionParameterRequestPolicy()
    /// Every request refused: the link keeps the parameters its Central chose.
    public static let refuseAll = ConnectionParameterRequestPolicy(accepts: false)

    /// The parameters to apply for `request`, or why it is refused.
    public func decide(_ request: ConnectionParameterUpdateRequest) -> Result<ConnectionParameterUpdateRequest, Refusal> {
        if let why = request.invalidity { return .failure(Refusal(reason: why)) }
        guard accepts else { return .failure(Refusal(reason: "this host refuses every parameter request")) }
        let low = max(request.intervalMin, intervals.lowerBound)
        let high = min(request.intervalMax, intervals.upperBound)
        guard low <= high else {
            return .failure(
                Refusal(
                    reason: "interval \(Self.ms(request.intervalMin))–\(Self.ms(request.intervalMax)) ms outside "
                        + "\(Self.ms(intervals.lowerBound))–\(Self.ms(intervals.upperBound)) ms"))
        }
        guard request.peripheralLatency <= maximumLatency else {
            return .failure(Refusal(reason: "latency \(request.peripheralLatency) over \(maximumLatency)"))
        }
        guard supervisionTimeouts.contains(request.timeoutMultiplier) else {
            return .failure(
                Refusal(
                    reason: "supervision timeout \(Int(request.timeoutMultiplier) * 10) ms outside "
                        + "\(Int(supervisionTimeouts.lowerBound) * 10)–\(Int(supervisionTimeouts.upperBound) * 10) ms"))
        }
        var narrowed = request
        narrowed.intervalMin = low
        narrowed.intervalMax = high
        // Narrowing lowers Interval Max, so the timeout rule still holds.
        return .success(narrowed)
    }

    /// Why a request is refused.
    public struct Refusal: Error, Hashable, Sendable {
        public var reason: String
        public init(reason: String) { self.reason = reason }
    }

    static func ms(_ units: UInt16) -> String {
        let value = Double(units) * 1.25
        return value == value.rounded() ? String(Int(value)) : String(value)
    }

    public var description: String {
        guard accepts else { return "refuse every request" }
        return "accept intervals \(Self.ms(intervals.lowerBound))–\(Self.ms(intervals.upperBound)) ms, latency ≤ "
            + "\(maximumLatency), supervision timeout \(Int(supervisionTimeouts.lowerBound) * 10)–"
            + "\(Int(supervisionTimeouts.upperBound) * 10) ms"
    }
}
