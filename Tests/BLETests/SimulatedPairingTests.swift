import Foundation
import Testing
import TestSupport

@testable import BLE

/// Issue 18 on `sim`: our peripheral pairs, the virtual controller encrypts, bonds re-encrypt
/// without pairing, and a bond lost on one side is reported.
@Suite("BLE: pairing between two adapters on sim", .serialized)
struct SimulatedPairingTests {
    static let service = BluetoothUUID("0000FEE0-0000-1000-8000-00805F9B34FB")!
    static let secret = BluetoothUUID("0000FEE1-0000-1000-8000-00805F9B34FB")!
    static let authenticatedSecret = BluetoothUUID("0000FEE2-0000-1000-8000-00805F9B34FB")!

    /// Stops the advertising, closes both adapters, stops the simulation.
    static func tearDown(_ local: LocalPeripheral, _ client: Adapter, _ server: Adapter, _ simulation: Simulation) async {
        await local.stop()
        await client.close()
        await server.close()
        await simulation.stop()
    }

    static func options(repair: Bool = false) -> AdapterOptions {
        var options = AdapterOptions()
        options.bondsDirectory = NSTemporaryDirectory() + "sim-bonds-\(UInt64.random(in: 0...UInt64.max))"
        options.allowRepair = repair
        return options
    }

    static let services = [
        ServiceDefinition(
            uuid: service,
            characteristics: [
                CharacteristicDefinition(uuid: secret, properties: [.read], permissions: [.read, .readEncrypted], value: Array("72 bpm".utf8)),
                CharacteristicDefinition(
                    uuid: authenticatedSecret, properties: [.read], permissions: [.read, .readAuthenticated], value: [1]),
            ])
    ]

