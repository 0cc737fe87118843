import Kernel
import Capture
import ATT
import Bluetooth
import HCI
import L2CAP
import Emulator
import Synchronization

/// A peer to connect to: `AA:BB:CC:DD:EE:FF`, with `--random` or `ADDR/random` for a random
/// address.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    public var address: BluetoothAddress
    public var type: AddressType

    public init(address: BluetoothAddress, type: AddressType) {
        self.address = address
        self.type = type
    }

    /// Parses `AA:BB:CC:DD:EE:FF`, `AA:BB:CC:DD:EE:FF/random` or `/public`.
    public init?(_ text: String, random: Bool = false) {
        var body = Substring(text)
        var type: AddressType = random ? .random : .public
        if let slash = body.firstIndex(of: "/") {
            switch body[body.index(after: slash)...].lowercased() {
            case "random": type = .random
            case "public": type = .public
            default: return nil
            }
            body = body[..<slash]
        }
        guard let address = BluetoothAddress(String(body)) else { return nil }
        self.init(address: address, type: type)
    }

    public var description: String { "\(address)" + (type == .random ? " (random)" : "") }
}

/// What the GATT commands need from a transport: an ATT channel to a peripheral.
protocol Central: Sendable {
    /// Connects to `peer` and opens its ATT channel, within `timeout`.
    func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel
    /// Releases the transport.
    func close() async
    /// Whether `--record` is already writing this transport's HCI traffic (the user-space host),
    /// so the session does not also record at the ATT level.
    var recordsHCI: Bool { get }
}

extension Central {
    var recordsHCI: Bool { false }
}

/// A failure with the exit code and JSON `kind` it maps to.
struct CommandFailure: Error, CustomStringConvertible {
    var message: String
    var kind: String
    var exitCode: ExitCode
    var handle: UInt16?
    var attError: UInt8?
    var hciStatus: UInt8?

    init(_ message: String, kind: String, exitCode: ExitCode = .failure, handle: UInt16? = nil, attError: UInt8? = nil, hciStatus: UInt8? = nil) {
        self.message = message
        self.kind = kind
        self.exitCode = exitCode
        self.handle = handle
        self.attError = attError
        self.hciStatus = hciStatus
    }

    var description: String { message }
}

/// `--security medium|high|fips` where nothing could honour it: only the kernel path pairs and
/// encrypts today (its L2CAP socket's `BT_SECURITY`); the user-space host answers SMP with Pairing
/// Not Supported, so a session there would run unencrypted while looking secured. Refused with
/// exit 69 on the user-space transports and `sim`, 64 on `replay:` (a capture cannot pair).
/// `low` (no security) is honoured everywhere.
func refuseUnhonouredSecurity(_ options: GlobalOptions, on transport: TransportURI) throws(CommandFailure) {
    guard let level = options.security, level != "low" else { return }
    switch transport {
    case .kernel:
        return
    case .replay:
        throw CommandFailure(
            "--security \(level): a replayed capture cannot pair or encrypt; drop --security to replay it",
            kind: "usage", exitCode: .usage)
    case .userChannel, .tcp, .unix, .serial, .simulator:
        throw CommandFailure(
            "--security \(level) is not available on \(transport): this host cannot pair in user space yet; "
                + "it works on the kernel path (--transport hci0 or hci:N)",
            kind: "transport", exitCode: .unavailable)
    }
}

/// Opens the transport `--transport` names (default: the first kernel adapter).
func openCentral(_ uri: String?, options: GlobalOptions, replayMatchAny: Bool) async throws -> any Central {
    let parsed: TransportURI
    do {
        parsed = try TransportURI(parsing: uri ?? "hci0")
    } catch {
        throw CommandFailure("\(error)", kind: "usage", exitCode: .usage)
    }
    try refuseUnhonouredSecurity(options, on: parsed)
    switch parsed {
    case .kernel(let index):
        var central = try KernelCentral(index: index, security: options.security.flatMap { L2CAPSecurityLevel($0) })
        central.scanRecording = options.record
        return central
    case .replay(let path):
        return ReplayCentral(path: path, matchAny: replayMatchAny, connection: options.replayConnection)
    case .userChannel, .tcp, .unix, .serial:
        return try await UserSpaceCentral.open(parsed, timeout: .milliseconds(Int64(options.timeout * 1000)), record: options.record)
    case .simulator:
        return try await SimulatedCentral.open(parsed, record: options.record)
    }
}

