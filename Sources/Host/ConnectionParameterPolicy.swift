import HCI
import L2CAP

/// Whether a peer's requested connection parameters are acceptable to the host: the ranges of
/// the HCI and L2CAP parameter fields and the link-layer rule that the supervision timeout
/// exceed twice the effective connection interval.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.6 and §7.8.31; Vol 6, Part B, §4.5.2
public enum ConnectionParameterPolicy {
    public static let intervalRange: ClosedRange<UInt16> = 0x0006...0x0C80
    public static let latencyRange: ClosedRange<UInt16> = 0x0000...0x01F3
    public static let timeoutRange: ClosedRange<UInt16> = 0x000A...0x0C80

    /// Why the request is refused, or nil when it is acceptable.
    public static func invalidity(
        intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, timeout: UInt16
    ) -> String? {
        // In milliseconds, as people give them (the fields count 1.25 ms and 10 ms units).
        func ms(_ units: UInt16, _ step: Double) -> String {
            let value = Double(units) * step
            return value == value.rounded() ? String(Int(value)) : String(value)
        }
        guard intervalRange.contains(intervalMin), intervalRange.contains(intervalMax) else {
            let given = intervalMin == intervalMax ? ms(intervalMin, 1.25) : "\(ms(intervalMin, 1.25))–\(ms(intervalMax, 1.25))"
            return "interval \(given) ms outside 7.5–4000 ms"
        }
        guard intervalMin <= intervalMax else {
            return "interval minimum \(ms(intervalMin, 1.25)) ms over the maximum \(ms(intervalMax, 1.25)) ms"
        }
        guard latencyRange.contains(latency) else { return "latency \(latency) over 499" }
        guard timeoutRange.contains(timeout) else { return "supervision timeout \(ms(timeout, 10)) ms outside 100–32000 ms" }
        // Timeout (10 ms units) > (1 + latency) × interval max (1.25 ms units) × 2, in 0.25 ms units.
        let timeoutQuarterMs = Int(timeout) * 40
        let needed = (1 + Int(latency)) * Int(intervalMax) * 5 * 2
        guard timeoutQuarterMs > needed else {
            let interval = Double(intervalMax) * 1.25
            let text = interval == interval.rounded() ? String(Int(interval)) : String(interval)
            return "supervision timeout \(Int(timeout) * 10) ms must exceed 2 × (1 + latency \(latency)) × interval "
                + "\(text) ms = \(Double(needed) / 4) ms"
        }
        return nil
    }

    /// The LE Remote Connection Parameter Request event's parameters checked.
    public static func invalidity(_ request: LERemoteConnectionParameterRequestEvent) -> String? {
        invalidity(
            intervalMin: request.intervalMin, intervalMax: request.intervalMax, latency: request.maxLatency,
            timeout: request.timeout)
    }

    /// Connection parameters the host would send, checked.
    public static func invalidity(_ parameters: LEConnectionParameters) -> String? {
        invalidity(
            intervalMin: parameters.connectionIntervalMin, intervalMax: parameters.connectionIntervalMax,
            latency: parameters.maxLatency, timeout: parameters.supervisionTimeout)
    }

    /// `parameters` for a central with `links` connections (the new one counted): the interval
    /// at least `perLink` per link (1.25 ms steps, at most 4 s), so the connection events of every
    /// link fit in one interval; the maximum raised to the minimum when below it, and the
    /// supervision timeout raised (10 ms steps, at most 32 s) where it would no longer exceed
    /// twice the effective interval. Nothing changes while the links fit the parameters.
    /// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §4.5.1, §4.5.2
    public static func scaled(
        _ parameters: LEConnectionParameters, links: Int, perLink: Duration
    ) -> LEConnectionParameters {
        guard links > 1, perLink > .zero else { return parameters }
        let perLinkMicroseconds = perLink.components.seconds * 1_000_000 + perLink.components.attoseconds / 1_000_000_000_000
        let needed = (Int64(links) * perLinkMicroseconds + 1249) / 1250  // 1.25 ms units, rounded up
        let minimum = UInt16(min(Int64(intervalRange.upperBound), max(Int64(parameters.connectionIntervalMin), needed)))
        var scaled = parameters
        scaled.connectionIntervalMin = minimum
        scaled.connectionIntervalMax = max(parameters.connectionIntervalMax, minimum)
        // Timeout (10 ms) > 2 × (1 + latency) × interval max (1.25 ms): in 0.25 ms units.
        let neededTimeout = (2 * (1 + Int(scaled.maxLatency)) * Int(scaled.connectionIntervalMax) * 5) / 40 + 1
        if Int(scaled.supervisionTimeout) < neededTimeout {
            scaled.supervisionTimeout = UInt16(min(Int(timeoutRange.upperBound), neededTimeout))
        }
        return scaled
    }
}
