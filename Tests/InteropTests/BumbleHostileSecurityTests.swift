import ATT
@testable import BLE
import Bluetooth
import Foundation
import Security
import Synchronization
import Testing
import TestSupport

/// Issue 36: Bumble peers patched to misbehave (scripts/bumble_peer.py and
/// scripts/bumble_pairing_central.py, their hostile options patch Bumble's `smp.Session`), each
/// attack refused with the outcome said, the bonds on disk untouched.
@Suite(
    "Interop: hostile Bumble peers against our security",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() }, .serialized)
struct BumbleHostileSecurityTests {
    static let victim = PeerAddress(address: BluetoothAddress("00:11:22:33:44:55")!, type: .public)
    static let victimCentral = PeerAddress(address: BluetoothAddress("00:AA:BB:CC:DD:EE")!, type: .public)

    /// An authenticated Secure Connections bond with `identity`, as a real pairing leaves it.
    static func victimBond(local: BluetoothAddress, identity: PeerAddress, pairedAs: String) -> Bond {
        Bond(
            local: local, localType: .public, peer: identity.address, peerType: identity.type, identity: identity.address,
            identityType: identity.type, peerLTK: LongTermKey(key: Array(repeating: 0x5A, count: 16)), localLTK: nil,
            keySize: 16, authenticated: true, secureConnections: true, peerIRK: Array(repeating: 0x3C, count: 16),
            peerCSRK: nil, localIRK: nil, localCSRK: nil, pairedAs: pairedAs, created: "2026-12-01T00:00:00Z")
    }

