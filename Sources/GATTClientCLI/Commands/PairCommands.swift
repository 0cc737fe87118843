#if canImport(Glibc)
import Glibc
#endif
import BLE
import Bluetooth
import Synchronization
import SystemSupport

func parsePairingCommand(
    _ name: String, _ rest: [String], _ flags: [(name: String, value: String?)]
) throws(UsageError) -> Command {
    if name == "bonds" {
        guard rest.isEmpty, flags.isEmpty else { throw UsageError("bonds takes no arguments") }
        return .bonds
    }
    guard rest.count == 1 else { throw UsageError("\(name) needs the device's address and nothing else") }
    var random = false
    var options = PairCommandOptions()
    for (flag, value) in flags {
        switch (name, flag) {
        case (_, "--random"): random = true
        case ("pair", "--io-capability"): options.ioCapability = try parseIOCapability(value)
        case ("pair", "--passkey"): options.passkey = try parsePasskey(value)
        case ("pair", "--confirm"): options.confirm = true
        case ("pair", "--legacy"): options.legacy = true
        case ("pair", "--no-bond"): options.noBond = true
        case ("pair", "--force"): options.force = true
        case ("pair", "--sc-only"): options.secureConnectionsOnly = true
        default: throw UsageError("\(name) does not know \(flag)")
        }
    }
    guard let peer = PeerAddress(rest[0], random: random) else {
        throw UsageError("'\(rest[0])' is not a Bluetooth address (AA:BB:CC:DD:EE:FF, or AA:BB:CC:DD:EE:FF/random)")
    }
    if options.legacy, options.secureConnectionsOnly { throw UsageError("pair --legacy and --sc-only exclude each other") }
    return name == "pair" ? .pair(peer, options) : .unpair(peer)
}

/// `--io-capability NAME` (for `pair` and `peripheral`).
func parseIOCapability(_ value: String?) throws(UsageError) -> IOCapability {
    let names: [String: IOCapability] = [
        "keyboard-display": .keyboardDisplay, "display-yesno": .displayYesNo, "display-only": .displayOnly,
        "keyboard-only": .keyboardOnly, "none": .noInputNoOutput,
    ]
    guard let capability = names[value ?? ""] else {
        throw UsageError(
            "--io-capability is keyboard-display, display-yesno, display-only, keyboard-only or none, not '\(value ?? "")'")
    }
    return capability
}

/// `--passkey N`: six digits at most, 0–999999.
func parsePasskey(_ value: String?) throws(UsageError) -> UInt32 {
    guard let text = value, !text.isEmpty, text.count <= 6, let passkey = UInt32(text), passkey <= 999_999 else {
        throw UsageError("--passkey needs six digits (000000–999999), not '\(value ?? "")'")
    }
    return passkey
}

/// The terminal's side of pairing: a passkey to show goes to standard error (and an `event` line
/// under `--json`); one to enter comes from `--passkey`, else a prompt on a terminal, else the
/// pairing fails; a numeric comparison is accepted with `--confirm`, else asked on a terminal,
/// else refused. `prompts: false` (the peripheral, whose standard input carries commands) never
/// asks.
final class CLIPairingDelegate: PairingDelegate {
    let passkey: UInt32?
    let confirmAll: Bool
    let errors: Int32
    let diagnostics: SessionDiagnostics?
    let prompts: Bool
    /// Whether each completed pairing is said (one line on stderr, an `event` under `--json`);
    /// `pair`, which reports its own, says nothing more.
    let announces: Bool
    /// The run's Ctrl-C: a prompt gives up when it comes.
    let interrupts = Interrupts.current
    /// The peers whose numeric comparison `--confirm` accepted unseen.
    private let unseen = Mutex<Set<BluetoothAddress>>([])

    /// Whether `--confirm` accepted a numeric comparison nobody looked at.
    var confirmedUnseen: Bool { unseen.withLock { !$0.isEmpty } }

    /// Whether `--confirm` accepted the comparison of the peer at `peer` unseen; forgets it
    /// (one pairing).
    func takeConfirmedUnseen(for peer: BluetoothAddress) -> Bool {
        unseen.withLock { $0.remove(peer) != nil }
    }

    init(
        passkey: UInt32?, confirmAll: Bool, errors: Int32, diagnostics: SessionDiagnostics?, prompts: Bool = true,
        announces: Bool = true
    ) {
        self.announces = announces
        self.passkey = passkey
        self.confirmAll = confirmAll
        self.errors = errors
        self.diagnostics = diagnostics
        self.prompts = prompts
    }

