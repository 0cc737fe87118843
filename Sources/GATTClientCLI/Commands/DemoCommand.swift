import BLE
import Host
import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import L2CAP

/// `demo`: the whole job against the built-in simulated devices (our unchanged host over the
/// in-process virtual controller): scan, connect to the SensorTag, discover it, read its device
/// information, print decoded readings of two sensors for a few seconds, then a round trip
/// through the Bluefruit's UART.
struct DemoCommand {
    var sensorSeconds: Double = 3

    func run(options: GlobalOptions, output: inout BufferedOutput) async throws {
        let simulation = try await SimulatedCentral.open(.simulator(devices: []), record: options.record)
        let shared = KeepOpen(simulation)
        let tag = PeerAddress(address: EmulatedSensorTag.defaultAddress, type: .public)
        let board = PeerAddress(address: EmulatedBluefruit.defaultAddress, type: .random)
        var step = 0
        func header(_ title: String, _ output: inout BufferedOutput) {
            step += 1
            guard !options.json else { return }
            output.writeLine((step == 1 ? "" : "\n") + "== \(step). \(title)")
            output.flush()
        }
        do {
            header("scan (2 s): the simulated SensorTag and Bluefruit advertise", &output)
            var scan = ScanCommandOptions()
            scan.duration = 2
            try await ScanCommand(options: scan, central: shared).run(global: options, output: &output)

            header("connect to the SensorTag at \(tag) and discover everything", &output)
            try await ServicesCommand(peer: tag, central: shared).run(options: options, replayMatchAny: false, output: &output)

            header("device information", &output)
            try await readDeviceInformation(tag, central: shared, options: options, output: &output)

            header("IR temperature and humidity every 500 ms for \(Int(sensorSeconds)) s (switched off afterwards)", &output)
            var sensors = SensorTagCommand(peer: tag, central: shared)
            sensors.sensors = [.ir, .humidity]
            sensors.periodMilliseconds = 500
            sensors.duration = sensorSeconds
            try await sensors.run(options: options, replayMatchAny: false, output: &output)

            header("Bluefruit LE UART at \(board): what we write to RX comes back on TX", &output)
            let text = "Hello, Bluefruit! F L R S"
            if !options.json { output.writeLine("> " + text) }
            var uart = UARTCommand(peer: board, central: shared, send: Array(text.utf8), duration: 1)
            uart.echoPrefix = options.json ? nil : "< "
            try await uart.run(options: options, replayMatchAny: false, output: &output)
            if !options.json { output.writeLine("") }
        } catch {
            await simulation.close()
            throw error
        }
        await simulation.close()
    }

    private func readDeviceInformation(
        _ peer: PeerAddress, central: any Central, options: GlobalOptions, output: inout BufferedOutput
    ) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: false, central: central)
        let strings: [BluetoothUUID] = [0x2A29, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28]
        do {
            for uuid in strings {
                guard let entry = try await session.client.read(uuid: uuid).first else { continue }
                let text = String(decoding: entry.value, as: UTF8.self)
                if options.json {
                    // The same `value` line `read` prints.
                    var json = JSONWriter()
                    json.beginObject()
                    json.field("kind", "value")
                    json.field("handle", Int(entry.handle))
                    json.field("uuid", jsonUUID(uuid))
                    json.field("name", GATTNames.name(for: uuid) ?? jsonUUID(uuid))
                    json.field("value", hex: entry.value)
                    if let decoded = ValueText.decoded(entry.value, uuid: uuid) { json.field("decoded", decoded) }
                    json.endObject()
                    output.writeLine(bytes: json.bytes)
                } else {
                    output.writeLine((GATTNames.name(for: uuid) ?? jsonUUID(uuid)).padding(toLength: 28) + visible(text))
                }
            }
        } catch {
            await session.close()
            throw CommandFailure.from(error, doing: "reading the device information of \(peer)")
        }
        await session.close()
    }
}

/// Shares one transport between the demo's steps: each step's `close()` leaves it open.
private struct KeepOpen: Central, Scanner {
    let base: SimulatedCentral
    init(_ base: SimulatedCentral) { self.base = base }
    var recordsHCI: Bool { base.recordsHCI }
    func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel {
        try await base.connect(to: peer, timeout: timeout)
    }
    func link(to peer: PeerAddress, timeout: Duration) async throws -> CentralLink {
        try await base.link(to: peer, timeout: timeout)
    }
    func scan(_ options: LEScanParameters) async throws -> AsyncThrowingStream<ScanEvent, any Error> {
        try await base.scan(options)
    }
    func close() async {}
}