    /// Every file under `directory` with its bytes.
    static func snapshot(_ directory: String) -> [String: Data] {
        var files: [String: Data] = [:]
        for path in (try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? [] where path.hasSuffix(".json") {
            files[path] = FileManager.default.contents(atPath: directory + "/" + path)
        }
        return files
    }

    /// Collects the library's warnings.
    final class Warnings: Sendable {
        private let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        func add(_ line: String) { lines.withLock { $0.append(line) } }
    }

    /// A secure Bumble peer started with `arguments`, a fresh bonds directory, and `body` within
    /// 60 s (`what` names it); the peer stopped and the directory removed after.
    static func withSecurePeer(
        _ arguments: [String], _ what: String, _ body: @escaping @Sendable (BumblePeer, PeerAddress, String) async throws -> Void
    ) async throws {
        let (peer, address) = try await BumblePairingInteropTests.securePeer(arguments)
        defer { peer.stop() }
        let bonds = BumblePairingInteropTests.bondsDirectory()
        defer { removeTree(bonds) }
        try await withTimeout(60, what) { try await body(peer, address, bonds) }
    }

    // MARK: - Our central against a hostile peripheral

    @Test("hole 1 (central): a peripheral distributing a bonded device's identity is refused; the bond stays byte-identical")
    func centralRefusesAClaimedIdentity() async throws {
        try await BumbleHostileSecurityTests.withSecurePeer([
            "--pairing", "sc", "--pairing-io", "none", "--claim-identity", "00:11:22:33:44:55/public",
        ], "a claimed identity") { peer, address, bonds in
            let adapter = try await BumblePairingInteropTests.adapter(peer, bonds: bonds)
            let victim = Self.victimBond(local: adapter.address.address, identity: Self.victim, pairedAs: "central")
            try await adapter.saveBond(victim)
            let before = Self.snapshot(bonds)
            let device = try await adapter.connect(to: address)
            let states = device.states()
            // The read needs encryption: pairing starts on its own, and must not end in a
            // takeover of the victim's bond.
            do throws(BLEError) {
                _ = try await device.read(BumblePairingInteropTests.encryptedValue)
                Issue.record("the read succeeded through a pairing that claimed another device's identity")
            } catch {
                #expect(error.kind == "pairing", "\(error)")
                #expect(error.message.contains("00:11:22:33:44:55") && error.message.contains(address.address.description), "\(error)")
            }
            #expect(Self.snapshot(bonds) == before, "the victim's bond file is untouched, nothing added")
            #expect(await adapter.bonds() == [victim])
            #expect(await device.securityLevel == .none)
            var last: PeripheralState?
            for await state in states { last = state }
            #expect(last?.isDisconnected == true, "the link encrypted with the refused keys ended: \(String(describing: last))")
            // And encrypting "the victim" later uses the victim's key, never the attacker's.
            #expect(await adapter.bonds().first?.peerLTK == victim.peerLTK)
            await adapter.close()
        }
    }

    @Test("hole 7 (central): an all-zero IRK fails the pairing; nothing is stored")
    func centralRefusesAZeroIRK() async throws {
        try await BumbleHostileSecurityTests.withSecurePeer(["--pairing", "sc", "--pairing-io", "none", "--zero-irk"], "an all-zero IRK") { peer, address, bonds in
            let adapter = try await BumblePairingInteropTests.adapter(peer, bonds: bonds)
            let device = try await adapter.connect(to: address)
            do throws(BLEError) {
                _ = try await device.pair(PairingOptions(ioCapability: .noInputNoOutput))
                Issue.record("a pairing with an all-zero IRK succeeded")
            } catch {
                #expect(error.message.contains("all-zero IRK"), "\(error)")
            }
            #expect(await adapter.bonds().isEmpty)
            #expect(Self.snapshot(bonds).isEmpty)
            _ = try await peer.event(startingWith: "PAIRING failed")
            await adapter.close()
        }
    }

    // MARK: - Our peripheral against a hostile central

    /// Our peripheral (an encrypted value and an authenticated one) on Bumble's link, with
    /// `prepare` run on its adapter first; Bumble's central as `arguments` say. Returns what the
    /// central reported, our bonds after, the bond files' bytes before and after, our warnings.
    static func serve(
        _ ours: PairingOptions, bumble arguments: [String], passkey: UInt32? = nil, bondable: Bool = true,
        permission: AttributePermissions = .readAuthenticated, prepare: @Sendable (Adapter) async throws -> Void = { _ in }
    ) async throws -> (summary: [String: Any], bonds: [Bond], before: [String: Data], after: [String: Data], warnings: [String]) {
        let peer = try PeripheralInteropProcess("bumble_peer.py", ["--central-port", "0", "--lifetime", "150"])
        defer { peer.stop() }
        let ready = try await peer.nextLine(timeout: 30)
        let centralLine = try await peer.nextLine(timeout: 30)
        let centralPort = String(centralLine.split(separator: ":").last ?? "")
        let warnings = Warnings()
        var options = AdapterOptions()
        options.bondsDirectory = BumblePairingInteropTests.bondsDirectory()
        options.warning = { warnings.add($0) }
        let directory = options.bondsDirectory!
        defer { removeTree(directory) }
        let adapter = try await Adapter.open(String(ready.dropFirst("READY ".count)), options: options)
        if let passkey { await adapter.setPairingDelegate(BumblePairingInteropTests.Delegate(passkey: passkey)) }
        try await prepare(adapter)
        let before = snapshot(directory)
        let local = try await adapter.advertise(
            name: "secret",
            services: [
                ServiceDefinition(
                    uuid: BluetoothUUID("0000FEE0-0000-1000-8000-00805F9B34FB")!,
                    characteristics: [
                        CharacteristicDefinition(
                            uuid: BumbleCentralPairingTests.secret, properties: [.read],
                            permissions: [.read, permission], value: Array("72 bpm".utf8))
                    ])
            ])
        await local.setPairing(ours)
        await local.setBondable(bondable)
        let client = try PeripheralInteropProcess(
            "bumble_pairing_central.py",
            ["--transport", "tcp-client:127.0.0.1:\(centralPort)", "--peer", "\(adapter.address.address)/public",
             "--uuid", "0000FEE1-0000-1000-8000-00805F9B34FB", "--timeout", "\(20 * testTimeoutScale)"] + arguments)
        defer { client.stop() }
        let line = try await client.nextLine(timeout: 150 * testTimeoutScale)
        await local.stop()
        let bonds = await adapter.bonds()
        await adapter.close()
        let summary = try #require(BumbleCentralPairingTests.json(line), "\(line)")
        return (summary, bonds, before, snapshot(directory), warnings.all)
    }

    @Test("hole 1 (peripheral): a central distributing a bonded central's identity: the link ends, the bond stays byte-identical")
    func peripheralRefusesAClaimedIdentity() async throws {
        let outcome = try await Self.serve(
            PairingOptions(ioCapability: .noInputNoOutput),
            bumble: ["--pairing", "sc", "--claim-identity", "00:AA:BB:CC:DD:EE/public"]
        ) { adapter in
            try await adapter.saveBond(Self.victimBond(local: adapter.address.address, identity: Self.victimCentral, pairedAs: "peripheral"))
        }
        #expect(outcome.summary["value"] == nil, "the protected value was not given: \(outcome.summary)")
        #expect(outcome.summary["read_error"] != nil, "\(outcome.summary)")
        #expect(outcome.after == outcome.before, "the bond files are untouched")
        #expect(outcome.bonds.count == 1 && outcome.bonds.first?.peerIdentity == Self.victimCentral)
        let said = outcome.warnings.filter { $0.contains("refused") }
        #expect(said.count == 1 && said[0].contains("00:AA:BB:CC:DD:EE") && said[0].contains("F0:F1:F2:F3:F4:F6"), "\(outcome.warnings)")
    }

    @Test("hole 7 (peripheral): an all-zero IRK from the central fails the pairing and ends the encrypted link")
    func peripheralRefusesAZeroIRK() async throws {
        let outcome = try await Self.serve(PairingOptions(ioCapability: .noInputNoOutput), bumble: ["--pairing", "sc", "--zero-irk"])
        #expect(outcome.summary["value"] == nil, "\(outcome.summary)")
        #expect(outcome.bonds.isEmpty && outcome.after.isEmpty)
        #expect(outcome.warnings.contains { $0.contains("all-zero IRK") && $0.contains("ends") }, "\(outcome.warnings)")
    }

    @Test("hole 2 (peripheral): a central that withholds its keys never reads what the pairing would have earned; the link ends")
    func peripheralGrantsTheLevelOnlyWhenPairingCompletes() async throws {
        // Our side waits for the central's keys: the SMP timeout (30 s) fails the pairing; the
        // read that arrived meanwhile is held, then the link ends.
        let outcome = try await Self.serve(
            PairingOptions(ioCapability: .keyboardOnly), bumble: ["--pairing", "sc", "--io", "display", "--mitm", "--withhold-keys"],
            passkey: 123_456)
        #expect(outcome.summary["value"] == nil, "the authenticated value was not read: \(outcome.summary)")
        #expect(outcome.summary["read_error"] != nil, "\(outcome.summary)")
        #expect(outcome.bonds.isEmpty)
        #expect(
            outcome.warnings.contains { $0.contains("pairing with") && $0.contains("failed") && $0.contains("ends") }, "\(outcome.warnings)")
    }