    static func sixDigits(_ value: UInt32) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }

    func displayPasskey(_ passkey: UInt32, for peer: PeerAddress) async {
        printError("passkey \(Self.sixDigits(passkey)) (type it on \(peer.address))", to: errors)
        var json = JSONWriter()
        json.beginObject()
        json.field("kind", "event")
        json.field("event", "passkey")
        json.field("passkey", Int(passkey))
        json.endObject()
        diagnostics?.event(json.bytes)
    }

    func enterPasskey(for peer: PeerAddress) async throws -> UInt32 {
        if let passkey { return passkey }
        guard prompts, isatty(STDIN_FILENO) == 1,
            let line = Self.ask("enter the passkey \(peer.address) shows: ", errors: errors, interrupts: interrupts),
            line.count <= 6, let value = UInt32(line), value <= 999_999
        else {
            throw UsageError("\(peer.address) shows a passkey to enter: give it with --passkey N")
        }
        return value
    }

    func pairingCompleted(with peer: PeerAddress, method: PairingMethod, bond: Bond, stored: Bool) async {
        guard announces else { return }
        let kind = bond.secureConnections ? "Secure Connections" : "LE legacy pairing"
        printError(
            "gattclient: paired with \(peer.address): \(kind), \(method), \(bond.securityLevel)"
                + (bond.identity != peer.address ? " (identity \(bond.identity))" : "") + (stored ? "; bonded" : "; not bonded"),
            to: errors)
        var json = JSONWriter()
        json.beginObject()
        json.field("kind", "event")
        json.field("event", "paired")
        json.field("peer", peer.address.description)
        json.field("identity", bond.identity.description)
        json.field("method", "\(method)")
        json.field("secureConnections", bond.secureConnections)
        json.field("authenticated", bond.authenticated)
        json.field("securityLevel", "\(bond.securityLevel)")
        json.field("bonded", stored)
        json.endObject()
        diagnostics?.event(json.bytes)
    }

    func comparisonWasSeen(for peer: PeerAddress) -> Bool {
        !unseen.withLock { $0.contains(peer.address) }
    }

    func confirm(_ number: UInt32, for peer: PeerAddress) async -> Bool {
        printError("numeric comparison: \(Self.sixDigits(number))", to: errors)
        if confirmAll {
            unseen.withLock { _ = $0.insert(peer.address) }
            return true
        }
        guard prompts, isatty(STDIN_FILENO) == 1,
            let answer = Self.ask("does \(peer.address) show \(Self.sixDigits(number))? [y/N] ", errors: errors, interrupts: interrupts)
        else { return false }
        return answer.lowercased() == "y" || answer.lowercased() == "yes"
    }

    /// One line from the terminal after a prompt on standard error; nil at Ctrl-C (which wakes
    /// the wait at once), at the end of input, or for a line over 64 octets.
    static func ask(_ prompt: String, errors: Int32, interrupts: Interrupts? = nil) -> String? {
        var bytes = Array(prompt.utf8)
        _ = bytes.withUnsafeMutableBytes { write(errors, $0.baseAddress, $0.count) }
        var line: [UInt8] = []
        var octet: UInt8 = 0
        // Ctrl-C wakes the wait through a pipe its listener writes to (no polling).
        var wake: [Int32] = [-1, -1]
        guard pipe(&wake) == 0 else { return nil }
        defer { close(wake[0]); close(wake[1]) }
        let writeEnd = wake[1]
        let listener = interrupts?.addListener { var one: UInt8 = 1; _ = write(writeEnd, &one, 1) }
        defer { if let listener { interrupts?.removeListener(listener) } }
        while true {
            if interrupts?.happened == true { return nil }
            var descriptors = [
                pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0), pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0, errno == EINTR { continue }
            if descriptors[1].revents != 0 { return nil }
            guard ready > 0, read(STDIN_FILENO, &octet, 1) == 1 else { break }
            if octet == 0x0A { break }
            line.append(octet)
            if line.count > 64 { return nil }
        }
        bytes.removeAll()
        return String(decoding: line, as: UTF8.self).trimmingSpaces
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\r" }.reversed())
    }
}

/// `pair ADDR`: pairs as central (user-space host), keeps the bond unless `--no-bond`.
struct PairCommand {
    var peer: PeerAddress
    var options: PairCommandOptions
    var central: (any Central)? = nil

