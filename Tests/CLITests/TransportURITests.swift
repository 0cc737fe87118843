import BLE
import HCI
import Testing

@testable import GATTClientCLI

@Suite("Transport URI parsing")
struct TransportURITests {
    @Test(arguments: [
        ("hci0", TransportURI.kernel(index: 0)),
        ("hci12", .kernel(index: 12)),
        ("hci:1", .kernel(index: 1)),
        ("hci-user:0", .userChannel(index: 0)),
        ("hci-user:3", .userChannel(index: 3)),
        ("tcp:127.0.0.1:9000", .tcp(host: "127.0.0.1", port: 9000)),
        ("tcp:localhost:1", .tcp(host: "localhost", port: 1)),
        ("tcp:[::1]:65535", .tcp(host: "::1", port: 65535)),
        ("unix:/tmp/bt-server-bredrle", .unix(path: "/tmp/bt-server-bredrle")),
        ("unix:relative.sock", .unix(path: "relative.sock")),
        ("serial:/dev/ttyACM0", .serial(device: "/dev/ttyACM0", baudRate: 1_000_000)),
        ("serial:/dev/ttyUSB1@115200", .serial(device: "/dev/ttyUSB1", baudRate: 115_200)),
        (
            "serial:/dev/serial/by-id/usb-ZEPHYR@ABC-if00@2000000",
            .serial(device: "/dev/serial/by-id/usb-ZEPHYR@ABC-if00", baudRate: 2_000_000)
        ),
        ("sim", .simulator(devices: [])),
        ("sim:sensortag,bluefruit", .simulator(devices: ["sensortag", "bluefruit"])),
        ("replay:Fixtures/session.btsnoop", .replay(path: "Fixtures/session.btsnoop")),
    ])
    func parses(text: String, expected: TransportURI) throws {
        let parsed = try TransportURI(parsing: text)
        #expect(parsed == expected)
        // The canonical form parses back to the same value.
        #expect(try TransportURI(parsing: parsed.description) == parsed)
    }

    @Test(arguments: [
        ("", "empty transport"),
        ("hci", "unknown transport"),
        ("hci:", "adapter index"),
        ("hcix", "adapter index"),
        ("hci-1", "adapter index"),
        ("hci:65535", "adapter index"),
        ("hci-user", "expected hci-user:N"),
        ("hci-user:", "adapter index"),
        ("hci-user:+1", "adapter index"),
        ("tcp", "expected tcp:HOST:PORT"),
        ("tcp:host", "expected tcp:HOST:PORT"),
        ("tcp::9000", "empty host"),
        ("tcp:host:0", "port"),
        ("tcp:host:65536", "port"),
        ("tcp:host:12ab", "port"),
        ("tcp:host:", "port"),
        ("tcp:::1:9000", "brackets"),
        ("tcp:[::1:9000", "unterminated"),
        ("tcp:[::1]9000", "expected :PORT"),
        ("unix:", "expected unix:PATH"),
        ("serial:", "expected serial:DEVICE"),
        ("serial:@115200", "expected serial:DEVICE"),
        ("serial:/dev/ttyS0@", "baud rate"),
        ("serial:/dev/ttyS0@fast", "baud rate"),
        ("serial:/dev/ttyS0@0", "baud rate"),
        ("serial:/dev/ttyS0@123456", "not one termios supports"),
        ("sim:sensortag,,bluefruit", "empty device name"),
        ("replay:", "expected replay:FILE"),
        ("bluetooth:0", "unknown transport"),
    ])
    func rejects(text: String, reasonFragment: String) {
        #expect {
            try TransportURI(parsing: text)
        } throws: { error in
            guard case .invalidTransportURI(let uri, let reason)? = error as? HCIError else { return false }
            return uri == text && reason.contains(reasonFragment)
        }
    }

    @Test func unixPathLengthIsBoundedBySockaddrUn() throws {
        let longest = "/" + String(repeating: "a", count: TransportURI.maximumUnixPathLength - 1)
        #expect(try TransportURI(parsing: "unix:" + longest) == .unix(path: longest))
        #expect(throws: HCIError.self) { try TransportURI(parsing: "unix:" + longest + "a") }
    }

    @Test func rawTransportsAreTheOnesOurHostDrives() throws {
        #expect(try TransportURI(parsing: "tcp:h:1").isRawHCI)
        #expect(try TransportURI(parsing: "unix:/s").isRawHCI)
        #expect(try TransportURI(parsing: "serial:/dev/ttyS0").isRawHCI)
        #expect(try TransportURI(parsing: "hci-user:0").isRawHCI)
        #expect(try !TransportURI(parsing: "hci0").isRawHCI)
        #expect(try !TransportURI(parsing: "sim").isRawHCI)
        #expect(try !TransportURI(parsing: "replay:x").isRawHCI)
    }

    @Test func kernelURIIsNotARawTransport() async {
        await #expect {
            _ = try await TransportURI.kernel(index: 0).openRawTransport()
        } throws: { error in
            guard case .unsupportedTransport(let uri, let reason)? = error as? HCIError else { return false }
            return uri == "hci0" && reason.contains("kernel") && reason.contains("hci-user:0")
        }
    }

    @Test(arguments: [
        (9600, true), (115_200, true), (1_000_000, true), (3_000_000, true), (4_000_000, true), (14_400, false),
        (0, false),
    ])
    func baudRates(rate: Int, supported: Bool) {
        #expect((SerialBaudRate.termiosSpeed(for: rate) != nil) == supported)
    }

    @Test func baudConstantsAreDistinctAndOrdered() {
        let speeds = SerialBaudRate.supportedRates.compactMap(SerialBaudRate.termiosSpeed(for:))
        #expect(speeds.count == SerialBaudRate.supportedRates.count)
        #expect(Set(speeds).count == speeds.count)
        #expect(SerialBaudRate.supportedRates == SerialBaudRate.supportedRates.sorted())
        #expect(SerialBaudRate.termiosSpeed(for: 115_200) == speed_t(B115200))
        #expect(SerialBaudRate.termiosSpeed(for: 1_000_000) == speed_t(B1000000))
    }
}

#if canImport(Glibc)
    import Glibc
#endif
