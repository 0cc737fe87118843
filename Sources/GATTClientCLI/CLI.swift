import Bluetooth
import HCI

/// Exit codes of `gattclient` (sysexits-style).
public enum ExitCode: Int32, Sendable {
    case success = 0
    case failure = 1
    case usage = 64
    case unavailable = 69
    case permission = 77
}
