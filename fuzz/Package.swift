// swift-tools-version:6.0
// libFuzzer harnesses for the stack (issue 9). A separate package so that a plain
// `swift build` / `swift test` of the main package never builds them. Build and run with
// `fuzz/run.sh` (it passes `-sanitize=fuzzer,address`); see fuzz/README.md.
import PackageDescription

// The main package is the parent directory; SwiftPM names a path dependency after its
// directory (a worktree or checkout may be called anything), so derive that name here.
let rootIdentity = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "main").lowercased()

let package = Package(
    name: "SwiftBLEHostFuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .target(name: "CFuzzDriver", path: "Sources/CFuzzDriver"),
        .executableTarget(
            name: "BLEFuzz",
            dependencies: ["CFuzzDriver"]
                + ["Bluetooth", "HCI", "ATT", "L2CAP", "Security", "Host", "Kernel", "GATT", "Capture", "GATTClientCLI"].map {
                    .product(name: $0, package: rootIdentity)
                },
            path: "Sources/BLEFuzz"
        )
    ],
    swiftLanguageModes: [.v6]
)
