import Host
import ATT
import Bluetooth
import HCI
import L2CAP
import Synchronization
import Testing
import TestSupport

/// A scripted controller for the peripheral role: the initialisation answers of
/// `HostScriptedController`, success for the legacy and extended advertising commands (or a
/// chosen failure status for one opcode), every command and ACL packet recorded.
final class AdvertiseScriptedController: Sendable {
    let hostTransport: InMemoryTransport
    private let controller: InMemoryTransport
    private let log: CommandLog
    private let acl: AsyncStream<[UInt8]>
    private let aclIterator: Mutex<AsyncStream<[UInt8]>.Iterator?>
    let seen = SeenOpcodes()
    private let reader: Task<Void, Never>

    init(extended: Bool = false, refuse: (HCIOpcode, UInt8)? = nil) {
        let (host, controller) = InMemoryTransport.makePair()
        hostTransport = host
        self.controller = controller
        let (commands, sink) = AsyncStream.makeStream(of: (HCIOpcode, [UInt8]).self)
        log = CommandLog(commands.makeAsyncIterator())
        let (acl, aclSink) = AsyncStream.makeStream(of: [UInt8].self)
        self.acl = acl
        aclIterator = Mutex(nil)
        let seen = seen
        reader = Task {
            do {
                for try await packet in controller.packets {
                    if packet.type == .acl {
                        aclSink.yield(packet.bytes)
                        // One buffer back at once: Number Of Completed Packets.
                        let handle = UInt16(packet.bytes[0]) | UInt16(packet.bytes[1] & 0x0F) << 8
                        try await controller.send(
                            .event, [0x13, 5, 1] + HostScriptedController.le16(handle) + HostScriptedController.le16(1))
                        continue
                    }
                    guard packet.type == .command, packet.bytes.count >= 3 else { continue }
                    let opcode = HCIOpcode(rawValue: UInt16(packet.bytes[0]) | UInt16(packet.bytes[1]) << 8)
                    let parameters = Array(packet.bytes[3...])
                    seen.opcodes.withLock { $0.append(opcode) }
                    sink.yield((opcode, parameters))
                    try await controller.send(.event, Self.answer(opcode, parameters, extended: extended, refuse: refuse))
                }
            } catch {}
            sink.finish()
            aclSink.finish()
        }
    }

    deinit { reader.cancel() }

    static func answer(_ opcode: HCIOpcode, _ parameters: [UInt8], extended: Bool, refuse: (HCIOpcode, UInt8)?)
        -> [UInt8]
    {
        func complete(_ returns: [UInt8]) -> [UInt8] {
            [0x0E, UInt8(3 + returns.count), 0x01, UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8)] + returns
        }
        if let refuse, refuse.0 == opcode { return complete([refuse.1]) }
        switch opcode.rawValue {
        case 0x1002 where extended:
            // The extended scanning/initiating commands and the extended advertising set commands.
            var supported = [UInt8](repeating: 0, count: 64)
            for (octet, bit) in [(37, 5), (37, 6), (37, 7), (36, 1), (36, 2), (36, 3), (36, 4), (36, 5)] {
                supported[octet] |= 1 << bit
            }
            return complete([0x00] + supported)
        case 0x2005, 0x2006, 0x2008, 0x2009, 0x200A, 0x2035, 0x2037, 0x2038, 0x2039: return complete([0x00])
        case 0x2036: return complete([0x00, 0x00])  // selected TX power 0 dBm
        default: return HostScriptedController.answer(opcode, parameters, extended: extended)
        }
    }

    func event(_ bytes: [UInt8]) async throws { try await controller.send(.event, bytes) }
    func sendACL(_ bytes: [UInt8]) async throws { try await controller.send(.acl, bytes) }
    func close() { controller.close(reason: "test controller closed") }

    func next(_ opcode: HCIOpcode, seconds: Double = 30) async throws -> [UInt8] {
        let log = log
        return try await withTimeout(seconds) {
            guard let parameters = await log.next(opcode) else {
                throw HostStreamEnded(what: "\(opcode): command stream ended")
            }
            return parameters
        }
    }

    func count(_ opcode: HCIOpcode) -> Int { seen.opcodes.withLock { $0.filter { $0 == opcode }.count } }

    /// The next ACL data packet the host wrote (bounded).
    func nextACL(seconds: Double = 30) async throws -> [UInt8] {
        let acl = acl
        return try await withTimeout(seconds) {
            var iterator = acl.makeAsyncIterator()
            guard let packet = await iterator.next() else { throw HostStreamEnded(what: "ACL stream ended") }
            return packet
        }
    }

    static func peripheralConnectionComplete(handle: UInt16, peer: BluetoothAddress, peerType: UInt8 = 0) -> [UInt8] {
        HostScriptedController.connectionComplete(handle: handle, peer: peer, peerType: peerType, role: 0x01)
    }

    /// LE Enhanced Connection Complete [v2], role peripheral, from advertising set 0.
    static func enhancedPeripheralComplete(handle: UInt16, peer: BluetoothAddress) -> [UInt8] {
        let le16 = HostScriptedController.le16
        return [0x3E, 34, 0x29, 0x00] + le16(handle) + [0x01, 0x00] + peer.littleEndianBytes
            + [UInt8](repeating: 0, count: 12) + le16(40) + le16(0) + le16(400) + [0x00, 0x00] + le16(0xFFFF)
    }
}

