import Bluetooth

/// A command line that cannot be understood; `gattclient` prints it with a hint and exits 64.
public struct UsageError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Options every command accepts, before or after the command name.
public struct GlobalOptions: Equatable, Sendable {
    /// `--transport URI`; `nil` means the default (the first kernel adapter).
    public var transport: String?
    public var json = false
    /// `--record FILE.btsnoop`.
    public var record: String?
    /// `--timeout S`: bounds the whole command.
    public var timeout: Double = 30
    /// `-v` (repeatable).
    public var verbosity = 0

    public init() {}
}

/// `dump FILE`: decode a capture.
public struct DumpOptions: Equatable, Sendable {
    public var path: String
    /// `--summary`: decode everything, print only counts.
    public var summary = false
    /// `--conn HANDLE`: only this ACL connection handle.
    public var connection: UInt16?
    /// `--handle H`: only ATT PDUs naming this attribute handle.
    public var attributeHandle: UInt16?
    /// `--att-only` / `--adv-only`.
    public var attOnly = false
    public var advOnly = false

    public init(path: String) { self.path = path }
}

/// `monitor [hciN]`: live decode from the kernel monitor channel.
public struct MonitorOptions: Equatable, Sendable {
    /// Only this adapter (`hciN`); every adapter when nil.
    public var controllerIndex: UInt16?
    public var connection: UInt16?
    public var attributeHandle: UInt16?
    public var attOnly = false
    public var advOnly = false
    /// `--duration S`: stop after S seconds (otherwise at Ctrl-C).
    public var duration: Double?

    public init() {}
}

public enum Command: Equatable, Sendable {
    case help
    case version
    case dump(DumpOptions)
    case monitor(MonitorOptions)
}

public struct Invocation: Equatable, Sendable {
    public var options: GlobalOptions
    public var command: Command
}

/// The commands this build implements, for help and errors.
public let commandSummaries: [(String, String)] = [
    ("dump FILE [--summary] [--conn H] [--handle H] [--att-only|--adv-only]",
     "decode a capture (btsnoop H4/monitor, pcap/pcapng H4)"),
    ("monitor [hciN] [--duration S] [--conn H] [--handle H] [--att-only|--adv-only]",
     "live decode of every adapter's HCI traffic (kernel monitor channel; --record FILE keeps it)"),
]

public let usageText: String = {
    var text = """
    usage: gattclient [--transport URI] [--json] [--record FILE.btsnoop] [--timeout S] [-v] COMMAND ...

    commands:

    """
    for (synopsis, summary) in commandSummaries {
        text += "  \(synopsis)\n      \(summary)\n"
    }
    text += """

    exit codes: 0 success, 1 runtime failure, 64 usage error, 69 adapter/transport unavailable,
    77 permission denied
    """
    return text
}()

