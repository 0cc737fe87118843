#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The shell's terminal: the line being edited (prompt, text, cursor) and every line printed
/// while it is shown. A line that arrives from elsewhere (a notification, a connection event)
/// clears the prompt line, prints, and draws the prompt and the text again with the cursor where
/// it was, so nothing breaks the line being typed. All writes go through one lock.
///
/// Without a terminal there is no prompt: lines are written as they come.
final class ShellConsole: Sendable {
    /// The consoles of the shells that run, by their standard error (one per process in use;
    /// tests run several), for ``printError(_:to:)``.
    private static let active = Mutex<[Int32: ShellConsole]>([:])

    /// The running shell's console whose standard error is `descriptor`, if any.
    static func writing(errorsTo descriptor: Int32) -> ShellConsole? { active.withLock { $0[descriptor] } }

    /// Lines for this console's standard error go through it until ``deactivate()``.
    func activate() { Self.active.withLock { $0[errors] = self } }

    func deactivate() { Self.active.withLock { if $0[errors] === self { $0[errors] = nil } } }

    /// What is on the prompt line.
    struct Line: Sendable {
        var prompt = ""
        var text: [Character] = []
        /// Characters before the cursor.
        var cursor = 0
        /// Whether the prompt line is on screen (the editor is waiting for keys).
        var shown = false
    }

    let output: Int32
    let errors: Int32
    /// Standard input and output are terminals: prompt, line editing, history.
    let interactive: Bool
    private let line = Mutex(Line())

    init(output: Int32, errors: Int32, interactive: Bool) {
        self.output = output
        self.errors = errors
        self.interactive = interactive
    }

    /// Prints `text` (one or more lines) on standard output, or standard error, around the
    /// prompt line.
    func print(_ text: String, toErrors: Bool = false) {
        line.withLock { line in
            let descriptor = toErrors ? errors : output
            guard interactive, line.shown else {
                Self.write(text + "\n", to: descriptor)
                return
            }
            Self.write("\r\u{1B}[K", to: output)
            Self.write(text + "\n", to: descriptor)
            Self.write(Self.drawing(line), to: output)
        }
    }

    /// Changes the line being edited and draws it again (the editor's keys).
    func edit(_ change: (inout Line) -> Void) {
        line.withLock { line in
            change(&line)
            if interactive, line.shown { Self.write(Self.drawing(line), to: output) }
        }
    }

    /// Writes `bytes` on the terminal as they are (a bell, a clear screen), under the lock.
    func raw(_ text: String) {
        line.withLock { _ in Self.write(text, to: output) }
    }

    var current: Line { line.withLock { $0 } }

    /// The prompt line drawn from its start, the cursor put back in place.
    static func drawing(_ line: Line) -> String {
        var text = "\r" + line.prompt + String(line.text) + "\u{1B}[K"
        let after = line.text.count - line.cursor
        if after > 0 { text += "\u{1B}[\(after)D" }
        return text
    }

    static func write(_ text: String, to descriptor: Int32) {
        writeAll(Array(text.utf8), to: descriptor)
    }
}
