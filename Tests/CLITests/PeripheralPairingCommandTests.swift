import BLE
import Bluetooth
import Emulator
import Foundation
import HCI
import Host
import Testing
import TestSupport
@testable import GATTClientCLI

/// `gattclient peripheral` pairs when a central asks (issue 18): our central (an ``Adapter`` on
/// the simulation) against the command serving a database with protected values, each on its
/// own virtual controller of one link.
@Suite("CLI: peripheral pairs when a central asks", .serialized)
struct PeripheralPairingCommandTests {
    static let peripheralAddress = BluetoothAddress("00:1B:DC:E0:6C:01")!
    static let secret = BluetoothUUID("0000FEE1-0000-1000-8000-00805F9B34FB")!
    static let authenticatedSecret = BluetoothUUID("0000FEE2-0000-1000-8000-00805F9B34FB")!

    static let databaseJSON = """
        {"services": [{"uuid": "0000fee0-0000-1000-8000-00805f9b34fb", "characteristics": [
          {"uuid": "0000fee1-0000-1000-8000-00805f9b34fb", "properties": ["read"],
           "permissions": ["read", "readEncrypted"], "value": "37322062706d"},
          {"uuid": "0000fee2-0000-1000-8000-00805f9b34fb", "properties": ["read"],
           "permissions": ["read", "readAuthenticated"], "value": "01"},
          {"uuid": "0000fee3-0000-1000-8000-00805f9b34fb", "properties": ["writeWithoutResponse"],
           "permissions": ["write", "writeEncrypted"], "value": ""}]}]}
        """

    /// The central's user: enters `passkey`, accepts every comparison.
    struct User: PairingDelegate {
        let passkey: UInt32
        func displayPasskey(_ passkey: UInt32, for peer: PeerAddress) async {}
        func enterPasskey(for peer: PeerAddress) async throws -> UInt32 { passkey }
        func confirm(_ number: UInt32, for peer: PeerAddress) async -> Bool { true }
    }

    struct Rig {
        let simulation: Simulation
        let central: Adapter
        let lines: AsyncStream<String>.Continuation
        let command: Task<[String], any Error>
        let peripheralBonds: String
        let databasePath: String

        /// The peripheral's bonds, once its side of the pairing stored one (bounded wait).
        func peripheralBond() async -> Bond? {
            let store = BondStore(directory: peripheralBonds)
            for _ in 0..<200 {
                if let bond = store.bonds(local: PeripheralPairingCommandTests.peripheralAddress).first { return bond }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return nil
        }

        func stop() async throws -> [String] {
            lines.finish()
            let output = try await command.value
            await central.close()
            await simulation.stop()
            return output
        }

        /// Removes what the rig made under /tmp: the database file and both sides' bonds.
        func removeFiles() {
            removeTree(databasePath)
            removeTree(peripheralBonds)
            removeTree(central.options.bondsDirectory!)
        }
    }

    static func temporary(_ name: String) -> String {
        NSTemporaryDirectory() + "\(name)-\(UInt64.random(in: 0...UInt64.max))"
    }

    static func start(_ flags: [String], user: User = User(passkey: 0)) async throws -> Rig {
        let path = temporary("protected-db") + ".json"
        let bonds = temporary("peripheral-bonds"), centralBonds = temporary("central-bonds")
        // Without a Rig returned (a throw), the caller cannot remove them: removed here.
        var started = false
        defer { if !started { [path, bonds, centralBonds].forEach(removeTree) } }
        try databaseJSON.write(toFile: path, atomically: true, encoding: .utf8)
        guard case .peripheral(var options) = try parse(["peripheral", "--database", path, "--bondable"] + flags).command else {
            throw UsageError("not a peripheral command")
        }
        options.duration = nil
        let simulation = try await Simulation.start(devices: [])
        let (_, transport) = await VirtualController.attach(
            to: simulation.link, clock: SystemClock(), configuration: .init(address: peripheralAddress))
        let host = try await UserSpacePeripheralHost.start(
            transport, name: "virtual", commandTimeout: .seconds(30 * testTimeoutScale))
        let (input, lines) = AsyncStream.makeStream(of: String.self)
        var command = PeripheralCommand(options: options)
        command.host = host
        command.input = input
        var global = GlobalOptions()
        global.json = true
        global.bonds = bonds
        let ready = AsyncStream.makeStream(of: Void.self)
        command.onReady = { _, _ in ready.continuation.yield() }
        let finalCommand = command
        let task = Task {
            var output = BufferedOutput.capturing()
            try await finalCommand.run(global: global, output: &output)
            return output.capturedLines
        }
        var readiness = ready.stream.makeAsyncIterator()
        _ = await readiness.next()
        var centralOptions = AdapterOptions()
        centralOptions.bondsDirectory = centralBonds
        let central = try await Adapter.simulated(simulation, options: centralOptions)
        await central.setPairingDelegate(user)
        started = true
        return Rig(
            simulation: simulation, central: central, lines: lines, command: task, peripheralBonds: bonds, databasePath: path)
    }

