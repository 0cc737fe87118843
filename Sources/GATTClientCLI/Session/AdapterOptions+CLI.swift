import ATT
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
        options.warning = { printError("gattclient: peripheral: \($0)") }
        return options
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

extension GATTSession {
    /// A command's session: the transport and options of the invocation, its tracing and
    /// diagnostics; `central` (tests, the demo) replaces the transport.
    static func open(
        _ peer: PeerAddress, options: GlobalOptions, replayMatchAny: Bool, central: (any Central)?
    ) async throws -> GATTSession {
        var adapter = options.adapterOptions
        adapter.replayMatchAny = replayMatchAny
        return try await GATTSession.open(
            peer, transport: options.transport, options: adapter, hooks: options.sessionHooks, central: central)
    }
}