    func run(global: GlobalOptions, errors: Int32, output: inout BufferedOutput) async throws {
        // A bond directory that cannot hold the bond is said before anything is paired.
        if let problem = BondStore(directory: global.bonds).directoryProblem { throw CommandFailure(problem, kind: "bonds") }
        let connection = try await CommandConnection.open(peer, options: global, replayMatchAny: false, central: central)
        let adapter = connection.adapter
        let interactive = isatty(STDIN_FILENO) == 1
        let delegate = CLIPairingDelegate(
            passkey: options.passkey, confirmAll: options.confirm, errors: errors, diagnostics: SessionDiagnostics.current,
            announces: false)
        await adapter.setPairingDelegate(delegate)
        // A passkey given means a keyboard to type it on; else a terminal can show and type.
        let capability: IOCapability =
            options.ioCapability ?? (options.passkey != nil ? .keyboardOnly : (interactive ? .keyboardDisplay : .noInputNoOutput))
        var pairing = PairingOptions(ioCapability: capability, bonding: !options.noBond, minimumKeySize: global.minimumKeySize)
        pairing.legacyOnly = options.legacy
        pairing.secureConnectionsOnly = options.secureConnectionsOnly
        do {
            // The device as connected (its address type found, a private address resolved).
            let target = await connection.peripheral.identity ?? connection.peripheral.peer
            let existing = await adapter.bonds().first { $0.peerIdentity == target }
            if let existing, !options.force {
                // Bonded already: encrypt with the bond (no SMP), as a reconnection does.
                try await connection.peripheral.ensureSecurity(existing.securityLevel)
                report(existing, fresh: false, stored: true, global: global, output: &output)
            } else {
                // --force: the old bond goes only once the new pairing succeeded.
                // The device named is the one repaired: it must distribute that identity, and its
                // bond is replaced only by one at least as strong; an identity another bond holds
                // is refused (BondStore). Nothing else is removed.
                let bond = try await connection.peripheral.pair(pairing, replacing: existing?.peerIdentity)
                let stored = await adapter.bonds().contains { $0 == bond }
                if delegate.confirmedUnseen {
                    // Nobody compared the numbers: no MITM protection, whatever the method.
                    printError(
                        "gattclient: --confirm accepted the numeric comparison unseen: the bond is kept as unauthenticated",
                        to: errors)
                }
                report(bond, fresh: true, stored: stored, global: global, output: &output)
            }
        } catch {
            await connection.close()
            throw error
        }
        SessionDiagnostics.current?.drainEvents(into: &output)
        await connection.close()
    }

    func report(_ bond: Bond, fresh: Bool, stored: Bool, global: GlobalOptions, output: inout BufferedOutput) {
        SessionDiagnostics.current?.drainEvents(into: &output)
        let kind = bond.secureConnections ? "Secure Connections" : "LE legacy pairing"
        let protection = bond.authenticated ? "authenticated (MITM-protected)" : "unauthenticated (Just Works)"
        if global.json {
            var json = JSONWriter()
            json.beginObject()
            json.field("kind", "summary")
            json.field("peer", bond.peer.description)
            json.field("identity", bond.identity.description)
            json.field("paired", fresh)
            json.field("secureConnections", bond.secureConnections)
            json.field("authenticated", bond.authenticated)
            json.field("keySize", bond.keySize)
            json.field("bonded", stored)
            json.field("securityLevel", "\(bond.securityLevel)")
            json.endObject()
            output.writeLine(bytes: json.bytes)
        } else if fresh {
            output.writeLine(
                "paired with \(peer): \(kind), \(protection), \(bond.keySize)-octet key"
                    + (options.noBond ? "; not bonded (--no-bond)" : stored ? "; bonded" : "; not bonded (the device did not ask to bond)"))
        } else {
            output.writeLine(
                "already bonded with \(peer) (\(kind), \(protection)): encrypted with the stored key; --force pairs again")
        }
    }
}

/// `bonds`: the bonds of the adapter's controller address; keys only under `--json`.
struct BondsCommand {
    var central: (any Central)? = nil

    func run(global: GlobalOptions, output: inout BufferedOutput) async throws {
        guard global.transport != nil || central != nil else {
            // No adapter named: the whole store, every local address, no controller needed.
            try listStore(global: global, output: &output)
            return
        }
        let adapter = try await CommandConnection.adapter(options: global, central: central)
        let bonds: [Bond]
        do {
            bonds = try await adapter.storedBonds()
        } catch {
            await adapter.close()
            throw error
        }
        await adapter.close()
        if global.json {
            for bond in bonds {
                // The bond file's members, after "kind".
                guard case .object(let members) = bond.json else { continue }
                output.writeLine(bytes: JSONValue.object([("kind", .string("bond"))] + members).encoded())
            }
            return
        }
        if bonds.isEmpty {
            output.writeLine("no bonds for \(adapter.address.address)")
            return
        }
        for bond in bonds {
            output.writeLine(
                "\(bond.identity) (\(bond.identityType.description.lowercased())): "
                    + "\(bond.secureConnections ? "Secure Connections" : "legacy"), "
                    + "\(bond.authenticated ? "authenticated" : "unauthenticated"), \(bond.keySize)-octet key, "
                    + "paired as \(bond.pairedAs) \(bond.created)")
        }
    }
}