    @Test("by default Just Works: Insufficient Encryption, pairing, the read; authenticated stays refused")
    func justWorksByDefault() async throws {
        let rig = try await Self.start([])
        defer { rig.removeFiles() }
        try await withTimeout(60, "Just Works with gattclient peripheral") {
            let device = try await rig.central.connect(to: PeerAddress(address: Self.peripheralAddress, type: .public))
            #expect(try await device.read(Self.secret) == Array("72 bpm".utf8))
            #expect(await device.securityLevel == .encrypted)
            await #expect(throws: BLEError.self) { _ = try await device.read(Self.authenticatedSecret) }
            let bond = try #require(await rig.peripheralBond(), "the peripheral keeps its bond under --bonds")
            #expect(bond.pairedAs == "peripheral" && !bond.authenticated && bond.secureConnections)
            #expect(bond.peerLTK == (await rig.central.bonds().first?.peerLTK), "one LTK on both sides")
            await device.disconnect()
        }
        _ = try await rig.stop()
    }

    @Test("--io-capability keyboard-only --passkey: both sides type it; the authenticated value is served")
    func passkeyEnteredOnBothSides() async throws {
        let rig = try await Self.start(["--io-capability", "keyboard-only", "--passkey", "024680", "--static-passkey-insecure"], user: User(passkey: 24680))
        defer { rig.removeFiles() }
        try await withTimeout(60, "Passkey Entry with gattclient peripheral") {
            let device = try await rig.central.connect(to: PeerAddress(address: Self.peripheralAddress, type: .public))
            let bond = try await device.pair(PairingOptions(ioCapability: .keyboardOnly))
            #expect(bond.authenticated && bond.secureConnections)
            #expect(try await device.read(Self.authenticatedSecret) == [1])
            let theirs = try #require(await rig.peripheralBond())
            #expect(theirs.authenticated && theirs.peerLTK == bond.peerLTK)
            await device.disconnect()
        }
        _ = try await rig.stop()
    }

    @Test("a wrong passkey fails the pairing (Confirm Value Failed) and leaves no bond")
    func wrongPasskeyFails() async throws {
        let rig = try await Self.start(["--io-capability", "keyboard-only", "--passkey", "111111", "--static-passkey-insecure"], user: User(passkey: 222222))
        defer { rig.removeFiles() }
        try await withTimeout(60, "a wrong passkey") {
            let device = try await rig.central.connect(to: PeerAddress(address: Self.peripheralAddress, type: .public))
            await #expect(throws: BLEError.self) { _ = try await device.pair(PairingOptions(ioCapability: .keyboardOnly)) }
            #expect(BondStore(directory: rig.peripheralBonds).bonds(local: Self.peripheralAddress).isEmpty)
            #expect(await rig.central.bonds().isEmpty)
            await device.disconnect()
        }
        _ = try await rig.stop()
    }

    @Test("--confirm accepts a numeric comparison unseen: the peripheral keeps the bond unauthenticated")
    func confirmUnseenIsNotAuthenticated() async throws {
        let rig = try await Self.start(["--io-capability", "display-yesno", "--confirm"])
        defer { rig.removeFiles() }
        try await withTimeout(60, "Numeric Comparison with gattclient peripheral") {
            let device = try await rig.central.connect(to: PeerAddress(address: Self.peripheralAddress, type: .public))
            let bond = try await device.pair(PairingOptions(ioCapability: .displayYesNo))
            #expect(bond.authenticated, "the central's user compared")
            let theirs = try #require(await rig.peripheralBond())
            #expect(!theirs.authenticated, "nobody compared on the peripheral's side")
            // The server holds the link at encrypted: the authenticated value stays refused.
            await #expect(throws: BLEError.self) { _ = try await device.read(Self.authenticatedSecret) }
            #expect(try await device.read(Self.secret) == Array("72 bpm".utf8))
            await device.disconnect()
        }
        _ = try await rig.stop()
    }

