#if canImport(Glibc)
import Glibc
#endif
import Bluetooth
import HCI

/// Runs `gattclient` with `arguments` (without the program name) and returns the exit code.
/// `main` only passes `CommandLine.arguments` here.
/// `standardOutput`/`standardError` let an in-process caller (a test) collect the output.
public func runGATTClient(
    _ arguments: [String], standardOutput: Int32 = STDOUT_FILENO, standardError: Int32 = STDERR_FILENO
) -> Int32 {
    let invocation: Invocation
    do {
        invocation = try parse(arguments)
    } catch {
        printError("gattclient: \(error.message)", to: standardError)
        printError("Run 'gattclient --help' for usage.", to: standardError)
        return ExitCode.usage.rawValue
    }
    var output = BufferedOutput(fileDescriptor: standardOutput)
    let errors = standardError
    defer { output.flush() }
    switch invocation.command {
    case .help:
        output.write(usageText + "\n")
        return ExitCode.success.rawValue
    case .version:
        output.writeLine("gattclient \(gattclientVersion)")
        return ExitCode.success.rawValue
    case .monitor(let options):
        return runMonitor(options, invocation: invocation, output: &output, errors: errors)
    case .dump(let options):
        let command = DumpCommand(options: options, json: invocation.options.json)
        do {
            if let damage = try command.run(output: &output) {
                return fail(CLIFailure(message: "\(options.path): decoding stopped: \(damage)", kind: "capture"), json: invocation.options.json, output: &output, errors: errors)
            }
            return ExitCode.success.rawValue
        } catch {
            var code = ExitCode.failure
            if case HCIError.system(_, let errno) = error, errno == .permissionDenied || errno == .accessDenied { code = .permission }
            return fail(CLIFailure(message: "\(options.path): \(error)", kind: "capture", exitCode: code), json: invocation.options.json, output: &output, errors: errors)
        }
    }
}

public let gattclientVersion = "0.1.0"

/// A runtime failure as `gattclient` reports it: one line on standard error, and with `--json`
/// the `{"error":{...}}` document as the last line on standard output.
struct CLIFailure {
    var message: String
    var kind: String
    var exitCode: ExitCode = .failure
}

func fail(_ failure: CLIFailure, json: Bool, output: inout BufferedOutput, errors: Int32 = STDERR_FILENO) -> Int32 {
    if json {
        var writer = JSONWriter()
        writer.beginObject()
        writer.beginObject("error")
        writer.field("message", failure.message)
        writer.field("kind", failure.kind)
        writer.endObject()
        writer.endObject()
        output.writeLine(bytes: writer.bytes)
    }
    output.flush()
    printError("gattclient: " + failure.message, to: errors)
    return failure.exitCode.rawValue
}

/// Opens the kernel monitor channel and decodes until Ctrl-C or `--duration`.
func runMonitor(_ options: MonitorOptions, invocation: Invocation, output: inout BufferedOutput, errors: Int32) -> Int32 {
    let socket: HCISocket
    do {
        socket = try HCISocket.openMonitor()
    } catch {
        let code: ExitCode
        switch error.kind {
        case .unavailable: code = .unavailable
        case .permissionDenied: code = .permission
        case .failure: code = .failure
        }
        return fail(CLIFailure(message: "monitor: \(error)", kind: "adapter", exitCode: code), json: invocation.options.json, output: &output, errors: errors)
    }
    defer { socket.close() }
    let interrupted = InterruptFlag.install()
    let clock = ContinuousClock()
    let deadline = options.duration.map { clock.now.advanced(by: .milliseconds(Int64($0 * 1000))) }
    var command = MonitorCommand(options: options, json: invocation.options.json, record: invocation.options.record)
    command.errorDescriptor = errors
    do {
        _ = try command.run(
            output: &output,
            next: {
                // A bounded wait for readiness: wakes at least every 250 ms for Ctrl-C and --duration.
                var wait = Duration.milliseconds(250)
                if let deadline { wait = min(wait, max(.zero, deadline - clock.now)) }
                return try socket.receive(timeout: wait)
            },
            shouldStop: { interrupted.isSet || deadline.map { clock.now >= $0 } ?? false })
        return ExitCode.success.rawValue
    } catch {
        return fail(CLIFailure(message: "monitor: \(error)", kind: "adapter"), json: invocation.options.json, output: &output, errors: errors)
    }
}
