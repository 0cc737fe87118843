import HCI
import Host
import L2CAP

/// The PHYs a connection uses each way.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.47, §7.7.65.12
public struct LinkPHY: Hashable, Sendable, CustomStringConvertible {
    public var tx: PHY
    public var rx: PHY

    public init(tx: PHY, rx: PHY) {
        self.tx = tx
        self.rx = rx
    }

    init(_ phy: (tx: LEPHY, rx: LEPHY)) { self.init(tx: PHY(phy.tx), rx: PHY(phy.rx)) }

    /// `LE 2M` when both ways agree, else `TX LE 2M, RX LE 1M`.
    public var description: String { tx == rx ? "\(tx)" : "TX \(tx), RX \(rx)" }
}

/// The largest link-layer payload (octets) and air time (µs) each way: 27 octets and 328 µs
/// until the data length update procedure raises them (at most 251 octets).
/// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §4.5.10
public struct DataLength: Hashable, Sendable, CustomStringConvertible {
    public var txOctets: Int
    public var txTime: Int
    public var rxOctets: Int
    public var rxTime: Int

    public init(txOctets: Int, txTime: Int, rxOctets: Int, rxTime: Int) {
        self.txOctets = txOctets
        self.txTime = txTime
        self.rxOctets = rxOctets
        self.rxTime = rxTime
    }

    init(_ length: LEConnection.DataLength) {
        self.init(
            txOctets: Int(length.maxTXOctets), txTime: Int(length.maxTXTime), rxOctets: Int(length.maxRXOctets),
            rxTime: Int(length.maxRXTime))
    }

    public var description: String { "TX \(txOctets) octets/\(txTime) µs, RX \(rxOctets) octets/\(rxTime) µs" }
}

/// Connection parameters a central asks for: an interval range (7.5 ms to 4 s in 1.25 ms
/// steps), how many connection events the peripheral may skip (0…499), and the supervision
/// timeout (100 ms to 32 s in 10 ms steps, longer than twice the effective interval).
/// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §4.5.1, §4.5.2; Vol 4, Part E, §7.8.12, §7.8.18
public struct ConnectionParameterRequest: Hashable, Sendable, CustomStringConvertible {
    public var minimumInterval: Duration
    public var maximumInterval: Duration
    public var peripheralLatency: Int
    /// Nil: the shortest multiple of 100 ms, at least 2 s, that the rule allows.
    public var supervisionTimeout: Duration?

    public init(
        minimumInterval: Duration, maximumInterval: Duration, peripheralLatency: Int = 0, supervisionTimeout: Duration? = nil
    ) {
        self.minimumInterval = minimumInterval
        self.maximumInterval = maximumInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
    }

    /// One interval (minimum = maximum).
    public init(interval: Duration, peripheralLatency: Int = 0, supervisionTimeout: Duration? = nil) {
        self.init(
            minimumInterval: interval, maximumInterval: interval, peripheralLatency: peripheralLatency,
            supervisionTimeout: supervisionTimeout)
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
    }

    /// The request in HCI units, or a usage error saying what is out of range. Intervals must be
    /// whole multiples of 1.25 ms and the timeout of 10 ms (what the link layer can do).
    package func hciParameters() throws(BLEError) -> LEConnectionParameters {
        func units(_ duration: Duration, _ step: Int64, _ what: String) throws(BLEError) -> UInt16 {
            let micro = Self.microseconds(duration)
            guard micro >= 0, micro % step == 0, micro / step <= Int64(UInt16.max) else {
                let range = step == 1250 ? "7.5 ms to 4 s" : "100 ms to 32 s"
                throw BLEError(
                    "\(what) \(Double(micro) / 1000) ms: the link layer takes multiples of \(Double(step) / 1000) ms (\(range))",
                    kind: "usage", exitCode: .usage)
            }
            return UInt16(micro / step)
        }
        let low = try units(minimumInterval, 1250, "connection interval")
        let high = try units(maximumInterval, 1250, "connection interval")
        guard (0...499).contains(peripheralLatency) else {
            throw BLEError("peripheral latency \(peripheralLatency): 0…499 connection events", kind: "usage", exitCode: .usage)
        }
        let timeout: UInt16
        if let supervisionTimeout {
            timeout = try units(supervisionTimeout, 10_000, "supervision timeout")
        } else {
            // Over 2 × (1 + latency) × interval max, in 10 ms units, rounded up to 100 ms; ≥ 2 s.
            let needed = (2 * (1 + Int(peripheralLatency)) * Int(high) * 125 + 999) / 1000 + 1
            timeout = UInt16(min(3200, max(200, (needed + 9) / 10 * 10)))
        }
        let parameters = LEConnectionParameters(
            connectionIntervalMin: low, connectionIntervalMax: high, maxLatency: UInt16(peripheralLatency),
            supervisionTimeout: timeout)
        if let why = ConnectionParameterPolicy.invalidity(parameters) {
            throw BLEError("connection parameters: \(why)", kind: "usage", exitCode: .usage)
        }
        return parameters
    }

    public var description: String {
        func ms(_ d: Duration) -> String {
            let value = Double(Self.microseconds(d)) / 1000
            return value == value.rounded() ? String(Int(value)) : String(value)
        }
        let interval = minimumInterval == maximumInterval ? ms(minimumInterval) : "\(ms(minimumInterval))–\(ms(maximumInterval))"
        return "interval \(interval) ms, latency \(peripheralLatency)"
            + (supervisionTimeout.map { ", supervision timeout \(ms($0)) ms" } ?? "")
    }
}

