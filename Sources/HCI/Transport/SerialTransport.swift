import Bluetooth

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The termios speed constants, as a pure mapping from a baud rate in bits per second.
public enum SerialBaudRate {
    /// The rates Linux termios names (`B50` … `B4000000`), ascending.
    public static let supportedRates: [Int] = table.map(\.rate)

    /// The `speed_t` constant for `rate`, or `nil` when termios has none (no custom rates:
    /// those need the BOTHER/termios2 ioctl, which HCI UART firmware does not require).
    public static func termiosSpeed(for rate: Int) -> speed_t? {
        table.first { $0.rate == rate }?.speed
    }

    private static let table: [(rate: Int, speed: speed_t)] = [
        (50, speed_t(B50)), (75, speed_t(B75)), (110, speed_t(B110)), (134, speed_t(B134)),
        (150, speed_t(B150)), (200, speed_t(B200)), (300, speed_t(B300)), (600, speed_t(B600)),
        (1200, speed_t(B1200)), (1800, speed_t(B1800)), (2400, speed_t(B2400)), (4800, speed_t(B4800)),
        (9600, speed_t(B9600)), (19200, speed_t(B19200)), (38400, speed_t(B38400)),
        (57600, speed_t(B57600)), (115_200, speed_t(B115200)), (230_400, speed_t(B230400)),
        (460_800, speed_t(B460800)), (500_000, speed_t(B500000)), (576_000, speed_t(B576000)),
        (921_600, speed_t(B921600)), (1_000_000, speed_t(B1000000)), (1_152_000, speed_t(B1152000)),
        (1_500_000, speed_t(B1500000)), (2_000_000, speed_t(B2000000)), (2_500_000, speed_t(B2500000)),
        (3_000_000, speed_t(B3000000)), (3_500_000, speed_t(B3500000)), (4_000_000, speed_t(B4000000)),
    ]
}

/// H4 over a UART (Zephyr `hci_uart`, Nordic HCI firmware, ESP32 HCI): the tty in raw mode,
/// 8 data bits, no parity, one stop bit, RTS/CTS hardware flow control (the H4 transport
/// requires it: Core Spec 5.4, Vol 4, Part A, §1).
public enum SerialTransport {
    /// The UART speed used when none is given: what Zephyr's `hci_uart` and Nordic's HCI
    /// firmware default to.
    public static let defaultBaudRate = 1_000_000

    /// Opens `device` at `baudRate` (one of `SerialBaudRate.supportedRates`), configures it and
    /// discards anything already buffered in either direction.
    public static func open(
        device: String, baudRate: Int = SerialTransport.defaultBaudRate, flowControl: Bool = true,
        writeTimeout: Duration = .seconds(2), logger: Logger = .disabled
    ) async throws(HCIError) -> FileDescriptorTransport {
        let uri = "serial:\(device)@\(baudRate)"
        guard let speed = SerialBaudRate.termiosSpeed(for: baudRate) else {
            throw .invalidTransportURI(uri: uri, reason: "baud rate \(baudRate) is not one termios supports")
        }
        let descriptor = try await offCooperativePool { () throws(HCIError) -> Int32 in
            try openBlocking(device: device, speed: speed, flowControl: flowControl, uri: uri)
        }
        logger.debug("\(uri): open")
        return FileDescriptorTransport(
            adopting: descriptor, framing: .h4Stream, name: uri, writeTimeout: writeTimeout, logger: logger)
    }

    /// The termios settings for an H4 UART, applied to `settings` as read from the device.
    static func configure(_ settings: inout termios, speed: speed_t, flowControl: Bool) {
        cfmakeraw(&settings)
        settings.c_cflag &= ~tcflag_t(CSIZE | PARENB | CSTOPB)
        settings.c_cflag |= tcflag_t(CS8 | CLOCAL | CREAD)
        if flowControl {
            settings.c_cflag |= tcflag_t(CRTSCTS)
        } else {
            settings.c_cflag &= ~tcflag_t(CRTSCTS)
        }
        settings.c_iflag &= ~tcflag_t(IXON | IXOFF | IXANY)
        // Reads return what is there (the descriptor is non-blocking and readiness-driven).
        withUnsafeMutableBytes(of: &settings.c_cc) { controls in
            controls[Int(VMIN)] = 1
            controls[Int(VTIME)] = 0
        }
        cfsetispeed(&settings, speed)
        cfsetospeed(&settings, speed)
    }

    static func openBlocking(device: String, speed: speed_t, flowControl: Bool, uri: String) throws(HCIError) -> Int32 {
        // O_NONBLOCK also keeps open() from waiting for carrier detect.
        let descriptor = Glibc.open(device, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system(operation: "\(uri): open \(device)", errno: .current) }
        var succeeded = false
        defer { if !succeeded { _ = close(descriptor) } }

        var settings = termios()
        guard tcgetattr(descriptor, &settings) == 0 else {
            throw .system(operation: "\(uri): tcgetattr (is \(device) a serial device?)", errno: .current)
        }
        configure(&settings, speed: speed, flowControl: flowControl)
        guard tcsetattr(descriptor, TCSANOW, &settings) == 0 else {
            throw .system(operation: "\(uri): tcsetattr", errno: .current)
        }
        _ = tcflush(descriptor, TCIOFLUSH)
        succeeded = true
        return descriptor
    }
}