@Suite("Host: advertising and the peripheral role")
struct HostAdvertiseTests {
    static let central = BluetoothAddress("C0:11:22:33:44:55")!
    static let advertisingData: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x02, 0x80, 0xAA]
    static let scanResponse: [UInt8] = [0x05, 0x09] + Array("Ours".utf8)

    static func start(_ controller: AdvertiseScriptedController) async throws -> LEHost {
        // The scripted controller is a task of this process: while the whole suite runs in
        // parallel on 2 cores it may not be scheduled within the product's 2 s command timeout
        // (not what these tests are about).
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = .seconds(30 * testTimeoutScale)
        let generous = configuration
        return try await withTimeout(60) {
            try await LEHost.start(transport: controller.hostTransport, configuration: generous)
        }
    }

    static func firstConnection(_ stream: AsyncStream<LEConnection>) async throws -> LEConnection {
        try await withTimeout(30) {
            for await connection in stream { return connection }
            throw HostStreamEnded(what: "the connection stream ended")
        }
    }

    @Test func legacyAdvertisingSendsParametersDataScanResponseAndEnable() async throws {
        let controller = AdvertiseScriptedController()
        let host = try await Self.start(controller)
        #expect(!host.usesExtendedAdvertising)
        var parameters = LEAdvertisingParameters(advertisingData: Self.advertisingData, scanResponseData: Self.scanResponse)
        parameters.intervalMin = 0x0100
        parameters.intervalMax = 0x0140
        let connections = try await host.advertise(parameters)
        let set = try await controller.next(.leSetAdvertisingParameters)
        #expect(set.count == 15)
        #expect(Array(set[0..<4]) == [0x00, 0x01, 0x40, 0x01])  // 0x0100, 0x0140 little-endian
        #expect(set[4] == 0x00)  // ADV_IND
        #expect(set[5] == 0x00)  // own address public
        #expect(set[13] == 0x07)  // all three channels
        let data = try await controller.next(.leSetAdvertisingData)
        #expect(data.count == 32)
        #expect(Int(data[0]) == Self.advertisingData.count)
        #expect(Array(data[1...].prefix(Self.advertisingData.count)) == Self.advertisingData)
        #expect(data[(1 + Self.advertisingData.count)...].allSatisfy { $0 == 0 })
        let response = try await controller.next(.leSetScanResponseData)
        #expect(Array(response[1...].prefix(Self.scanResponse.count)) == Self.scanResponse)
        #expect(try await controller.next(.leSetAdvertisingEnable) == [0x01])
        #expect(await host.isAdvertising)
        // Dropping the stream of connections stops advertising.
        withExtendedLifetime(connections) {}
        _ = consume connections
        #expect(try await controller.next(.leSetAdvertisingEnable) == [0x00])
        #expect(await !host.isAdvertising)
        await host.close()
    }

    @Test func aCentralsConnectionIsHandedOverAndCarriesATTBothWays() async throws {
        let controller = AdvertiseScriptedController()
        let host = try await Self.start(controller)
        let connections = try await host.advertise(
            LEAdvertisingParameters(advertisingData: Self.advertisingData, scanResponseData: Self.scanResponse))
        _ = try await controller.next(.leSetAdvertisingEnable)
        try await controller.event(
            AdvertiseScriptedController.peripheralConnectionComplete(handle: 0x0040, peer: Self.central))
        let connection = try await Self.firstConnection(connections)
        #expect(connection.role == .peripheral)
        #expect(connection.handle == 0x0040)
        #expect(connection.peerAddress == Self.central)
        #expect(await host.activeConnections.map(\.handle) == [0x0040])

        // Exchange MTU Request from the central arrives on the ATT channel.
        try await controller.sendACL(HostScriptedController.aclFrame(handle: 0x0040, cid: 4, [0x02, 0x00, 0x02]))
        let sdu = try await withTimeout(30) {
            for try await sdu in connection.channel.incoming { return sdu }
            throw HostStreamEnded(what: "no SDU")
        }
        #expect(sdu == [0x02, 0x00, 0x02])
        // Our response goes out on the same handle and CID.
        try await connection.channel.send([0x03, 0x17, 0x00])
        let packet = try await controller.nextACL()
        #expect(packet == HostScriptedController.aclFrame(handle: 0x0040, cid: 4, [0x03, 0x17, 0x00]).enumerated().map {
            // The host writes PB "first non-flushable" (0b00) where the helper builds 0b10.
            $0.offset == 1 ? $0.element & 0x0F : $0.element
        })
        await host.close()
    }

    @Test func advertisingResumesAfterEveryDisconnectOnly() async throws {
        let controller = AdvertiseScriptedController()
        let host = try await Self.start(controller)
        let connections = try await host.advertise(LEAdvertisingParameters(advertisingData: Self.advertisingData))
        _ = try await controller.next(.leSetAdvertisingEnable)
        let handles: [UInt16] = [0x0001, 0x0002, 0x0003]
        for (round, handle) in handles.enumerated() {
            try await controller.event(
                AdvertiseScriptedController.peripheralConnectionComplete(handle: handle, peer: Self.central))
            try await withTimeout(30) {
                while await host.activeConnections.map(\.handle) != [handle] { await Task.yield() }
            }
            // One connection at most (the default): no advertising while it is up.
            #expect(controller.count(.leSetAdvertisingEnable) == round + 1)
            try await controller.event(HostScriptedController.disconnectionComplete(handle: handle, reason: 0x13))
            #expect(try await controller.next(.leSetAdvertisingEnable) == [0x01], "round \(round)")
        }
        #expect(await host.activeConnections.isEmpty)
        await host.close()
        // The stream kept every connection, in order, and finished with the host.
        var received: [UInt16] = []
        for await connection in connections { received.append(connection.handle) }
        #expect(received == handles)
    }

    @Test func withRoomForTwoItAdvertisesAgainRightAfterTheFirstConnection() async throws {
        let controller = AdvertiseScriptedController()
        let host = try await Self.start(controller)
        var parameters = LEAdvertisingParameters(advertisingData: Self.advertisingData)
        parameters.maximumConnections = 2
        let connections = try await host.advertise(parameters)
        _ = try await controller.next(.leSetAdvertisingEnable)
        try await controller.event(AdvertiseScriptedController.peripheralConnectionComplete(handle: 1, peer: Self.central))
        #expect(try await controller.next(.leSetAdvertisingEnable) == [0x01])
        _ = try await Self.firstConnection(connections)
        await host.close()
    }

    @Test func extendedAdvertisingUsesOneSetWithLegacyPDUs() async throws {
        let controller = AdvertiseScriptedController(extended: true)
        let host = try await Self.start(controller)
        #expect(host.usesExtendedCommands)
        #expect(host.usesExtendedAdvertising)
        var parameters = LEAdvertisingParameters(advertisingData: Self.advertisingData, scanResponseData: Self.scanResponse)
        parameters.randomAddress = BluetoothAddress("C3:11:22:33:44:55")!
        let connections = try await host.advertise(parameters)
        let set = try await controller.next(.leSetExtendedAdvertisingParametersV1)
        #expect(set[0] == 0)  // Advertising_Handle
        #expect(Array(set[1..<3]) == [0x13, 0x00])  // connectable, scannable, legacy PDUs: ADV_IND
        #expect(Array(set[3..<9]) == [0xA0, 0x00, 0x00, 0xF0, 0x00, 0x00])  // 100–150 ms
        #expect(set[10] == 0x01)  // own address random
        let random = try await controller.next(.leSetAdvertisingSetRandomAddress)
        #expect(random == [0x00] + BluetoothAddress("C3:11:22:33:44:55")!.littleEndianBytes)
        let data = try await controller.next(.leSetExtendedAdvertisingData)
        #expect(data == [0x00, 0x03, 0x00, UInt8(Self.advertisingData.count)] + Self.advertisingData)
        let response = try await controller.next(.leSetExtendedScanResponseData)
        #expect(response == [0x00, 0x03, 0x00, UInt8(Self.scanResponse.count)] + Self.scanResponse)
        #expect(try await controller.next(.leSetExtendedAdvertisingEnable) == [0x01, 0x01, 0x00, 0x00, 0x00, 0x00])
        #expect(controller.count(.leSetAdvertisingEnable) == 0, "no legacy advertising command once extended")

        try await controller.event(AdvertiseScriptedController.enhancedPeripheralComplete(handle: 0x0010, peer: Self.central))
        let connection = try await Self.firstConnection(connections)
        #expect(connection.role == .peripheral)
        try await controller.event(HostScriptedController.disconnectionComplete(handle: 0x0010, reason: 0x13))
        #expect(try await controller.next(.leSetExtendedAdvertisingEnable) == [0x01, 0x01, 0x00, 0x00, 0x00, 0x00])
        #expect(connection.disconnectionReason == .remoteUserTerminatedConnection)
        await host.close()
    }

    @Test(arguments: [
        (LEAdvertisingParameters(advertisingData: [UInt8](repeating: 0, count: 32)), "advertising data is 32 octets"),
        (LEAdvertisingParameters(advertisingData: [], scanResponseData: [UInt8](repeating: 0, count: 40)), "scan response data is 40 octets"),
    ])
    func invalidParametersAreRefusedBeforeAnyCommand(_ parameters: LEAdvertisingParameters, _ reason: String) async throws {
        let controller = AdvertiseScriptedController()
        let host = try await Self.start(controller)
        await #expect {
            _ = try await host.advertise(parameters)
        } throws: { error in
            guard case LEHostError.invalidArgument(let why) = error else { return false }
            return why.hasPrefix(reason)
        }
        #expect(controller.count(.leSetAdvertisingParameters) == 0)
        #expect(await !host.isAdvertising)
        await host.close()
    }

    @Test func invalidIntervalsAreRefused() {
        var parameters = LEAdvertisingParameters(advertisingData: [])
        parameters.intervalMin = 0x0010
        #expect(parameters.invalidity != nil)
        parameters.intervalMin = 0x0200
        parameters.intervalMax = 0x0100
        #expect(parameters.invalidity != nil)
        parameters.intervalMax = 0x0200
        #expect(parameters.invalidity == nil)
        parameters.maximumConnections = 0
        #expect(parameters.invalidity != nil)
    }

    @Test func advertisingTwiceIsRefusedAndStoppingFinishesTheStream() async throws {
        let controller = AdvertiseScriptedController()
        let host = try await Self.start(controller)
        let connections = try await host.advertise(LEAdvertisingParameters(advertisingData: Self.advertisingData))
        await #expect(throws: LEHostError.invalidArgument("already advertising")) {
            _ = try await host.advertise(LEAdvertisingParameters(advertisingData: Self.advertisingData))
        }
        _ = try await controller.next(.leSetAdvertisingEnable)
        try await host.stopAdvertising()
        #expect(try await controller.next(.leSetAdvertisingEnable) == [0x00])
        var count = 0
        for await _ in connections { count += 1 }
        #expect(count == 0)
        #expect(await !host.isAdvertising)
        // Not advertising: a peripheral connection is not ours and is dropped.
        try await controller.event(AdvertiseScriptedController.peripheralConnectionComplete(handle: 5, peer: Self.central))
        let disconnect = try await controller.next(.disconnect)
        #expect(disconnect == [0x05, 0x00, 0x13])
        #expect(host.statistics.unexpectedConnections == 1)
        await host.close()
    }

    @Test func aRefusedEnableFailsAdvertiseAndLeavesTheHostNotAdvertising() async throws {
        let controller = AdvertiseScriptedController(refuse: (.leSetAdvertisingEnable, 0x0C))
        let host = try await Self.start(controller)
        await #expect {
            _ = try await host.advertise(LEAdvertisingParameters(advertisingData: Self.advertisingData))
        } throws: { error in
            guard case LEHostError.hci(.commandFailed(let opcode, let status)) = error else { return false }
            return opcode == .leSetAdvertisingEnable && status == .commandDisallowed
        }
        #expect(await !host.isAdvertising)
        await host.close()
    }

    @Test func ownRandomAddressIsSetBeforeLegacyParameters() async throws {
        let controller = AdvertiseScriptedController()
        let host = try await Self.start(controller)
        var parameters = LEAdvertisingParameters(advertisingData: Self.advertisingData)
        parameters.randomAddress = BluetoothAddress("C3:11:22:33:44:55")!
        parameters.connectable = false
        _ = try await host.advertise(parameters)
        let random = try await controller.next(.leSetRandomAddress)
        #expect(random == BluetoothAddress("C3:11:22:33:44:55")!.littleEndianBytes)
        let set = try await controller.next(.leSetAdvertisingParameters)
        #expect(set[4] == 0x03)  // ADV_NONCONN_IND: not connectable, no scan response
        #expect(set[5] == 0x01)  // own address random
        let opcodes = controller.seen.opcodes.withLock { $0 }
        #expect(opcodes.firstIndex(of: .leSetRandomAddress)! < opcodes.firstIndex(of: .leSetAdvertisingParameters)!)
        await host.close()
    }
}