/// What every central link of an adapter is asked for: its connection parameters in LE Create
/// Connection, then a PHY and a data length once it is up. A controller that lacks LE Set PHY
/// or LE Set Data Length (Unknown HCI Command, Unsupported Feature, or no answer within the
/// command timeout) leaves the link as it is: said as a warning, the connection goes on.
public struct LinkPreferences: Hashable, Sendable {
    /// Nil: the host's defaults (30–50 ms, latency 0, 4 s; longer intervals with many links).
    public var connectionParameters: ConnectionParameterRequest?
    /// Nil: whatever the controllers chose (LE 1M at connection).
    public var phy: PHY?
    /// The largest TX payload to ask for, 27…251 octets; nil: leave it.
    public var dataLength: Int?
    /// Enhanced ATT bearers to open (1…5) once the link is encrypted (it is encrypted first:
    /// with the bond, else by pairing); nil: none, one ATT bearer as before.
    public var enhancedBearers: Int?

    public init(
        connectionParameters: ConnectionParameterRequest? = nil, phy: PHY? = nil, dataLength: Int? = nil,
        enhancedBearers: Int? = nil
    ) {
        self.connectionParameters = connectionParameters
        self.phy = phy
        self.dataLength = dataLength
        self.enhancedBearers = enhancedBearers
    }

    /// Whether anything is asked.
    public var isEmpty: Bool { connectionParameters == nil && phy == nil && dataLength == nil && enhancedBearers == nil }

    /// A usage error for what cannot be asked.
    package func validate() throws(BLEError) {
        _ = try connectionParameters?.hciParameters()
        if let dataLength, !(27...251).contains(dataLength) {
            throw BLEError("data length \(dataLength): 27…251 octets", kind: "usage", exitCode: .usage)
        }
        if let enhancedBearers, !(1...5).contains(enhancedBearers) {
            throw BLEError("\(enhancedBearers) Enhanced ATT bearers: 1 to 5", kind: "usage", exitCode: .usage)
        }
        if case .other(let value)? = phy {
            throw BLEError("PHY 0x\(String(value, radix: 16)): LE 1M, LE 2M or LE Coded", kind: "usage", exitCode: .usage)
        }
    }
}

extension PHY {
    /// The LE Set PHY mask naming this PHY alone.
    var mask: LEPHYMask {
        switch self {
        case .le1M: .le1M
        case .le2M: .le2M
        case .leCoded: .leCoded
        case .other: []
        }
    }
}

/// Link control on a connection our host made (user space, `sim`): what a ``Peripheral`` asks
/// of its link beyond ATT.
package struct LinkControl: Sendable {
    package var readRSSI: @Sendable () async throws -> Int
    package var updateParameters: @Sendable (LEConnectionParameters) async throws -> ConnectionParameters
    package var setPHY: @Sendable (PHY) async throws -> LinkPHY
    package var readPHY: @Sendable () async throws -> LinkPHY
    package var setDataLength: @Sendable (Int) async throws -> Void
    package var phy: @Sendable () -> LinkPHY
    package var dataLength: @Sendable () -> DataLength

    /// The control of `connection` on `host`.
    package init(host: LEHost, connection: LEConnection) {
        readRSSI = { Int(try await host.readRSSI(connection)) }
        updateParameters = { ConnectionParameters(try await host.updateParameters(connection, $0)) }
        setPHY = { phy in LinkPHY(try await host.setPHY(connection, tx: phy.mask, rx: phy.mask)) }
        readPHY = { LinkPHY(try await host.readPHY(connection)) }
        setDataLength = { try await host.setDataLength(connection, octets: UInt16($0)) }
        phy = { LinkPHY(connection.phy) }
        dataLength = { DataLength(connection.dataLength) }
    }

    /// Asks `connection` for the PHY and data length `preferences` name; what the controller
    /// cannot do is a warning (`warning`), never the end of the link.
    package func apply(_ preferences: LinkPreferences, peer: String, warning: @Sendable (String) -> Void) async {
        if let wanted = preferences.phy {
            do {
                let now = try await setPHY(wanted)
                if now.tx != wanted || now.rx != wanted {
                    warning("warning: \(peer): asked for \(wanted), the link uses \(now) (the peer or the controller chose)")
                }
            } catch {
                warning("warning: \(peer): \(Self.describeRefusal(error, doing: "LE Set PHY \(wanted)")); the link stays \(phy())")
            }
        }
        if let octets = preferences.dataLength {
            do {
                try await setDataLength(octets)
            } catch {
                warning(
                    "warning: \(peer): \(Self.describeRefusal(error, doing: "LE Set Data Length \(octets) octets")); "
                        + "the link keeps \(dataLength())")
            }
        }
    }

    /// `the controller does not know LE Set PHY`, `… did not answer …`, or the error.
    package static func describeRefusal(_ error: any Error, doing what: String) -> String {
        if case .hci(let hci)? = error as? LEHostError {
            switch hci {
            case .commandFailed(_, let status) where status == .unknownHCICommand:
                return "the controller does not know \(what) (\(status))"
            case .commandFailed(_, let status) where status == .unsupportedFeatureOrParameterValue
                || status == .unsupportedRemoteFeature:
                return "\(what) is not supported (\(status))"
            case .commandTimeout:
                return "the controller did not answer \(what) (its command credit taken back)"
            default:
                break
            }
        }
        return "\(what) failed: \(error)"
    }
}
