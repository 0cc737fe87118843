import Bluetooth
import Foundation
import Security
import SystemSupport
import Testing
import TestSupport

@testable import BLE

/// Issue 36: what may replace a bond, what is never stored, the bound on bonds made as
/// peripheral, the repeated-attempts throttle, and a central's private address resolved to its
/// bond — each a property of the store or the throttle, no link needed.
@Suite("BLE: bond rules and the pairing throttle")
struct BondRulesTests {
    static let local = BluetoothAddress("00:1B:DC:E0:6B:01")!

    static func bond(
        _ identity: String, _ type: AddressType = .public, authenticated: Bool = true, keySize: Int = 16,
        pairedAs: String = "central", irk: [UInt8]? = Array(repeating: 0x11, count: 16), linkAddress: String? = nil
    ) -> Bond {
        let address = BluetoothAddress(identity)!
        return Bond(
            local: local, localType: .public, peer: linkAddress.flatMap(BluetoothAddress.init) ?? address,
            peerType: linkAddress == nil ? type : .random, identity: address, identityType: type,
            peerLTK: LongTermKey(key: (0..<16).map { UInt8($0) ^ (authenticated ? 0x80 : 0) }), localLTK: nil, keySize: keySize,
            authenticated: authenticated, secureConnections: true, peerIRK: irk, peerCSRK: nil, localIRK: nil, localCSRK: nil,
            pairedAs: pairedAs, created: "2026-12-07T00:00:00Z")
    }

    static func withStore(limit: Int = 32, _ body: (BondStore, String) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "bondrules-\(UInt64.random(in: 0...UInt64.max))"
        defer { removeTree(directory) }
        try body(BondStore(directory: directory, peripheralLimit: limit), directory)
    }

