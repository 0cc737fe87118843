#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// What a key (or key sequence) does to the line being edited.
enum EditorKey: Equatable, Sendable {
    case insert(Character)
    case enter
    case backspace, delete
    case left, right, home, end
    case wordLeft, wordRight
    case historyPrevious, historyNext
    case killToEnd, killToStart, killWordBack
    case clearScreen
    /// Ctrl-C: the line is dropped.
    case interrupt
    /// Ctrl-D: the end of input on an empty line, else delete.
    case endOfInput
    /// A key that does nothing here (an unknown escape sequence, another control key).
    case ignored
}

/// Turns the bytes a terminal sends into keys: UTF-8 text, control keys, and the ANSI/xterm
/// escape sequences of the arrows, Home, End and Delete (CSI and SS3 forms). Sans I/O: fed one
/// byte at a time, it says which key is complete.
struct KeyDecoder: Sendable {
    private var pending: [UInt8] = []

    mutating func feed(_ byte: UInt8) -> EditorKey? {
        pending.append(byte)
        let first = pending[0]
        if first == 0x1B {
            return escape()
        }
        if first < 0x80 {
            pending.removeAll()
            return Self.control(first)
        }
        // UTF-8: the lead byte says how many follow.
        let length = first >= 0xF0 ? 4 : first >= 0xE0 ? 3 : first >= 0xC0 ? 2 : 1
        if length == 1 {
            pending.removeAll()
            return .ignored
        }
        guard pending.count == length else {
            if pending.count > 1, pending.last! & 0xC0 != 0x80 {
                pending.removeAll()
                return .ignored
            }
            return nil
        }
        defer { pending.removeAll() }
        guard let text = String(validating: pending, as: UTF8.self), let character = text.first else { return .ignored }
        return .insert(character)
    }

    private static func control(_ byte: UInt8) -> EditorKey {
        switch byte {
        case 0x0D, 0x0A: return .enter
        case 0x7F, 0x08: return .backspace
        case 0x01: return .home
        case 0x05: return .end
        case 0x02: return .left
        case 0x06: return .right
        case 0x10: return .historyPrevious
        case 0x0E: return .historyNext
        case 0x0B: return .killToEnd
        case 0x15: return .killToStart
        case 0x17: return .killWordBack
        case 0x0C: return .clearScreen
        case 0x03: return .interrupt
        case 0x04: return .endOfInput
        case 0x09: return .insert(" ")
        case 0x20...0x7E: return .insert(Character(Unicode.Scalar(byte)))
        default: return .ignored
        }
    }

    /// ESC [ … final, ESC O final, or ESC b / ESC f (Alt-b / Alt-f).
    private mutating func escape() -> EditorKey? {
        guard pending.count >= 2 else { return nil }
        let second = pending[1]
        switch second {
        case UInt8(ascii: "["):
            guard pending.count >= 3, let last = pending.last, (0x40...0x7E).contains(last) else {
                if pending.count > 8 { pending.removeAll(); return .ignored }
                return nil
            }
            let parameters = String(decoding: pending[2..<(pending.count - 1)], as: UTF8.self)
            pending.removeAll()
            switch (parameters, last) {
            case ("", UInt8(ascii: "A")): return .historyPrevious
            case ("", UInt8(ascii: "B")): return .historyNext
            case ("", UInt8(ascii: "C")): return .right
            case ("", UInt8(ascii: "D")): return .left
            case ("1;5", UInt8(ascii: "C")), ("1;3", UInt8(ascii: "C")): return .wordRight
            case ("1;5", UInt8(ascii: "D")), ("1;3", UInt8(ascii: "D")): return .wordLeft
            case ("", UInt8(ascii: "H")), ("1", UInt8(ascii: "~")), ("7", UInt8(ascii: "~")): return .home
            case ("", UInt8(ascii: "F")), ("4", UInt8(ascii: "~")), ("8", UInt8(ascii: "~")): return .end
            case ("3", UInt8(ascii: "~")): return .delete
            default: return .ignored
            }
        case UInt8(ascii: "O"):
            guard pending.count >= 3 else { return nil }
            let last = pending[2]
            pending.removeAll()
            switch last {
            case UInt8(ascii: "A"): return .historyPrevious
            case UInt8(ascii: "B"): return .historyNext
            case UInt8(ascii: "C"): return .right
            case UInt8(ascii: "D"): return .left
            case UInt8(ascii: "H"): return .home
            case UInt8(ascii: "F"): return .end
            default: return .ignored
            }
        case UInt8(ascii: "b"):
            pending.removeAll()
            return .wordLeft
        case UInt8(ascii: "f"):
            pending.removeAll()
            return .wordRight
        default:
            pending.removeAll()
            return .ignored
        }
    }
}

/// The line being edited and the history, sans I/O: each key changes them and says whether the
/// line is done. Emacs-style keys, as readline has them by default.
struct LineEditing: Sendable {
    var text: [Character] = []
    var cursor = 0
    private(set) var history: [String]
    /// Where in the history Up/Down are (history.count: the line being typed).
    private var position: Int
    /// The line being typed before Up went into the history.
    private var draft: [Character] = []
    static let historyLimit = 500

    init(history: [String] = []) {
        self.history = Array(history.suffix(Self.historyLimit))
        position = self.history.count
    }

    enum Outcome: Equatable {
        case editing
        case line(String)
        case interrupted
        case endOfInput
        case clearScreen
        case bell
    }

