import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import L2CAP
import Testing
import TestSupport

/// The host's side of a virtual controller at the packet level: sends commands and ACL,
/// collects every packet the controller sends.
actor HCIProbe {
    let transport: InMemoryTransport
    private var buffer: [HCITransportPacket] = []
    private var waiter: CheckedContinuation<Void, Never>?
    private var reader: Task<Void, Never>?

    init(transport: InMemoryTransport) {
        self.transport = transport
    }

    func start() {
        let packets = transport.packets
        reader = Task { [weak self] in
            do {
                for try await packet in packets { await self?.append(packet) }
            } catch {}
            await self?.wake()
        }
    }

    private func append(_ packet: HCITransportPacket) {
        buffer.append(packet)
        wake()
    }

    private func wake() {
        waiter?.resume()
        waiter = nil
    }

    /// The next packet (bounded wait).
    func next(timeout: Duration = .seconds(20)) async throws -> HCITransportPacket {
        if buffer.isEmpty {
            let timer = Task { [weak self] in
                // A cancelled timer must not wake a later waiter.
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                await self?.wake()
            }
            await withCheckedContinuation { waiter = $0 }
            timer.cancel()
        }
        guard !buffer.isEmpty else { throw TestTimeout(what: "a packet from the controller", seconds: Double(timeout.components.seconds)) }
        return buffer.removeFirst()
    }

    func nextEvent() async throws -> HCIEvent {
        while true {
            let packet = try await next()
            if packet.type == .event { return try HCIEvent(bytes: packet.bytes) }
        }
    }

    /// Sends `command` and returns every packet up to and including its Command Complete or
    /// Command Status (the controller answers in order, so whatever it sent before comes first).
    func send<C: HCICommand>(_ command: C) async throws -> (answer: HCIEvent, before: [HCITransportPacket]) {
        try await sendPacket(try HCICommandPacket(command))
    }

    func sendPacket(_ packet: HCICommandPacket) async throws -> (answer: HCIEvent, before: [HCITransportPacket]) {
        var writer = ByteWriter(capacity: 3 + packet.parameters.count)
        writer.writeUInt16LE(packet.opcode.rawValue)
        writer.writeUInt8(UInt8(packet.parameters.count))
        writer.writeBytes(packet.parameters)
        try await transport.send(.command, writer.bytes)
        var before: [HCITransportPacket] = []
        while true {
            let received = try await next()
            if received.type == .event {
                let event = try HCIEvent(bytes: received.bytes)
                switch event {
                case .commandComplete(let complete) where complete.opcode == packet.opcode: return (event, before)
                case .commandStatus(let status) where status.opcode == packet.opcode: return (event, before)
                default: break
                }
            }
            before.append(received)
        }
    }

    /// Every packet the controller sent before the answer to a Read BD_ADDR sent now.
    func drain() async throws -> [HCITransportPacket] {
        try await send(ReadBDADDRCommand()).before
    }

    func sendACL(_ packet: ACLDataPacket) async throws {
        var writer = ByteWriter(capacity: packet.encodedLength)
        try packet.write(to: &writer)
        try await transport.send(.acl, writer.bytes)
    }
}

func event(_ packet: HCITransportPacket) -> HCIEvent? {
    packet.type == .event ? try? HCIEvent(bytes: packet.bytes) : nil
}

func acl(_ packet: HCITransportPacket) -> ACLDataPacket? {
    guard packet.type == .acl else { return nil }
    var reader = ByteReader(packet.bytes)
    return try? ACLDataPacket(parsing: &reader)
}

/// The advertising reports in `packets`.
func advertisingReports(_ packets: [HCITransportPacket]) -> [LEAdvertisingReport] {
    packets.compactMap(event).flatMap { event -> [LEAdvertisingReport] in
        if case .leMeta(.advertisingReport(let reports)) = event { return reports.reports }
        return []
    }
}

