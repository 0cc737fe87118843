#if canImport(Glibc)
import BLE
import Glibc
#endif
import Bluetooth
import CSignals
import Dispatch
import GATT
import HCI
import Kernel
import Synchronization
import SystemSupport

/// Runs `gattclient` with `arguments` (without the program name) and returns the exit code.
/// `main` only passes `CommandLine.arguments` here.
/// `standardOutput`/`standardError` let an in-process caller (a test) collect the output.
public func runGATTClient(
    _ arguments: [String], standardInput: Int32 = STDIN_FILENO, standardOutput: Int32 = STDOUT_FILENO,
    standardError: Int32 = STDERR_FILENO
) -> Int32 {
    let invocation: Invocation
    do {
        invocation = try parse(arguments)
    } catch {
        // Under --json (as far as the words say), the usage error is an error line too.
        if arguments.contains("--json") {
            var output = BufferedOutput(fileDescriptor: standardOutput)
            _ = fail(CommandFailure(error.message, kind: "usage", exitCode: .usage), json: true, output: &output, errors: -1)
            output.flush()
        }
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
    case .commandHelp(let name):
        output.write((commandHelpText[name] ?? usageText) + "\n")
        return ExitCode.success.rawValue
    case .version:
        output.writeLine("gattclient \(gattclientVersion)")
        return ExitCode.success.rawValue
    case .services, .info, .read, .write, .subscribe, .scan, .sensortag, .uart, .watch, .demo, .pair, .bonds, .unpair, .adapters, .gateway:
        return runGATT(invocation, output: &output, errors: errors)
    case .shell(let peer):
        output.flush()
        return runShell(
            peer, typed: !invocation.options.automaticAddressType, invocation: invocation, input: standardInput,
            output: standardOutput, errors: errors)
    case .peripheral(let options):
        return runPeripheral(options, invocation: invocation, output: &output, errors: errors)
    case .monitor(let options):
        return runMonitor(options, invocation: invocation, output: &output, errors: errors)
    case .dump(let options):
        let command = DumpCommand(options: options, json: invocation.options.json)
        do {
            if let damage = try command.run(output: &output, status: { printError($0, to: errors) }) {
                return fail(CommandFailure("\(options.path): decoding stopped: \(damage)", kind: "capture"), json: invocation.options.json, output: &output, errors: errors)
            }
            return ExitCode.success.rawValue
        } catch {
            var code = ExitCode.failure
            if case HCIError.system(_, let errno) = error, errno == .permissionDenied || errno == .accessDenied { code = .permission }
            return fail(CommandFailure("\(options.path): \(error)", kind: "capture", exitCode: code), json: invocation.options.json, output: &output, errors: errors)
        }
    }
}

public let gattclientVersion = "0.1.0"

/// `runGATTClient` with every connection of the GATT commands made through `central` instead of
/// the transport `--transport` names (tests: a scripted peer behind the whole command line).
func runGATTClient(
    _ arguments: [String], through central: any Central, standardOutput: Int32, standardError: Int32
) -> Int32 {
    CommandConnection.$injectedCentral.withValue(central) {
        runGATTClient(arguments, standardOutput: standardOutput, standardError: standardError)
    }
}

/// Reports a runtime failure: one line on standard error, and with `--json` the
/// `{"error":{...}}` document as the last line on standard output.
func fail(_ failure: CommandFailure, json: Bool, output: inout BufferedOutput, errors: Int32 = STDERR_FILENO) -> Int32 {
    if json {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("kind", "error")
        writer.beginObject("error")
        writer.field("message", failure.message)
        writer.field("kind", failure.kind)
        if let handle = failure.handle { writer.field("handle", Int(handle)) }
        if let code = failure.attError { writer.field("attError", Int(code.rawValue)) }
        if let status = failure.hciStatus { writer.field("hciStatus", Int(status.rawValue)) }
        writer.endObject()
        writer.endObject()
        output.writeLine(bytes: writer.bytes)
    }
    output.flush()
    printError(TextStyle.forDescriptor(errors).boldRed("gattclient:") + " " + failure.message, to: errors)
    return failure.exitCode.rawValue
}

