import Bluetooth
import HCI

/// Runs `gattclient` with `arguments` (without the program name) and returns the exit code.
/// `main` only passes `CommandLine.arguments` here.
public func runGATTClient(_ arguments: [String]) -> Int32 {
    let invocation: Invocation
    do {
        invocation = try parse(arguments)
    } catch {
        printError("gattclient: \(error.message)")
        printError("Run 'gattclient --help' for usage.")
        return ExitCode.usage.rawValue
    }
    var output = BufferedOutput()
    defer { output.flush() }
    switch invocation.command {
    case .help:
        output.write(usageText + "\n")
        return ExitCode.success.rawValue
    case .version:
        output.writeLine("gattclient \(gattclientVersion)")
        return ExitCode.success.rawValue
    case .dump(let options):
        let command = DumpCommand(options: options, json: invocation.options.json)
        do {
            if let damage = try command.run(output: &output) {
                return fail(CLIFailure(message: "\(options.path): decoding stopped: \(damage)", kind: "capture"), json: invocation.options.json, output: &output)
            }
            return ExitCode.success.rawValue
        } catch {
            var code = ExitCode.failure
            if case .system(_, let errno) = error, errno == .permissionDenied || errno == .accessDenied { code = .permission }
            return fail(CLIFailure(message: "\(options.path): \(error)", kind: "capture", exitCode: code), json: invocation.options.json, output: &output)
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

func fail(_ failure: CLIFailure, json: Bool, output: inout BufferedOutput) -> Int32 {
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
    printError("gattclient: " + failure.message)
    return failure.exitCode.rawValue
}