    static func files(_ directory: String) -> [String: Data] {
        var files: [String: Data] = [:]
        for path in (try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? [] where path.hasSuffix(".json") {
            files[path] = FileManager.default.contents(atPath: directory + "/" + path)
        }
        return files
    }

    @Test("a bond with an identity bonded already is refused unless that identity is repaired; the file stays byte-identical")
    func noTakeover() throws {
        try Self.withStore { store, directory in
            let victim = Self.bond("00:11:22:33:44:55")
            try store.save(victim)
            let before = Self.files(directory)
            // Another device (another link address) distributes the victim's identity.
            let attacker = Self.bond("00:11:22:33:44:55", authenticated: true, linkAddress: "5A:00:00:00:00:01")
            #expect(throws: BondStoreError.identityBonded(
                identity: victim.peerIdentity, claimedBy: PeerAddress(address: attacker.peer, type: .random), bondedAs: "central")) {
                try store.save(attacker)
            }
            #expect(throws: BondStoreError.self) { try store.admit(attacker) }
            // A repair of another identity does not count.
            #expect(throws: BondStoreError.self) { try store.save(attacker, replacing: PeerAddress("00:11:22:33:44:56")!) }
            #expect(Self.files(directory) == before)
            #expect(store.bonds(local: Self.local) == [victim])
            // The explicit repair of that identity, at least as strong, replaces it in place.
            var repaired = Self.bond("00:11:22:33:44:55")
            repaired.peerLTK = LongTermKey(key: Array(repeating: 7, count: 16))
            try store.save(repaired, replacing: victim.peerIdentity)
            #expect(store.bonds(local: Self.local) == [repaired])
            #expect(Self.files(directory).count == 1)
        }
    }

    @Test("a repair never replaces a bond with a weaker one")
    func noWeakerRepair() throws {
        try Self.withStore { store, directory in
            let strong = Self.bond("00:11:22:33:44:55")
            try store.save(strong)
            let before = Self.files(directory)
            #expect(throws: BondStoreError.weaker(identity: strong.peerIdentity, old: .secureConnections, new: .encrypted)) {
                try store.save(Self.bond("00:11:22:33:44:55", authenticated: false), replacing: strong.peerIdentity)
            }
            #expect(throws: BondStoreError.self) {
                try store.save(Self.bond("00:11:22:33:44:55", keySize: 7), replacing: strong.peerIdentity)
            }
            #expect(Self.files(directory) == before)
        }
    }

    @Test("the address type is part of the identity: public and random with equal bits are two bonds")
    func typeIsPartOfTheIdentity() throws {
        try Self.withStore { store, directory in
            let random = Self.bond("C0:11:22:33:44:55", .random)
            let public_ = Self.bond("C0:11:22:33:44:55", .public)
            try store.save(random)
            try store.save(public_)
            #expect(Set(store.bonds(local: Self.local)) == [random, public_])
            #expect(store.bond(local: Self.local, peer: PeerAddress(address: random.identity, type: .random)) == random)
            #expect(store.bond(local: Self.local, peer: PeerAddress(address: random.identity, type: .public)) == public_)
            #expect(Set(Self.files(directory).keys.map { $0.split(separator: "/").last.map(String.init) ?? "" })
                == ["C0:11:22:33:44:55-random.json", "C0:11:22:33:44:55.json"])
            // Removing one leaves the other.
            #expect(try store.remove(local: Self.local, peer: PeerAddress(address: random.identity, type: .random)))
            #expect(store.bonds(local: Self.local) == [public_])
        }
    }

    @Test("identities that cannot be one and all-zero IRKs are refused; a file holding either is not trusted")
    func invalidIdentitiesAndKeys() throws {
        try Self.withStore { store, directory in
            for (identity, type) in [("40:11:22:33:44:55", AddressType.random), ("00:11:22:33:44:55", .random),
                                     ("FF:FF:FF:FF:FF:FF", .random), ("C0:00:00:00:00:00", .random), ("00:00:00:00:00:00", .public)] {
                // Distributed by a peer on another (link) address: it must be an identity.
                #expect(throws: BondStoreError.self, "\(identity) \(type)") {
                    try store.save(Self.bond(identity, type, linkAddress: "5A:00:00:00:00:01"))
                }
            }
            // A peer that distributed no identity is known by its link address, private or not.
            try store.save(Self.bond("40:11:22:33:44:55", .random))
            #expect(try store.remove(local: Self.local, peer: PeerAddress(address: BluetoothAddress("40:11:22:33:44:55")!, type: .random)))
            #expect(throws: BondStoreError.invalidIRK(PeerAddress("00:11:22:33:44:55")!)) {
                try store.save(Self.bond("00:11:22:33:44:55", irk: Array(repeating: 0, count: 16)))
            }
            #expect(Self.files(directory).isEmpty)
            // Written by hand: the zero IRK is dropped (and said), so it resolves nothing.
            let warnings = WarningLog()
            let reader = BondStore(directory: directory, warning: { warnings.append($0) })
            try FileSystem.createDirectory(atPath: directory + "/" + Self.local.description, mode: 0o700)
            var planted = Self.bond("00:11:22:33:44:55")
            planted.peerIRK = Array(repeating: 0, count: 16)
            try FileSystem.writeFileAtomically(
                planted.json.encoded(), toPath: directory + "/" + Self.local.description + "/00:11:22:33:44:55.json")
            let read = try #require(reader.bonds(local: Self.local).first)
            #expect(read.peerIRK == nil)
            #expect(warnings.lines.count == 1 && warnings.lines[0].contains("all-zero IRK"))
            let anyRPA = PeerAddress(address: BluetoothAddress("4F:00:00:00:00:00")!, type: .random)
            #expect(AddressResolver(bonds: [planted]).identity(of: anyRPA) == nil)
        }
    }

    @Test("bonds made as peripheral stop at the maximum: a new one is refused, none dropped; central bonds do not count")
    func peripheralLimit() throws {
        try Self.withStore(limit: 2) { store, directory in
            try store.save(Self.bond("00:00:00:00:00:01", pairedAs: "peripheral"))
            try store.save(Self.bond("00:00:00:00:00:02", pairedAs: "peripheral"))
            try store.save(Self.bond("00:00:00:00:00:03", pairedAs: "central"))
            let before = Self.files(directory)
            #expect(throws: BondStoreError.full(limit: 2)) { try store.save(Self.bond("00:00:00:00:00:04", pairedAs: "peripheral")) }
            #expect(Self.files(directory) == before)
            #expect(store.bonds(local: Self.local).count == 3)
        }
    }

    @Test("lookups use the index, read again when another process changes the folder")
    func indexFollowsTheFolder() throws {
        try Self.withStore { store, directory in
            let first = Self.bond("00:00:00:00:00:01")
            try store.save(first)
            #expect(store.bonds(local: Self.local) == [first])
            // Another process (another store on the same directory) adds a bond.
            let other = BondStore(directory: directory)
            let second = Self.bond("00:00:00:00:00:02")
            try other.save(second)
            #expect(store.bonds(local: Self.local) == [first, second])
            #expect(try other.remove(local: Self.local, peer: first.peerIdentity))
            #expect(store.bonds(local: Self.local) == [second])
        }
    }

    @Test("hole 11: a central's resolvable private address finds its bond through the bonded IRK")
    func peripheralResolvesACentralsPrivateAddress() async throws {
        let irk: [UInt8] = (0..<16).map { UInt8(0xA0 + $0) }
        let identity = Self.bond("00:11:22:33:44:55", pairedAs: "peripheral", irk: irk)
        // An RPA from the IRK: prand (top two bits 01) and hash = ah(IRK, prand), most
        // significant octet first as `e` takes it; the bond keeps the IRK least significant first.
        let prand: [UInt8] = [0x4A, 0x1B, 0x2C]
        let hash = try SecurityFunctions.ah(Array(irk.reversed()), prand)
        let raw = (prand + hash).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let rpa = PeerAddress(address: BluetoothAddress(rawValue: raw)!, type: .random)
        let other = PeerAddress(address: BluetoothAddress(rawValue: raw ^ 1)!, type: .random)
        let directory = NSTemporaryDirectory() + "rpa-\(UInt64.random(in: 0...UInt64.max))"
        defer { removeTree(directory) }
        let pairing = PeripheralPairing(
            bondsDirectory: directory, delegate: nil, localAddress: PeerAddress(address: Self.local, type: .public),
            options: PairingOptions(), warning: { _ in })
        try pairing.context.store.save(identity)
        #expect(pairing.bond(of: rpa) == identity)
        #expect(pairing.bond(of: other) == nil)
        #expect(pairing.bond(of: identity.peerIdentity) == identity)
    }
}