/// Opens the kernel monitor channel and decodes until Ctrl-C or `--duration`. Readiness-driven:
/// the socket's packet stream, the end of `--duration` and Ctrl-C arrive as one `CommandEvents`
/// stream, which `MonitorCommand`'s synchronous loop takes one event at a time (`next` blocks
/// until the next one; nothing wakes up on a timer).
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
        return fail(CommandFailure("monitor: \(error)", kind: "adapter", exitCode: code), json: invocation.options.json, output: &output, errors: errors)
    }
    defer { socket.close() }
    let events = CommandEvents<[UInt8]>(duration: options.duration)
    defer { events.finish() }  // before the close: the packet stream stops reading first
    events.forward(socket.packets())
    let inbox = BlockingInbox(events.stream)
    var stopped = false
    var command = MonitorCommand(options: options, json: invocation.options.json, record: invocation.options.record)
    command.errorDescriptor = errors
    do {
        _ = try command.run(
            output: &output,
            next: {
                switch inbox.next() {
                case .value(let datagram)?: return datagram
                case .ended(let error?)?: throw error
                case .ended(nil)?, .durationElapsed?, .interrupted?, nil:
                    stopped = true
                    return nil
                }
            },
            shouldStop: { stopped })
        return ExitCode.success.rawValue
    } catch {
        return fail(CommandFailure("monitor: \(error)", kind: "adapter"), json: invocation.options.json, output: &output, errors: errors)
    }
}

/// Hands an async stream's elements to a synchronous loop: one task moves them into a queue and
/// `next()` blocks on a semaphore until one is there (`nil` once the stream has finished). Call
/// `next()` from a thread that may block (the main thread), never from the concurrency pool.
private final class BlockingInbox<Element: Sendable>: Sendable {
    /// `nil` marks the end of the stream.
    private let queue = Mutex<[Element?]>([])
    private let available = DispatchSemaphore(value: 0)

    init(_ stream: AsyncStream<Element>) {
        Task { [self] in
            for await element in stream { put(element) }
            put(nil)
        }
    }

    private func put(_ element: Element?) {
        queue.withLock { $0.append(element) }
        available.signal()
    }

    func next() -> Element? {
        available.wait()
        guard let element = queue.withLock({ $0.removeFirst() }) else {
            put(nil)  // the end stays for later calls
            return nil
        }
        return element
    }
}

/// Runs a command that connects to a peer, bounded by `--timeout` for the connection and the
/// procedures (a subscription runs until its count, duration or Ctrl-C).
func runGATT(_ invocation: Invocation, output: inout BufferedOutput, errors: Int32) -> Int32 {
    var resolved = invocation
    if !resolved.options.noCache { resolved.options.addressCacheDirectory = AddressTypeCache.defaultDirectory() }
    let invocation = resolved
    let options = invocation.options
    let initial = output
    let diagnostics = SessionDiagnostics(
        errors: errors, json: options.json, strict: options.strict)
    let injected = CommandConnection.injectedCentral
    let interrupts = Interrupts(for: invocation.command)
    let result = runAsync { () async -> (Int32, BufferedOutput) in
        let work = Task {
            await Interrupts.$current.withValue(interrupts) {
                await CommandConnection.$injectedCentral.withValue(injected) {
                    await SessionDiagnostics.$current.withValue(diagnostics) {
                        await runGATTCommand(invocation, output: initial, errors: errors, diagnostics: diagnostics)
                    }
                }
            }
        }
        interrupts.start(cancelling: work)
        let value = await work.value
        interrupts.stop()
        return value
    }
    output = result.1
    // Ctrl-C (or SIGTERM): 130 once the command has cleaned up, except where ending there is
    // the command's normal end (scan, subscribe, uart).
    if interrupts.happened, !interrupts.endsNormally || interrupts.cameEarly {
        output.flush()
        printError("gattclient: interrupted", to: errors)
        return 130
    }
    return result.0
}

/// Ctrl-C and SIGTERM while a command runs. `scan`, `subscribe` and `uart` wait for them by
/// design and end 0; `sensortag` stops on its own (switching its sensors off), then the run ends
/// 130; every other command's task is cancelled, cleans up, and the run ends 130. Before a
/// command that stops by itself reaches its own wait (connecting, a passkey prompt), Ctrl-C
/// cancels it like any other: the run ends 130.
final class Interrupts: Sendable {
    /// The run's interrupt handling: a command's own wait (``CommandEvents``) listens to it
    /// rather than installing signal handling of its own (two handlers for one signal lose it).
    @TaskLocal static var current: Interrupts?

    let endsNormally: Bool
    let stopsByItself: Bool
    private let state = Mutex<(happened: Bool, listeners: [Int: @Sendable () -> Void], next: Int, listened: Bool, early: Bool)>(
        (false, [:], 0, false, false))
    private let signals = SignalWatch()

    /// Calls `listener` at every Ctrl-C or SIGTERM until `removeListener` with the returned key.
    func addListener(_ listener: @escaping @Sendable () -> Void) -> Int {
        state.withLock { state in
            state.next += 1
            state.listeners[state.next] = listener
            state.listened = true
            return state.next
        }
    }

    func removeListener(_ key: Int) {
        state.withLock { _ = $0.listeners.removeValue(forKey: key) }
    }