    @Test("--security-request: a Write Command dropped for encryption makes the central pair")
    func securityRequestOnADroppedCommand() async throws {
        let rig = try await Self.start(["--security-request"])
        defer { rig.removeFiles() }
        try await withTimeout(60, "a Security Request from gattclient peripheral") {
            let device = try await rig.central.connect(to: PeerAddress(address: Self.peripheralAddress, type: .public))
            try await device.write([0x01], to: BluetoothUUID("0000FEE3-0000-1000-8000-00805F9B34FB")!, withResponse: false)
            var level = SecurityLevel.none
            for _ in 0..<250 where level == .none {
                level = await device.securityLevel
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(level == .encrypted, "the central answered the Security Request by pairing")
            #expect(await rig.peripheralBond() != nil)
            await device.disconnect()
        }
        _ = try await rig.stop()
    }

    @Test("gattclient read and write: a refusal for the link's security pairs (or encrypts with the bond) and the request goes again")
    func commandsRaiseSecurityOnDemand() async throws {
        let rig = try await Self.start([])
        defer { rig.removeFiles() }
        try await withTimeout(60, "automatic security in gattclient's commands") {
            // Each command closes its transport: one central each, at one address (the bonds' key).
            func central() async throws -> UserSpaceCentral {
                let (_, transport) = await VirtualController.attach(
                    to: rig.simulation.link, clock: SystemClock(),
                    configuration: .init(address: BluetoothAddress("00:1B:DC:E0:6C:02")!))
                return try await UserSpaceCentral.start(transport, name: "virtual central", commandTimeout: .seconds(30 * testTimeoutScale))
            }
            var global = GlobalOptions()
            let centralBonds = Self.temporary("cli-central-bonds")
            defer { removeTree(centralBonds) }
            global.bonds = centralBonds
            let peer = PeerAddress(address: Self.peripheralAddress, type: .public)
            let read = ReadCommand(peer: peer, central: try await central(), target: .uuid(Self.secret))
            var output = BufferedOutput.capturing()
            try await read.run(options: global, replayMatchAny: false, output: &output)
            output.flush()
            #expect(output.capturedLines.contains { $0.contains("72 bpm") }, "\(output.capturedLines)")
            let bond = try #require(BondStore(directory: global.bonds).bonds(local: BluetoothAddress("00:1B:DC:E0:6C:02")!).first)
            #expect(bond.pairedAs == "central" && !bond.authenticated)
            // A second connection: Insufficient Encryption, the bond encrypts, the write goes again.
            let write = WriteCommand(
                peer: peer, central: try await central(), target: .uuid(BluetoothUUID("0000FEE3-0000-1000-8000-00805F9B34FB")!),
                value: [0x07])
            var written = BufferedOutput.capturing()
            try await write.run(options: global, replayMatchAny: false, output: &written)
            written.flush()
            #expect(written.capturedLines.contains { $0.hasPrefix("wrote 1 octet") }, "\(written.capturedLines)")
            #expect(BondStore(directory: global.bonds).bonds(local: BluetoothAddress("00:1B:DC:E0:6C:02")!) == [bond])
        }
        _ = try await rig.stop()
    }

    @Test func pairingFlagsParse() throws {
        guard
            case .peripheral(let options) = try parse(
                ["peripheral", "sensortag", "--io-capability", "display-only", "--passkey", "000042", "--confirm", "--static-passkey-insecure"]
            ).command
        else {
            Issue.record("not a peripheral command")
            return
        }
        #expect(options.ioCapability == .displayOnly && options.passkey == 42 && options.confirm)
        #expect(options.asksForPairingSettings && !options.securityRequest)
        guard case .peripheral(let requesting) = try parse(["peripheral", "sensortag", "--security-request"]).command else {
            Issue.record("not a peripheral command")
            return
        }
        #expect(requesting.securityRequest && requesting.asksForPairingSettings)
        #expect(throws: UsageError.self) { _ = try parse(["peripheral", "sensortag", "--passkey", "1234567"]) }
        #expect(throws: UsageError.self) { _ = try parse(["peripheral", "sensortag", "--io-capability", "telepathy"]) }
    }
}
