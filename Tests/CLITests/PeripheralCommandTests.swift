import BLE
import Kernel
import Host
import ATT
import Bluetooth
import Emulator
import Foundation
import GATT
import HCI
import L2CAP
import Testing
import TestSupport
@testable import GATTClientCLI

@Suite("CLI: peripheral command line")
struct PeripheralCommandLineTests {
    @Test func devicesDatabaseAndOptionsParse() throws {
        guard case .peripheral(let tag) = try parse(["peripheral", "sensortag", "--transport", "tcp:localhost:9000"]).command
        else { Issue.record("not a peripheral command"); return }
        #expect(tag.device == .sensortag)
        #expect(tag.effectiveMTU == 23)
        guard case .peripheral(let board) = try parse(["peripheral", "bluefruit", "--mtu", "185", "--duration", "5"]).command
        else { Issue.record("not a peripheral command"); return }
        #expect(board.device == .bluefruit)
        #expect(board.effectiveMTU == 185)
        #expect(board.duration == 5)
        guard case .peripheral(let file) = try parse(["peripheral", "--database=db.json"]).command
        else { Issue.record("not a peripheral command"); return }
        #expect(file.device == .database(path: "db.json"))
        #expect(file.effectiveMTU == 517)
    }

    @Test(arguments: [
        (["peripheral"], "peripheral needs sensortag, bluefruit or --database FILE.json"),
        (["peripheral", "toaster"], "peripheral serves sensortag, bluefruit or --database FILE.json, not 'toaster'"),
        (["peripheral", "sensortag", "--database", "x.json"], "peripheral takes a device or --database, not both"),
        (["peripheral", "sensortag", "--mtu", "22"], "--mtu needs an ATT_MTU from 23 to 517, not '22'"),
        (["peripheral", "sensortag", "--mtu", "600"], "--mtu needs an ATT_MTU from 23 to 517, not '600'"),
        (["peripheral", "bluefruit", "--count", "3"], "peripheral does not know --count"),
        (["peripheral", "bluefruit", "--duration", "0"], "--duration needs a positive number of seconds up to 31536000 (365 days), not '0'"),
    ])
    func badCommandLinesAreUsageErrors(_ arguments: [String], _ message: String) {
        #expect(throws: UsageError(message)) { try parse(arguments) }
    }

    @Test(arguments: [
        ("notify 0x0025 0102", PeripheralControl.notify(handle: 0x25, value: [1, 2])),
        ("indicate 37 01:02", PeripheralControl.indicate(handle: 0x25, value: [1, 2])),
        ("  set\t0x0003   ff ", PeripheralControl.set(handle: 3, value: [0xFF])),
    ])
    func stdinLinesParse(_ line: String, _ expected: PeripheralControl) throws {
        #expect(try PeripheralControl.parse(line) == expected)
    }

    @Test(arguments: [
        ("notify 0x0025", "notify needs HANDLE and a hex VALUE"),
        ("read 0x0025 01", "unknown command 'read' (notify|indicate|set HANDLE HEX)"),
        ("set 0x0000 01", "set needs a handle from 0x0001 to 0xffff (like 0x0021 or 33), not '0x0000'"),
        ("notify 0x0025 0g", "'0g' is not hex (like 0100 or 01:00)"),
    ])
    func badStdinLinesAreAnsweredWithTheError(_ line: String, _ message: String) throws {
        #expect(throws: UsageError(message)) { try PeripheralControl.parse(line) }
        #expect(try PeripheralControl.parse("   ") == nil)
    }

    @Test func aLoadedDatabaseAdvertisesItsServicesAndName() throws {
        let database = try AttributeDatabase(services: [
            StandardServices.genericAccess(deviceName: "Thermo"),
            ServiceDefinition(uuid: .bit16(0x180F), characteristics: [
                CharacteristicDefinition(uuid: .bit16(0x2A19), properties: [.read], value: [50])
            ]),
            ServiceDefinition(uuid: .bit16(0x181A), characteristics: []),
        ])
        let advertising = PeripheralDevice.advertisingParameters(for: database)
        #expect(advertising.advertisingData == [0x02, 0x01, 0x06, 0x05, 0x03, 0x0F, 0x18, 0x1A, 0x18])
        #expect(advertising.scanResponseData == [0x07, 0x09] + Array("Thermo".utf8))
        #expect(advertising.invalidity == nil)
    }

