// swift-tools-version:6.0
import PackageDescription

// The examples depend on the library as a user's package does: by path here (one folder up),
// by URL in an app. SwiftPM names a path dependency after its folder, whatever this clone's
// folder is called, so the name is taken from the path.
let library = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "SwiftBLEHost")

let package = Package(
    name: "BLEExamples",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "sensortag-reader", dependencies: [.product(name: "BLE", package: library)], path: "SensorTagReader"),
        .executableTarget(
            name: "bluefruit-uart", dependencies: [.product(name: "BLE", package: library)], path: "BluefruitUART"),
        .executableTarget(
            name: "sensortag-model", dependencies: [.product(name: "BLE", package: library)], path: "SensorTagModel"),
        .executableTarget(
            name: "heart-rate-model", dependencies: [.product(name: "BLE", package: library)], path: "HeartRateModel"),
        .executableTarget(
            name: "central-peripheral", dependencies: [.product(name: "BLE", package: library)],
            path: "CentralPeripheral"),
    ],
    swiftLanguageModes: [.v6]
)