/// The kernel path: the kernel owns HCI and L2CAP; ATT goes over an L2CAP LE socket on CID 4.
struct KernelCentral: Central {
    let index: UInt16
    let adapter: KernelAdapter
    /// `BT_SECURITY` for the ATT socket (`--security`).
    let security: L2CAPSecurityLevel?
    /// `--record` for `scan`: the HCI commands we send and the events the raw socket gives us.
    var scanRecording: String?

    init(index: UInt16, security: L2CAPSecurityLevel? = nil) throws {
        self.security = security
        do {
            adapter = try KernelHCI.adapter(index: index)
        } catch {
            throw CommandFailure.kernel(error, doing: "hci\(index)")
        }
        self.index = index
        // Without bluetoothd nobody powers the adapter on or switches LE on (a dual-mode
        // controller that is up may still have LE off): do it, or say what to run. Reading the
        // settings needs no privilege; changing them needs CAP_NET_ADMIN.
        do {
            let management = try ManagementSocket.open()
            defer { management.close() }
            _ = try management.prepareForLowEnergy(index: index)
        } catch {
            // An adapter that is up and whose settings cannot be read (an old kernel without the
            // management interface): go on as before and let the socket calls speak.
            if adapter.isUp, !Self.isAdapterState(error) { return }
            throw CommandFailure.kernel(error, doing: "preparing hci\(index) for LE")
        }
    }

    /// Errors that describe the adapter itself (not ready, no LE, blocked) rather than the
    /// management interface.
    static func isAdapterState(_ error: KernelBluetoothError) -> Bool {
        switch error {
        case .adapterNotReady: return true
        case .managementFailed(_, _, let status): return [.notSupported, .rfkilled, .invalidIndex].contains(status)
        default: return false
        }
    }

    func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel {
        do {
            return try await KernelATTChannel.connect(
                to: peer.address, type: peer.type, adapter: adapter.address, security: security, timeout: timeout)
        } catch {
            // The kernel's error names the operation and the peer ("connecting to ADDR (type): …").
            throw CommandFailure.kernel(error, doing: nil, kind: "connect")
        }
    }

    func close() async {}
}

/// `replay:FILE`: the recorded peer side of one ATT bearer answers our requests.
struct ReplayCentral: Central {
    let path: String
    let matchAny: Bool
    /// The recorded connection handle to replay (`--replay-conn`); else the one to the peer, else
    /// the first.
    var connection: UInt16? = nil

    func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel {
        do {
            // The recorded bearer to that peer when the capture names peers; else its first bearer.
            let capture = try ReplayCapture(path: path)
            let named = connection == nil && capture.bearers.contains { $0.peerAddress == peer.address }
            return try ReplayATTChannel(
                capture: capture, connectionHandle: connection, peerAddress: named ? peer.address : nil,
                matching: matchAny ? .anyOrder : .strict)
        } catch {
            throw CommandFailure("replay: \(error)", kind: "replay")
        }
    }

    func close() async {}
}

extension CommandFailure {
    static func kernel(_ error: KernelBluetoothError, doing what: String?, kind: String = "adapter") -> CommandFailure {
        let code: ExitCode
        switch error.kind {
        case .unavailable: code = .unavailable
        case .permissionDenied: code = .permission
        case .failure: code = .failure
        }
        return CommandFailure(what.map { "\($0): \(error)" } ?? "\(error)", kind: kind, exitCode: code)
    }
}

extension Error {
    /// The exit code for a transport that could not be opened (`HCIError` from the H4
    /// transports, `KernelBluetoothError` from the user channel): 77 when the kernel refused it
    /// for want of a capability, 69 otherwise.
    var transportExitCode: ExitCode {
        if let kernel = self as? KernelBluetoothError, kernel.kind == .permissionDenied { return .permission }
        if case .system(_, let errno)? = self as? HCIError, errno == .permissionDenied || errno == .accessDenied {
            return .permission
        }
        return .unavailable
    }
}