    @Test func stdinCommandsWithoutACentralAreAnsweredAndStored() async throws {
        let device = try PeripheralDevice.make(PeripheralOptions(device: .bluefruit), address: .zero)
        let command = PeripheralCommand(options: PeripheralOptions(device: .bluefruit))
        let tx = try #require(await device.valueHandle(of: NordicUART.tx))
        #expect(await command.perform("notify \(tx) 6869", on: device.gatt) == .error("no central is connected (value stored)"))
        #expect(await device.gatt.value(at: tx) == [0x68, 0x69])
        #expect(await command.perform("set \(tx) 41", on: device.gatt) == .ok)
        #expect(await device.gatt.value(at: tx) == [0x41])
        #expect(await command.perform("", on: device.gatt) == nil)
        guard case .error(let tooLong) = await command.perform("set \(tx) \(String(repeating: "00", count: 21))", on: device.gatt)
        else { Issue.record("a 21-octet TX value was accepted"); return }
        #expect(tooLong.contains("21"), "\(tooLong)")
        guard case .error(let missing) = await command.perform("set 0x0fff 00", on: device.gatt) else {
            Issue.record("a value was stored at a missing handle")
            return
        }
        #expect(!missing.isEmpty)
    }

    @Test func theKernelPathFailsClearlyWithoutAnAdapter() async throws {
        // No adapter hci7 on a test machine: the failure must name it and map to an exit code.
        guard (try? KernelHCI.adapter(index: 7)) == nil else { return }
        var command = PeripheralCommand(options: PeripheralOptions(device: .sensortag))
        command.input = AsyncStream { $0.finish() }
        var global = GlobalOptions()
        global.transport = "hci7"
        var output = BufferedOutput.capturing()
        await #expect {
            try await command.run(global: global, output: &output)
        } throws: { error in
            guard let failure = error as? CommandFailure else { return false }
            return failure.message.contains("hci7") && failure.kind == "adapter"
                && [ExitCode.unavailable, .permission, .failure].contains(failure.exitCode)
        }
    }

    @Test func aReplayCannotServe() async throws {
        var global = GlobalOptions()
        global.transport = "replay:/nonexistent.btsnoop"
        await #expect {
            _ = try await openPeripheralHost(global.transport, options: global.adapterOptions)
        } throws: { error in
            guard let failure = error as? CommandFailure else { return false }
            return failure.exitCode == .usage && failure.message.contains("cannot accept connections")
        }
    }
}

/// Our `peripheral` on one virtual controller, reached by our own central host on a second
/// virtual controller of the same link.
@Suite("CLI: peripheral served over the virtual link")
struct PeripheralServingTests {
    static let peripheralAddress = BluetoothAddress("00:1B:DC:E0:6A:01")!
    static let centralAddress = BluetoothAddress("00:1B:DC:E0:6A:02")!

    struct Rig {
        let central: LEHost
        let peripheralHost: UserSpacePeripheralHost
        let lines: AsyncStream<String>.Continuation
        let command: Task<[String], any Error>
    }

    static func start(_ options: PeripheralOptions, extended: Bool = true) async throws -> Rig {
        let link = VirtualLink()
        let clock = SystemClock()
        let (_, peripheralTransport) = await VirtualController.attach(
            to: link, clock: clock, configuration: .init(address: peripheralAddress, extendedAdvertising: extended))
        let (_, centralTransport) = await VirtualController.attach(
            to: link, clock: clock, configuration: .init(address: centralAddress))
        // 30 s: the suite starts every suite at once on 2 cores; the first seconds can stall the
        // in-process controllers for over 15 s (seen in .ci/run).
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = .seconds(30 * testTimeoutScale)
        let central = try await LEHost.start(transport: centralTransport, configuration: configuration)
        let host = try await UserSpacePeripheralHost.start(peripheralTransport, name: "virtual", commandTimeout: .seconds(30 * testTimeoutScale))
        #expect(host.host.usesExtendedAdvertising == extended)
        let (input, lines) = AsyncStream.makeStream(of: String.self)
        var command = PeripheralCommand(options: options)
        command.host = host
        command.input = input
        var global = GlobalOptions()
        global.json = true
        let finalCommand = command
        let task = Task {
            var output = BufferedOutput.capturing()
            try await finalCommand.run(global: global, output: &output)
            return output.capturedLines
        }
        return Rig(central: central, peripheralHost: host, lines: lines, command: task)
    }

    static func connect(_ rig: Rig) async throws -> (LEConnection, ATTConnection, GATTClient) {
        let link = try await rig.central.connect(to: peripheralAddress, type: .public, timeout: .seconds(30))
        let connection = ATTConnection(channel: link.channel, configuration: ATTBearer.Configuration(rxMTU: 517))
        return (link, connection, GATTClient(connection: connection))
    }

