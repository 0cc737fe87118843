/// A small injectable logger. Library code logs through it and never prints.
public struct Logger: Sendable {
    public enum Level: Int, Comparable, Sendable, CustomStringConvertible {
        case trace, debug, info, warning, error

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
        public var description: String {
            switch self {
            case .trace: return "trace"
            case .debug: return "debug"
            case .info: return "info"
            case .warning: return "warning"
            case .error: return "error"
            }
        }
    }

    public let label: String
    public let minimumLevel: Level
    private let sink: @Sendable (Level, String, String) -> Void

    /// `sink` receives level, label and message for every entry at or above `minimumLevel`.
    public init(label: String, minimumLevel: Level = .info, sink: @escaping @Sendable (Level, String, String) -> Void) {
        self.label = label
        self.minimumLevel = minimumLevel
        self.sink = sink
    }

    /// Discards everything.
    public static let disabled = Logger(label: "", minimumLevel: .error) { _, _, _ in }

    /// The same sink under another label.
    public func child(_ label: String) -> Logger {
        Logger(label: self.label.isEmpty ? label : self.label + "." + label, minimumLevel: minimumLevel, sink: sink)
    }

    @inlinable public func isEnabled(_ level: Level) -> Bool { level >= minimumLevel }

    public func log(_ level: Level, _ message: @autoclosure () -> String) {
        guard isEnabled(level) else { return }
        sink(level, label, message())
    }

    public func trace(_ message: @autoclosure () -> String) { log(.trace, message()) }
    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }
}
