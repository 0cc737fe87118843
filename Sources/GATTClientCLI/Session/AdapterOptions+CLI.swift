#if canImport(Glibc)
import Glibc
#endif
import ATT
import GATT
import BLE

/// The CLI's name for the library's error (exit code and JSON `kind` included).
typealias CommandFailure = BLEError

extension GlobalOptions {
    /// `--transport replay:FILE`: the session is a recorded one, and only what it holds can be asked.
    var isReplay: Bool { transport?.hasPrefix("replay:") ?? false }

    /// What the global options say about opening an adapter.
    var adapterOptions: AdapterOptions {
        var options = AdapterOptions()
        options.security = security
        options.record = record
        options.timeout = .milliseconds(Int64(timeout * 1000))
        options.replayMatchAny = replayMatchAny
        options.replayConnection = replayConnection
        options.warning = { SessionDiagnostics.libraryMessage($0) }
        options.bondsDirectory = bonds
        options.allowRepair = repair
        options.minimumKeySize = minimumKeySize
        options.link = link
        options.enhancedBearers = enhancedBearers
        options.enhancedBearersRequired = enhancedBearersRequired
        if let clientMTU { options.clientMTU = clientMTU }
        options.parameterRequests = refuseParameterRequests ? .refuseAll : .acceptValid
        return options
    }

    /// What `--security` asks for: medium encrypted, high authenticated (MITM), fips Secure
    /// Connections with MITM and a 16-octet key; nil for low or none.
    var securityLevel: SecurityLevel? {
        switch security {
        case "medium": return .encrypted
        case "high": return .authenticated
        case "fips": return .secureConnections
        default: return nil
        }
    }

    /// `-v` tracing and this invocation's ``SessionDiagnostics`` for a session's connection.
    var sessionHooks: SessionHooks {
        var hooks = SessionHooks()
        let diagnostics = SessionDiagnostics.current
        if verbosity > 0 {
            let descriptor = diagnostics?.errors ?? 2
            hooks.trace = { sent, sdu in ATTTracing.trace(sent ? ">" : "<", sdu, to: descriptor) }
        }
        if let diagnostics {
            hooks.violation = { violation, peer in diagnostics.report(violation, peer: peer) }
            hooks.opened = { diagnostics.attach($0) }
        }
        return hooks
    }
}

/// One connection of a command, on the library's front door: the adapter the command opened and
/// the connected ``Peripheral``, whose GATT client does the handle-level work (`--multiple`,
/// `--reliable`, raw subscriptions) the public contract leaves out.
struct CommandConnection {
    let adapter: Adapter
    let peripheral: Peripheral
    /// `-v`: the task reporting the connection's events (``ConnectionVisibility``).
    var watcher: Task<Void, Never>?
    /// The shell's connection, lent to one command: ``close()`` leaves it open.
    var isLent = false

    /// The shell's connection: the commands it runs use it instead of connecting (`shell`).
    @TaskLocal static var lent: CommandConnection?

    var peer: PeerAddress { peripheral.peer }
    var client: GATTClient { peripheral.client }
    var connection: ATTConnection { peripheral.session.connection }

    /// Tests: the central every command of this task uses instead of `--transport`'s
    /// (``runGATTClient(_:through:standardOutput:standardError:)``).
    @TaskLocal static var injectedCentral: (any Central)?

    /// Opens the invocation's adapter (or one over `central`: tests, the demo's shared
    /// simulation) and connects to `peer` within `--timeout`.
    static func open(
        _ peer: PeerAddress, options: GlobalOptions, replayMatchAny: Bool, central: (any Central)?
    ) async throws -> CommandConnection {
        if var lent {
            lent.isLent = true
            lent.watcher = nil
            return lent
        }
        var adapterOptions = options.adapterOptions
        adapterOptions.replayMatchAny = replayMatchAny
        let adapter = try await CommandConnection.adapter(
            options: options, adapterOptions: adapterOptions, central: central ?? injectedCentral)
        do {
            // The terminal answers a pairing's passkey or comparison, whether --security or a
            // refused request started it (on hciN the kernel may pair while connecting).
            await adapter.setPairingDelegate(
                CLIPairingDelegate(
                    passkey: nil, confirmAll: false, errors: SessionDiagnostics.current?.errors ?? 2,
                    diagnostics: SessionDiagnostics.current))
            let peripheral = try await connect(adapter, to: peer, options: options, timeout: adapterOptions.timeout)
            var connection = CommandConnection(adapter: adapter, peripheral: peripheral)
            if options.verbosity > 0 {
                let errors = SessionDiagnostics.current?.errors ?? STDERR_FILENO
                connection.watcher = await ConnectionVisibility.watch(peripheral) { printError("gattclient: \($0)", to: errors) }
            }
            // --security on the user-space host: the bond's key, else pairing, before the first
            // request (the kernel path sets BT_SECURITY on its socket instead).
            if let level = options.securityLevel, peripheral.session.link.securityManager != nil {
                do {
                    try await peripheral.ensureSecurity(level)
                } catch {
                    await connection.close()
                    throw error
                }
            }
            return connection
        } catch {
            await adapter.close()
            throw error
        }
    }

