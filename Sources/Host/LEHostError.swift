import Bluetooth
import HCI
import L2CAP

/// Why an `LEHost` operation failed.
public enum LEHostError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A command failed, timed out or the transport went: the HCI layer's own error.
    case hci(HCIError)
    /// L2CAP refused the new connection.
    case l2cap(L2CAPError)
    /// The controller reported the connection attempt as failed.
    case connectionFailed(address: BluetoothAddress, status: HCIStatus)
    /// No connection within the connect timeout; LE Create Connection Cancel was sent.
    case connectTimeout(address: BluetoothAddress, timeout: Duration)
    /// The connect was cancelled (task cancellation); LE Create Connection Cancel was sent.
    case connectCancelled(address: BluetoothAddress)
    /// The controller did not report the end of a procedure in time.
    case timeout(String)
    /// A scan is already running on this host.
    case scanInProgress
    /// The connection is not (or no longer) known to the host.
    case notConnected(handle: UInt16)
    /// The host was closed or its transport ended.
    case closed(String)
    /// An argument out of the spec's range.
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .hci(let error): return error.description
        case .l2cap(let error): return error.description
        case .connectionFailed(let address, let status): return "connecting to \(address) failed: \(status)"
        case .connectTimeout(let address, let timeout):
            return "no connection to \(address) within \(timeout.roundedText); the attempt was cancelled"
        case .connectCancelled(let address): return "connecting to \(address) was cancelled"
        case .timeout(let what): return "controller did not report \(what) in time"
        case .scanInProgress: return "a scan is already running"
        case .notConnected(let handle): return "no LE connection with handle 0x\(String(handle, radix: 16))"
        case .closed(let why): return "host closed: \(why)"
        case .invalidArgument(let why): return "invalid argument: \(why)"
        }
    }
}

/// How `LEHost.scan(_:)` scans.
public struct LEScanParameters: Hashable, Sendable {
    /// Which HCI scanning commands to use.
    public enum Procedure: Hashable, Sendable {
        /// Extended scanning when the controller supports it (LE Extended Advertising feature and
        /// the LE Set Extended Scan commands), else legacy.
        case automatic
        case legacy
        case extended
    }

    /// Active scanning (scan requests, so scan responses are reported) or passive.
    public var active: Bool
    /// Ask the controller to filter duplicate reports.
    public var filterDuplicates: Bool
    /// LE_Scan_Interval in 0.625 ms units (0x0004…0x4000).
    public var interval: UInt16
    /// LE_Scan_Window in 0.625 ms units (0x0004…interval).
    public var window: UInt16
    public var procedure: Procedure
    /// `.merged` (a device event when first seen or changed) or `.allReports` (every report too).
    public var reportMode: ScanAggregator.ReportMode
    /// Bound of the device table (`ScanAggregator.defaultMaximumDevices` unless given).
    public var maximumDevices: Int
    /// Events buffered for a slow consumer; beyond it the oldest are dropped and counted.
    public var bufferLimit: Int

    public init(
        active: Bool = true, filterDuplicates: Bool = false, interval: UInt16 = 0x0010, window: UInt16 = 0x0010,
        procedure: Procedure = .automatic, reportMode: ScanAggregator.ReportMode = .merged,
        maximumDevices: Int = ScanAggregator.defaultMaximumDevices, bufferLimit: Int = 1024
    ) {
        self.active = active
        self.filterDuplicates = filterDuplicates
        self.interval = interval
        self.window = window
        self.procedure = procedure
        self.reportMode = reportMode
        self.maximumDevices = maximumDevices
        self.bufferLimit = bufferLimit
    }

    /// Why these options cannot be sent, or nil.
    var invalidity: String? {
        guard (0x0004...0x4000).contains(interval) else { return "scan interval 0x\(String(interval, radix: 16))" }
        guard (0x0004...interval).contains(window) else { return "scan window 0x\(String(window, radix: 16))" }
        guard maximumDevices > 0, bufferLimit > 0 else { return "device table and buffer must hold one entry" }
        return nil
    }
}
