// A TI CC2650 SensorTag reader: scan for the movement service (AA80), connect, read the battery,
// switch the motion sensor on, take five readings, disconnect.
//
//   swift run sensortag-reader            # the simulated SensorTag (--transport sim)
//   swift run sensortag-reader hci0       # a real one, through the kernel
import BLE

#if canImport(Glibc)
import Glibc
#endif

let transport = CommandLine.arguments.dropFirst().first ?? "sim"
let movementData = BluetoothUUID("F000AA81-0451-4000-B000-000000000000")!
let movementConfiguration = BluetoothUUID("F000AA82-0451-4000-B000-000000000000")!
let movementPeriod = BluetoothUUID("F000AA83-0451-4000-B000-000000000000")!

func run() async throws(BLEError) -> Int32 {
    let adapter = try await Adapter.open(transport)
    print("scanning on \(transport) for a SensorTag (service AA80)…")
    var found: Advertisement?
    do {
        for try await advertisement in await adapter.scan(ScanOptions(services: [0xAA80], duration: .seconds(15))) {
            found = advertisement
            break
        }
    } catch {
        print("scan failed: \(error)")
    }
    guard let found else {
        print("no SensorTag within 15 s")
        await adapter.close()
        return 1
    }
    let tag = try await adapter.connect(to: found)
    print("connected to \(tag.peer), ATT_MTU \(await tag.mtu)")
    print("battery: \(try await tag.read(0x2A19).first.map { "\($0) %" } ?? "empty")")
    try await tag.write([10], to: movementPeriod)  // 10 × 10 ms
    let readings = try await tag.subscribe(to: movementData)
    try await tag.write([0x7F, 0x00], to: movementConfiguration)  // gyroscope, accelerometer, magnetometer
    var taken = 0
    while taken < 5, let reading = try await readings.next(timeout: .seconds(5)) {
        // Accelerometer X, Y, Z: signed 16-bit little-endian at octets 6–11; configuration bits
        // 8–9 are 0, the ±2 g range.
        let axes = (0..<3).map { axis -> Double in
            let raw = Int16(bitPattern: UInt16(reading.value[6 + 2 * axis]) | UInt16(reading.value[7 + 2 * axis]) << 8)
            return Double(raw) / (32768.0 / 2.0)
        }
        let time = reading.time.components
        print("t=\(time.seconds).\(String(time.attoseconds / 1_000_000_000_000_000).leftPadded(3)) s  "
            + "acceleration x \(axes[0]) g, y \(axes[1]) g, z \(axes[2]) g")
        taken += 1
    }
    await readings.cancel()
    await tag.disconnect()
    await adapter.close()
    print(taken == 5 ? "five readings, disconnected" : "only \(taken) readings within 5 s each")
    return taken == 5 ? 0 : 1
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

do {
    exit(try await run())
} catch {
    print("sensortag-reader: \(error)")
    exit(1)
}