    /// Waits until the peripheral's host has no connection left and its command heard of it.
    static func waitForDisconnection(_ rig: Rig) async throws {
        try await withTimeout(30, "the peripheral's disconnection") {
            while await !rig.peripheralHost.host.activeConnections.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        }
        try await Task.sleep(for: .milliseconds(200))
    }

    static func json(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    @Test func sensortagIsDiscoveredReadWrittenSubscribedAndDrivenFromStdin() async throws {
        let rig = try await Self.start(PeripheralOptions(device: .sensortag))
        try await withTimeout(120, "the SensorTag session") {
            let (link, connection, client) = try await Self.connect(rig)
            #expect(link.role == .central)
            #expect(try await client.exchangeMTU(517) == 23, "the emulated SensorTag's own ATT_MTU")
            let database = try await client.discoverDatabase()
            for sensor in [SensorTag.Sensor.ir, .humidity, .barometer, .optical, .movement] {
                #expect(database.services.contains { $0.uuid == sensor.service }, "\(sensor)")
            }
            let name = try database.characteristic(uuid: GATTUUID.deviceName)
            #expect(try await client.read(handle: name.valueHandle) == Array(SensorTagDatabase.deviceName.utf8))
            // Firmware behaviour: a period below the minimum is refused with TI's 0x80.
            let period = try database.characteristic(uuid: SensorTag.Sensor.ir.period!)
            await #expect {
                _ = try await client.write(handle: period.valueHandle, value: [0x05])
            } throws: { error in
                guard case GATTError.peerError(_, _, let code) = error else { return false }
                return code.rawValue == 0x80
            }
            // Switching the IR sensor on makes it produce notified samples.
            let data = try database.characteristic(uuid: SensorTag.Sensor.ir.data)
            let samples = try await client.subscribe(characteristic: data)
            let configuration = try database.characteristic(uuid: SensorTag.Sensor.ir.configuration!)
            _ = try await client.write(handle: configuration.valueHandle, value: [0x01])
            var sampleIterator = samples.makeAsyncIterator()
            let sample = try await sampleIterator.next()
            #expect(sample?.value.count == 4)

            // Standard input drives values: notify the keys to the subscribed client.
            let keys = try database.characteristic(uuid: .bit16(0xFFE1))
            let keyNotifications = try await client.subscribe(characteristic: keys)
            rig.lines.yield("notify 0x\(String(keys.valueHandle, radix: 16)) 05")
            var keyIterator = keyNotifications.makeAsyncIterator()
            #expect(try await keyIterator.next()?.value == [0x05])
            rig.lines.yield("indicate \(keys.valueHandle) 01")
            rig.lines.yield("set \(name.valueHandle) 4869")
            rig.lines.yield("notify 0xFFF0 01")
            rig.lines.yield("hello")
            // `set` stored it without telling: the next read sees it.
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await client.read(handle: name.valueHandle) == [0x48, 0x69])

            // The central leaves; the peripheral advertises again and a second session works.
            try await rig.central.disconnect(link)
            await connection.close()
            let (again, secondConnection, secondClient) = try await Self.connect(rig)
            #expect(try await secondClient.read(handle: name.valueHandle) == [0x48, 0x69])
            // A fresh connection: no subscription, so a notify is refused.
            rig.lines.yield("notify \(keys.valueHandle) 00")
            try await Task.sleep(for: .milliseconds(200))
            try await rig.central.disconnect(again)
            await secondConnection.close()
        }
        try await Self.waitForDisconnection(rig)
        rig.lines.finish()
        let lines = try await withTimeout(60, "the command's end") { try await rig.command.value }
        await rig.central.close()
        let objects = lines.compactMap(Self.json)
        #expect(objects.count == lines.count, "every line is JSON: \(lines)")
        let events = objects.compactMap { $0["event"] as? String }
        #expect(events == ["advertising", "connected", "disconnected", "connected", "disconnected", "stopped"], "\(lines)")
        #expect(objects.first?["device"] as? String == "sensortag")
        #expect(objects.first?["mtu"] as? Int == 23)
        #expect((objects.first { $0["event"] as? String == "connected" }?["peer"] as? String)?.hasPrefix("\(Self.centralAddress)") == true)
        let results = objects.filter { $0["command"] != nil }.map { ($0["command"] as! String, $0["result"] as! String, $0["error"] as? String) }
        #expect(results.map(\.1) == ["ok", "error", "ok", "error", "error", "error"], "\(lines)")
        #expect(results[1].2?.contains("does not allow indications") == true)
        #expect(results[3].2?.contains("no attribute") == true || results[3].2?.contains("0xfff0") == true || results[3].2 != nil)
        #expect(results[4].2?.contains("unknown command 'hello'") == true)
        #expect(results[5].2?.contains("has not enabled notifications") == true)
    }

    /// Issue 24: our peripheral asks its central for parameters with the L2CAP Connection
    /// Parameter Update Request (the SensorTag firmware's Connection Control request, CCC2); the
    /// central accepts and applies them with LE Connection Update.
    @Test func theFirmwaresParameterRequestGoesOverL2CAP() async throws {
        let rig = try await Self.start(PeripheralOptions(device: .sensortag))
        try await withTimeout(120, "the parameter request") {
            let (link, connection, client) = try await Self.connect(rig)
            var updates = link.parameterUpdates.makeAsyncIterator()
            let database = try await client.discoverDatabase()
            let request = try database.characteristic(uuid: SensorTag.uuid(0xCCC2))
            // 50–70 ms, latency 0, 5 s.
            _ = try await client.write(handle: request.valueHandle, value: [40, 0, 56, 0, 0, 0, 0xF4, 0x01])
            var applied: LEConnection.Parameters?
            while let update = await updates.next() {
                // (The firmware's own preferred 100–200 ms may come first, a second after connecting.)
                if (40...56).contains(update.interval) {
                    applied = update
                    break
                }
            }
            #expect(applied?.supervisionTimeout == 500)
            #expect(rig.central.statistics.refusedParameterRequests == 0)
            try await rig.central.disconnect(link)
            await connection.close()
        }
        try await Self.waitForDisconnection(rig)
        rig.lines.finish()
        _ = try await withTimeout(60, "the command's end") { try await rig.command.value }
        await rig.central.close()
    }

    @Test func theSensorTagsDisconnectRequestEndsTheLinkFromOurSideAndItAdvertisesAgain() async throws {
        let rig = try await Self.start(PeripheralOptions(device: .sensortag))
        try await withTimeout(120, "the disconnect request") {
            let (link, connection, client) = try await Self.connect(rig)
            // Connection Control CCC3: writing 1 makes the firmware disconnect (through our host).
            let request = try await client.discoverDatabase().characteristic(uuid: SensorTag.uuid(0xCCC3))
            _ = try? await client.write(handle: request.valueHandle, value: [0x01])
            var reasons = link.disconnected.makeAsyncIterator()
            let reason = await reasons.next()
            #expect(reason == .remoteUserTerminatedConnection, "the central hears the peripheral's disconnect")
            await connection.close()
            let (again, secondConnection, secondClient) = try await Self.connect(rig)
            #expect(try await secondClient.exchangeMTU(517) == 23)
            try await rig.central.disconnect(again)
            await secondConnection.close()
        }
        try await Self.waitForDisconnection(rig)
        rig.lines.finish()
        let lines = try await withTimeout(60, "the command's end") { try await rig.command.value }
        await rig.central.close()
        let events = lines.compactMap(Self.json).compactMap { $0["event"] as? String }
        #expect(events == ["advertising", "connected", "disconnected", "connected", "disconnected", "stopped"], "\(lines)")
    }

    @Test func aDatabaseFileIsServedAtTheRequestedMTUWithIndications() async throws {
        let json = """
            {"services": [
              {"primary": true, "handle": 1, "end_handle": 3, "uuid": "1800", "includes": [],
               "characteristics": [{"declaration_handle": 2, "value_handle": 3, "uuid": "2a00", "properties": 2,
                                    "permissions": 1, "value": "46696c65", "descriptors": []}]},
              {"primary": true, "handle": 16, "end_handle": 20, "uuid": "180f", "includes": [],
               "characteristics": [{"declaration_handle": 17, "value_handle": 18, "uuid": "2a19",
                                    "properties": ["read", "indicate"], "permissions": ["read"], "value": "57",
                                    "descriptors": [{"handle": 19, "uuid": "2902", "permissions": 3, "value": "0000"}]}]}
            ]}
            """
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("peripheral-db-\(UInt32.random(in: 0...UInt32.max)).json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = PeripheralOptions(device: .database(path: path))
        options.mtu = 100
        // A controller without the extended commands: legacy advertising.
        let rig = try await Self.start(options, extended: false)
        try await withTimeout(120, "the database session") {
            let (link, connection, client) = try await Self.connect(rig)
            #expect(try await client.exchangeMTU(517) == 100)
            let database = try await client.discoverDatabase()
            #expect(database.services.map(\.uuid) == [.bit16(0x1800), .bit16(0x180F)])
            let level = try database.characteristic(uuid: .bit16(0x2A19))
            #expect(level.valueHandle == 18, "handles from the file are kept, gaps included")
            #expect(try await client.read(handle: 18) == [0x57])
            let indications = try await client.subscribe(characteristic: level, indications: true)
            rig.lines.yield("indicate 18 56")
            var iterator = indications.makeAsyncIterator()
            #expect(try await iterator.next()?.value == [0x56])
            // The client confirms after handing the value over: let the confirmation reach the server.
            try await Task.sleep(for: .milliseconds(300))
            try await rig.central.disconnect(link)
            await connection.close()
        }
        try await Self.waitForDisconnection(rig)
        rig.lines.finish()
        let lines = try await withTimeout(60, "the command's end") { try await rig.command.value }
        await rig.central.close()
        let objects = lines.compactMap(Self.json)
        #expect(objects.first?["mtu"] as? Int == 100)
        #expect(objects.contains { $0["command"] as? String == "indicate 18 56" && $0["result"] as? String == "ok" }, "\(lines)")
        #expect(objects.compactMap { $0["event"] as? String } == ["advertising", "connected", "disconnected", "stopped"], "\(lines)")
    }

    @Test func withADurationTheEndOfInputDoesNotStopIt() async throws {
        var options = PeripheralOptions(device: .bluefruit)
        // Long enough for the session below, which must happen while it serves (stretched with
        // every other bound under the sanitizer, where the session alone can take seconds; a
        // suite start loaded by the Bumble peers once took over 1.5 s).
        let duration = 6 * testTimeoutScale
        options.duration = duration
        let rig = try await Self.start(options)
        rig.lines.finish()
        let started = ContinuousClock.now
        // Still serving after the end of input: a central connects and the UART echoes.
        try await withTimeout(60, "the Bluefruit session") {
            let (link, connection, client) = try await Self.connect(rig)
            let database = try await client.discoverDatabase()
            let tx = try database.characteristic(uuid: NordicUART.tx)
            let rx = try database.characteristic(uuid: NordicUART.rx)
            let echo = try await client.subscribe(characteristic: tx)
            _ = try await client.write(handle: rx.valueHandle, value: Array("hi".utf8))
            var iterator = echo.makeAsyncIterator()
            #expect(try await iterator.next()?.value == Array("hi".utf8))
            try await rig.central.disconnect(link)
            await connection.close()
        }
        let lines = try await withTimeout(60, "the command's end") { try await rig.command.value }
        #expect(ContinuousClock.now - started >= .seconds(duration - 0.1))
        #expect(lines.compactMap(Self.json).last?["event"] as? String == "stopped")
        await rig.central.close()
    }

    @Test func theSimTransportPutsOurPeripheralOnAVirtualLinkOthersCanJoin() async throws {
        var global = GlobalOptions()
        global.transport = "sim"
        global.json = true
        let opened = try await openPeripheralHost(global.transport, options: global.adapterOptions)
        let host = try #require(opened as? UserSpacePeripheralHost)
        let simulation = try #require(host.simulation)
        #expect(simulation.sensorTag == nil && simulation.bluefruit == nil, "plain `sim`: no emulated device competes")
        let (_, centralTransport) = await VirtualController.attach(
            to: simulation.link, clock: SystemClock(), configuration: .init(address: Self.centralAddress))
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = .seconds(30 * testTimeoutScale)
        let central = try await LEHost.start(transport: centralTransport, configuration: configuration)
        let (input, lines) = AsyncStream.makeStream(of: String.self)
        var command = PeripheralCommand(options: PeripheralOptions(device: .bluefruit))
        command.host = host
        command.input = input
        let finalCommand = command
        let serving = Task {
            var output = BufferedOutput.capturing()
            try await finalCommand.run(global: global, output: &output)
            return output.capturedLines
        }
        try await withTimeout(60, "the Bluefruit over sim") {
            let link = try await central.connect(to: host.address, type: .public, timeout: .seconds(30))
            let connection = ATTConnection(channel: link.channel)
            let client = GATTClient(connection: connection)
            let database = try await client.discoverDatabase()
            let tx = try database.characteristic(uuid: NordicUART.tx)
            let rx = try database.characteristic(uuid: NordicUART.rx)
            let echo = try await client.subscribe(characteristic: tx)
            _ = try await client.write(handle: rx.valueHandle, value: Array("sim".utf8))
            var iterator = echo.makeAsyncIterator()
            #expect(try await iterator.next()?.value == Array("sim".utf8))
            try await central.disconnect(link)
            await connection.close()
        }
        lines.finish()
        let output = try await withTimeout(60, "the command's end") { try await serving.value }
        #expect(output.compactMap(Self.json).first?["device"] as? String == "bluefruit")
        await central.close()
    }
}
