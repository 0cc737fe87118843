import Host
import ATT
import Bluetooth
import Foundation
import GATT
import GATTClientCLI
import HCI
import L2CAP
import Testing
import TestSupport

/// Our whole user-space host — TCP transport, `LEHost` (controller driver + user-space L2CAP),
/// ATT bearer, GATT client — against Bumble's controller and GATT servers
/// (scripts/bumble_peer.py: SensorTag with a public address, Bluefruit with a random one).
@Suite(
    "Interop: LEHost and GATT against Bumble",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct BumbleGATTInteropTests {
    static let uartService = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let uartTX = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let uartRX = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
    static func ti(_ short: UInt16) -> BluetoothUUID {
        BluetoothUUID("F000\(String(short, radix: 16, uppercase: true))-0451-4000-B000-000000000000")!
    }

    /// The CC2650-like database of scripts/bumble_peer.py: each service and, per
    /// characteristic, its descriptor count (../shared/notes/devices.md without Register,
    /// Connection Control and OAD).
    static let sensorTagLayout: [(BluetoothUUID, [Int])] = [
        (BluetoothUUID(0x1800), [0, 0, 0]),
        (BluetoothUUID(0x1801), [1]),
        (BluetoothUUID(0x180A), Array(repeating: 0, count: 9)),
        (BluetoothUUID(0x180F), [1]),
        (ti(0xAA00), [2, 1, 1]),
        (ti(0xAA20), [2, 1, 1]),
        (ti(0xAA40), [2, 1, 1]),
        (ti(0xAA70), [2, 1, 1]),
        (ti(0xAA80), [2, 1, 1]),
        (ti(0xAA64), [1, 1]),
        (BluetoothUUID(0xFFE0), [2]),
    ]

    static func open(
        _ peer: BumblePeer, commandSet: LEHost.Configuration.CommandSet = .automatic, maximumBufferedSDUs: Int? = nil
    ) async throws -> LEHost {
        var configuration = LEHost.Configuration()
        configuration.commandSet = commandSet
        if let maximumBufferedSDUs { configuration.maximumBufferedSDUs = maximumBufferedSDUs }
        // Generous: the full suite runs beside Bumble on 2 shared cores.
        configuration.commandTimeout = .seconds(10)
        return try await LEHost.start(
            transport: try await peer.uri.openRawTransport(), configuration: configuration, logger: logger)
    }

    /// Warnings and errors to stderr; DEBUG_LEHOST=1 for everything.
    static let logger = Logger(
        label: "lehost",
        minimumLevel: ProcessInfo.processInfo.environment["DEBUG_LEHOST"] == nil ? .warning : .trace
    ) { level, label, message in
        FileHandle.standardError.write(Data("[\(level)] \(label): \(message)\n".utf8))
    }

    static func connect(_ host: LEHost, _ peer: BumblePeer, _ kind: String) async throws -> LEConnection {
        let address = try #require(peer.devices[kind])
        let type = try #require(peer.addressTypes[kind])
        return try await host.connect(to: address, type: type, timeout: .seconds(10))
    }

    // MARK: - Scanning

    @Test(arguments: [LEScanParameters.Procedure.legacy, .extended])
    func activeScanFindsBothByName(procedure: LEScanParameters.Procedure) async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag", "bluefruit"])
        defer { peer.stop() }
        let host = try await Self.open(peer)
        let sensorTag = try #require(peer.devices["sensortag"])
        let bluefruit = try #require(peer.devices["bluefruit"])

        // The stream lives only in the loop: leaving the loop ends it, which stops the scan.
        let found = try await withTimeout(15) { () -> [BluetoothAddress: DiscoveredDevice] in
            var found: [BluetoothAddress: DiscoveredDevice] = [:]
            for try await event in host.scan(LEScanParameters(active: true, procedure: procedure)) {
                switch event {
                case .discovered(let device), .updated(let device): found[device.address] = device
                case .report: Issue.record("a raw report in merged mode")
                }
                if found[sensorTag]?.name != nil && found[bluefruit]?.name != nil { break }
            }
            return found
        }
        let tag = try #require(found[sensorTag])
        #expect(tag.name == "CC2650 SensorTag")
        #expect(tag.addressType == .public)
        #expect(tag.isConnectable)
        #expect(tag.txPower == 0)
        #expect(tag.serviceUUIDs == [BluetoothUUID(0xAA80)])
        // The name came from the scan response, merged with the advertising data.
        #expect(tag.scanResponseData != nil)
        #expect(tag.reports.contains { $0.isScanResponse })
        #expect(tag.reports.contains { !$0.isScanResponse })
        let uart = try #require(found[bluefruit])
        #expect(uart.name == "Adafruit Bluefruit LE")
        #expect(uart.addressType == .random)
        #expect(uart.serviceUUIDs == [Self.uartService])

        // The stream ended, so scanning was disabled: a new scan (all reports) can start.
        let kinds = try await withTimeout(15) { () -> Set<ScanReport.Kind> in
            var kinds: Set<ScanReport.Kind> = []
            var reports = 0
            for try await event in host.scan(LEScanParameters(active: false, procedure: procedure, reportMode: .allReports))
            {
                guard case .report(let report) = event else { continue }
                kinds.insert(report.kind)
                reports += 1
                if reports >= 6 { break }
            }
            return kinds
        }
        // Passive: no scan responses.
        #expect(kinds == [.advInd])
        print("scan (\(procedure)) over LEHost: \(tag), \(uart); passive report kinds \(kinds.map(\.rawValue))")
        #expect(host.statistics.malformedEvents == 0)
        await host.close()
    }

    // MARK: - GATT

    @Test(arguments: [23, 517])
    func discoversTheSensorTagDatabaseExactly(mtu: Int) async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], mtu: mtu)
        defer { peer.stop() }
        let host = try await Self.open(peer)
        let link = try await Self.connect(host, peer, "sensortag")
        #expect(link.peerAddressType == .public)
        #expect(link.role == .central)
        let connection = ATTConnection(channel: link.channel)
        let client = GATTClient(connection: connection)

        let database = try await withTimeout(30) { () -> GATTDatabase in
            if mtu > 23 { _ = try await connection.exchangeMTU(517) }
            return try await client.discoverDatabase()
        }
        #expect(await connection.mtu == mtu)
        #expect(database.services.map(\.uuid) == Self.sensorTagLayout.map(\.0))
        for (service, (uuid, descriptors)) in zip(database.services, Self.sensorTagLayout) {
            #expect(service.characteristics.map(\.descriptors.count) == descriptors, "service \(uuid)")
        }
        #expect(database.services.count == 11)
        #expect(database.characteristics.count == 32)
        #expect(database.characteristics.reduce(0) { $0 + $1.descriptors.count } == 26)
        let requests = await connection.requestsSent
        // Bumble's own client needs 64 (MTU 23) and 47 (MTU 517) for this database.
        #expect(requests <= (mtu == 23 ? 64 : 47))
        print("LEHost + GATTClient: SensorTag database 11/32/26 in \(requests) ATT requests at ATT_MTU \(mtu)")
        await connection.close()
        await host.close()
    }

    /// A 512-octet value at ATT_MTU 517 is 20 ACL fragments of 27 octets against the peer's 8
    /// buffers: only Number Of Completed Packets lets it through (the peer drops a packet sent
    /// without a free buffer and says Data Buffer Overflow).
    @Test func longValuesRespectTheControllersBuffers() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"], mtu: 517)
        defer { peer.stop() }
        let host = try await Self.open(peer)
        let link = try await Self.connect(host, peer, "sensortag")
        let connection = ATTConnection(channel: link.channel)
        let client = GATTClient(connection: connection)
        let value = (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let readBack = try await withTimeout(20) { () -> [UInt8] in
            _ = try await connection.exchangeMTU(517)
            // IO Data: Bumble's server does not enforce lengths (notes), which suits this test.
            let io = try #require(try await client.findCharacteristics(uuid: Self.ti(0xAA65)).first)
            for _ in 0..<3 { _ = try await client.write(handle: io.valueHandle, value: value) }
            return try await client.readLong(handle: io.valueHandle)
        }
        #expect(readBack == value)
        #expect(host.statistics.dataBufferOverflows == 0)
        #expect(host.l2cap.packetsInFlight(handle: link.handle) <= 8)
        await host.close()
    }

    @Test func readWriteAndNotification() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag", "bluefruit"])
        defer { peer.stop() }
        let host = try await Self.open(peer)

        // SensorTag (public address): read the device name, write the IR sensor's configuration.
        let tagLink = try await Self.connect(host, peer, "sensortag")
        let tag = ATTConnection(channel: tagLink.channel)
        let tagClient = GATTClient(connection: tag)
        try await withTimeout(20) {
            let name = try await tagClient.read(uuid: BluetoothUUID(0x2A00))
            #expect(name.first?.value == Array("CC2650 SensorTag".utf8))
            let configuration = try #require(try await tagClient.findCharacteristics(uuid: Self.ti(0xAA02)).first)
            #expect(try await tagClient.write(handle: configuration.valueHandle, value: [0x01]) == 1)
            #expect(try await tagClient.read(handle: configuration.valueHandle) == [0x01])
        }

        // Bluefruit (random address): UART echo through notifications.
        let uartLink = try await Self.connect(host, peer, "bluefruit")
        let uart = ATTConnection(channel: uartLink.channel)
        let uartClient = GATTClient(connection: uart)
        let database = try await withTimeout(20) { try await uartClient.discoverDatabase() }
        let tx = try #require(database.characteristics(uuid: Self.uartTX).first)
        let rx = try #require(database.characteristics(uuid: Self.uartRX).first)
        try await uartClient.configure(tx, .notifications)
        let text = Array("hello from LEHost".utf8)
        _ = try await uartClient.write(handle: rx.valueHandle, value: text)
        let inbound = uart.inbound
        let echoed = try await withTimeout(5) { () -> [UInt8] in
            var echoed: [UInt8] = []
            for await pdu in inbound {
                if case .handleValueNotification(let notification) = pdu, notification.handle == tx.valueHandle {
                    echoed += notification.value
                    if echoed.count >= text.count { break }
                }
            }
            return echoed
        }
        #expect(echoed == text)
        #expect(host.statistics == LEHost.Statistics())
        await tag.close()
        await uart.close()
        await host.close()
    }

    // MARK: - Connection events

    @Test func peerParameterUpdatesAreAnswered() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"])
        defer { peer.stop() }
        let host = try await Self.open(peer)
        let link = try await Self.connect(host, peer, "sensortag")

        // L2CAP Connection Parameter Update Request: accepted, applied with LE Connection Update.
        #expect(try await peer.command("update sensortag 40 56 0 500") == "ok update")
        let viaL2CAP = try await withTimeout(5) { [link] in
            var updates = link.parameterUpdates.makeAsyncIterator()
            return await updates.next()
        }
        #expect(viaL2CAP == LEConnection.Parameters(interval: 56, peripheralLatency: 0, supervisionTimeout: 500))
        // Out of range (timeout not over twice the interval): L2CAP rejects it.
        #expect(try await peer.command("update sensortag 3200 3200 0 10").hasPrefix("error"))

        // Link-layer Connection Parameters Request: LE Remote Connection Parameter Request → Reply.
        #expect(try await peer.command("ll-update sensortag 24 32 1 400") == "ok ll-update")
        let viaLL = try await withTimeout(5) { [link] in
            var updates = link.parameterUpdates.makeAsyncIterator()
            return await updates.next()
        }
        #expect(viaLL == LEConnection.Parameters(interval: 32, peripheralLatency: 1, supervisionTimeout: 400))
        // … and a Negative Reply for parameters out of range.
        #expect(try await peer.command("ll-update sensortag 3200 3200 0 10").hasPrefix("error"))
        #expect(host.statistics.acceptedParameterRequests == 1)
        #expect(host.statistics.refusedParameterRequests == 1)
        #expect(link.parameters == LEConnection.Parameters(interval: 32, peripheralLatency: 1, supervisionTimeout: 400))
        await host.close()
    }

    @Test func peerDisconnectIsReportedAndASecondConnectWorks() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"])
        defer { peer.stop() }
        let host = try await Self.open(peer)
        let first = try await Self.connect(host, peer, "sensortag")
        let connection = ATTConnection(channel: first.channel)
        let client = GATTClient(connection: connection)
        _ = try await withTimeout(10) { try await client.read(uuid: BluetoothUUID(0x2A00)) }

        #expect(try await peer.command("disconnect sensortag") == "ok disconnect")
        let reason = try await withTimeout(5) { [first] in
            var reasons = first.disconnected.makeAsyncIterator()
            return await reasons.next()
        }
        #expect(reason == .remoteUserTerminatedConnection)
        #expect(first.disconnectionReason == .remoteUserTerminatedConnection)
        // The ATT channel failed at once with the reason.
        #expect(
            first.channel.closedError == .disconnected(handle: first.handle, reason: .remoteUserTerminatedConnection))
        await #expect(throws: (any Error).self) { try await client.read(uuid: BluetoothUUID(0x2A00)) }

        // A second connect works, and a local disconnect completes.
        let second = try await Self.connect(host, peer, "sensortag")
        let bearer = ATTConnection(channel: second.channel)
        let again = GATTClient(connection: bearer)
        let name = try await withTimeout(10) { try await again.read(uuid: BluetoothUUID(0x2A00)) }
        #expect(name.first?.value == Array("CC2650 SensorTag".utf8))
        // Closing the bearer asks for a disconnect too; whichever HCI_Disconnect comes second is
        // refused by the controller, and the host still reports the one Disconnection Complete.
        await bearer.close()
        let localReason = try await host.disconnect(second)
        #expect(second.disconnectionReason == localReason)
        #expect(await host.activeConnections.isEmpty)
        await host.close()
    }

    /// Stock Bumble has the LE Extended Advertising feature but does not claim the extended
    /// scanning and initiating commands (`.automatic` then picks legacy); with
    /// `--extended-commands` it does, and the host scans and connects the extended way.
    @Test func automaticallyUsesTheExtendedCommandsTheControllerClaims() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag", "bluefruit"], extendedCommands: true)
        defer { peer.stop() }
        let host = try await Self.open(peer)
        #expect(host.usesExtendedCommands)
        let bluefruit = try #require(peer.devices["bluefruit"])
        let seen = try await withTimeout(15) { () -> DiscoveredDevice? in
            for try await event in host.scan() {
                switch event {
                case .discovered(let device), .updated(let device):
                    if device.address == bluefruit, device.name != nil { return device }
                case .report: break
                }
            }
            return nil
        }
        #expect(seen?.name == "Adafruit Bluefruit LE")
        #expect(seen?.reports.first?.kind == .advInd)  // legacy PDUs in extended reports
        let link = try await Self.connect(host, peer, "sensortag")
        let client = GATTClient(connection: ATTConnection(channel: link.channel))
        let name = try await withTimeout(10) { try await client.read(uuid: BluetoothUUID(0x2A00)) }
        #expect(name.first?.value == Array("CC2650 SensorTag".utf8))
        await host.close()
    }

    @Test(arguments: [LEHost.Configuration.CommandSet.legacy, .extended])
    func connectTimeoutCancelsAndTheControllerStaysUsable(commandSet: LEHost.Configuration.CommandSet) async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"])
        defer { peer.stop() }
        let host = try await Self.open(peer, commandSet: commandSet)
        let nobody = BluetoothAddress("C0:11:22:33:44:55")!
        await #expect(throws: LEHostError.connectTimeout(address: nobody, timeout: .milliseconds(300))) {
            _ = try await host.connect(to: nobody, type: .random, timeout: .milliseconds(300))
        }
        let link = try await Self.connect(host, peer, "sensortag")
        #expect(link.isConnected)
        await host.close()
    }

    @Test func twoSimultaneousConnectionsWithoutCrossTalk() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag", "bluefruit"])
        defer { peer.stop() }
        let host = try await Self.open(peer)
        // Issued together: the second LE Create Connection waits for the first to complete.
        async let tagLink = Self.connect(host, peer, "sensortag")
        async let uartLink = Self.connect(host, peer, "bluefruit")
        let (tagConnection, uartConnection) = try await (tagLink, uartLink)
        #expect(tagConnection.handle != uartConnection.handle)
        #expect(await host.activeConnections.count == 2)

        let tag = ATTConnection(channel: tagConnection.channel)
        let uart = ATTConnection(channel: uartConnection.channel)
        let tagClient = GATTClient(connection: tag)
        let uartClient = GATTClient(connection: uart)
        // Both discoveries at once, interleaved on the controller.
        async let tagDatabase = withTimeout(30) { try await tagClient.discoverDatabase() }
        async let uartDatabase = withTimeout(30) { try await uartClient.discoverDatabase() }
        let (tagServices, uartServices) = try await (tagDatabase, uartDatabase)
        #expect(tagServices.services.count == 11)
        #expect(tagServices.characteristics.count == 32)
        #expect(uartServices.services.map(\.uuid).last == Self.uartService)
        #expect(uartServices.services.allSatisfy { $0.uuid != Self.ti(0xAA80) })

        // Notifications of the UART while the SensorTag is read: each on its own bearer only.
        let tx = try #require(uartServices.characteristics(uuid: Self.uartTX).first)
        let rx = try #require(uartServices.characteristics(uuid: Self.uartRX).first)
        try await uartClient.configure(tx, .notifications)
        let text = Array("no cross talk".utf8)
        async let reads = withTimeout(10) { () -> Int in
            var count = 0
            for _ in 0..<10 {
                _ = try await tagClient.read(uuid: BluetoothUUID(0x2A24))
                count += 1
            }
            return count
        }
        _ = try await uartClient.write(handle: rx.valueHandle, value: text)
        let uartInbound = uart.inbound
        let echoed = try await withTimeout(5) { () -> [UInt8] in
            var echoed: [UInt8] = []
            for await pdu in uartInbound {
                if case .handleValueNotification(let notification) = pdu { echoed += notification.value }
                if echoed.count >= text.count { break }
            }
            return echoed
        }
        #expect(echoed == text)
        #expect(try await reads == 10)
        await tag.close()
        // The SensorTag bearer saw no notification (its inbound ends with the close).
        let tagInbound = tag.inbound
        let strays = try await withTimeout(5) { () -> Int in
            var strays = 0
            for await pdu in tagInbound {
                if case .handleValueNotification = pdu { strays += 1 }
            }
            return strays
        }
        #expect(strays == 0)
        await uart.close()
        await host.close()
    }
}