/// Our whole user-space host (driver, L2CAP, ATT) over a simulation: what `--transport sim` runs.
actor SimulatedHost {
    let driver: HCIControllerDriver
    let l2cap: UserSpaceL2CAP
    let info: ControllerInfo
    private var pumps: [Task<Void, Never>] = []
    private var waiters: [BluetoothAddress: CheckedContinuation<LEConnectionCompleteEvent, Never>] = [:]
    private var completed: [BluetoothAddress: LEConnectionCompleteEvent] = [:]
    private(set) var disconnections: [DisconnectionCompleteEvent] = []

    private init(driver: HCIControllerDriver, l2cap: UserSpaceL2CAP, info: ControllerInfo) {
        self.driver = driver
        self.l2cap = l2cap
        self.info = info
    }

    static func start(_ simulation: Simulation) async throws -> SimulatedHost {
        try await start(simulation.hostTransport)
    }

    static func start(_ transport: any HCITransport) async throws -> SimulatedHost {
        // Command timeouts are not under test here: generous, for a loaded machine.
        let driver = HCIControllerDriver(transport: transport, commandTimeout: .seconds(30 * testTimeoutScale))
        let info = try await driver.initialize()
        let buffers = try ACLBufferSize(
            packetLength: Int(info.aclBuffers.packetLength), packetCount: Int(info.aclBuffers.packetCount),
            isShared: info.aclBuffers.shared)
        let host = SimulatedHost(driver: driver, l2cap: UserSpaceL2CAP(bufferSize: buffers), info: info)
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
                        if case .disconnectionComplete(let disconnection) = event {
                            await self?.disconnected(disconnection)
                        }
                    default: continue
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
        if let waiter = waiters.removeValue(forKey: complete.peerAddress) {
            waiter.resume(returning: complete)
        } else {
            completed[complete.peerAddress] = complete
        }
    }

    private func disconnected(_ event: DisconnectionCompleteEvent) {
        disconnections.append(event)
    }

    private func waitForConnection(_ address: BluetoothAddress) async -> LEConnectionCompleteEvent {
        if let complete = completed.removeValue(forKey: address) { return complete }
        return await withCheckedContinuation { waiters[address] = $0 }
    }

    /// Creates a connection (the controller connects at the device's next advertising event;
    /// `advance` moves a manual clock past it) and opens the ATT channel.
    func connect(
        _ address: BluetoothAddress, type: LEPeerAddressType, advance: (@Sendable () async -> Void)? = nil
    ) async throws -> (handle: UInt16, channel: UserSpaceATTChannel) {
        _ = try await driver.sendAccepted(
            LECreateConnectionCommand(
                leScanInterval: 0x10, leScanWindow: 0x10, peerAddressType: type, peerAddress: address,
                connectionParameters: LEConnectionParameters(
                    connectionIntervalMin: 24, connectionIntervalMax: 40, supervisionTimeout: 400)))
        if let advance { await advance() }
        let complete = try await withTimeout { await self.waitForConnection(address) }
        guard complete.status == .success else {
            throw HCIError.commandFailed(opcode: LECreateConnectionCommand.opcode, status: complete.status)
        }
        let channel = try l2cap.connectionOpened(handle: complete.connectionHandle, role: .central)
        return (complete.connectionHandle, channel)
    }

    /// Waits for a central at `address` to connect to our advertising and opens the ATT
    /// channel in the peripheral role.
    func accept(from address: BluetoothAddress) async throws -> (handle: UInt16, channel: UserSpaceATTChannel) {
        let complete = try await withTimeout { await self.waitForConnection(address) }
        #expect(complete.role == .peripheral)
        let channel = try l2cap.connectionOpened(handle: complete.connectionHandle, role: .peripheral)
        return (complete.connectionHandle, channel)
    }

    func disconnect(_ handle: UInt16) async throws {
        _ = try await driver.sendAccepted(DisconnectCommand(connectionHandle: handle))
    }

    func close() async {
        await driver.close()
        l2cap.shutDown("host closed")
        for pump in pumps { pump.cancel() }
    }
}

/// Waits for the next notification of `handle` on `connection` (bounded).
func nextNotification(_ connection: ATTConnection, handle: UInt16, timeout: Double = 30) async throws -> [UInt8] {
    let inbound = connection.inbound
    return try await withTimeout(timeout) { () -> [UInt8] in
        for await pdu in inbound {
            if case .handleValueNotification(let notification) = pdu, notification.handle == handle {
                return notification.value
            }
        }
        throw TestTimeout(what: "the condition", seconds: timeout)
    }
}