    /// Connects to `peer`: with the type given, or — for a bare address — the type the cache has
    /// from a recent scan, else the type a short scan (a third of the timeout, at most 5 s) sees,
    /// else both types (``Adapter/connect(to:timeout:)-(BluetoothAddress,_)``; some controllers,
    /// Bumble's among them, ignore the Filter Accept List when connecting, hence the scan first).
    /// On a terminal, `connecting to ADDR…` after a second without a link. A connect that times
    /// out with one type, where a scan or a bond saw the other, says `did you mean ADDR/TYPE?`.
    static func connect(
        _ adapter: Adapter, to given: PeerAddress, options: GlobalOptions, timeout: Duration
    ) async throws(BLEError) -> Peripheral {
        let cache = options.addressCacheDirectory.map { AddressTypeCache(directory: $0) }
        var peer = given
        var bare = options.automaticAddressType
        if bare, let cached = cache?.type(of: given.address) {
            peer = PeerAddress(address: given.address, type: cached)
            bare = false
        }
        let errors = SessionDiagnostics.current?.errors ?? STDERR_FILENO
        let target = bare ? given.address.description : "\(peer)"
        // -v: said at once (scripts and tests see the wait begin); a terminal: after a second.
        if options.verbosity > 0 {
            printError("gattclient: connecting to \(target) (at most \(Int(timeout.components.seconds)) s)", to: errors)
        }
        let progress = Task {
            try await Task.sleep(for: .seconds(1))
            if isatty(errors) == 1 { printError("gattclient: connecting to \(target)…", to: errors) }
        }
        defer { progress.cancel() }
        do throws(BLEError) {
            if bare {
                // Not in the cache: a short scan finds the type (and fills the cache); a device
                // not seen is tried with both types.
                let started = ContinuousClock.now
                let scan = min(timeout / 3, .seconds(5))
                if let seen = await Self.scanForType(of: given.address, on: adapter, within: scan) {
                    try? cache?.record([given.address: seen], seen: Int(time(nil)))
                    return try await adapter.connect(
                        to: PeerAddress(address: given.address, type: seen), timeout: timeout - (ContinuousClock.now - started))
                }
                do throws(BLEError) {
                    return try await adapter.connect(to: given.address, timeout: timeout - (ContinuousClock.now - started))
                } catch {
                    guard error.kind == "connect" || error.kind == "timeout" else { throw error }
                    // The time went partly to the scan for the address type: said, with it.
                    throw CommandFailure(
                        error.message + " (after a \(scan.roundedText) scan for its address type, which did not see it)",
                        kind: error.kind, exitCode: error.exitCode)
                }
            }
            return try await adapter.connect(to: peer, timeout: timeout)
        } catch {
            guard !bare, error.kind == "connect" || error.kind == "timeout" else { throw error }
            let other: AddressType = peer.type == .public ? .random : .public
            let bonded = await adapter.bonds().contains { $0.peer == peer.address && $0.peerType == other }
            guard cache?.type(of: peer.address) == other || bonded else { throw error }
            throw BLEError(
                error.message + "; did you mean \(peer.address)/\(other == .random ? "random" : "public")? "
                    + "(\(bonded ? "the bond" : "a scan") saw it as a \(other == .random ? "random" : "public") address)",
                kind: error.kind, exitCode: error.exitCode)
        }
    }

    /// The address type `address` advertises with, from a scan of at most `limit`; nil when it
    /// was not seen (or the transport cannot scan).
    static func scanForType(of address: BluetoothAddress, on adapter: Adapter, within limit: Duration) async -> AddressType? {
        do {
            for try await advertisement in await adapter.scan(ScanOptions(duration: limit)) where advertisement.peer.address == address {
                return advertisement.peer.type
            }
        } catch {
            return nil
        }
        return nil
    }

    /// The adapter of a command: over `central` when one is given, else `--transport`'s.
    static func adapter(
        options: GlobalOptions, adapterOptions: AdapterOptions? = nil, central: (any Central)?
    ) async throws(BLEError) -> Adapter {
        let adapterOptions = adapterOptions ?? options.adapterOptions
        if let central { return Adapter(central: central, options: adapterOptions, hooks: options.sessionHooks) }
        return try await Adapter.open(options.transport, options: adapterOptions, hooks: options.sessionHooks)
    }

    /// Ends the connection (HCI Disconnect on the user-space host, the socket on the kernel's)
    /// and closes the adapter.
    func close() async {
        if isLent { return }
        await peripheral.disconnect()
        await ConnectionVisibility.finish(watcher)
        await adapter.close()
    }
}
