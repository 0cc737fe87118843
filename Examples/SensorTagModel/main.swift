// The SensorTag as a device model: its services declared as types, values typed, the framework
// discovering, reading and subscribing. Finds the tag by name, reads what it is and its battery,
// switches the motion sensor on and takes five accelerometer readings.
//
//   swift run sensortag-model            # the simulated SensorTag (--transport sim)
//   swift run sensortag-model hci0       # a real one, through the kernel
import BLE

/// Accelerometer X, Y, Z of a Movement Data value (18 octets): signed 16-bit at octets 6–11, ±2 g.
struct Acceleration: ByteDecodable {
    var x, y, z: Double
    init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        guard bytes.count == 18 else { throw ByteCodingError(expected: 18, actual: bytes.count, field: "movement data") }
        let g = (0..<3).map { Double(Int16(bitPattern: UInt16(bytes[6 + 2 * $0]) | UInt16(bytes[7 + 2 * $0]) << 8)) / 16384 }
        (x, y, z) = (g[0], g[1], g[2])
    }
}

struct SensorTag: BluetoothDevice {
    struct Movement: BluetoothService {
        static let id = BluetoothUUID("F000AA80-0451-4000-B000-000000000000")!
        @Characteristic(id: BluetoothUUID("F000AA81-0451-4000-B000-000000000000")!, notify: true) var data: Acceleration?
        @Characteristic(id: BluetoothUUID("F000AA82-0451-4000-B000-000000000000")!) var configuration: UInt16?
        @Characteristic(id: BluetoothUUID("F000AA83-0451-4000-B000-000000000000")!) var period: UInt8?
    }
    @Service var battery = BatteryService()
    @Service var information = DeviceInformationService()
    @Service var movement = Movement()
    @DeviceAction(\.disconnect) var disconnect: DisconnectAction
    init() {}
}

let adapter = try await Adapter.open(CommandLine.arguments.dropFirst().first ?? "sim")
var found: Advertisement?
for try await nearby in adapter.nearbyDevices(SensorTag.self, by: .name("CC2650 SensorTag")) {
    found = nearby.first
    break
}
let tag = try await adapter.connect(to: found!, as: SensorTag.self)
print("\(tag.information.manufacturerName ?? "?") \(tag.information.modelNumber ?? "?"), battery \(tag.battery.level ?? 0) %")
let readings = tag.movement.$data.values()
try await tag.movement.$period.write(10)  // 10 × 10 ms
try await tag.movement.$configuration.write(0x007F)  // gyroscope, accelerometer, magnetometer on
var taken = 0
for await a in readings {
    print("acceleration x \(a.x) g, y \(a.y) g, z \(a.z) g")
    taken += 1
    if taken == 5 { break }
}
await tag.disconnect()
await adapter.close()
