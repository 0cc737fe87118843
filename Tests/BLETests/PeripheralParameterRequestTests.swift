import BLE
import Bluetooth
import Emulator
import Testing
import TestSupport

/// Issue 24: our peripheral asks its central for new connection parameters with the L2CAP
/// Connection Parameter Update Request; the central's policy accepts (and applies them with LE
/// Connection Update, seen on both sides) or refuses.
@Suite("LocalPeripheral: L2CAP connection parameter requests")
struct PeripheralParameterRequestTests {
    static func pair(refusing: Bool) async throws -> (Simulation, Adapter, Adapter, LocalPeripheral, Peripheral) {
        let simulation = try await Simulation.start(devices: [])
        let server = try await Adapter.simulated(simulation)
        var options = AdapterOptions()
        options.parameterRequests = refusing ? .refuseAll : .acceptValid
        let client = try await Adapter.simulated(simulation, options: options)
        let local = try await server.advertise(
            name: "sensor",
            services: [
                ServiceDefinition(
                    uuid: 0x180F, characteristics: [CharacteristicDefinition(uuid: 0x2A19, properties: [.read], value: [50])])
            ])
        let peripheral = try await client.connect(to: server.address)
        return (simulation, server, client, local, peripheral)
    }

    @Test func anAcceptedRequestChangesTheLinkOnBothSides() async throws {
        try await withTimeout(60, "an accepted parameter request") {
            let (simulation, server, client, local, peripheral) = try await Self.pair(refusing: false)
            let events = peripheral.linkEvents()
            let centrals = await local.connectedCentrals
            #expect(centrals == [client.address])
            let accepted = try await local.requestConnectionParameters(
                ConnectionParameterRequest(minimumInterval: .milliseconds(100), maximumInterval: .milliseconds(125),
                                           peripheralLatency: 2, supervisionTimeout: .seconds(6)),
                from: client.address)
            #expect(accepted)
            // The central applied them with LE Connection Update: its link event says so.
            var applied: ConnectionParameters?
            for await event in events {
                if case .parametersUpdated(let parameters) = event {
                    applied = parameters
                    break
                }
            }
            #expect(applied == ConnectionParameters(intervalUnits: 80, peripheralLatency: 2, supervisionTimeoutUnits: 600))
            await #expect(throws: BLEError.self) {
                _ = try await local.requestConnectionParameters(ConnectionParameterRequest(interval: .milliseconds(30)),
                                                                from: PeerAddress(address: .zero, type: .public))
            }
            await peripheral.disconnect()
            await client.close()
            await server.close()
            await simulation.stop()
        }
    }

    @Test func aRefusingCentralRejectsTheRequest() async throws {
        try await withTimeout(60, "a refused parameter request") {
            let (simulation, server, client, local, peripheral) = try await Self.pair(refusing: true)
            let before = peripheral.connectionParameters
            let accepted = try await local.requestConnectionParameters(
                ConnectionParameterRequest(interval: .milliseconds(100)), from: client.address)
            #expect(!accepted)
            #expect(peripheral.connectionParameters == before)
            await peripheral.disconnect()
            await client.close()
            await server.close()
            await simulation.stop()
        }
    }
}