    mutating func apply(_ key: EditorKey) -> Outcome {
        switch key {
        case .insert(let character):
            text.insert(character, at: cursor)
            cursor += 1
        case .enter:
            let line = String(text)
            remember(line)
            reset()
            return .line(line)
        case .backspace:
            guard cursor > 0 else { return .bell }
            cursor -= 1
            text.remove(at: cursor)
        case .delete:
            guard cursor < text.count else { return .bell }
            text.remove(at: cursor)
        case .left:
            guard cursor > 0 else { return .bell }
            cursor -= 1
        case .right:
            guard cursor < text.count else { return .bell }
            cursor += 1
        case .home: cursor = 0
        case .end: cursor = text.count
        case .wordLeft:
            while cursor > 0, text[cursor - 1] == " " { cursor -= 1 }
            while cursor > 0, text[cursor - 1] != " " { cursor -= 1 }
        case .wordRight:
            while cursor < text.count, text[cursor] == " " { cursor += 1 }
            while cursor < text.count, text[cursor] != " " { cursor += 1 }
        case .historyPrevious:
            guard position > 0 else { return .bell }
            if position == history.count { draft = text }
            position -= 1
            text = Array(history[position])
            cursor = text.count
        case .historyNext:
            guard position < history.count else { return .bell }
            position += 1
            text = position == history.count ? draft : Array(history[position])
            cursor = text.count
        case .killToEnd: text.removeSubrange(cursor...)
        case .killToStart:
            text.removeSubrange(..<cursor)
            cursor = 0
        case .killWordBack:
            var start = cursor
            while start > 0, text[start - 1] == " " { start -= 1 }
            while start > 0, text[start - 1] != " " { start -= 1 }
            text.removeSubrange(start..<cursor)
            cursor = start
        case .clearScreen: return .clearScreen
        case .interrupt:
            reset()
            return .interrupted
        case .endOfInput:
            if text.isEmpty { return .endOfInput }
            guard cursor < text.count else { return .bell }
            text.remove(at: cursor)
        case .ignored: return .bell
        }
        return .editing
    }

    /// A line worth keeping: not blank, not the one just before it.
    private mutating func remember(_ line: String) {
        let trimmed = line.trimmingSpaces
        guard !trimmed.isEmpty, history.last != trimmed else { return }
        history.append(trimmed)
        if history.count > Self.historyLimit { history.removeFirst(history.count - Self.historyLimit) }
    }

    private mutating func reset() {
        text = []
        cursor = 0
        draft = []
        position = history.count
    }
}

/// Reads lines from standard input: on a terminal with the editor (raw mode only while it reads,
/// so a command that runs — and Ctrl-C — see the terminal as usual), otherwise a line at a time.
final class LineReader {
    /// The terminal's settings while the editor has it in raw mode (to put back on a signal).
    private static let saved = Mutex<(Int32, termios)?>(nil)

    /// Puts the terminal back as it was, if the editor has it (a signal ends the shell).
    static func restoreTerminal() {
        saved.withLock { saved in
            guard let (descriptor, stored) = saved else { return }
            var settings = stored
            _ = tcsetattr(descriptor, TCSADRAIN, &settings)
        }
    }

    private let input: Int32
    private let console: ShellConsole
    private var editing: LineEditing
    private var decoder = KeyDecoder()
    /// Bytes read past the last line (no terminal).
    private var buffered: [UInt8] = []
    private var ended = false

    init(input: Int32, console: ShellConsole, history: [String]) {
        self.input = input
        self.console = console
        editing = LineEditing(history: history)
    }

    var history: [String] { editing.history }

    /// The next line (without its newline), or nil at the end of input. On a terminal, Ctrl-C
    /// drops the line being typed and prompts again; Ctrl-D on an empty line ends the input.
    func next(prompt: String) -> String? {
        console.interactive ? edit(prompt: prompt) : plainLine()
    }

    private func plainLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                var line = Array(buffered[..<newline])
                buffered.removeSubrange(...newline)
                if line.last == 0x0D { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            if ended {
                guard !buffered.isEmpty else { return nil }
                defer { buffered.removeAll() }
                return String(decoding: buffered, as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 {
                ended = true
                continue
            }
            buffered += chunk[..<count]
        }
    }

    private func edit(prompt: String) -> String? {
        var saved = termios()
        guard tcgetattr(input, &saved) == 0 else { return plainLine() }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL | BRKINT | INPCK | ISTRIP)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        Self.saved.withLock { $0 = (input, saved) }
        _ = tcsetattr(input, TCSADRAIN, &raw)
        defer {
            _ = tcsetattr(input, TCSADRAIN, &saved)
            Self.saved.withLock { $0 = nil }
        }
        console.edit { line in
            line = ShellConsole.Line(prompt: prompt, text: [], cursor: 0, shown: true)
        }
        defer { console.edit { $0.shown = false } }
        var byte: UInt8 = 0
        while true {
            let count = read(input, &byte, 1)
            if count < 0, errno == EINTR { continue }
            if count <= 0 {
                console.raw("\r\n")
                return nil
            }
            guard let key = decoder.feed(byte) else { continue }
            let outcome = editing.apply(key)
            let (text, cursor) = (editing.text, editing.cursor)
            switch outcome {
            case .editing:
                console.edit { line in
                    line.text = text
                    line.cursor = cursor
                }
            case .line(let line):
                console.edit { line in
                    line.cursor = line.text.count
                }
                console.edit { $0.shown = false }
                console.raw("\r\n")
                return line
            case .interrupted:
                console.edit { line in line.cursor = line.text.count }
                console.raw("^C\r\n")
                console.edit { line in
                    line.text = []
                    line.cursor = 0
                }
            case .endOfInput:
                console.edit { $0.shown = false }
                console.raw("\r\n")
                return nil
            case .clearScreen:
                console.raw("\u{1B}[H\u{1B}[2J")
                console.edit { _ in }
            case .bell:
                console.raw("\u{07}")
            }
        }
    }
}
