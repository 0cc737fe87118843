import ATT
import Bluetooth
import GATT
import HCI
import Kernel

/// A failure of the library's front door: what went wrong in words, and its class as
/// `gattclient`'s JSON reports it (`kind`: usage, transport, adapter, connect, att, gatt, hci,
/// timeout, disconnected, notFound, record, replay, …), with the handle, ATT error and HCI
/// status where the peer or controller gave one.
public struct BLEError: Error, Sendable, CustomStringConvertible {
    /// One line saying what failed and, where it helps, what to do.
    public var message: String
    /// The class of failure (the CLI's JSON error kinds).
    public var kind: String
    /// The attribute handle the peer's refusal names.
    public var handle: UInt16?
    /// The peer's ATT error (Vol 3, Part F, §3.4.1.1).
    public var attError: ATTErrorCode?
    /// The controller's or the peer's HCI status (Vol 1, Part F).
    public var hciStatus: HCIStatus?
    /// The exit status `gattclient` gives this failure.
    package var exitCode: ExitCode

    /// A failure of class `kind`.
    public init(
        _ message: String, kind: String, handle: UInt16? = nil, attError: ATTErrorCode? = nil,
        hciStatus: HCIStatus? = nil
    ) {
        self.init(message, kind: kind, exitCode: .failure, handle: handle, attError: attError, hciStatus: hciStatus)
    }

    /// A failure with the exit status `gattclient` gives it.
    package init(
        _ message: String, kind: String, exitCode: ExitCode, handle: UInt16? = nil,
        attError: ATTErrorCode? = nil, hciStatus: HCIStatus? = nil
    ) {
        self.message = message
        self.kind = kind
        self.exitCode = exitCode
        self.handle = handle
        self.attError = attError
        self.hciStatus = hciStatus
    }

    /// The message.
    public var description: String { message }
}

extension BLEError {
    /// A kernel socket's failure, `what` naming the operation.
    package static func kernel(_ error: KernelBluetoothError, doing what: String?, kind: String = "adapter") -> BLEError {
        let code: ExitCode
        switch error.kind {
        case .unavailable: code = .unavailable
        case .permissionDenied: code = .permission
        case .failure: code = .failure
        }
        return BLEError(what.map { "\($0): \(error)" } ?? "\(error)", kind: kind, exitCode: code)
    }

    /// An ATT failure while doing `what`.
    package static func att(_ error: ATTError, doing what: String) -> BLEError {
        switch error {
        case .peerError(let request, let handle, let code):
            return BLEError(
                "\(what): the peer refused \(request) on handle 0x\(hex4(handle)): \(code)", kind: "att",
                handle: handle, attError: code)
        case .timeout(let request):
            return BLEError("\(what): the peer did not answer \(request) within 30 s (the ATT transaction limit)", kind: "timeout")
        case .bearerClosed(let reason):
            return BLEError("\(what): the connection closed: \(reason)", kind: "disconnected")
        default:
            return BLEError("\(what): \(error)", kind: "att")
        }
    }

    /// A GATT failure while doing `what`.
    package static func gatt(_ error: GATTError, doing what: String) -> BLEError {
        switch error {
        case .att(let att):
            return .att(att, doing: what)
        case .peerError(let request, let handle, let code):
            return BLEError(
                "\(what): the peer refused \(request) on handle 0x\(hex4(handle)): \(code)", kind: "att",
                handle: handle, attError: code)
        case .ambiguousUUID(let uuid, let handles):
            return BLEError(
                "\(what): \(uuid) names \(handles.count) characteristics (value handles "
                    + handles.map { "0x" + hex4($0) }.joined(separator: ", ") + "); give a handle instead",
                kind: "usage", exitCode: .usage)
        case .notFound(let uuid):
            return BLEError("\(what): the peer has no characteristic \(uuid)", kind: "notFound")
        default:
            return BLEError("\(what): \(error)", kind: "gatt")
        }
    }

    /// Maps any error of a GATT operation.
    package static func from(_ error: any Error, doing what: String) -> BLEError {
        switch error {
        case let failure as BLEError: return failure
        case let gatt as GATTError: return .gatt(gatt, doing: what)
        case let att as ATTError: return .att(att, doing: what)
        case let kernel as KernelBluetoothError: return .kernel(kernel, doing: what)
        case let scan as KernelScanner.Failure:
            // Says what failed on its own ("the controller refused …", "scanning: …").
            if case .refused(_, let status) = scan { return BLEError("\(scan)", kind: "hci", hciStatus: status) }
            return BLEError("\(scan)", kind: "failure")
        case let hci as HCIError:
            if case .commandFailed(_, let status) = hci {
                return BLEError("\(what): \(hci)", kind: "hci", hciStatus: status)
            }
            return BLEError("\(what): \(hci)", kind: "hci")
        default: return BLEError("\(what): \(error)", kind: "failure")
        }
    }
}

extension Error {
    /// The exit code for a transport that could not be opened (`HCIError` from the H4
    /// transports, `KernelBluetoothError` from the user channel): 77 when the kernel refused it
    /// for want of a capability, 69 otherwise.
    package var transportExitCode: ExitCode {
        if let kernel = self as? KernelBluetoothError, kernel.kind == .permissionDenied { return .permission }
        if case .system(_, let errno)? = self as? HCIError, errno == .permissionDenied || errno == .accessDenied {
            return .permission
        }
        return .unavailable
    }
}