    @Test("hole 3 (peripheral): repeated wrong passkeys are throttled with Pairing Failed (Repeated Attempts)")
    func repeatedAttemptsAreThrottled() async throws {
        // Bumble's central displays 222222, our delegate types 111111: every real attempt fails
        // (Confirm Value Failed, 0x04); after the first, attempts come faster than the wait.
        let outcome = try await Self.serve(
            PairingOptions(ioCapability: .keyboardOnly),
            bumble: ["--pairing", "sc", "--io", "display", "--mitm", "--passkey", "222222", "--attempts", "7"], passkey: 111_111)
        let attempts = try #require(outcome.summary["attempts"] as? [Any], "\(outcome.summary)")
        let codes = attempts.compactMap { $0 as? Int }
        #expect(codes.count == 7, "no attempt succeeded: \(attempts)")
        let guesses = codes.filter { $0 != 0x09 }
        #expect(guesses.count <= 3, "at most a few guesses reached the passkey check: \(codes)")
        #expect(codes.contains(0x09), "Repeated Attempts: \(codes)")
        #expect(outcome.bonds.isEmpty)
        #expect(outcome.warnings.contains { $0.contains("Repeated Attempts") }, "\(outcome.warnings)")
    }

    @Test("hole 4 (peripheral): not bondable unless asked — a central's pairing leaves no bond")
    func peripheralIsNotBondableByDefault() async throws {
        let outcome = try await Self.serve(
            PairingOptions(ioCapability: .noInputNoOutput), bumble: ["--pairing", "sc"], bondable: false, permission: .readEncrypted)
        #expect(outcome.summary["value"] as? String == Hex.encode(Array("72 bpm".utf8)), "paired and read: \(outcome.summary)")
        #expect(outcome.bonds.isEmpty && outcome.after.isEmpty)
    }
}

