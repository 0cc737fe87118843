#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
import HCI

/// What we asked the kernel to do when it failed: names the object (adapter, channel, peer) so
/// the message can say what failed and which capability or fix applies.
public enum KernelOperation: Hashable, Sendable, CustomStringConvertible {
    case listAdapters
    case readAdapterInformation(index: UInt16)
    case adapterUp(index: UInt16)
    case adapterDown(index: UInt16)
    /// `device` is `nil` for the monitor and management channels.
    case openHCISocket(channel: HCIChannel, device: UInt16?)
    case setHCIFilter(device: UInt16?)
    case hciSend(channel: HCIChannel, device: UInt16?)
    case hciReceive(channel: HCIChannel, device: UInt16?)
    /// A management command; `index` is the controller (0xFFFF: none).
    case managementCommand(opcode: ManagementOpcode, index: UInt16)
    /// Creating and binding an L2CAP LE socket on the ATT channel of `adapter` (zero: any).
    case openL2CAP(adapter: BluetoothAddress)
    case connectL2CAP(peer: BluetoothAddress, type: AddressType)
    case listenL2CAP(adapter: BluetoothAddress)
    case acceptL2CAP
    /// Setting `BT_SECURITY` to `level` (1 low … 4 FIPS).
    case setSecurity(level: UInt8)
    case readSecurity
    case readMTU
    case setMTU(UInt16)
    /// Sending or receiving an SDU on the ATT channel with `peer` (nil when unknown).
    case send(peer: BluetoothAddress?)
    case receive(peer: BluetoothAddress?)

    public var description: String {
        switch self {
        case .listAdapters: return "listing Bluetooth adapters"
        case .readAdapterInformation(let index): return "reading adapter hci\(index)"
        case .adapterUp(let index): return "bringing hci\(index) up"
        case .adapterDown(let index): return "bringing hci\(index) down"
        case .openHCISocket(let channel, let device):
            return "opening the \(channel) HCI channel" + (device.map { " on hci\($0)" } ?? "")
        case .setHCIFilter(let device): return "setting the HCI filter" + (device.map { " on hci\($0)" } ?? "")
        case .hciSend(let channel, let device):
            return "sending on the \(channel) HCI channel" + (device.map { " of hci\($0)" } ?? "")
        case .hciReceive(let channel, let device):
            return "receiving on the \(channel) HCI channel" + (device.map { " of hci\($0)" } ?? "")
        case .managementCommand(let opcode, let index):
            return "management command \(opcode)" + (index == 0xFFFF ? "" : " on hci\(index)")
        case .openL2CAP(let adapter):
            return "opening an L2CAP LE socket" + (adapter == .zero ? "" : " on adapter \(adapter)")
        case .connectL2CAP(let peer, let type): return "connecting to \(peer) (\(type))"
        case .listenL2CAP(let adapter):
            return "listening on the ATT channel" + (adapter == .zero ? "" : " of adapter \(adapter)")
        case .acceptL2CAP: return "accepting an ATT connection"
        case .setSecurity(let level): return "setting BT_SECURITY to level \(level)"
        case .readSecurity: return "reading BT_SECURITY"
        case .readMTU: return "reading the L2CAP MTU"
        case .setMTU(let mtu): return "setting the L2CAP receive MTU to \(mtu)"
        case .send(let peer): return "sending to " + (peer.map { "\($0)" } ?? "the peer")
        case .receive(let peer): return "receiving from " + (peer.map { "\($0)" } ?? "the peer")
        }
    }

    /// The capability the kernel checks for this operation.
    public var requiredCapability: String {
        switch self {
        case .openHCISocket(let channel, _), .hciSend(let channel, _), .hciReceive(let channel, _):
            return channel.requiredCapability
        case .setHCIFilter: return "CAP_NET_RAW"
        case .adapterUp, .adapterDown, .managementCommand: return "CAP_NET_ADMIN"
        case .listAdapters, .readAdapterInformation: return "CAP_NET_RAW"
        case .openL2CAP, .connectL2CAP, .listenL2CAP, .acceptL2CAP, .setSecurity, .readSecurity, .readMTU, .setMTU,
            .send, .receive:
            return "CAP_NET_RAW and CAP_NET_ADMIN"
        }
    }

    /// The adapter index named by the operation, if any.
    var adapterIndex: UInt16? {
        switch self {
        case .readAdapterInformation(let index), .adapterUp(let index), .adapterDown(let index): return index
        case .openHCISocket(_, let device), .setHCIFilter(let device), .hciSend(_, let device),
            .hciReceive(_, let device):
            return device
        case .managementCommand(_, let index): return index == 0xFFFF ? nil : index
        default: return nil
        }
    }

    var isL2CAP: Bool {
        switch self {
        case .openL2CAP, .connectL2CAP, .listenL2CAP, .acceptL2CAP, .setSecurity, .readSecurity, .readMTU, .setMTU,
            .send, .receive:
            return true
        default: return false
        }
    }
}