/// Parses `gattclient`'s arguments (without the program name). Pure: no I/O.
public func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
    var options = GlobalOptions()
    var positional: [String] = []
    var commandOptions: [(name: String, value: String?)] = []
    var index = 0

    func value(for name: String) throws(UsageError) -> String {
        index += 1
        guard index < arguments.count else { throw UsageError("\(name) needs a value") }
        return arguments[index]
    }

    /// Options that take a value, per command.
    let valued: Set<String> = ["--conn", "--handle", "--services", "--duration"]

    while index < arguments.count {
        var argument = arguments[index]
        var inlineValue: String?
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            inlineValue = String(argument[argument.index(after: equals)...])
            argument = String(argument[..<equals])
        }
        func take() throws(UsageError) -> String {
            if let inlineValue { return inlineValue }
            return try value(for: argument)
        }
        switch argument {
        case "--transport", "-t": options.transport = try take()
        case "--json":
            if inlineValue != nil { throw UsageError("--json takes no value") }
            options.json = true
        case "--record": options.record = try take()
        case "--timeout":
            let text = try take()
            guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
                throw UsageError("--timeout needs a positive number of seconds, not '\(text)'")
            }
            options.timeout = seconds
        case "-v", "--verbose": options.verbosity += 1
        case "-vv": options.verbosity += 2
        case "-h", "--help": return Invocation(options: options, command: .help)
        case "--version": return Invocation(options: options, command: .version)
        case "--":
            positional.append(contentsOf: arguments[(index + 1)...])
            index = arguments.count
            continue
        default:
            if argument.hasPrefix("-") && argument.count > 1 {
                if valued.contains(argument) {
                    commandOptions.append((argument, try take()))
                } else {
                    if inlineValue != nil { throw UsageError("\(argument) takes no value") }
                    commandOptions.append((argument, nil))
                }
            } else {
                positional.append(argument)
            }
        }
        index += 1
    }

    guard let name = positional.first else { return Invocation(options: options, command: .help) }
    let rest = Array(positional.dropFirst())
    switch name {
    case "help":
        return Invocation(options: options, command: .help)
    case "dump":
        guard rest.count == 1 else {
            throw UsageError(rest.isEmpty ? "dump needs a capture file: gattclient dump FILE" : "dump takes one file, got \(rest.count)")
        }
        var dump = DumpOptions(path: rest[0])
        for (flag, value) in commandOptions {
            switch flag {
            case "--summary": dump.summary = true
            case "--att-only": dump.attOnly = true
            case "--adv-only": dump.advOnly = true
            case "--conn": dump.connection = try parseHandle(value ?? "", what: "--conn", allowZero: true, maximum: 0x0EFF)
            case "--handle": dump.attributeHandle = try parseHandle(value ?? "", what: "--handle")
            default: throw UsageError("dump does not know \(flag)")
            }
        }
        if dump.attOnly && dump.advOnly { throw UsageError("--att-only and --adv-only exclude each other") }
        return Invocation(options: options, command: .dump(dump))
    case "monitor":
        var monitor = MonitorOptions()
        if rest.count > 1 { throw UsageError("monitor takes at most one adapter (hciN), got \(rest.count) arguments") }
        if let adapter = rest.first {
            guard adapter.hasPrefix("hci"), let index = UInt16(adapter.dropFirst(3)), index < 0xFFFF else {
                throw UsageError("monitor: '\(adapter)' is not an adapter name like hci0")
            }
            monitor.controllerIndex = index
        }
        for (flag, value) in commandOptions {
            switch flag {
            case "--att-only": monitor.attOnly = true
            case "--adv-only": monitor.advOnly = true
            case "--conn": monitor.connection = try parseHandle(value ?? "", what: "--conn", allowZero: true, maximum: 0x0EFF)
            case "--handle": monitor.attributeHandle = try parseHandle(value ?? "", what: "--handle")
            case "--duration":
                guard let seconds = Double(value ?? ""), seconds > 0, seconds.isFinite else {
                    throw UsageError("--duration needs a positive number of seconds, not '\(value ?? "")'")
                }
                monitor.duration = seconds
            default: throw UsageError("monitor does not know \(flag)")
            }
        }
        if monitor.attOnly && monitor.advOnly { throw UsageError("--att-only and --adv-only exclude each other") }
        return Invocation(options: options, command: .monitor(monitor))
    default:
        throw UsageError("unknown command '\(name)'; commands: " + commandSummaries.map { String($0.0.prefix { $0 != " " }) }.joined(separator: ", "))
    }
}

/// Parses a handle written `0x0021` or `33`.
public func parseHandle(_ text: String, what: String, allowZero: Bool = false, maximum: Int = 0xFFFF) throws(UsageError) -> UInt16 {
    let parsed: Int?
    if text.hasPrefix("0x") || text.hasPrefix("0X") {
        parsed = Int(text.dropFirst(2), radix: 16)
    } else {
        parsed = Int(text)
    }
    guard let value = parsed, value >= (allowZero ? 0 : 1), value <= maximum else {
        let range = allowZero ? "0x0000" : "0x0001"
        throw UsageError("\(what) needs a handle from \(range) to 0x\(String(maximum, radix: 16)) (like 0x0021 or 33), not '\(text)'")
    }
    return UInt16(value)
}
