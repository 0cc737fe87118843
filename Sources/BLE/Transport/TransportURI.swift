import Bluetooth
import HCI
import Kernel

/// Where the controller is: the value of `--transport`, parsed.
///
/// | text | case |
/// |---|---|
/// | `hci0`, `hci:0` | `.kernel(index: 0)`: kernel HCI/L2CAP sockets, not a raw transport |
/// | `hci-user:0` | `.userChannel(index: 0)`: the kernel HCI user channel (exclusive) |
/// | `tcp:HOST:PORT`, `tcp:[::1]:PORT` | `.tcp(host:port:)`: H4 over TCP |
/// | `unix:PATH` | `.unix(path:)`: H4 over a unix stream socket |
/// | `serial:DEV[@BAUD]` | `.serial(device:baudRate:)`: H4 over a UART, 1000000 baud by default |
/// | `sim`, `sim:sensortag,bluefruit` | `.simulator(devices:)`: the built-in emulator |
/// | `replay:FILE` | `.replay(path:)`: a recorded session as a scripted peer |
///
/// Parsing is pure and checks every field; nothing is opened here.
public enum TransportURI: Hashable, Sendable, CustomStringConvertible {
    /// The kernel's own host on adapter `index` (HCI and L2CAP sockets).
    case kernel(index: UInt16)
    /// The HCI user channel of adapter `index`: our whole host in user space.
    case userChannel(index: UInt16)
    /// H4 over TCP.
    case tcp(host: String, port: UInt16)
    /// H4 over a unix stream socket.
    case unix(path: String)
    /// H4 over a UART.
    case serial(device: String, baudRate: Int)
    /// The built-in simulation with the named emulated devices (all when empty).
    case simulator(devices: [String])
    /// A recorded session as a scripted peer.
    case replay(path: String)

    /// The UART speed used when `serial:DEV` names none: what Zephyr's `hci_uart` and Nordic's
    /// HCI firmware default to.
    public static let defaultBaudRate = SerialTransport.defaultBaudRate

    /// The longest path a `sockaddr_un` holds (108 octets with the terminating NUL).
    package static let maximumUnixPathLength = 107

    /// Parses `text`; throws `HCIError.invalidTransportURI` saying what is wrong.
    public init(parsing text: String) throws(HCIError) {
        func invalid(_ reason: String) -> HCIError { .invalidTransportURI(uri: text, reason: reason) }

        if text.isEmpty { throw invalid("empty transport") }
        let scheme: Substring
        let rest: Substring
        if let colon = text.firstIndex(of: ":") {
            scheme = text[..<colon]
            rest = text[text.index(after: colon)...]
        } else {
            scheme = text[...]
            rest = ""
        }
        let hasColon = text.contains(":")

        switch scheme {
        case "hci" where hasColon:
            self = .kernel(index: try Self.adapterIndex(rest, uri: text))
        case "hci-user":
            guard hasColon else { throw invalid("expected hci-user:N") }
            self = .userChannel(index: try Self.adapterIndex(rest, uri: text))
        case "tcp":
            guard hasColon else { throw invalid("expected tcp:HOST:PORT") }
            let (host, port) = try Self.hostAndPort(rest, uri: text)
            self = .tcp(host: host, port: port)
        case "unix":
            guard !rest.isEmpty else { throw invalid("expected unix:PATH") }
            guard rest.utf8.count <= Self.maximumUnixPathLength else {
                throw invalid("socket path longer than \(Self.maximumUnixPathLength) octets")
            }
            guard !rest.utf8.contains(0) else { throw invalid("socket path contains a NUL") }
            self = .unix(path: String(rest))
        case "serial":
            guard !rest.isEmpty else { throw invalid("expected serial:DEVICE[@BAUD]") }
            var device = rest
            var baudRate = Self.defaultBaudRate
            if let at = rest.lastIndex(of: "@") {
                device = rest[..<at]
                let digits = rest[rest.index(after: at)...]
                guard let value = Self.decimal(digits), value > 0 else {
                    throw invalid("baud rate '\(digits)' is not a positive decimal number")
                }
                guard SerialBaudRate.termiosSpeed(for: value) != nil else {
                    throw invalid(
                        "baud rate \(value) is not one termios supports (\(SerialBaudRate.supportedRates.map(String.init).joined(separator: ", ")))"
                    )
                }
                baudRate = value
            }
            guard !device.isEmpty else { throw invalid("expected serial:DEVICE[@BAUD]") }
            guard !device.utf8.contains(0) else { throw invalid("device path contains a NUL") }
            self = .serial(device: String(device), baudRate: baudRate)
        case "sim":
            if !hasColon {
                self = .simulator(devices: [])
            } else {
                let devices = rest.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                guard !devices.contains(where: \.isEmpty) else { throw invalid("empty device name in sim:LIST") }
                self = .simulator(devices: devices)
            }
        case "replay":
            guard !rest.isEmpty else { throw invalid("expected replay:FILE") }
            self = .replay(path: String(rest))
        default:
            // `hciN`: the adapter name as the kernel spells it.
            if !hasColon, scheme.hasPrefix("hci"), scheme.count > 3 {
                self = .kernel(index: try Self.adapterIndex(scheme.dropFirst(3), uri: text))
                return
            }
            throw invalid(
                "unknown transport '\(scheme)' (expected hciN, hci-user:N, tcp:HOST:PORT, unix:PATH, serial:DEV[@BAUD], sim or replay:FILE)"
            )
        }
    }