    init(for command: Command) {
        switch command {
        case .scan, .subscribe, .uart, .watch, .gateway: (endsNormally, stopsByItself) = (true, true)
        case .sensortag: (endsNormally, stopsByItself) = (false, true)
        default: (endsNormally, stopsByItself) = (false, false)
        }
    }

    var happened: Bool { state.withLock { $0.happened } }

    /// Whether Ctrl-C came before a command that stops by itself reached its own wait (while
    /// connecting, at a passkey prompt): the command was cancelled there, and the run ends 130.
    var cameEarly: Bool { state.withLock { $0.early } }

    func start(cancelling work: Task<(Int32, BufferedOutput), Never>) {
        signals.start { [self] _ in
            let (listeners, early) = self.state.withLock { state in
                state.happened = true
                if !state.listened { state.early = true }
                return (Array(state.listeners.values), state.early)
            }
            for listener in listeners { listener() }
            if !self.stopsByItself || early { work.cancel() }
        }
    }

    func stop() { signals.stop() }
}

/// SIGINT and SIGTERM taken from their default action (which would end the process before any
/// clean-up) while a watch runs: ``start(_:)`` calls its handler at each, until ``stop()``; the
/// previous actions come back when the last watch of the process stops.
final class SignalWatch: Sendable {
    private let relay = SignalRelay.shared

    /// Calls `handler` with the signal's number at every SIGINT or SIGTERM. The signals are
    /// caught from the moment this returns (a sigaction handler, installed here).
    func start(_ handler: @escaping @Sendable (Int32) -> Void) {
        relay.add(ObjectIdentifier(self), handler)
    }

    func stop() { relay.remove(ObjectIdentifier(self)) }
}

/// The process's one relay: a C handler (CSignals) writes each signal's number to a pipe,
/// created once and never closed (a handler running on another thread may still write to it),
/// and a dispatch read source on the pipe calls every started watch. The read source is armed
/// asynchronously, but what the handler wrote waits in the pipe: nothing is lost. Several
/// watches can run at once (in-process runs in the tests).
final class SignalRelay: Sendable {
    static let shared = SignalRelay(numbers: [SIGINT, SIGTERM])
    let numbers: [Int32]

    /// A relay of `numbers` (the tests make one of their own for SIGUSR2).
    init(numbers: [Int32]) { self.numbers = numbers }

    private struct State {
        var watches: [ObjectIdentifier: @Sendable (Int32) -> Void] = [:]
        var pipe: (read: Int32, write: Int32)?
        var source: (any DispatchSourceRead)?
    }

    private let state = Mutex(State())

    /// Calls `handler` at each of the signals from now on; the first watch installs the handler.
    /// A process out of descriptors gets no pipe: the signals keep their default action.
    func add(_ id: ObjectIdentifier, _ handler: @escaping @Sendable (Int32) -> Void) {
        state.withLock { state in
            if state.pipe == nil {
                var ends: [Int32] = [-1, -1]
                guard csignals_pipe(&ends) == 0 else { return }
                state.pipe = (ends[0], ends[1])
                let source = DispatchSource.makeReadSource(fileDescriptor: ends[0], queue: .global())
                source.setEventHandler { [self] in deliver(from: ends[0]) }
                source.resume()
                state.source = source
            }
            guard let pipe = state.pipe else { return }
            if state.watches.isEmpty {
                for number in numbers { _ = csignals_forward(number, pipe.write) }
            }
            state.watches[id] = handler
        }
    }

    /// Stops calling the watch; the last one puts the previous actions back.
    func remove(_ id: ObjectIdentifier) {
        state.withLock { state in
            guard state.watches.removeValue(forKey: id) != nil, state.watches.isEmpty else { return }
            for number in numbers { _ = csignals_restore(number) }
        }
    }

    /// Reads what the handler wrote and calls the watches started now with each number.
    private func deliver(from descriptor: Int32) {
        var octets = [UInt8](repeating: 0, count: 64)
        let count = octets.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return }
        let handlers = state.withLock { Array($0.watches.values) }
        for octet in octets[..<count] {
            for handler in handlers { handler(Int32(octet)) }
        }
    }
}

