// A central and a peripheral on one simulated air (or two adapters): one advertises a Battery
// and an LED service, the other finds it, connects, reads, writes and is notified.
//
//   swift run central-peripheral              # two simulated adapters in this process
//   swift run central-peripheral hci2 hci0    # advertise on hci2, connect from hci0 (kernel)
import BLE

#if canImport(Glibc)
import Glibc
#endif

let ledService = BluetoothUUID("19B10000-E8F2-537E-4F6C-D104768A1214")!
let ledState = BluetoothUUID("19B10001-E8F2-537E-4F6C-D104768A1214")!
let arguments = Array(CommandLine.arguments.dropFirst())

func run() async throws(BLEError) -> Int32 {
    let simulation: Simulation?
    let peripheralSide: Adapter
    let centralSide: Adapter
    if arguments.count == 2 {
        simulation = nil
        peripheralSide = try await Adapter.open(arguments[0])
        centralSide = try await Adapter.open(arguments[1])
    } else {
        let air: Simulation
        do {
            air = try await Simulation.start(devices: [])
        } catch {
            throw BLEError("the simulation did not start: \(error)", kind: "transport")
        }
        simulation = air
        peripheralSide = try await Adapter.simulated(air)
        centralSide = try await Adapter.simulated(air)
    }

    // The peripheral: Battery Level (read, notify) and an LED (read, write).
    let lamp = try await peripheralSide.advertise(
        name: "example-lamp",
        services: [
            ServiceDefinition(
                uuid: 0x180F,
                characteristics: [CharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [87])]),
            ServiceDefinition(
                uuid: ledService,
                characteristics: [CharacteristicDefinition(uuid: ledState, properties: [.read, .write], value: [0])]),
        ])
    print("peripheral: advertising as \(peripheralSide.address)")
    let writes = lamp.writes()
    let watcher = Task {
        for await write in writes { print("peripheral: \(write.peer.address) set the LED to \(write.value)") }
    }

    // The central: find it by name, connect, read, write, subscribe.
    var seen: Advertisement?
    do {
        for try await advertisement in await centralSide.scan(ScanOptions(name: "example-lamp", duration: .seconds(15))) {
            seen = advertisement
            break
        }
    } catch {
        print("scan failed: \(error)")
    }
    guard let seen else {
        print("central: example-lamp not found within 15 s")
        return 1
    }
    let device = try await centralSide.connect(to: seen)
    print("central: connected to \(device.peer), battery \(try await device.read(0x2A19)) ")
    try await device.write([1], to: ledState)
    print("central: LED reads \(try await device.read(ledState))")
    let battery = try await device.subscribe(to: 0x2A19)
    try await lamp.notify([86], for: 0x2A19)
    let notified = try await battery.next(timeout: .seconds(5))
    print("central: notified battery \(notified.map { "\($0.value)" } ?? "nothing within 5 s")")

    await device.disconnect()
    await lamp.stop()
    watcher.cancel()
    await centralSide.close()
    await peripheralSide.close()
    await simulation?.stop()
    return notified?.value == [86] ? 0 : 1
}

do {
    exit(try await run())
} catch {
    print("central-peripheral: \(error)")
    exit(1)
}