    /// True for the URIs that carry raw HCI packets to our own host stack (everything but the
    /// kernel's own host, the simulator and replay).
    public var isRawHCI: Bool {
        switch self {
        case .userChannel, .tcp, .unix, .serial: return true
        case .kernel, .simulator, .replay: return false
        }
    }

    /// The canonical text form; parsing it gives back an equal value.
    public var description: String {
        switch self {
        case .kernel(let index): return "hci\(index)"
        case .userChannel(let index): return "hci-user:\(index)"
        case .tcp(let host, let port): return host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case .unix(let path): return "unix:\(path)"
        case .serial(let device, let baudRate): return "serial:\(device)@\(baudRate)"
        case .simulator(let devices): return devices.isEmpty ? "sim" : "sim:" + devices.joined(separator: ",")
        case .replay(let path): return "replay:\(path)"
        }
    }

    // MARK: - Fields

    /// A decimal number of ASCII digits only (no sign, no spaces), without overflow.
    static func decimal(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 9, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int(text)
    }

    static func adapterIndex(_ text: Substring, uri: String) throws(HCIError) -> UInt16 {
        // HCI_MAX_DEV is 16 in BlueZ but indexes keep growing as adapters come and go; the
        // kernel's index is a 16-bit value with 0xFFFF meaning "no device".
        guard let value = decimal(text), value < 0xFFFF else {
            throw .invalidTransportURI(uri: uri, reason: "adapter index '\(text)' is not a number below 65535")
        }
        return UInt16(value)
    }

    static func hostAndPort(_ text: Substring, uri: String) throws(HCIError) -> (String, UInt16) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            // [IPv6]:PORT
            guard let close = text.firstIndex(of: "]") else {
                throw .invalidTransportURI(uri: uri, reason: "unterminated '[' in IPv6 host")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            guard after.hasPrefix(":") else {
                throw .invalidTransportURI(uri: uri, reason: "expected :PORT after the IPv6 host")
            }
            portText = after.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw .invalidTransportURI(uri: uri, reason: "expected tcp:HOST:PORT")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else {
                throw .invalidTransportURI(uri: uri, reason: "an IPv6 host must be written in brackets: tcp:[::1]:PORT")
            }
        }
        guard !host.isEmpty else { throw .invalidTransportURI(uri: uri, reason: "empty host") }
        guard let port = decimal(portText), (1...65535).contains(port) else {
            throw .invalidTransportURI(uri: uri, reason: "port '\(portText)' is not a number from 1 to 65535")
        }
        return (String(host), UInt16(port))
    }
}

extension TransportURI {
    /// Opens the raw HCI transport this URI names. `connectTimeout` bounds connecting (TCP) and
    /// opening; `writeTimeout` bounds each send that the controller does not drain.
    ///
    /// `hciN` (the kernel's own host, reached through HCI and L2CAP sockets), `sim` and `replay`
    /// are not raw transports and throw `HCIError.unsupportedTransport` saying so. Throws
    /// `HCIError` (the H4 transports) or `KernelBluetoothError` (the user channel).
    public func openRawTransport(
        connectTimeout: Duration = .seconds(5),
        writeTimeout: Duration = .seconds(2),
        logger: Logger = .disabled
    ) async throws -> any HCITransport {
        switch self {
        case .tcp(let host, let port):
            return try await SocketTransport.connectTCP(
                host: host, port: port, connectTimeout: connectTimeout, writeTimeout: writeTimeout, logger: logger)
        case .unix(let path):
            return try await SocketTransport.connectUnix(path: path, writeTimeout: writeTimeout, logger: logger)
        case .serial(let device, let baudRate):
            return try await SerialTransport.open(
                device: device, baudRate: baudRate, writeTimeout: writeTimeout, logger: logger)
        case .userChannel(let index):
            return try await UserChannelTransport.open(adapter: index, writeTimeout: writeTimeout, logger: logger)
        case .kernel(let index):
            throw HCIError.unsupportedTransport(
                uri: description,
                reason: "hci\(index) uses the kernel's own HCI and L2CAP sockets, not a raw HCI transport; "
                    + "use hci-user:\(index) to run the whole host in user space (adapter down, not managed by bluetoothd)"
            )
        case .simulator:
            throw HCIError.unsupportedTransport(
                uri: description,
                reason: "the simulator is served in-process by the Emulator module, not a raw HCI transport")
        case .replay:
            throw HCIError.unsupportedTransport(
                uri: description, reason: "replay plays a recorded ATT peer, not a raw HCI transport")
        }
    }
}
