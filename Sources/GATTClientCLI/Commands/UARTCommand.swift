#if canImport(Glibc)
import Glibc
#endif
import BLE
import ATT
import Bluetooth
import GATT

/// `uart ADDR [--send TEXT] [--controller button:N|color:R,G,B] [--with-response] [--duration S]
/// [--linger S]`: an interactive terminal for the Nordic UART Service (Adafruit Bluefruit LE):
/// standard input lines go to RX (split to ATT_MTU − 3, write without response by default), TX
/// notifications go to standard output — text as it comes (ended with a newline at the end),
/// anything else (a Bluefruit controller packet) as a `hex:` line. At the end of standard input
/// the session goes on until the link has been quiet for `--linger` seconds (default 1), so the
/// board's answer to the last line is printed. `--send`/`--controller` send once, print what
/// comes back for `--duration` (default 1 s), and exit.
/// What `uart` makes of standard input: on a terminal, each typed line followed by `--eol`
/// (`--text`, the default there); elsewhere, its octets as they are (`--raw`, the default off a
/// terminal: a pipe or file goes to RX byte for byte, invalid UTF-8, CRs and a last line without
/// a newline included).
public struct UARTInput: Equatable, Sendable {
    /// `--text` (true), `--raw` (false); nil: lines on a terminal, octets elsewhere.
    public var lines: Bool?
    /// `--eol`: what ends each line in text mode (default LF, what the Bluefruit's UART sketches
    /// read up to).
    public var endOfLine: [UInt8] = [0x0A]
    public var endOfLineGiven = false

    public init() {}

    /// Whether standard input is read as lines, given whether it is a terminal.
    func readsLines(terminal: Bool) -> Bool { lines ?? terminal }
}

struct UARTCommand {
    enum Message: Sendable {
        case line(String)
        /// Octets from standard input, to RX as they are (text mode: a line with its end added).
        case octets([UInt8])
        case received([UInt8])
        case inputEnded
        /// The quiet period that started with notification number `Int` ran out.
        case quiet(Int)
    }

    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    var send: [UInt8]?
    var withResponse = false
    var duration: Double?
    /// After the end of standard input: the quiet period that ends the session (`--linger`).
    var linger: Double = 1
    /// Lines to send instead of reading standard input (tests); their end is the input's end.
    var input: [String]?
    /// Printed before each received chunk in text mode (the demo marks the echo with it; on a
    /// terminal `< ` marks what the board sent, unlike the lines typed).
    var echoPrefix: String?
    /// `--text`/`--raw`/`--eol`.
    var inputMode = UARTInput()

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        // The library's Nordic UART model on this link, bound to the service discovered by UUID
        // (a few requests; nothing reads RX, which is write-only), TX's stream taken before its
        // notifications go on so nothing sent at once is missed.
        let uart: NordicUARTService
        let notifications: AsyncStream<[UInt8]>
        do {
            guard let service = try await session.client.discoverPrimaryServices(uuid: NordicUART.service).first else {
                throw GATTError.notFound(NordicUART.service)
            }
            var bindOptions = ModelBindOptions()
            bindOptions.services = [try await session.client.discoverDefinitions(of: service, findIncludes: false)]
            bindOptions.reads = false
            bindOptions.subscribes = false
            uart = try await session.adapter.bind(BluefruitUART.self, to: session.peripheral, options: bindOptions).uart
            guard uart.$rx.isPresent else { throw GATTError.notFound(NordicUART.rx) }
            guard uart.$tx.isPresent else { throw GATTError.notFound(NordicUART.tx) }
            notifications = uart.$tx.values()
            try await uart.$tx.enableNotifications()
        } catch {
            await session.close()
            throw CommandFailure.from(error, doing: "opening the Nordic UART Service on \(peer)")
        }
        let txHandle = uart.$tx.handle ?? 0
        let oneShot = send != nil
        let events = CommandEvents<Message>(duration: oneShot ? (duration ?? 1) : duration)
        events.forward(notifications.map { Message.received($0) })
        var failure: (any Error)?
        if let input {
            for line in input { events.yield(.line(line)) }
            if !oneShot { events.yield(.inputEnded) }
        } else if !oneShot {
            do {
                let terminal = isatty(STDIN_FILENO) == 1
                let endOfLine = inputMode.endOfLine
                try events.readStandardInputOctets(lines: inputMode.readsLines(terminal: terminal), end: .inputEnded) { octets, isLine in
                    .octets(isLine ? octets + endOfLine : octets)
                }
            } catch {
                failure = error
            }
        }
        let echoPrefix = echoPrefix ?? (isatty(output.fileDescriptor) == 1 && !options.json ? "< " : nil)
        var atLineStart = true
        // Notifications received so far, and whether the input ended (then each one restarts
        // the quiet period).
        var received = 0
        var lingering = false
        func startQuietPeriod() {
            let (generation, seconds) = (received, linger)
            Task {
                try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                events.yield(.quiet(generation))
            }
        }
        do {
            if failure == nil, let send { try await uart.send(send, withResponse: withResponse) }
        } catch {
            failure = error
        }
        if failure == nil {
            loop: for await event in events.stream {
                switch event {
                case .value(.line(let line)):
                    do {
                        try await uart.send(Array(line.utf8) + inputMode.endOfLine, withResponse: withResponse)
                    } catch {
                        failure = error
                        break loop
                    }
                case .value(.octets(let octets)):
                    do {
                        try await uart.send(octets, withResponse: withResponse)
                    } catch {
                        failure = error
                        break loop
                    }
                case .value(.received(let value)):
                    received += 1
                    if lingering { startQuietPeriod() }
                    if options.json {
                        var json = JSONWriter()
                        json.beginObject()
                        json.field("kind", "notification")
                        json.field("handle", Int(txHandle))
                        json.field("value", hex: value)
                        if let text = String(validating: value, as: UTF8.self) { json.field("text", text) }
                        json.endObject()
                        output.writeLine(bytes: json.bytes)
                    } else if let text = NordicUART.text(value) {
                        output.write((atLineStart ? echoPrefix ?? "" : "") + text)
                        atLineStart = text.hasSuffix("\n")
                    } else {
                        // Not text (a controller packet): a line of its own, in hex.
                        if !atLineStart { output.write("\n") }
                        output.writeLine("hex: " + Hex.encode(value))
                        atLineStart = true
                    }
                    output.flush()
                case .value(.inputEnded):
                    // The answer to the last line is still to come: stop once the link has been
                    // quiet for --linger (a --duration bounds the whole session instead).
                    if duration == nil {
                        lingering = true
                        startQuietPeriod()
                    }
                case .value(.quiet(let generation)):
                    if generation == received { break loop }
                case .ended(let error):
                    // TX's values end with the link: a peer's disconnect is a failure.
                    let state = await session.peripheral.state
                    failure = error ?? SensorTagCommand.linkEnded(state)
                    break loop
                case .durationElapsed, .interrupted:
                    break loop
                }
            }
        }
        events.finish()
        // Text ends with a newline.
        if !options.json, !atLineStart { output.write("\n") }
        try? await uart.$tx.enableNotifications(false)
        await session.close()
        if let failure { throw CommandFailure.from(failure, doing: "uart \(peer)") }
    }
}