extension PeripheralState {
    var isDisconnected: Bool {
        if case .disconnected = self { return true }
        return false
    }
}

/// Issue 36 hole 10: no silent pairing, no silent downgrade (gattclient against Bumble).
@Suite(
    "Interop: gattclient says every pairing and never exits 0 below the level asked",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() }, .serialized)
struct BumblePairingSaidTests {
    @Test("a plain read that pairs says so on stderr (and as an event under --json)")
    func pairingOnDemandIsSaid() async throws {
        let peer = try await BumblePeer.start(devices: ["secure"], lifetime: 90, arguments: ["--pairing", "sc", "--pairing-io", "none"])
        defer { peer.stop() }
        let address = try #require(peer.devices["secure"]).description + "/random"
        let bonds = BumblePairingInteropTests.bondsDirectory()
        defer { removeTree(bonds) }
        let read = await BumblePairingCLITests.run(["--transport", peer.uri.description, "--bonds", bonds, "read", address, "FEE1"])
        #expect(read.code == 0, "\(read.stderr)")
        #expect(read.stdout.contains("heart rate 72"))
        let said = read.stderr.split(separator: "\n").filter { $0.contains("paired with") }
        #expect(said.count == 1, "\(read.stderr)")
        #expect(said.first?.contains("Just Works") == true && said.first?.contains("bonded") == true, "\(read.stderr)")
        _ = try await peer.event(startingWith: "PAIRING done", timeout: 30 * testTimeoutScale)
        // The bond is used from now on: no second pairing, nothing said.
        let json = await BumblePairingCLITests.run(
            ["--transport", peer.uri.description, "--bonds", bonds, "--json", "read", address, "FEE1"])
        #expect(json.code == 0, "\(json.stderr)")
        #expect(!json.stdout.contains("\"event\":\"paired\"") && !json.stderr.contains("paired with"), "\(json.stdout)")
    }

