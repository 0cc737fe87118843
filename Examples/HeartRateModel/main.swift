// A heart-rate monitor as a device model built from the standard services, retrieved: the
// adapter connects whenever it is in range and reconnects after a loss, and the values keep
// coming with no code here. Prints ten measurements, resets the energy expended, disconnects.
//
//   swift run heart-rate-model                          # the simulated monitor (sim:heartrate)
//   swift run heart-rate-model hci0 AA:BB:CC:DD:EE:FF/random
import BLE

struct HeartRateMonitor: BluetoothDevice {
    @Service var heartRate = HeartRateService()
    @Service var battery = BatteryService()
    @Service(required: false) var information = DeviceInformationService()
    @DeviceState(\.state) var state: PeripheralState
    @DeviceAction(\.connect) var connect: ConnectAction
    @DeviceAction(\.disconnect) var disconnect: DisconnectAction
    init() {}
}

let arguments = CommandLine.arguments.dropFirst()
let adapter = try await Adapter.open(arguments.first ?? "sim:heartrate")
let peer = PeerAddress(arguments.dropFirst().first ?? "D1:7E:A8:70:00:01/random")!
let monitor = await adapter.retrieve(HeartRateMonitor.self, peer: peer)
let measurements = monitor.heartRate.$measurement.values()
try await monitor.connect()  // waits until it is in range and connected
print("\(monitor.information.modelNumber ?? "a monitor") on the \(monitor.heartRate.bodySensorLocation?.description ?? "?"), battery \(monitor.battery.level ?? 0) %")
var count = 0
for await measurement in measurements {
    print(measurement)
    count += 1
    if count == 10 { break }
}
try await monitor.heartRate.$controlPoint.write(HeartRateService.resetEnergyExpended)
await monitor.disconnect()
await adapter.close()