/// Every failure of the kernel Bluetooth interfaces (HCI sockets, management, L2CAP sockets),
/// with a message that says what failed and what to do about it.
public enum KernelBluetoothError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A system call failed.
    case system(operation: KernelOperation, errno: Errno)
    /// The kernel answered a management command with a failure status.
    case managementFailed(opcode: ManagementOpcode, index: UInt16, status: ManagementStatus)
    /// The kernel's management reply did not decode.
    case malformedManagementReply(opcode: ManagementOpcode, HCIError)
    /// The socket or channel was already closed locally.
    case closed(operation: KernelOperation)
    /// The request itself is wrong (e.g. a device for the monitor channel).
    case invalidRequest(operation: KernelOperation, reason: String)
    /// Adapter `index` is powered off or has LE switched off, and this process may not change
    /// that (the kernel refused the management command: no CAP_NET_ADMIN).
    case adapterNotReady(index: UInt16, poweredOff: Bool, leDisabled: Bool)

    /// The fix that grants what the kernel checks.
    public static let setcapFix = "sudo setcap 'cap_net_raw,cap_net_admin+eip' $(which gattclient)"

    /// Broad classes, for exit codes: unavailable 69, permission 77, everything else 1.
    public enum Kind: Hashable, Sendable {
        /// No Bluetooth in the kernel, no such adapter, adapter busy, LE disabled, rfkill.
        case unavailable
        /// A capability is missing.
        case permissionDenied
        /// The peer or the link failed (refused, timed out, disconnected), or a local misuse.
        case failure
    }

    public var kind: Kind {
        switch self {
        case .system(let operation, let errno):
            switch errno.rawValue {
            case EACCES where Self.isLinkSecurityFailure(errno, operation): return .failure
            case EPERM, EACCES: return .permissionDenied
            case EAFNOSUPPORT, EPROTONOSUPPORT, ENODEV, EBUSY, EALREADY, EUSERS, ERFKILL, EADDRINUSE, ENETDOWN,
                EOPNOTSUPP, EHOSTUNREACH:
                return .unavailable
            default: return .failure
            }
        case .managementFailed(_, _, let status):
            switch status {
            case .permissionDenied: return .permissionDenied
            case .invalidIndex, .busy, .rfkilled, .notSupported, .notPowered: return .unavailable
            default: return .failure
            }
        case .malformedManagementReply, .closed, .invalidRequest: return .failure
        case .adapterNotReady: return .unavailable
        }
    }

    /// The errno, for `.system`.
    public var errno: Errno? {
        if case .system(_, let errno) = self { return errno }
        return nil
    }

    public var description: String {
        switch self {
        case .system(let operation, let errno): return "\(operation): " + Self.explain(errno, operation)
        case .managementFailed(let opcode, let index, let status):
            let adapter = index == 0xFFFF ? "" : " on hci\(index)"
            return "\(opcode)\(adapter) failed: \(status)" + Self.advice(for: status, opcode: opcode, index: index)
        case .malformedManagementReply(let opcode, let error):
            return "the kernel's reply to \(opcode) is malformed: \(error)"
        case .closed(let operation): return "\(operation): the socket is closed"
        case .invalidRequest(let operation, let reason): return "\(operation): \(reason)"
        case .adapterNotReady(let index, let poweredOff, let leDisabled):
            let state = [poweredOff ? "is powered off" : nil, leDisabled ? "has LE switched off" : nil]
                .compactMap { $0 }.joined(separator: " and ")
            let commands = [leDisabled ? "le on" : nil, poweredOff ? "power on" : nil].compactMap { $0 }
                .map { "sudo btmgmt --index \(index) \($0)" }.joined(separator: " && ")
            return "hci\(index) \(state) (without bluetoothd nobody turns it on): run `\(commands)`, "
                + "or grant CAP_NET_ADMIN (`\(Self.setcapFix)`) and gattclient turns it on itself"
        }
    }

    /// EACCES on a connected ATT socket: the kernel ends the channel so when the link's
    /// encryption or pairing failed (not a capability: those are checked at open/bind/connect).
    static func isLinkSecurityFailure(_ errno: Errno, _ operation: KernelOperation) -> Bool {
        guard errno.rawValue == EACCES else { return false }
        switch operation {
        case .send, .receive: return true
        default: return false
        }
    }

    static let noBluetoothInKernel =
        "this kernel has no Bluetooth support (AF_BLUETOOTH); use --transport sim or tcp:HOST:PORT"

    static func explain(_ errno: Errno, _ operation: KernelOperation) -> String {
        let adapter = operation.adapterIndex.map { "hci\($0)" } ?? "the adapter"
        switch errno.rawValue {
        case EAFNOSUPPORT:
            // monitor has no --transport: it reads the kernel's own HCI traffic.
            if case .openHCISocket(.monitor, _) = operation {
                return "this kernel has no Bluetooth support (AF_BLUETOOTH), and monitor shows the kernel's own HCI "
                    + "traffic; to watch a session without it, record one (--record FILE) and decode it with `gattclient dump FILE`"
            }
            return noBluetoothInKernel
        case EPROTONOSUPPORT:
            return "this kernel's Bluetooth lacks the "
                + (operation.isL2CAP ? "L2CAP" : "HCI socket") + " protocol (module not loaded?); "
                + "use --transport sim or tcp:HOST:PORT"
        case EACCES where isLinkSecurityFailure(errno, operation):
            return "the link's security failed (the kernel refused the ATT channel after encryption or pairing failed: "
                + "the peer may have lost the bond; `gattclient unpair ADDRESS` and pair again)"
        case EPERM, EACCES:
            return "permission denied: needs \(operation.requiredCapability); grant it with "
                + "`\(setcapFix)` (or run as root)"
        case ENODEV:
            return "no such adapter \(adapter); list adapters with `hciconfig` or `btmgmt info`"
        case EBUSY, EALREADY, EISCONN:
            if case .connectL2CAP(let peer, _) = operation {
                // The kernel allows one channel per fixed CID on a link (checked in the VM with
                // BlueZ's gatttool holding the device): another ATT client of this adapter —
                // bluetoothd, which connects to known devices by itself — has it.
                return "\(peer) is connected with an ATT channel of another client of this adapter "
                    + "(bluetoothd?): disconnect it first (`bluetoothctl disconnect \(peer)`) or stop bluetoothd"
            }
            guard errno.rawValue != EISCONN else { return errno.description }
            let name = operation.adapterIndex.map { "hci\($0)" } ?? "hciN"
            return "\(adapter) is busy: owned by bluetoothd or user channel in use; stop bluetoothd or bring "
                + "the adapter down: `hciconfig \(name) down`"
        case EUSERS:
            return "another process holds the user channel of \(adapter)"
        case ERFKILL:
            return "\(adapter) is blocked by rfkill; unblock it with `rfkill unblock bluetooth`"
        case ENETDOWN:
            return "\(adapter) is down; bring it up with `hciconfig \(operation.adapterIndex.map { "hci\($0)" } ?? "hciN") up` "
                + "or `btmgmt power on`"
        case ECONNREFUSED:
            return "connection refused by the device"
        case ETIMEDOUT:
            switch operation {
            case .connectL2CAP:
                return "timed out: the device did not answer (is it advertising connectable and in range? "
                    + "a device connected to another central — a phone, bluetoothd on another adapter — stops advertising)"
            case .managementCommand: return "the kernel did not answer in time"
            case .receive, .send: return "the link timed out (device out of range or powered off)"
            default: return "timed out"
            }
        case EHOSTDOWN:
            return "host is down: the device is not reachable (not advertising, or out of range)"
        case EHOSTUNREACH:
            return "no route: no powered LE adapter to reach the device; power one on (`btmgmt power on`)"
        case ECONNRESET:
            return "connection reset: the device disconnected"
        case ECONNABORTED:
            return "connection aborted by the local host (adapter went down?)"
        case ENOTCONN, EPIPE:
            return "not connected: the link is gone"
        case EMSGSIZE:
            return "the SDU is larger than the channel's L2CAP MTU"
        case EADDRINUSE:
            return "the ATT channel of this adapter is already in use (bluetoothd's GATT server?); stop bluetoothd"
        case EOPNOTSUPP:
            return "not supported by \(adapter): is LE enabled? (`btmgmt le on`)"
        case ECANCELED:
            return "cancelled"
        default:
            return errno.description
        }
    }

    static func advice(for status: ManagementStatus, opcode: ManagementOpcode, index: UInt16) -> String {
        switch status {
        case .permissionDenied:
            return "; needs CAP_NET_ADMIN; grant it with `\(setcapFix)` (or run as root)"
        case .invalidIndex:
            return "; no such adapter hci\(index)"
        case .rfkilled:
            return "; unblock it with `rfkill unblock bluetooth`"
        case .busy:
            return "; another management client (bluetoothd?) is changing the adapter; retry or stop bluetoothd"
        case .notSupported where opcode == .setLowEnergy:
            return "; this adapter has no LE support"
        case .notPowered:
            return "; power the adapter on first"
        default:
            return ""
        }
    }

    /// Runs a CHCI call (non-negative result or `-errno`), retrying on `EINTR`, mapping a failure
    /// to `.system(operation:errno:)`.
    package static func check(_ operation: KernelOperation, _ body: () -> Int32) throws(KernelBluetoothError) -> Int32 {
        do {
            return try Errno.retryingOnInterrupt(body)
        } catch {
            throw .system(operation: operation, errno: error)
        }
    }
}

extension Errno {
    /// EALREADY (package-internal so it cannot clash with other modules' additions).
    package static let alreadyInProgress = Errno(rawValue: EALREADY)
    /// ECANCELED: a wait was cancelled by its task.
    package static let cancelled = Errno(rawValue: ECANCELED)
}