    @Test("--security high against a peer that can only do Just Works fails; pair --passkey off a terminal types it")
    func levelsAreEarned() async throws {
        let justWorks = try await BumblePeer.start(devices: ["secure"], lifetime: 90, arguments: ["--pairing", "sc", "--pairing-io", "none"])
        defer { justWorks.stop() }
        let bonds = BumblePairingInteropTests.bondsDirectory()
        defer { removeTree(bonds) }
        let address = try #require(justWorks.devices["secure"]).description + "/random"
        let high = await BumblePairingCLITests.run(
            ["--transport", justWorks.uri.description, "--bonds", bonds, "--security", "high", "read", address, "FEE1"])
        #expect(high.code != 0, "exit \(high.code): \(high.stdout) \(high.stderr)")
        #expect(!high.stdout.contains("heart rate"))
        #expect(BumbleHostileSecurityTests.snapshot(bonds).isEmpty, "nothing stored from the refused pairing")

        // --passkey with no --io-capability: a keyboard, so Passkey Entry (not Just Works).
        let display = try await BumblePeer.start(
            devices: ["secure"], lifetime: 90, arguments: ["--pairing", "sc", "--pairing-io", "display", "--pairing-mitm"])
        defer { display.stop() }
        let other = BumblePairingInteropTests.bondsDirectory()
        defer { removeTree(other) }
        let paired = await BumblePairingCLITests.run(
            ["--transport", display.uri.description, "--bonds", other, "--json", "pair",
             try #require(display.devices["secure"]).description + "/random", "--passkey", "123456"])
        #expect(paired.code == 0, "\(paired.stderr)")
        #expect(paired.stdout.contains("\"authenticated\":true"), "\(paired.stdout)")
    }
}

/// Issue 36, review findings: a repair that meets another identity, and a bond made on a link
/// address that is another device's.
@Suite(
    "Interop: repairs and link addresses against hostile Bumble peers",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() }, .serialized)
struct BumbleRepairTests {
    @Test("pair --force on a bonded device that now distributes another identity: refused, the old bond kept byte for byte")
    func forcedRepairMeetsAnotherIdentity() async throws {
        let (peer, address) = try await BumblePairingInteropTests.securePeer([
            "--pairing", "sc", "--pairing-io", "none", "--claim-identity", "00:AB:CD:00:00:01/public",
        ])
        defer { peer.stop() }
        let bonds = BumblePairingInteropTests.bondsDirectory()
        defer { removeTree(bonds) }
        // The device's own bond, authenticated, made earlier.
        let adapter = try await BumblePairingInteropTests.adapter(peer, bonds: bonds)
        let own = BumbleHostileSecurityTests.victimBond(local: adapter.address.address, identity: address, pairedAs: "central")
        try await adapter.saveBond(own)
        await adapter.close()
        let before = BumbleHostileSecurityTests.snapshot(bonds)
        let forced = await BumblePairingCLITests.run(
            ["--transport", peer.uri.description, "--bonds", bonds, "pair", address.address.description + "/random", "--force"])
        #expect(forced.code == 1, "exit \(forced.code): \(forced.stdout) \(forced.stderr)")
        #expect(forced.stderr.contains("00:AB:CD:00:00:01") && forced.stderr.contains("kept"), "\(forced.stderr)")
        #expect(BumbleHostileSecurityTests.snapshot(bonds) == before, "nothing removed, nothing added")
    }

    @Test("a bond whose link address is this device's but whose identity is another's is never used for it")
    func linkAddressIsNotIdentity() async throws {
        try await BumbleHostileSecurityTests.withSecurePeer(["--pairing", "sc", "--pairing-io", "none"], "a link address that is not an identity") { peer, address, bonds in
            let adapter = try await BumblePairingInteropTests.adapter(peer, bonds: bonds)
            // Made earlier by someone at this device's address who distributed identity A.
            var other = BumbleHostileSecurityTests.victimBond(
                local: adapter.address.address, identity: PeerAddress(address: BluetoothAddress("00:AB:CD:00:00:02")!, type: .public),
                pairedAs: "central")
            other.peer = address.address
            other.peerType = address.type
            try await adapter.saveBond(other)
            let device = try await adapter.connect(to: address)
            // Not encrypted with A's key (Bumble would end the link with MIC Failure): paired anew.
            #expect(try await device.read(BumblePairingInteropTests.encryptedValue) == Array("heart rate 72".utf8))
            _ = try await peer.event(startingWith: "PAIRING done")
            let stored = await adapter.bonds()
            #expect(stored.contains(other), "A's bond untouched")
            #expect(stored.contains { $0.peerIdentity == address }, "the device's own bond beside it: \(stored)")
            await adapter.close()
        }
    }
}

/// Issue 36 "Also": Secure Connections Only mode as central.
@Suite(
    "Interop: pair --sc-only against a legacy-only peer",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct BumbleSecureConnectionsOnlyTests {
    @Test("a peer offering only LE legacy pairing is refused with Authentication Requirements; nothing stored")
    func legacyRefused() async throws {
        let (peer, address) = try await BumblePairingInteropTests.securePeer(["--pairing", "legacy", "--pairing-io", "none"])
        defer { peer.stop() }
        let bonds = BumblePairingInteropTests.bondsDirectory()
        defer { removeTree(bonds) }
        let refused = await BumblePairingCLITests.run(
            ["--transport", peer.uri.description, "--bonds", bonds, "pair", address.address.description + "/random", "--sc-only"])
        #expect(refused.code == 1, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr.contains("Authentication Requirements"), "\(refused.stderr)")
        #expect(BumbleHostileSecurityTests.snapshot(bonds).isEmpty)
    }
}