/// Vol 3 Part H §2.3.6, as PairingThrottle implements it.
@Suite("Security: repeated attempts")
struct PairingThrottleTests {
    static func peer(_ n: UInt64) -> PairingThrottle.PeerKey {
        PairingThrottle.PeerKey(address: BluetoothAddress(rawValue: 0xC000_0000_0000 | n)!, random: true)
    }

    @Test("a peer waits 1, 2, 4 … 64 s after failures in a row; a success clears it")
    func perPeer() {
        var throttle = PairingThrottle()
        let a = Self.peer(1)
        var now = Duration.zero
        for k in 1...8 {
            #expect(throttle.attempt(a, now: now) == nil, "attempt \(k) may start")
            throttle.ended(a, succeeded: false, now: now)
            let wait = Duration.seconds(1 << min(k - 1, 6))
            #expect(throttle.waitBefore(a, now: now + wait - .milliseconds(1)) != nil, "after failure \(k)")
            #expect(throttle.waitBefore(a, now: now + wait) == nil, "after failure \(k)")
            now += wait
        }
        #expect(throttle.failures(of: a) == 8)
        throttle.ended(a, succeeded: true, now: now)
        #expect(throttle.failures(of: a) == 0)
        #expect(throttle.refused == 0)
    }

    @Test("an attacker changing its address at every attempt meets the global wait; a Just Works success elsewhere does not clear it")
    func global() {
        var throttle = PairingThrottle()
        var now = Duration.zero
        for n in 1...UInt64(PairingThrottle.globalAllowance) {
            #expect(throttle.attempt(Self.peer(n), now: now) == nil)
            throttle.ended(Self.peer(n), succeeded: false, now: now)
        }
        // The allowance is used: a fresh address still passes once more…
        #expect(throttle.attempt(Self.peer(100), now: now) == nil)
        throttle.ended(Self.peer(100), succeeded: false, now: now)
        // …then every new address waits.
        #expect(throttle.attempt(Self.peer(101), now: now + .milliseconds(10)) != nil)
        throttle.ended(Self.peer(200), succeeded: true, now: now)
        #expect(throttle.attempt(Self.peer(102), now: now + .milliseconds(20)) != nil, "a success elsewhere does not reset")
        now += .seconds(1)
        #expect(throttle.attempt(Self.peer(103), now: now) == nil)
        #expect(throttle.refused == 2)
    }

