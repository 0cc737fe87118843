import HCI
import Host

/// A connection's timing: the interval between connection events, how many of them the
/// peripheral may skip, and how long a silent link lives.
/// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §4.5.1, §4.5.2; Vol 4, Part E, §7.7.65.1
public struct ConnectionParameters: Hashable, Sendable, CustomStringConvertible {
    /// connInterval in 1.25 ms units (6…3200: 7.5 ms to 4 s).
    public var intervalUnits: UInt16
    /// connPeripheralLatency: connection events the peripheral may skip (0…499).
    public var peripheralLatency: UInt16
    /// connSupervisionTimeout in 10 ms units (10…3200: 100 ms to 32 s).
    public var supervisionTimeoutUnits: UInt16

    public init(intervalUnits: UInt16, peripheralLatency: UInt16, supervisionTimeoutUnits: UInt16) {
        self.intervalUnits = intervalUnits
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeoutUnits = supervisionTimeoutUnits
    }

    /// The interval in milliseconds (1.25 ms steps).
    public var intervalMilliseconds: Double { Double(intervalUnits) * 1.25 }
    /// The supervision timeout in milliseconds.
    public var supervisionTimeoutMilliseconds: Int { Int(supervisionTimeoutUnits) * 10 }

    /// `interval 30 ms, latency 0, supervision timeout 720 ms`.
    public var description: String {
        let interval = intervalMilliseconds
        let text = interval == interval.rounded() ? String(Int(interval)) : String(interval)
        return "interval \(text) ms, latency \(peripheralLatency), supervision timeout \(supervisionTimeoutMilliseconds) ms"
    }
}

/// An LE PHY (Vol 6, Part A, §2): 1M, 2M, or Coded.
public enum PHY: Hashable, Sendable, CustomStringConvertible {
    case le1M, le2M, leCoded
    /// A value this build does not know.
    case other(UInt8)

    init(_ phy: LEPHY) {
        switch phy.rawValue {
        case 1: self = .le1M
        case 2: self = .le2M
        case 3: self = .leCoded
        default: self = .other(phy.rawValue)
        }
    }

    public var description: String {
        switch self {
        case .le1M: "LE 1M"
        case .le2M: "LE 2M"
        case .leCoded: "LE Coded"
        case .other(let value): "PHY 0x" + String(value, radix: 16)
        }
    }
}

/// A change of a connection the controller reported, where the transport shows it (our host in
/// user space and `sim`; the kernel path hides the link layer from its sockets).
public enum LinkEvent: Hashable, Sendable, CustomStringConvertible {
    /// New connection parameters (LE Connection Update Complete: either side asked, through
    /// L2CAP, the link layer, or HCI).
    case parametersUpdated(ConnectionParameters)
    /// New largest payloads (octets) and times (µs) each way (LE Data Length Change).
    case dataLengthChanged(txOctets: Int, txTime: Int, rxOctets: Int, rxTime: Int)
    /// New PHYs each way (LE PHY Update Complete).
    case phyChanged(tx: PHY, rx: PHY)

    init(_ event: LEConnection.LinkEvent) {
        switch event {
        case .parametersUpdated(let parameters): self = .parametersUpdated(ConnectionParameters(parameters))
        case .dataLengthChanged(let txOctets, let txTime, let rxOctets, let rxTime):
            self = .dataLengthChanged(txOctets: Int(txOctets), txTime: Int(txTime), rxOctets: Int(rxOctets), rxTime: Int(rxTime))
        case .phyUpdated(let tx, let rx): self = .phyChanged(tx: PHY(tx), rx: PHY(rx))
        }
    }

    public var description: String {
        switch self {
        case .parametersUpdated(let parameters): "connection parameters updated: \(parameters)"
        case .dataLengthChanged(let txOctets, let txTime, let rxOctets, let rxTime):
            "data length changed: TX \(txOctets) octets/\(txTime) µs, RX \(rxOctets) octets/\(rxTime) µs"
        case .phyChanged(let tx, let rx): "PHY changed: TX \(tx), RX \(rx)"
        }
    }
}

extension ConnectionParameters {
    init(_ parameters: LEConnection.Parameters) {
        self.init(
            intervalUnits: parameters.interval, peripheralLatency: parameters.peripheralLatency,
            supervisionTimeoutUnits: parameters.supervisionTimeout)
    }
}
