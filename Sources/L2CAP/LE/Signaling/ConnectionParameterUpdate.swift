import Bluetooth

/// L2CAP_CONNECTION_PARAMETER_UPDATE_REQ: a Peripheral asks the Central for new connection
/// parameters (the Central applies them with HCI_LE_Connection_Update).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.20
public struct ConnectionParameterUpdateRequest: L2CAPSignalingCommandBody, CustomStringConvertible {
    public static let code = L2CAPSignalingCode.connectionParameterUpdateRequest
    static let context = "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ"

    /// Interval Min in 1.25 ms units (6–3200).
    public var intervalMin: UInt16
    /// Interval Max in 1.25 ms units (6–3200, at least Interval Min).
    public var intervalMax: UInt16
    /// Peripheral Latency in connection events (0–499).
    public var peripheralLatency: UInt16
    /// Timeout Multiplier: the supervision timeout in 10 ms units (10–3200).
    public var timeoutMultiplier: UInt16

    public static let intervalRange: ClosedRange<UInt16> = 0x0006...0x0C80
    public static let peripheralLatencyRange: ClosedRange<UInt16> = 0x0000...0x01F3
    public static let timeoutMultiplierRange: ClosedRange<UInt16> = 0x000A...0x0C80

    public init(intervalMin: UInt16, intervalMax: UInt16, peripheralLatency: UInt16, timeoutMultiplier: UInt16) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.peripheralLatency = peripheralLatency
        self.timeoutMultiplier = timeoutMultiplier
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        intervalMin = try reader.l2capUInt16(c)
        intervalMax = try reader.l2capUInt16(c)
        peripheralLatency = try reader.l2capUInt16(c)
        timeoutMultiplier = try reader.l2capUInt16(c)
        try reader.l2capExpectEnd(c)
    }

    public var encodedLength: Int { 8 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(intervalMin)
        writer.writeUInt16LE(intervalMax)
        writer.writeUInt16LE(peripheralLatency)
        writer.writeUInt16LE(timeoutMultiplier)
    }

    /// Why the parameters cannot be accepted, or `nil` when they are valid: every field in its
    /// range, Interval Min ≤ Interval Max, and the supervision timeout longer than
    /// (1 + Peripheral Latency) × Interval Max × 2 (Vol 6, Part B, §4.5.2), which in these units
    /// is Timeout Multiplier × 4 > (1 + Peripheral Latency) × Interval Max.
    public var invalidity: String? {
        if !Self.intervalRange.contains(intervalMin) { return "Interval Min \(intervalMin) outside 6–3200" }
        if !Self.intervalRange.contains(intervalMax) { return "Interval Max \(intervalMax) outside 6–3200" }
        if intervalMin > intervalMax { return "Interval Min \(intervalMin) above Interval Max \(intervalMax)" }
        if !Self.peripheralLatencyRange.contains(peripheralLatency) {
            return "Peripheral Latency \(peripheralLatency) above 499"
        }
        if !Self.timeoutMultiplierRange.contains(timeoutMultiplier) {
            return "Timeout Multiplier \(timeoutMultiplier) outside 10–3200"
        }
        if UInt32(timeoutMultiplier) * 4 <= (1 + UInt32(peripheralLatency)) * UInt32(intervalMax) {
            return "supervision timeout \(Int(timeoutMultiplier) * 10) ms not above (1 + \(peripheralLatency)) × "
                + "\(Double(intervalMax) * 1.25) ms × 2"
        }
        return nil
    }

    public var isValid: Bool { invalidity == nil }

    public var description: String {
        "Connection Parameter Update Request: interval \(Double(intervalMin) * 1.25)–\(Double(intervalMax) * 1.25) ms, "
            + "latency \(peripheralLatency), timeout \(Int(timeoutMultiplier) * 10) ms"
    }
}

/// L2CAP_CONNECTION_PARAMETER_UPDATE_RSP: the Central's answer.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.21
public struct ConnectionParameterUpdateResponse: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.connectionParameterUpdateResponse
    static let context = "L2CAP_CONNECTION_PARAMETER_UPDATE_RSP"

    public var result: ConnectionParameterUpdateResult

    public init(result: ConnectionParameterUpdateResult) { self.result = result }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        result = ConnectionParameterUpdateResult(rawValue: try reader.l2capUInt16(Self.context))
        try reader.l2capExpectEnd(Self.context)
    }

    public var encodedLength: Int { 2 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(result.rawValue)
    }
}
