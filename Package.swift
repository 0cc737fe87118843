// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SwiftBLEHost",
    products: [
        .library(name: "Bluetooth", targets: ["Bluetooth"]),
        .library(name: "HCI", targets: ["HCI"]),
        .library(name: "ATT", targets: ["ATT"]),
        .library(name: "L2CAP", targets: ["L2CAP"]),
        .library(name: "GATT", targets: ["GATT"]),
        .library(name: "Capture", targets: ["Capture"]),
        .library(name: "Security", targets: ["Security"]),
        .library(name: "Host", targets: ["Host"]),
        .library(name: "Kernel", targets: ["Kernel"]),
        .library(name: "Emulator", targets: ["Emulator"]),
        .library(name: "BLE", targets: ["BLE"]),
        .library(name: "GATTClientCLI", targets: ["GATTClientCLI"]),
        .executable(name: "gattclient", targets: ["gattclient"]),
    ],
    targets: [
        .target(name: "Bluetooth"),
        // JSON, atomic files, the process environment, detached threads: for the library's own
        // modules (caches, databases, bonds later), `package` API, not a product for users.
        .target(name: "SystemSupport", dependencies: ["Bluetooth"]),
        .target(
            name: "CHCI",
            linkerSettings: [.linkedLibrary("bluetooth")]
        ),
        .target(
            name: "CCrypto",
            // libcrypto is opened with dlopen on first use (see chcrypto.c); libdl for glibc < 2.34.
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // libmosquitto (Debian's libmosquitto-dev for the header), opened with dlopen on first
        // use: only `gateway --mqtt` needs it.
        .target(name: "CMosquitto", linkerSettings: [.linkedLibrary("dl")]),
        // SIGINT and SIGTERM onto a pipe (a sigaction handler): the CLI's Ctrl-C.
        .target(name: "CSignals"),
        // An MQTT client over it for the gateway: a bounded outbox, QoS 1, reconnects.
        .target(name: "MQTT", dependencies: ["Bluetooth", "CMosquitto"]),
        .target(name: "HCI", dependencies: ["Bluetooth", "SystemSupport"]),
        .target(name: "ATT", dependencies: ["Bluetooth"]),
        .target(name: "L2CAP", dependencies: ["Bluetooth", "HCI", "ATT"]),
        .target(name: "GATT", dependencies: ["Bluetooth", "SystemSupport", "ATT", "CCrypto"]),
        // LE security: the SMP codec and the Pairing Not Supported responder; pairing and bonds later.
        .target(name: "Security", dependencies: ["Bluetooth", "L2CAP", "CCrypto"]),
        // GAP: LEHost (scanning, aggregation and filters, connecting, advertising, accepted
        // connections, connection parameters) over HCI and user-space L2CAP.
        .target(name: "Host", dependencies: ["Bluetooth", "HCI", "ATT", "L2CAP", "Security"]),
        // Everything that talks to the Linux kernel through CHCI: HCI raw/user/monitor sockets,
        // the management channel, L2CAP ATT sockets, kernel scanning and advertising.
        .target(name: "Kernel", dependencies: ["Bluetooth", "CHCI", "HCI", "ATT", "L2CAP", "Host"]),
        // btsnoop/pcap/pcapng files, their decoding to ATT items, recording and replay.
        .target(name: "Capture", dependencies: ["Bluetooth", "SystemSupport", "HCI", "ATT", "L2CAP"]),
        .target(name: "Emulator", dependencies: ["Bluetooth", "HCI", "ATT", "L2CAP", "Security", "Host", "GATT"]),
        // The library's front door: one Adapter over every transport, Peripheral, LocalPeripheral.
        .target(
            name: "BLE",
            dependencies: ["Bluetooth", "SystemSupport", "HCI", "ATT", "L2CAP", "GATT", "Security", "Capture", "Host", "Kernel", "Emulator"]
        ),
        .target(
            name: "GATTClientCLI",
            dependencies: [
                "BLE", "Bluetooth", "SystemSupport", "HCI", "ATT", "L2CAP", "GATT", "Security", "Capture", "Host", "Kernel", "Emulator", "MQTT",
                "CSignals",
            ]
        ),
        // Release: the Swift runtime linked in (issue 10: start-up ~1 ms instead of ~6 ms of
        // dynamic loading); no module of gattclient imports Foundation, so none is linked.
        .executableTarget(
            name: "gattclient", dependencies: ["GATTClientCLI"],
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]
        ),
        // Benchmarks (issue 10): `swift run -c release gattbench`; see benchmarks/README.md.
        .target(name: "CGattBenchMalloc", path: "Sources/gattbench/CMallocCounter"),
        .executableTarget(
            name: "gattbench",
            dependencies: ["Bluetooth", "HCI", "ATT", "L2CAP", "GATT", "Capture", "Host", "BLE", "CGattBenchMalloc", "MQTT"],
            path: "Sources/gattbench/Swift"
        ),
        // Test helpers shared by the test targets (child processes spawned without leaks).
        .target(name: "CTestSupport", path: "Tests/CTestSupport"),
        .target(name: "TestSupport", dependencies: ["Bluetooth", "CTestSupport"], path: "Tests/TestSupport"),
        .testTarget(name: "BluetoothTests", dependencies: ["Bluetooth"]),
        .testTarget(name: "MQTTTests", dependencies: ["TestSupport", "MQTT"]),
        .testTarget(name: "SystemSupportTests", dependencies: ["TestSupport", "Bluetooth", "SystemSupport"]),
        .testTarget(name: "HCITests", dependencies: ["TestSupport", "Bluetooth", "HCI"]),
        .testTarget(name: "ATTTests", dependencies: ["TestSupport", "Bluetooth", "SystemSupport", "ATT"]),
        .testTarget(name: "L2CAPTests", dependencies: ["TestSupport", "Bluetooth", "HCI", "ATT", "L2CAP", "Security"]),
        .testTarget(name: "CaptureTests", dependencies: ["TestSupport", "Bluetooth", "HCI", "ATT", "L2CAP", "GATT", "Capture"]),
        .testTarget(name: "SecurityTests", dependencies: ["TestSupport", "Bluetooth", "L2CAP", "Security"]),
        .testTarget(name: "HostTests", dependencies: ["TestSupport", "Bluetooth", "HCI", "ATT", "L2CAP", "Host", "Emulator"]),
        .testTarget(name: "KernelTests", dependencies: ["TestSupport", "Bluetooth", "HCI", "ATT", "L2CAP", "Kernel"]),
        .testTarget(name: "GATTTests", dependencies: ["TestSupport", "Bluetooth", "SystemSupport", "ATT", "GATT"]),
        .testTarget(name: "InteropTests", dependencies: ["TestSupport", "Bluetooth", "HCI", "ATT", "L2CAP", "Host", "GATT", "BLE", "GATTClientCLI"]),
        .testTarget(name: "EmulatorTests", dependencies: ["TestSupport", "Bluetooth", "HCI", "ATT", "L2CAP", "Host", "GATT", "Emulator"]),
        .testTarget(name: "CLITests", dependencies: ["TestSupport", "CTestSupport", "SystemSupport", "GATTClientCLI", "HCI", "ATT", "L2CAP", "Host", "Kernel", "GATT", "Capture", "Emulator", "Security", "BLE"]),
        .testTarget(name: "BLETests", dependencies: ["TestSupport", "ATT", "SystemSupport", "Security", "Emulator", "BLE"]),
        // Hostile-peer and resource-bound tests (issue 9).
        .testTarget(name: "RobustnessTests", dependencies: ["TestSupport", "Bluetooth", "HCI", "ATT", "L2CAP", "GATT"]),
    ],
    swiftLanguageModes: [.v6]
)