/// The body of ``runGATT(_:output:errors:)``, inside its diagnostics: the command, then the
/// protocol violations it met (`event` lines under `--json`; a failure under `--strict`).
func runGATTCommand(
    _ invocation: Invocation, output initial: BufferedOutput, errors: Int32, diagnostics: SessionDiagnostics
) async -> (Int32, BufferedOutput) {
    let options = invocation.options
    var out = initial
    do {
        if case .demo = invocation.command, let level = options.security, level != "low" {
            throw CommandFailure(
                "--security \(level): the demo's simulated SensorTag and Bluefruit do not pair (as the real ones, "
                    + "which need no pairing)", kind: "usage", exitCode: .usage)
        }
        if case .scan = invocation.command, let level = options.security, level != "low" {
            throw CommandFailure(
                "--security \(level) secures connections, and scan makes none; drop it", kind: "usage", exitCode: .usage)
        }
        switch invocation.command {
        case .services(let peer, let values):
            try await ServicesCommand(peer: peer, readsValues: values).run(options: options, replayMatchAny: options.replayMatchAny, output: &out)
        case .info(let peer):
            try await InfoCommand(peer: peer).run(options: options, output: &out)
        case .read(let peer, let target, let long, let multiple, let noLong):
            try await ReadCommand(
                peer: peer, target: target.map(AttributeSelector.init), long: long, multiple: multiple, noLong: noLong
            ).run(options: options, replayMatchAny: options.replayMatchAny, output: &out)
        case .write(let peer, let target, let value, let mode):
            try await WriteCommand(peer: peer, target: AttributeSelector(target), value: value, mode: mode)
                .run(options: options, replayMatchAny: options.replayMatchAny, output: &out)
        case .subscribe(let peer, let target, let indicate, let count, let duration, let writes):
            try await SubscribeCommand(
                peer: peer, target: AttributeSelector(target), indicate: indicate, count: count, duration: duration, writes: writes
            ).run(options: options, replayMatchAny: options.replayMatchAny, output: &out)
        case .uart(let peer, let send, let withResponse, let duration, let linger, let input):
            try await UARTCommand(
                peer: peer, send: send, withResponse: withResponse, duration: duration, linger: linger ?? 1, inputMode: input)
                .run(options: options, replayMatchAny: options.replayMatchAny, output: &out)
        case .watch(let peer, let service, let count, let duration):
            guard let watched = WatchCommand.Watched(rawValue: service) else { break }
            try await WatchCommand(peer: peer, service: watched, count: count, duration: duration).run(options: options, output: &out)
        case .demo:
            try await DemoCommand().run(options: options, output: &out)
        case .scan(let scan):
            try await ScanCommand(options: scan).run(global: options, output: &out)
        case .pair(let peer, let pairOptions):
            try await PairCommand(peer: peer, options: pairOptions).run(global: options, errors: errors, output: &out)
        case .bonds:
            try await BondsCommand().run(global: options, output: &out)
        case .unpair(let peer):
            try await UnpairCommand(peer: peer).run(global: options, output: &out)
        case .adapters:
            try await AdaptersCommand(central: CommandConnection.injectedCentral).run(global: options, output: &out)
        case .gateway(let path, let duration, let mqtt):
            let bytes: [UInt8]
            do {
                bytes = try FileSystem.readFile(atPath: path)
            } catch {
                throw CommandFailure("gateway: --config \(path): \(error)", kind: "usage", exitCode: .usage)
            }
            let configuration: GatewayConfiguration
            do {
                configuration = try GatewayConfiguration(json: bytes)
            } catch {
                throw CommandFailure("\(path): \(error.message)", kind: "usage", exitCode: .usage)
            }
            try await GatewayCommand(configuration: configuration, duration: duration, mqtt: mqtt).run(global: options, output: &out)
        case .sensortag(let peer, let tag):
            var command = SensorTagCommand(peer: peer)
            command.sensors = tag.sensors.compactMap(SensorTag.Sensor.init(rawValue:))
            command.periodMilliseconds = tag.periodMilliseconds
            command.count = tag.count
            command.duration = tag.duration
            command.csvPath = tag.csv
            try await command.run(options: options, replayMatchAny: options.replayMatchAny, output: &out)
        default:
            break
        }
        diagnostics.drainEvents(into: &out)
        if let failure = diagnostics.strictFailure {
            return (fail(failure, json: options.json, output: &out, errors: errors), out)
        }
        out.flush()
        return (ExitCode.success.rawValue, out)
    } catch {
        diagnostics.drainEvents(into: &out)
        // Under --strict the connection was closed at the violation: that is the failure.
        let failure = diagnostics.strictFailure ?? CommandFailure.from(error, doing: "gattclient")
        return (fail(failure, json: options.json, output: &out, errors: errors), out)
    }
}

/// Runs async work from the synchronous `main` path and waits for it (a semaphore on a thread
/// that is not part of the concurrency pool).
func runAsync<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let semaphore = DispatchSemaphore(value: 0)
    Task.detached {
        box.value = await body()
        semaphore.signal()
    }
    semaphore.wait()
    return box.value!
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    // Written once by the task before it signals, read after the wait: the semaphore orders them.
    var value: T?
}
