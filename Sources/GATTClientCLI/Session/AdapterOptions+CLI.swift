import ATT
import GATT
import BLE

/// The CLI's name for the library's error (exit code and JSON `kind` included).
typealias CommandFailure = BLEError

extension GlobalOptions {
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
            let peripheral = try await adapter.connect(to: peer, timeout: adapterOptions.timeout)
            let connection = CommandConnection(adapter: adapter, peripheral: peripheral)
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
        await peripheral.disconnect()
        await adapter.close()
    }
}
