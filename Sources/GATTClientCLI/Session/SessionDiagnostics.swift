import BLE
import ATT
import Bluetooth
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a command tells the user beside its result, for one invocation: the peer's protocol
/// violations that the ATT connection tolerated (a warning line on standard error each, an
/// `event` JSON line under `--json`, a failure under `--strict`) and `-v` notes.
///
/// `runGATT` makes one per invocation and binds it to ``current`` for the command's task tree;
/// every adapter a command opens hands ``report(_:peer:)`` to its ATT connections. Commands run
/// directly (tests) without one print nothing of this.
final class SessionDiagnostics: Sendable {
    @TaskLocal static var current: SessionDiagnostics?

    let errors: Int32
    let json: Bool
    let strict: Bool

    private struct State {
        var violations: [String] = []
        /// `event` lines not yet written to standard output (the command's output is not ours
        /// to write from the connection's executor; ``drainEvents(into:)`` writes them).
        var pendingEvents: [[UInt8]] = []
        /// Connections to close on the first violation under `--strict`.
        var connections: [ATTConnection] = []
    }
    private let state = Mutex(State())

    init(errors: Int32, json: Bool, strict: Bool) {
        self.errors = errors
        self.json = json
        self.strict = strict
    }

    /// The violations reported so far, as their warning texts.
    var violations: [String] { state.withLock { $0.violations } }

    /// One violation by `peer` that its ATT connection tolerated.
    func report(_ violation: ATTError, peer: String) {
        let text: String
        if case .protocolError(let what) = violation { text = what } else { text = "\(violation)" }
        let message = "protocol violation by \(peer): \(text)"
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("kind", "event")
        writer.field("event", "protocolViolation")
        writer.field("peer", peer)
        writer.field("message", text)
        writer.endObject()
        let toClose = state.withLock { state -> [ATTConnection] in
            state.violations.append(message)
            if json { state.pendingEvents.append(writer.bytes) }
            return strict ? state.connections : []
        }
        let suffix = strict ? " (--strict: failing)" : " (tolerated; --strict makes this a failure)"
        Self.warn(message + suffix, to: errors)
        for connection in toClose { Task { await connection.close() } }
    }

    /// Follows `connection` so that `--strict` can end it at the first violation (at once when
    /// one came before it was attached).
    func attach(_ connection: ATTConnection) {
        let closeNow = state.withLock { state -> Bool in
            state.connections.append(connection)
            return strict && !state.violations.isEmpty
        }
        if closeNow { Task { await connection.close() } }
    }

    /// One `event` line (under `--json`) to write before the command's result.
    func event(_ bytes: [UInt8]) {
        guard json else { return }
        state.withLock { $0.pendingEvents.append(bytes) }
    }

    /// Writes the `event` lines reported so far to `output`.
    func drainEvents(into output: inout BufferedOutput) {
        let events = state.withLock { state -> [[UInt8]] in
            defer { state.pendingEvents.removeAll() }
            return state.pendingEvents
        }
        for event in events { output.writeLine(bytes: event) }
    }

    /// The failure `--strict` turns the first violation into, if there was one.
    var strictFailure: CommandFailure? {
        guard strict, let first = violations.first else { return nil }
        let more = violations.count - 1
        return CommandFailure(
            first + (more > 0 ? " (and \(more) more)" : "") + "; --strict makes a tolerated violation a failure",
            kind: "protocol")
    }

    /// A line for the person waiting, on standard error (`gattclient: …`), at every verbosity.
    static func say(_ text: String) {
        printError("gattclient: " + text, to: current?.errors ?? STDERR_FILENO)
    }

    /// A `-v` note on standard error.
    static func note(_ text: String, verbosity: Int) {
        guard verbosity > 0 else { return }
        printError("gattclient: " + text, to: current?.errors ?? STDERR_FILENO)
    }

    /// A message of the library (``AdapterOptions/warning``): `warning: …` becomes one warning line
    /// (yellow prefix on a terminal), anything else (the simulation's log, a passkey shown) a
    /// plain `gattclient: …` line. Never the red prefix of a failure.
    static func libraryMessage(_ text: String, to descriptor: Int32? = nil) {
        if text.hasPrefix("warning: ") {
            warn(String(text.dropFirst("warning: ".count)), to: descriptor)
        } else {
            printError("gattclient: " + text, to: descriptor ?? current?.errors ?? STDERR_FILENO)
        }
    }

    /// One `gattclient: warning: …` line on standard error (the invocation's when bound).
    static func warn(_ text: String, to descriptor: Int32? = nil) {
        let errors = descriptor ?? current?.errors ?? STDERR_FILENO
        printError(TextStyle.forDescriptor(errors).yellow("gattclient: warning:") + " " + text, to: errors)
    }
}
