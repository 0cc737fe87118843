import BLE
import Bluetooth
import Emulator
import GATT
import Foundation
import Testing
import TestSupport

/// Issue 24: Enhanced ATT between our client and our GATT server, two adapters on one
/// simulation: the client encrypts (Just Works pairing), opens bearers that the server accepts
/// (it says EATT Supported in Server Supported Features), discovers in parallel parts and reads
/// and writes over every bearer; the server answers each bearer from the one client state.
@Suite("BLE: Enhanced ATT on sim (our client, our server)", .serialized)
struct EnhancedATTSimulationTests {
    static let level: BluetoothUUID = 0x2A19
    static let led = BluetoothUUID("5A3B0001-0000-1000-8000-00805F9B34FB")!

    @Test func threeBearersCarryDiscoveryReadsAndWrites() async throws {
        try await withTimeout(90, "EATT between two simulated adapters") {
            let simulation = try await Simulation.start(devices: [])
            var serverOptions = AdapterOptions()
            serverOptions.bondsDirectory = NSTemporaryDirectory() + "eatt-sim-server-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            defer { removeTree(serverOptions.bondsDirectory!) }
            let server = try await Adapter.simulated(simulation, options: serverOptions)
            var clientOptions = AdapterOptions()
            clientOptions.bondsDirectory = NSTemporaryDirectory() + "eatt-sim-client-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            defer { removeTree(clientOptions.bondsDirectory!) }
            let client = try await Adapter.simulated(simulation, options: clientOptions)
            try client.setLinkPreferences(LinkPreferences(enhancedBearers: 3))
            let local = try await server.advertise(
                name: "lamp",
                services: [
                    ServiceDefinition(
                        uuid: 0x180F, characteristics: [CharacteristicDefinition(uuid: 0x2A19, properties: [.read], value: [87])]),
                    ServiceDefinition(
                        uuid: Self.led, characteristics: [CharacteristicDefinition(uuid: Self.led, properties: [.read, .write], value: [0])]),
                ])
            let device = try await client.connect(to: server.address)
            #expect(await device.enhancedBearerCount == 3)
            #expect(await device.securityLevel >= .encrypted)
            // EATT Supported in the server's Server Supported Features.
            #expect(try await device.read(0x2B3A) == [0x01])
            let database = try await device.client.discoverDatabase()
            let discovery = try #require(await device.client.lastDiscovery)
            #expect(database.characteristics(uuid: Self.level).count == 1)
            #expect(discovery.roundTrips < discovery.requests, "parts in parallel: \(discovery)")
            let gatt = device.client
            let handle = try #require(database.characteristics(uuid: Self.led).first?.valueHandle)
            let results = await withTaskGroup(of: Bool.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        do {
                            for round in 0..<25 {
                                _ = try await gatt.write(handle: handle, value: [UInt8((worker * 25 + round) & 0xFF)])
                                _ = try await gatt.read(handle: handle)
                            }
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                var all: [Bool] = []
                for await result in group { all.append(result) }
                return all
            }
            #expect(results.allSatisfy { $0 })
            var used = 0
            for bearer in await gatt.bearers where await bearer.requestsSent > 0 { used += 1 }
            #expect(used == 4, "every bearer carried requests")
            await device.disconnect()
            await local.stop()
            await client.close()
            await server.close()
            await simulation.stop()
        }
    }

    /// `--record` keeps every bearer (it records HCI); a replay of it plays them back: the same
    /// tree and reads, whichever of our bearers each request takes.
    @Test func aRecordedEATTSessionReplays() async throws {
        let capture = NSTemporaryDirectory() + "eatt-replay-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).btsnoop"
        defer { unlink(capture) }
        let recorded: (GATTDatabase, [UInt8])
        let serverAddress: PeerAddress
        do {
            let simulation = try await Simulation.start(devices: [])
            var serverOptions = AdapterOptions()
            serverOptions.bondsDirectory = NSTemporaryDirectory() + "eatt-rec-server-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            defer { removeTree(serverOptions.bondsDirectory!) }
            let server = try await Adapter.simulated(simulation, options: serverOptions)
            serverAddress = server.address
            var clientOptions = AdapterOptions()
            clientOptions.bondsDirectory = NSTemporaryDirectory() + "eatt-rec-client-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            defer { removeTree(clientOptions.bondsDirectory!) }
            clientOptions.record = capture
            clientOptions.enhancedBearers = 2
            let client = try await Adapter.simulated(simulation, options: clientOptions)
            let local = try await server.advertise(
                name: "lamp",
                services: [
                    ServiceDefinition(
                        uuid: 0x180F, characteristics: [CharacteristicDefinition(uuid: 0x2A19, properties: [.read], value: [87])]),
                    ServiceDefinition(
                        uuid: Self.led, characteristics: [CharacteristicDefinition(uuid: Self.led, properties: [.read, .write], value: [7])]),
                ])
            let device = try await client.connect(to: server.address)
            let database = try await device.client.discoverDatabase()
            recorded = (database, try await device.read(Self.level))
            await device.disconnect()
            await local.stop()
            await client.close()
            await server.close()
            await simulation.stop()
        }
        var options = AdapterOptions()
        options.enhancedBearers = 2
        let replay = try await Adapter.open("replay:" + capture, options: options)
        let device = try await replay.connect(to: serverAddress)
        #expect(await device.enhancedBearerCount == 2)
        #expect(try await device.client.discoverDatabase() == recorded.0)
        #expect(try await device.read(Self.level) == recorded.1)
        await device.disconnect()
        await replay.close()
    }
}