    @Test("figure: guesses an attacker gets through in an hour, retrying the moment it may, a new address each time")
    func guessesPerHour() {
        var throttle = PairingThrottle()
        var now = Duration.zero
        var guesses = 0
        var n: UInt64 = 0
        while now < .seconds(3600) {
            n += 1
            if let wait = throttle.waitBefore(Self.peer(n), now: now) {
                now += wait
                continue
            }
            guesses += 1
            throttle.ended(Self.peer(n), succeeded: false, now: now)
        }
        // 3 free, then 1+2+…+64 s waits: the 64 s steady state gives about one guess a minute.
        #expect(guesses < 3600 / 64 + 12, "\(guesses) guesses in an hour")
        #expect(guesses > 3600 / 64 - 12)
        print("pairing throttle: \(guesses) failed attempts possible in an hour against a static passkey (a new address each time)")
    }

    @Test("memory is bounded: at most peerLimit peers remembered")
    func bounded() {
        var throttle = PairingThrottle()
        for n in 0..<UInt64(PairingThrottle.peerLimit * 4) {
            throttle.ended(Self.peer(n), succeeded: false, now: .seconds(Int64(n)))
        }
        #expect(throttle.rememberedPeers == PairingThrottle.peerLimit)
    }
}

/// Issue 36: the store's rules as a property over random sequences of saves by peers claiming
/// random identities (a model of what must hold after each step, checked against the files).
@Suite("BLE: bond store properties")
struct BondStorePropertyTests {
    @Test("no bond is replaced except by its own repair at least as strong; peripheral bonds never exceed the limit", arguments: 0..<4)
    func randomClaims(_ batch: Int) throws {
        var generator = SystemRandomNumberGenerator()
        let identities = (1...6).map { n in PeerAddress(address: BluetoothAddress(rawValue: 0xC0_0000_0000_00 | UInt64(n))!, type: n % 2 == 0 ? .random : .public) }
        for _ in 0..<25 {
            let directory = NSTemporaryDirectory() + "bondprop-\(batch)-\(UInt64.random(in: 0...UInt64.max))"
            defer { removeTree(directory) }
            let store = BondStore(directory: directory, peripheralLimit: 3)
            var model: [PeerAddress: Bond] = [:]
            for _ in 0..<40 {
                let identity = identities.randomElement(using: &generator)!
                var bond = BondRulesTests.bond(
                    identity.address.description, identity.type, authenticated: Bool.random(using: &generator),
                    keySize: [7, 12, 16].randomElement(using: &generator)!,
                    pairedAs: Bool.random(using: &generator) ? "peripheral" : "central")
                bond.peerLTK = LongTermKey(key: (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
                let replacing = Bool.random(using: &generator) ? identities.randomElement(using: &generator) : nil
                let old = model[identity]
                let mayReplace = old.map { replacing == identity && bond.securityLevel >= $0.securityLevel && bond.keySize >= $0.keySize }
                let others = model.values.filter { $0.pairedAs == "peripheral" && $0.peerIdentity != identity }.count
                let fits = bond.pairedAs != "peripheral" || others < 3
                do {
                    try store.save(bond, replacing: replacing)
                    #expect((mayReplace ?? true) && fits, "stored \(bond) over \(String(describing: old)) replacing \(String(describing: replacing))")
                    model[identity] = bond
                } catch {
                    #expect(!((mayReplace ?? true) && fits), "refused \(bond): \(error)")
                }
                #expect(Set(store.bonds(local: BondRulesTests.local)) == Set(model.values))
                #expect(store.bonds(local: BondRulesTests.local).filter { $0.pairedAs == "peripheral" }.count <= 3)
            }
        }
    }
}