extension BondsCommand {
    /// `bonds` without `--transport`: every local address's bonds in the store, each named.
    func listStore(global: GlobalOptions, output: inout BufferedOutput) throws {
        let store = BondStore(directory: global.bonds, warning: { SessionDiagnostics.libraryMessage($0) })
        if let problem = store.directoryProblem { throw CommandFailure(problem, kind: "bonds") }
        let all = store.locals().flatMap { store.bonds(local: $0) }
        if global.json {
            for bond in all {
                guard case .object(let members) = bond.json else { continue }
                output.writeLine(bytes: JSONValue.object([("kind", .string("bond"))] + members).encoded())
            }
            return
        }
        if all.isEmpty {
            output.writeLine("no bonds in \(store.directory)")
            return
        }
        for bond in all {
            output.writeLine(
                "\(bond.local): \(bond.identity) (\(bond.identityType.description.lowercased())): "
                    + "\(bond.secureConnections ? "Secure Connections" : "legacy"), "
                    + "\(bond.authenticated ? "authenticated" : "unauthenticated"), \(bond.keySize)-octet key, "
                    + "paired as \(bond.pairedAs) \(bond.created)")
        }
    }
}

/// `unpair ADDR`: removes the bond file (with `--transport hciN` also the kernel's keys);
/// without `--transport`, from the store of every local address, naming it.
struct UnpairCommand {
    var peer: PeerAddress
    var central: (any Central)? = nil

    /// The one bond `peer` names among `bonds`: by identity with its type, else
    /// (an address typed without `/random`) by its bits alone when that is one device.
    static func bond(named peer: PeerAddress, in bonds: [Bond]) throws -> Bond? {
        // By identity only: the address a bond was made on may be another device's. A resolvable
        // private address (as `pair` or `scan` showed it) names the identity its IRK resolves.
        let peer = AddressResolver(bonds: bonds).identity(of: peer) ?? peer
        let typed = bonds.filter { $0.peerIdentity == peer }
        let matches = typed.isEmpty ? bonds.filter { $0.identity == peer.address } : typed
        let identities = Set(matches.map { "\($0.local)|\($0.peerIdentity)" })
        guard identities.count <= 1 else {
            throw CommandFailure(
                "\(peer.address) names more than one bond: "
                    + matches.map { "\($0.identity) (\($0.identityType.jsonName)) on \($0.local)" }.joined(separator: ", ")
                    + "; add /public or /random, or --transport to choose the local adapter",
                kind: "usage", exitCode: .usage)
        }
        return matches.first
    }

    func run(global: GlobalOptions, output: inout BufferedOutput) async throws {
        let removed: (identity: PeerAddress, local: BluetoothAddress)
        if global.transport == nil, central == nil {
            // No adapter: the store alone (the kernel's keys, if any, are not touched: said).
            let store = BondStore(directory: global.bonds, warning: { SessionDiagnostics.libraryMessage($0) })
            if let problem = store.directoryProblem { throw CommandFailure(problem, kind: "bonds") }
            let all = store.locals().flatMap { store.bonds(local: $0) }
            guard let bond = try Self.bond(named: peer, in: all) else {
                throw CommandFailure("no bond with \(peer.address) in \(store.directory)", kind: "notFound")
            }
            do {
                try store.remove(local: bond.local, peer: bond.peerIdentity)
            } catch {
                throw CommandFailure("removing the bond with \(bond.identity): \(error)", kind: "bonds")
            }
            removed = (bond.peerIdentity, bond.local)
        } else {
            let adapter = try await CommandConnection.adapter(options: global, central: central)
            do {
                let target = try Self.bond(named: peer, in: await adapter.bonds())?.peerIdentity ?? peer
                try await adapter.removeBond(target)
                removed = (target, adapter.address.address)
            } catch {
                await adapter.close()
                throw error
            }
            await adapter.close()
        }
        if global.json {
            var json = JSONWriter()
            json.beginObject()
            json.field("kind", "summary")
            json.field("unpaired", removed.identity.address.description)
            json.field("local", removed.local.description)
            json.endObject()
            output.writeLine(bytes: json.bytes)
        } else {
            output.writeLine(
                "forgot the bond with \(removed.identity.address) (\(removed.identity.type.jsonName)) on \(removed.local)"
                    + (global.transport == nil && central == nil
                        ? " (the store only: with --transport hciN the kernel's keys go too)" : ""))
        }
    }
}
