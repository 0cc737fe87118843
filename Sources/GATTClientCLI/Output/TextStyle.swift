#if canImport(Glibc)
import BLE
import SystemSupport
import Glibc
#endif

/// ANSI colours (SGR) for human-readable output on a terminal: on only when the descriptor is a
/// terminal, `NO_COLOR` is unset or empty (https://no-color.org) and `TERM` is not `dumb`.
/// Redirected output, pipes and `--json` stay plain.
struct TextStyle: Sendable {
    let enabled: Bool

    static let plain = TextStyle(enabled: false)

    /// The style for output written to `descriptor`.
    static func forDescriptor(_ descriptor: Int32) -> TextStyle {
        guard isatty(descriptor) == 1 else { return .plain }
        if let noColor = ProcessEnvironment.value("NO_COLOR"), !noColor.isEmpty { return .plain }
        if ProcessEnvironment.value("TERM") == "dumb" { return .plain }
        return TextStyle(enabled: true)
    }

    /// Whether output to `descriptor` may move the cursor (a list redrawn in place, a line being
    /// edited): a terminal whose `TERM` is not `dumb` (which has no cursor addressing).
    static func movesCursor(_ descriptor: Int32) -> Bool {
        guard isatty(descriptor) == 1 else { return false }
        return movesCursor(term: ProcessEnvironment.value("TERM"))
    }

    static func movesCursor(term: String?) -> Bool { term != "dumb" }

    private func sgr(_ code: String, _ text: String) -> String {
        enabled ? "\u{1B}[\(code)m" + text + "\u{1B}[0m" : text
    }

    func bold(_ text: String) -> String { sgr("1", text) }
    func dim(_ text: String) -> String { sgr("2", text) }
    func red(_ text: String) -> String { sgr("31", text) }
    func green(_ text: String) -> String { sgr("32", text) }
    func yellow(_ text: String) -> String { sgr("33", text) }
    func cyan(_ text: String) -> String { sgr("36", text) }
    func boldRed(_ text: String) -> String { sgr("1;31", text) }

    /// An RSSI coloured by strength: green from -60 dBm, yellow from -80 dBm, red below.
    func rssi(_ value: Int8) -> String {
        let text = "\(value) dBm"
        if value >= -60 { return green(text) }
        if value >= -80 { return yellow(text) }
        return red(text)
    }
}
