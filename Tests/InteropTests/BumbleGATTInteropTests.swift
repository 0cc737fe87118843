import ATT
import Bluetooth
import GATT
import HCI
import L2CAP
import Testing

/// Our whole user-space host — TCP transport, controller driver, user-space L2CAP, ATT bearer,
/// GATT client — against Bumble's controller and GATT servers.
@Suite(
    "Interop: GATT over our user-space stack against Bumble",
    .enabled(if: BumblePeer.isAvailable, "needs python3 with bumble (pip install bumble)"))
struct BumbleGATTInteropTests {
    @Test func discoversTheSensorTagDatabase() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"])
        defer { peer.stop() }
        let host = try await UserSpaceHost.start(peer.uri)
        let channel = try await host.connect(try #require(peer.devices["sensortag"]))
        let connection = ATTConnection(channel: channel)
        let client = GATTClient(connection: connection)

        let database = try await withInteropTimeout(20) { try await client.discoverDatabase() }
        // The CC2650-like database of scripts/bumble_peer.py (devices.md).
        #expect(database.services.count == 11)
        #expect(database.characteristics.count == 32)
        #expect(database.characteristics.reduce(0) { $0 + $1.descriptors.count } == 26)
        #expect(!database.services(uuid: BluetoothUUID("F000AA80-0451-4000-B000-000000000000")!).isEmpty)
        // Bumble's own client needs 64 requests for this database at ATT_MTU 23 (notes).
        let requests = await connection.requestsSent
        #expect(requests <= 64)
        print(
            "GATT discovery of the SensorTag database over our stack: \(requests) ATT requests at MTU \(await connection.mtu)"
        )
        await connection.close()
        // On failure paths the peer's exit (defer) closes the transport, which ends the pumps.
        await host.close()
    }
}

extension BumbleGATTInteropTests {
    static let uartTX = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let uartRX = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!

    @Test func bluefruitUARTEchoesThroughNotifications() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag", "bluefruit"])
        defer { peer.stop() }
        let host = try await UserSpaceHost.start(peer.uri)
        let channel = try await host.connect(try #require(peer.devices["bluefruit"]))
        let connection = ATTConnection(channel: channel)
        let client = GATTClient(connection: connection)

        let database = try await withInteropTimeout(20) { try await client.discoverDatabase() }
        let tx = try #require(database.characteristics(uuid: Self.uartTX).first)
        let rx = try #require(database.characteristics(uuid: Self.uartRX).first)
        try await client.configure(tx, .notifications)

        // Longer than ATT_MTU - 3: sent as several writes, as Bluefruit LE Connect does (a
        // longer single write is refused locally, never truncated), echoed as notifications.
        let text = Array("hello from our own host stack, in user space".utf8)
        let chunk = await connection.mtu - 3
        for start in stride(from: 0, to: text.count, by: chunk) {
            _ = try await client.write(
                handle: rx.valueHandle, value: Array(text[start..<min(start + chunk, text.count)]))
        }
        let inbound = connection.inbound
        let echoed = try await withInteropTimeout(5) { () -> [UInt8] in
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
        await connection.close()
        // On failure paths the peer's exit (defer) closes the transport, which ends the pumps.
        await host.close()
    }
}

/// Test glue between the layers (what the CLI's user-space path does): `inbound` of the driver
/// feeds L2CAP and reports LE connections; L2CAP's outputs go to the driver.
actor UserSpaceHost {
    let driver: HCIControllerDriver
    let l2cap: UserSpaceL2CAP
    private var pumps: [Task<Void, Never>] = []
    private var connectionWaiters: [BluetoothAddress: CheckedContinuation<LEConnectionCompleteEvent, Never>] = [:]
    private var completed: [BluetoothAddress: LEConnectionCompleteEvent] = [:]

    private init(driver: HCIControllerDriver, l2cap: UserSpaceL2CAP) {
        self.driver = driver
        self.l2cap = l2cap
    }

    static func start(_ uri: TransportURI) async throws -> UserSpaceHost {
        let driver = HCIControllerDriver(transport: try await uri.openRawTransport(), commandTimeout: .seconds(10))
        let info = try await driver.initialize()
        let buffers = try ACLBufferSize(
            packetLength: Int(info.aclBuffers.packetLength), packetCount: Int(info.aclBuffers.packetCount),
            isShared: info.aclBuffers.shared)
        let host = UserSpaceHost(driver: driver, l2cap: UserSpaceL2CAP(bufferSize: buffers))
        await host.startPumps()
        return host
    }

    private func startPumps() {
        let inbound = driver.inbound
        let l2cap = l2cap
        let driver = driver
        pumps.append(
            Task { [weak self] in
                for await packet in inbound {
                    switch packet.type {
                    case .acl:
                        var reader = ByteReader(packet.bytes)
                        guard let acl = try? ACLDataPacket(parsing: &reader) else { continue }
                        l2cap.receive(acl)
                    case .event:
                        guard let event = try? HCIEvent(bytes: packet.bytes) else { continue }
                        l2cap.receive(event)
                        if case .leMeta(.connectionComplete(let complete)) = event {
                            await self?.connectionCompleted(complete)
                        }
                    default:
                        continue
                    }
                }
                l2cap.shutDown("the controller's inbound stream ended")
            })
        pumps.append(
            Task {
                for await output in l2cap.outputs {
                    do {
                        switch output {
                        case .acl(let packet):
                            try await driver.sendACL(packet)
                        case .updateConnectionParameters(let handle, let request):
                            let parameters = LEConnectionParameters(
                                connectionIntervalMin: request.intervalMin, connectionIntervalMax: request.intervalMax,
                                maxLatency: request.peripheralLatency, supervisionTimeout: request.timeoutMultiplier)
                            _ = try await driver.sendAccepted(
                                LEConnectionUpdateCommand(connectionHandle: handle, connectionParameters: parameters))
                        case .disconnect(let handle, let reason):
                            _ = try await driver.sendAccepted(
                                DisconnectCommand(connectionHandle: handle, reason: reason))
                        }
                    } catch {
                        continue
                    }
                }
            })
    }

    private func connectionCompleted(_ complete: LEConnectionCompleteEvent) {
        if let waiter = connectionWaiters.removeValue(forKey: complete.peerAddress) {
            waiter.resume(returning: complete)
        } else {
            completed[complete.peerAddress] = complete
        }
    }

    private func waitForConnection(_ address: BluetoothAddress) async -> LEConnectionCompleteEvent {
        if let complete = completed.removeValue(forKey: address) { return complete }
        return await withCheckedContinuation { connectionWaiters[address] = $0 }
    }

    /// Connects to a random-address peripheral and opens its ATT channel (bounded).
    func connect(_ address: BluetoothAddress) async throws -> UserSpaceATTChannel {
        _ = try await driver.sendAccepted(
            LECreateConnectionCommand(
                leScanInterval: 0x10, leScanWindow: 0x10, peerAddressType: .random, peerAddress: address,
                connectionParameters: LEConnectionParameters(
                    connectionIntervalMin: 24, connectionIntervalMax: 40, supervisionTimeout: 400)))
        let complete = try await withInteropTimeout(5) { await self.waitForConnection(address) }
        guard complete.status == .success else {
            throw HCIError.commandFailed(opcode: LECreateConnectionCommand.opcode, status: complete.status)
        }
        return try l2cap.connectionOpened(handle: complete.connectionHandle, role: .central)
    }

    func close() async {
        await driver.close()
        l2cap.shutDown("host closed")
        for pump in pumps { pump.cancel() }
    }
}