    /// The peripheral stores its bond when its side of the pairing ends, which the central does
    /// not wait for: wait for it, bounded.
    static func firstBond(of adapter: Adapter) async -> Bond? {
        for _ in 0..<200 {
            if let bond = await adapter.bonds().first { return bond }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    @Test("Insufficient Encryption before pairing, the read after; both sides bond; reconnecting re-encrypts")
    func pairOnDemandBondAndReencrypt() async throws {
        try await withTimeout(60, "pairing on sim") {
            let simulation = try await Simulation.start(devices: [])
            let serverOptions = Self.options(), clientOptions = Self.options()
            defer { removeTree(serverOptions.bondsDirectory!); removeTree(clientOptions.bondsDirectory!) }
            let server = try await Adapter.simulated(simulation, options: serverOptions)
            let client = try await Adapter.simulated(simulation, options: clientOptions)
            let local = try await server.advertise(name: "secret", services: Self.services)
            await local.setBondable(true)
            let device = try await client.connect(to: server.address)
            #expect(try await device.read(Self.secret) == Array("72 bpm".utf8), "paired on Insufficient Encryption")
            #expect(await device.securityLevel == .encrypted)
            #expect(await device.client.securityLevel == .encrypted, "the bearer knows the link's level")
            let clientBond = try #require(await client.bonds().first)
            let serverBond = try #require(await Self.firstBond(of: server), "the peripheral's side stores its bond too")
            #expect(clientBond.pairedAs == "central" && serverBond.pairedAs == "peripheral")
            #expect(clientBond.peerLTK == serverBond.peerLTK, "one Secure Connections LTK on both sides")
            // Authenticated is out of reach for Just Works: refused, not downgraded.
            await #expect(throws: BLEError.self) { _ = try await device.read(Self.authenticatedSecret) }
            await device.disconnect()

            let again = try await client.connect(to: server.address, security: .encrypted)
            #expect(await again.securityLevel == .encrypted)
            #expect(await again.client.securityLevel == .encrypted, "re-encryption reaches the bearer too")
            #expect(try await again.read(Self.secret) == Array("72 bpm".utf8))
            #expect(await client.bonds() == [clientBond], "no new pairing")
            #expect(await server.bonds() == [serverBond])
            await again.disconnect()
            await Self.tearDown(local, client, server, simulation)
        }
    }

    @Test("the peripheral forgot the bond: PIN or Key Missing reported; --repair pairs again")
    func lostBondOnOneSide() async throws {
        try await withTimeout(60, "a lost bond on sim") {
            let simulation = try await Simulation.start(devices: [])
            let serverOptions = Self.options(), clientOptions = Self.options()
            defer { removeTree(serverOptions.bondsDirectory!); removeTree(clientOptions.bondsDirectory!) }
            let server = try await Adapter.simulated(simulation, options: serverOptions)
            let client = try await Adapter.simulated(simulation, options: clientOptions)
            let local = try await server.advertise(name: "secret", services: Self.services)
            await local.setBondable(true)
            let device = try await client.connect(to: server.address)
            _ = try await device.pair(PairingOptions(ioCapability: .noInputNoOutput))
            await device.disconnect()
            _ = await Self.firstBond(of: server)
            try await server.removeBond(client.address)
            do throws(BLEError) {
                _ = try await client.connect(to: server.address, security: .encrypted)
                Issue.record("a lost bond went unnoticed")
            } catch {
                #expect(error.message.contains("no longer has the bond"), "\(error)")
                #expect(error.message.contains("PIN or Key Missing"), "\(error)")
            }
            let firstBond = try #require(await client.bonds().first)
            await client.setAllowRepair(true)
            let repaired = try await client.connect(to: server.address, security: .encrypted)
            #expect(try await repaired.read(Self.secret) == Array("72 bpm".utf8))
            #expect(await client.bonds().first?.peerLTK != firstBond.peerLTK, "a new bond")
            await repaired.disconnect()
            await Self.tearDown(local, client, server, simulation)
        }
    }

    @Test("the central's LTK differs from the peripheral's: MIC Failure ends the link")
    func micFailure() async throws {
        try await withTimeout(60, "MIC failure on sim") {
            let simulation = try await Simulation.start(devices: [])
            let serverOptions = Self.options()
            let clientOptions = Self.options()
            defer { removeTree(serverOptions.bondsDirectory!); removeTree(clientOptions.bondsDirectory!) }
            let server = try await Adapter.simulated(simulation, options: serverOptions)
            let client = try await Adapter.simulated(simulation, options: clientOptions)
            let local = try await server.advertise(name: "secret", services: Self.services)
            await local.setBondable(true)
            let device = try await client.connect(to: server.address)
            _ = try await device.pair(PairingOptions(ioCapability: .noInputNoOutput))
            await device.disconnect()
            // Our copy of the key is damaged: the two LTKs differ.
            var bond = try #require(await client.bonds().first)
            bond.peerLTK?.key[0] ^= 0xFF
            try await client.saveBond(bond, replacing: bond.peerIdentity)
            let again = try await client.connect(to: server.address)
            let states = again.states()
            do throws(BLEError) {
                try await again.ensureSecurity(.encrypted)
                Issue.record("encryption with a wrong key succeeded")
            } catch {
                #expect(error.message.contains("no longer has the bond"), "\(error)")
            }
            var last: PeripheralState?
            for await state in states { last = state }
            #expect(last == .disconnected(.remote(.connectionTerminatedDueToMICFailure)), "\(String(describing: last))")
            await Self.tearDown(local, client, server, simulation)
        }
    }

    static let command = BluetoothUUID("0000FEE3-0000-1000-8000-00805F9B34FB")!
    static let commandServices = [
        ServiceDefinition(
            uuid: service,
            characteristics: [
                CharacteristicDefinition(
                    uuid: command, properties: [.writeWithoutResponse], permissions: [.write, .writeEncrypted], value: [])
            ])
    ]

    /// Waits (bounded) until `device`'s link is at least `level`.
    static func securityLevel(of device: Peripheral, reaches level: SecurityLevel) async -> Bool {
        for _ in 0..<250 {
            if await device.securityLevel >= level { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test("a Write Command dropped for encryption: with Security Requests on, the central pairs and the next one lands")
    func securityRequestOnAProtectedWriteCommand() async throws {
        try await withTimeout(60, "a Security Request on sim") {
            let simulation = try await Simulation.start(devices: [])
            let serverOptions = Self.options(), clientOptions = Self.options()
            defer { removeTree(serverOptions.bondsDirectory!); removeTree(clientOptions.bondsDirectory!) }
            let server = try await Adapter.simulated(simulation, options: serverOptions)
            let client = try await Adapter.simulated(simulation, options: clientOptions)
            let local = try await server.advertise(name: "commands", services: Self.commandServices)
            await local.setBondable(true)
            await local.setSecurityRequests(true)
            let writes = local.writes()
            let device = try await client.connect(to: server.address)
            // A command gets no Error Response: only the Security Request tells the central.
            try await device.write([0x01], to: Self.command, withResponse: false)
            #expect(await Self.securityLevel(of: device, reaches: .encrypted), "the central paired on the Security Request")
            try await device.write([0x02], to: Self.command, withResponse: false)
            var iterator = writes.makeAsyncIterator()
            let landed = await iterator.next()
            #expect(landed?.value == [0x02], "the dropped command stays dropped; the one after encryption lands")
            #expect(await client.bonds().count == 1)
            await device.disconnect()
            await Self.tearDown(local, client, server, simulation)
        }
    }

    @Test("Security Requests are off by default: a dropped Write Command leaves the link as it was")
    func noSecurityRequestByDefault() async throws {
        try await withTimeout(60, "no Security Request on sim") {
            let simulation = try await Simulation.start(devices: [])
            let serverOptions = Self.options(), clientOptions = Self.options()
            defer { removeTree(serverOptions.bondsDirectory!); removeTree(clientOptions.bondsDirectory!) }
            let server = try await Adapter.simulated(simulation, options: serverOptions)
            let client = try await Adapter.simulated(simulation, options: clientOptions)
            let local = try await server.advertise(name: "commands", services: Self.commandServices)
            await local.setBondable(true)
            let device = try await client.connect(to: server.address)
            try await device.write([0x01], to: Self.command, withResponse: false)
            // A round trip after the command: had a Security Request been sent, it came first.
            _ = try await device.services()
            try await Task.sleep(for: .milliseconds(200))
            #expect(await device.securityLevel == .none)
            #expect(await client.bonds().isEmpty)
            await device.disconnect()
            await Self.tearDown(local, client, server, simulation)
        }
    }
}
