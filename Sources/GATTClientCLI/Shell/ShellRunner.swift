#if canImport(Glibc)
import Glibc
#endif
import BLE
import Dispatch
import Synchronization
import SystemSupport

/// Runs `shell`: reads lines (the editor on a terminal), runs each on the ``Shell`` and waits for
/// it, and ends at `quit`, the end of input or — between commands, without a terminal — Ctrl-C.
/// Ctrl-C while a command runs cancels that command only (the shell goes on).
func runShell(
    _ peer: PeerAddress?, typed: Bool, invocation: Invocation, input: Int32, output: Int32, errors: Int32
) -> Int32 {
    var options = invocation.options
    if !options.noCache { options.addressCacheDirectory = AddressTypeCache.defaultDirectory() }
    // Line editing redraws the line: not on a terminal without cursor movement (TERM=dumb).
    let interactive = isatty(input) == 1 && TextStyle.movesCursor(output)
    let console = ShellConsole(output: output, errors: errors, interactive: interactive)
    console.activate()
    defer { console.deactivate() }
    let diagnostics = SessionDiagnostics(errors: errors, json: options.json, strict: options.strict)
    let shell = Shell(options: options, console: console, diagnostics: diagnostics, central: CommandConnection.injectedCentral)
    let historyPath = interactive ? ShellHistory.defaultPath() : nil
    let reader = LineReader(input: input, console: console, history: historyPath.map(ShellHistory.load) ?? [])
    let signals = ShellSignals(shell: shell, console: console)
    signals.start()
    defer { signals.stop() }

    var status = signals.run { await shell.begin(peer, typed: typed) }
    if status != 0, !interactive, peer != nil {
        // A script whose device cannot be reached stops here.
        signals.run { await shell.finish() }
        return status
    }
    if interactive, !options.json {
        console.print("gattclient shell: `help` lists the commands, `quit` or Ctrl-D ends")
    }
    while !signals.quitRequested {
        let prompt = signals.run { await shell.prompt() }
        guard let line = reader.next(prompt: prompt.isEmpty ? "> " : prompt) else { break }
        let words: [String]
        do {
            words = try shellWords(line)
        } catch {
            var out = BufferedOutput(fileDescriptor: output)
            status = fail(CommandFailure(error.message, kind: "usage", exitCode: .usage), json: options.json, output: &out, errors: errors)
            continue
        }
        guard !words.isEmpty else { continue }
        let code = signals.run(interruptible: true) { await shell.execute(words) }
        if code != 0 { status = code }
        if signals.run({ await shell.quitting }) { break }
    }
    signals.run { await shell.finish() }
    if let historyPath { ShellHistory.save(reader.history, to: historyPath) }
    return signals.quitRequested ? 130 : status
}

/// Ctrl-C and SIGTERM in the shell. While a command runs: it is cancelled (the shell goes on).
/// Between commands, without a terminal (a script): the shell ends, 130. On a terminal the
/// editor reads Ctrl-C as a key (the line is dropped); a SIGTERM there ends the shell.
final class ShellSignals: Sendable {
    private struct State {
        var running: Task<Int32, Never>?
        var quit = false
    }
    private let state = Mutex(State())
    private let signals = SignalWatch()
    private let shell: Shell
    private let console: ShellConsole

    init(shell: Shell, console: ShellConsole) {
        self.shell = shell
        self.console = console
    }

    var quitRequested: Bool { state.withLock { $0.quit } }

    func start() {
        signals.start { [self] number in interrupted(terminate: number == SIGTERM) }
    }

    func stop() { signals.stop() }

    private func interrupted(terminate: Bool) {
        let running = state.withLock { state -> Task<Int32, Never>? in
            if state.running == nil || terminate { state.quit = true }
            return state.running
        }
        if let running {
            running.cancel()
            if !terminate { return }
        }
        // Nothing runs and the main thread waits for input: end the shell here — the link, the
        // adapter, the terminal as it was — and exit.
        let (shell, console) = (shell, console)
        Task.detached {
            await shell.finish()
            LineReader.restoreTerminal()
            if console.interactive { ShellConsole.write("\n", to: console.output) }
            exit(130)
        }
    }

    /// Runs `body` as a task and waits for it on this (non-pool) thread; `interruptible`: Ctrl-C
    /// cancels it.
    func run<T: Sendable>(interruptible: Bool = false, _ body: @escaping @Sendable () async -> T) -> T {
        if !interruptible { return runAsync(body) }
        let box = Mutex<T?>(nil)
        let semaphore = DispatchSemaphore(value: 0)
        let task = Task<Int32, Never>.detached {
            let value = await body()
            box.withLock { $0 = value }
            semaphore.signal()
            return 0
        }
        state.withLock { $0.running = task }
        semaphore.wait()
        state.withLock { $0.running = nil }
        return box.withLock { $0 }!
    }
}

/// The shell's history file: `$GATTCLIENT_HISTORY`, else `$XDG_STATE_HOME/gattclient/history`,
/// else `~/.local/state/gattclient/history`; mode 0600, written whole (atomically), the newest
/// ``LineEditing/historyLimit`` lines.
enum ShellHistory {
    static func defaultPath(environment: [String: String]? = nil) -> String? {
        let environment = environment ?? ProcessEnvironment.all()
        if let given = environment["GATTCLIENT_HISTORY"] { return given.isEmpty ? nil : given }
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/gattclient/history" }
        guard let home = ProcessEnvironment.homeDirectory(environment: environment) else { return nil }
        return home + "/.local/state/gattclient/history"
    }

    static func load(_ path: String) -> [String] {
        guard let bytes = try? FileSystem.readFile(atPath: path) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    static func save(_ history: [String], to path: String) {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty { try? FileSystem.createDirectory(atPath: directory, mode: 0o700) }
        let text = history.suffix(LineEditing.historyLimit).joined(separator: "\n") + "\n"
        try? FileSystem.writeFileAtomically(Array(text.utf8), toPath: path)
    }
}
