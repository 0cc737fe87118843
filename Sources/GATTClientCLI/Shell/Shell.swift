#if canImport(Glibc)
import Glibc
#endif
import BLE
import Bluetooth
import GATT
import SystemSupport

/// `gattclient shell [ADDR]` (or `-I`): one adapter, one connection at a time, and the GATT
/// commands typed against it — `services`, `read`, `write`, `info`, `pair` run exactly as the
/// commands of the same name (same options, same output, `--json` included) on the open
/// connection; `subscribe` runs in the background, its values printed as they come without
/// breaking the line being typed. On a terminal: a prompt, line editing and history
/// (`$XDG_STATE_HOME/gattclient/history`); otherwise one command per line, no prompt, so a
/// script can drive it (`wait S` lets values arrive). The exit code is 0, or that of the last
/// command that failed.
actor Shell {
    let options: GlobalOptions
    let console: ShellConsole
    let diagnostics: SessionDiagnostics
    /// The central every connection uses instead of `--transport` (tests).
    let central: (any Central)?
    private var adapter: Adapter?
    private var connection: CommandConnection?
    /// Where `connect` without an address goes: the last device connected.
    private var lastPeer: PeerAddress?
    private var lastPeerTyped = true
    private var subscriptions: [UInt16: (subscription: GATTSubscription, task: Task<Void, Never>)] = [:]
    private var watcher: Task<Void, Never>?
    private(set) var quitting = false
    /// When the shell started: notification times count from here.
    private let start = ContinuousClock.now

    init(options: GlobalOptions, console: ShellConsole, diagnostics: SessionDiagnostics, central: (any Central)?) {
        self.options = options
        self.console = console
        self.diagnostics = diagnostics
        self.central = central
    }

    /// `[54:6C:0E:9A:3B:01]> ` while connected, `[not connected]> ` otherwise.
    func prompt() async -> String {
        if let connection, case .connected = await connection.peripheral.state { return "[\(connection.peer)]> " }
        return "[not connected]> "
    }

    // MARK: - Lines

    /// Runs one line; its exit code (0: done).
    func execute(_ words: [String]) async -> Int32 {
        guard let name = words.first else { return 0 }
        let arguments = Array(words.dropFirst())
        do {
            switch name {
            case "help", "?":
                console.print(Self.help(arguments.first))
            case "quit", "exit", "q":
                quitting = true
            case "connect":
                try await connect(arguments)
            case "disconnect":
                guard arguments.isEmpty else { throw CommandFailure("disconnect takes no arguments", kind: "usage", exitCode: .usage) }
                guard connection != nil else { throw CommandFailure("not connected", kind: "usage", exitCode: .usage) }
                await disconnect()
            case "mtu":
                guard arguments.isEmpty else {
                    throw CommandFailure(
                        "mtu takes no arguments: the ATT_MTU is exchanged once, at connection (we ask for 517)",
                        kind: "usage", exitCode: .usage)
                }
                let peripheral = try await connected().peripheral
                let mtu = await peripheral.mtu
                if options.json {
                    var json = JSONWriter()
                    json.beginObject()
                    json.field("kind", "mtu")
                    json.field("mtu", mtu)
                    json.endObject()
                    console.print(String(decoding: json.bytes, as: UTF8.self))
                } else {
                    console.print("ATT_MTU \(mtu)")
                }
            case "rssi", "phy", "params", "data-length":
                try await link(name, arguments)
            case "subscribe":
                try await subscribe(arguments)
            case "unsubscribe":
                try await unsubscribe(arguments)
            case "wait":
                let seconds: Double
                do throws(UsageError) {
                    guard arguments.count == 1 else { throw UsageError("wait takes a number of seconds") }
                    seconds = try parseSeconds(arguments[0], "wait", maximum: 3600)
                } catch {
                    throw CommandFailure("\(error.message): wait 2", kind: "usage", exitCode: .usage)
                }
                try? await Task.sleep(for: .seconds(seconds))
            case "services", "read", "write", "info", "pair":
                return await run(name, arguments)
            default:
                let others = commandSummaries.map { String($0.0.prefix { $0 != " " }) }
                if others.contains(name) {
                    throw CommandFailure(
                        "\(name) is not a shell command: run `gattclient \(name)` on its own", kind: "usage", exitCode: .usage)
                }
                throw CommandFailure(
                    "unknown command '\(name)'" + didYouMean(name, among: Self.commands), kind: "usage", exitCode: .usage)
            }
            return 0
        } catch {
            return report(CommandFailure.from(error, doing: name))
        }
    }

    /// A failure: the error line (and `{"kind":"error"}` under `--json`); the exit code.
    private func report(_ failure: CommandFailure) -> Int32 {
        var output = BufferedOutput(fileDescriptor: console.output)
        let code = fail(failure, json: options.json, output: &output, errors: console.errors)
        output.flush()
        return code
    }

    /// One of the top-level commands on the open connection, parsed and printed as `gattclient` does.
    private func run(_ name: String, _ arguments: [String]) async -> Int32 {
        let connection: CommandConnection
        do {
            connection = try await connected()
        } catch {
            return report(CommandFailure.from(error, doing: name))
        }
        let peer = connection.peer
        let address = peer.address.description + (peer.type == .random ? "/random" : "/public")
        let invocation: Invocation
        do {
            invocation = try parse([name, address] + arguments)
        } catch {
            return report(CommandFailure(error.message, kind: "usage", exitCode: .usage))
        }
        // The shell's options, with what the line adds (`--json`, `-v`, `--security`, `--timeout`).
        var merged = options
        merged.json = options.json || invocation.options.json
        merged.verbosity = max(options.verbosity, invocation.options.verbosity)
        if let level = invocation.options.security { merged.security = level }
        if invocation.options.timeout != GlobalOptions().timeout { merged.timeout = invocation.options.timeout }
        let line = Invocation(options: merged, command: invocation.command)
        let (code, output) = await CommandConnection.$lent.withValue(connection) {
            await runGATTCommand(line, output: BufferedOutput(fileDescriptor: console.output), errors: console.errors, diagnostics: diagnostics)
        }
        var flushed = output
        flushed.flush()
        return code
    }

    private func connected() async throws -> CommandConnection {
        guard let connection else {
            throw CommandFailure("not connected: connect ADDR first", kind: "usage", exitCode: .usage)
        }
        if case .disconnected = await connection.peripheral.state {
            throw CommandFailure("the link to \(connection.peer) is gone: connect again", kind: "connect")
        }
        return connection
    }

    // MARK: - Connection

    /// Opens the adapter (once) and, given a device, connects.
    func begin(_ peer: PeerAddress?, typed: Bool) async -> Int32 {
        do {
            // Inside the diagnostics: the adapter's -v trace and violation reports go to the shell's streams.
            let (options, central) = (options, central)
            adapter = try await SessionDiagnostics.$current.withValue(diagnostics) {
                try await CommandConnection.adapter(options: options, central: central)
            }
        } catch {
            return report(CommandFailure.from(error, doing: "shell"))
        }
        await adapter?.setPairingDelegate(
            CLIPairingDelegate(passkey: nil, confirmAll: false, errors: console.errors, diagnostics: diagnostics))
        guard let peer else { return 0 }
        lastPeer = peer
        lastPeerTyped = typed
        do {
            try await open(peer, typed: typed)
            return 0
        } catch {
            return report(CommandFailure.from(error, doing: "connecting to \(peer)"))
        }
    }

    private func connect(_ arguments: [String]) async throws {
        if let connection, case .connected = await connection.peripheral.state {
            throw CommandFailure("already connected to \(connection.peer): disconnect first", kind: "usage", exitCode: .usage)
        }
        var random = false
        var positional: [String] = []
        for argument in arguments {
            if argument == "--random" { random = true } else { positional.append(argument) }
        }
        let peer: PeerAddress
        let typed: Bool
        if let text = positional.first {
            guard positional.count == 1, let parsed = PeerAddress(text, random: random) else {
                throw CommandFailure(
                    "connect takes one address (AA:BB:CC:DD:EE:FF, or AA:BB:CC:DD:EE:FF/random)", kind: "usage", exitCode: .usage)
            }
            peer = parsed
            typed = random || text.contains("/")
        } else {
            guard let lastPeer else { throw CommandFailure("connect needs an address: connect AA:BB:CC:DD:EE:FF", kind: "usage", exitCode: .usage) }
            peer = lastPeer
            typed = lastPeerTyped
        }
        lastPeer = peer
        lastPeerTyped = typed
        await disconnect()
        try await open(peer, typed: typed)
    }

    private func open(_ peer: PeerAddress, typed: Bool) async throws {
        guard let adapter else { throw CommandFailure("the adapter is not open", kind: "adapter") }
        var connectOptions = options
        connectOptions.automaticAddressType = !typed
        let peripheral = try await SessionDiagnostics.$current.withValue(diagnostics) {
            try await CommandConnection.connect(adapter, to: peer, options: connectOptions, timeout: .seconds(options.timeout))
        }
        var opened = CommandConnection(adapter: adapter, peripheral: peripheral)
        if let level = options.securityLevel, peripheral.session.link.securityManager != nil {
            do {
                try await peripheral.ensureSecurity(level)
            } catch {
                await peripheral.disconnect()
                throw error
            }
        }
        // Without -v, the link's end is said all the same (a shell outlives links); with -v,
        // every event of the connection.
        let console = console
        let verbose = options.verbosity > 0
        let report: @Sendable (String) -> Void = { line in console.print("gattclient: " + line, toErrors: true) }
        if verbose {
            watcher = await ConnectionVisibility.watch(peripheral, report: report)
        } else {
            let states = peripheral.states()
            let peer = peripheral.peer
            watcher = Task {
                for await state in states {
                    if case .disconnected(let reason) = state, reason != .local {
                        report("\(peer): \(ConnectionVisibility.describe(reason))")
                    }
                }
            }
        }
        opened.isLent = false
        connection = opened
        if !options.json, !verbose {
            console.print("connected to \(peripheral.peer), ATT_MTU \(await peripheral.mtu)", toErrors: true)
        }
    }

    /// Ends the subscriptions and the link (the adapter stays open).
    func disconnect() async {
        guard let connection else { return }
        for (_, entry) in subscriptions {
            try? await connection.client.unsubscribe(entry.subscription)
            entry.task.cancel()
        }
        subscriptions.removeAll()
        await connection.peripheral.disconnect()
        await ConnectionVisibility.finish(watcher)
        watcher = nil
        self.connection = nil
    }

    /// The end of the shell: the link, then the adapter.
    func finish() async {
        await disconnect()
        await adapter?.close()
        adapter = nil
    }

    // MARK: - Subscriptions

    private func subscribe(_ arguments: [String]) async throws {
        var indicate = false
        var positional: [String] = []
        for argument in arguments {
            switch argument {
            case "--indicate": indicate = true
            case "--count", "--duration", "--write":
                throw CommandFailure(
                    "subscribe in the shell runs until unsubscribe or disconnect (\(argument) is for `gattclient subscribe`)",
                    kind: "usage", exitCode: .usage)
            default: positional.append(argument)
            }
        }
        guard positional.count == 1 else {
            throw CommandFailure("subscribe takes one HANDLE or UUID [--indicate]", kind: "usage", exitCode: .usage)
        }
        let target: AttributeSelector
        do {
            target = try AttributeSelector(parsing: positional[0])
        } catch {
            throw CommandFailure(error.message, kind: "usage", exitCode: .usage)
        }
        let connection = try await connected()
        let client = connection.client
        let peer = connection.peer
        let characteristic = try await Self.locate(target, client: client, peer: peer)
        guard subscriptions[characteristic.valueHandle] == nil else {
            throw CommandFailure(
                "already subscribed to \(handleText(characteristic.valueHandle, characteristic.uuid))", kind: "usage", exitCode: .usage)
        }
        let wanted: CharacteristicProperties = indicate ? .indicate : .notify
        guard characteristic.properties.contains(wanted) else {
            throw CommandFailure(
                "\(handleText(characteristic.valueHandle, characteristic.uuid)) cannot \(indicate ? "indicate" : "notify"): "
                    + "its properties are \(characteristic.properties.names.joined(separator: ", "))",
                kind: "usage", handle: characteristic.valueHandle)
        }
        let indications = indicate
        let subscription = try await connection.peripheral.securing(doing: "subscribing to \(peer)") {
            try await client.subscribe(characteristic: characteristic, indications: indications)
        }
        let task = Self.printing(subscription, console: console, json: options.json, since: start)
        subscriptions[characteristic.valueHandle] = (subscription, task)
        let what = handleText(characteristic.valueHandle, characteristic.uuid)
        if options.json {
            console.print(Self.event("subscribed", handle: characteristic.valueHandle, indications: indicate))
        } else {
            console.print("subscribed to \(what)" + (characteristic.clientConfigurationHandle.map { ", CCCD 0x\(hex($0, 4))" } ?? ""))
        }
    }

    /// The characteristic `target` names (by UUID, or by its value handle).
    private static func locate(_ target: AttributeSelector, client: GATTClient, peer: PeerAddress) async throws -> GATT.Characteristic {
        switch target {
        case .uuid(let uuid):
            do {
                return try await client.locateCharacteristic(uuid: uuid)
            } catch {
                if case GATTError.notFound = error { throw noCharacteristic(uuid, on: peer) }
                if case GATTError.ambiguousUUID(let uuid, let handles) = error {
                    throw severalAttributes(uuid, handles: handles, on: peer, command: "subscribe")
                }
                throw error
            }
        case .handle(let handle):
            return try await SubscribeCommand.characteristic(at: handle, client: client, peer: peer)
        }
    }

    /// Prints each value of `subscription` as it comes, until it ends.
    private static func printing(
        _ subscription: GATTSubscription, console: ShellConsole, json: Bool, since start: ContinuousClock.Instant
    ) -> Task<Void, Never> {
        let characteristic = subscription.characteristic
        return Task {
            do {
                for try await notification in subscription {
                    console.print(line(notification, uuid: characteristic.uuid, since: start, json: json))
                }
            } catch {
                console.print(
                    "gattclient: the subscription to 0x\(hex(characteristic.valueHandle, 4)) ended: \(error)", toErrors: true)
            }
        }
    }

    private func unsubscribe(_ arguments: [String]) async throws {
        guard arguments.count == 1 else { throw CommandFailure("unsubscribe takes one HANDLE or UUID", kind: "usage", exitCode: .usage) }
        let target: AttributeSelector
        do {
            target = try AttributeSelector(parsing: arguments[0])
        } catch {
            throw CommandFailure(error.message, kind: "usage", exitCode: .usage)
        }
        let found = subscriptions.first { handle, entry in
            switch target {
            case .handle(let wanted): handle == wanted
            case .uuid(let uuid): entry.subscription.characteristic.uuid == uuid
            }
        }
        guard let (handle, entry) = found else {
            throw CommandFailure("not subscribed to \(arguments[0])", kind: "usage", exitCode: .usage)
        }
        subscriptions[handle] = nil
        let connection = try await connected()
        try await connection.client.unsubscribe(entry.subscription)
        entry.task.cancel()
        if options.json {
            console.print(Self.event("unsubscribed", handle: handle))
        } else {
            console.print("unsubscribed from \(handleText(handle, entry.subscription.characteristic.uuid))")
        }
    }

    /// `{"kind":"event","event":NAME,"handle":H[,"indications":B]}`.
    static func event(_ name: String, handle: UInt16, indications: Bool? = nil) -> String {
        var line = JSONWriter()
        line.beginObject()
        line.field("kind", "event")
        line.field("event", name)
        line.field("handle", Int(handle))
        if let indications { line.field("indications", indications) }
        line.endObject()
        return String(decoding: line.bytes, as: UTF8.self)
    }

    /// A value as `subscribe` prints it, timed from the shell's start.
    static func line(_ notification: GATTNotification, uuid: BluetoothUUID, since start: ContinuousClock.Instant, json: Bool) -> String {
        SubscribeCommand.line(notification, uuid: uuid, seconds: seconds(ContinuousClock.now - start), json: json)
    }

    // MARK: - Help

    static let commands = [
        "services", "read", "write", "subscribe", "unsubscribe", "mtu", "info", "pair", "connect", "disconnect", "wait", "help",
        "quit", "exit", "rssi", "phy", "params", "data-length",
    ]

    /// `rssi`, `phy [1m|2m|coded]`, `params [MS[-MS] [LATENCY [TIMEOUT_MS]]]`, `data-length [N]`:
    /// the link under the connection, read or changed (our host in user space, `sim`).
    private func link(_ name: String, _ arguments: [String]) async throws {
        let peripheral = try await connected().peripheral
        let usage = { (text: String) in CommandFailure(text, kind: "usage", exitCode: .usage) }
        var json = JSONWriter()
        json.beginObject()
        json.field("kind", name == "data-length" ? "dataLength" : name)
        let text: String
        switch name {
        case "rssi":
            guard arguments.isEmpty else { throw usage("rssi takes no arguments") }
            let rssi = try await peripheral.readRSSI()
            json.field("rssi", rssi)
            text = "RSSI \(rssi) dBm"
        case "phy":
            let phy: LinkPHY
            switch arguments.first?.lowercased() {
            case nil: phy = try await peripheral.readPHY()
            case "1m": phy = try await peripheral.setPHY(.le1M)
            case "2m": phy = try await peripheral.setPHY(.le2M)
            case "coded": phy = try await peripheral.setPHY(.leCoded)
            case let other?: throw usage("phy takes 1m, 2m or coded (or nothing, to read it), not '\(other)'")
            }
            guard arguments.count <= 1 else { throw usage("phy takes at most one PHY") }
            json.field("tx", "\(phy.tx)")
            json.field("rx", "\(phy.rx)")
            text = "PHY \(phy)"
        case "params":
            guard arguments.count <= 3 else { throw usage("params takes INTERVAL_MS[-MAX_MS] [LATENCY [SUPERVISION_TIMEOUT_MS]]") }
            let parameters: ConnectionParameters
            if let interval = arguments.first {
                let (low, high): (Duration, Duration)
                do { (low, high) = try parseIntervalRange(interval) } catch { throw usage(error.message) }
                var request = ConnectionParameterRequest(minimumInterval: low, maximumInterval: high)
                if arguments.count > 1 {
                    guard let latency = Int(arguments[1]) else { throw usage("params: latency '\(arguments[1])' is not a number") }
                    request.peripheralLatency = latency
                }
                if arguments.count > 2 {
                    guard let ms = Int(arguments[2]), (100...32_000).contains(ms) else {
                        throw usage("params: the supervision timeout is 100 to 32000 ms, not '\(arguments[2])'")
                    }
                    request.supervisionTimeout = .milliseconds(ms)
                }
                parameters = try await peripheral.updateConnectionParameters(request)
            } else {
                guard let current = peripheral.connectionParameters else {
                    throw usage("params: the connection parameters are not shown on this transport")
                }
                parameters = current
            }
            json.field("intervalMs", parameters.intervalMilliseconds)
            json.field("peripheralLatency", Int(parameters.peripheralLatency))
            json.field("supervisionTimeoutMs", parameters.supervisionTimeoutMilliseconds)
            text = "\(parameters)"
        default:
            guard arguments.count <= 1 else { throw usage("data-length takes at most one number of octets (27…251)") }
            let length: DataLength
            if let wanted = arguments.first {
                guard let octets = Int(wanted) else { throw usage("data-length takes 27…251 octets, not '\(wanted)'") }
                length = try await peripheral.setDataLength(octets)
            } else {
                guard let current = peripheral.dataLength else {
                    throw usage("data-length: the data length is not shown on this transport")
                }
                length = current
            }
            InfoCommand.writeDataLength(length, into: &json)
            text = "data length \(length)"
        }
        json.endObject()
        console.print(options.json ? String(decoding: json.bytes, as: UTF8.self) : text)
    }

    static func help(_ topic: String?) -> String {
        if let topic, ["services", "read", "write", "info", "pair"].contains(topic), let text = commandHelpText[topic] {
            return text + "\n  (in the shell the address is the connection's: leave it out)"
        }
        return """
            commands (on the open connection; the address is left out):
              services [--values]                 the database (and its values, decoded)
              read HANDLE|UUID [--long|--no-long] [--multiple H,H,...]
              write HANDLE|UUID HEX|--text STR [--no-response|--long|--reliable]
              subscribe HANDLE|UUID [--indicate]  values printed as they come, until unsubscribe
              unsubscribe HANDLE|UUID
              info                                what the device says it is
              mtu                                 the ATT_MTU in force
              rssi                                the link's RSSI now
              phy [1m|2m|coded]                   the PHYs in use, or ask for one
              params [MS[-MS] [LATENCY [TIMEOUT_MS]]]  the connection parameters, or ask for new ones
              data-length [OCTETS]                the data length, or ask for up to 251 octets
              pair [--passkey N] [--confirm] [--legacy] [--no-bond] [--force] [--io-capability CAP]
              connect [ADDR[/random]]             (again to the last device without ADDR)
              disconnect
              wait S                              let S seconds of values arrive (scripts)
              help [COMMAND], quit (or Ctrl-D)
            a line may end with --json, -v or --security LEVEL for that command; # starts a comment.
            keys: ←/→ Ctrl-A/E Alt-B/F move, ↑/↓ history, Ctrl-U/K/W cut, Ctrl-L clear, Ctrl-C drop the line.
            """
    }
}

/// Splits a shell line into words: spaces separate, "double" and 'single' quotes keep spaces,
/// a backslash escapes the next character; `#` at the start of a word begins a comment.
func shellWords(_ line: String) throws(UsageError) -> [String] {
    var words: [String] = []
    var current = ""
    var inWord = false
    var quote: Character?
    var escaped = false
    for character in line {
        if escaped {
            current.append(character)
            escaped = false
            continue
        }
        if let open = quote {
            if character == open {
                quote = nil
            } else if character == "\\" && open == "\"" {
                escaped = true
            } else {
                current.append(character)
            }
            continue
        }
        switch character {
        case " ", "\t":
            if inWord {
                words.append(current)
                current = ""
                inWord = false
            }
        case "\"", "'":
            quote = character
            inWord = true
        case "\\":
            escaped = true
            inWord = true
        case "#" where !inWord:
            return words
        default:
            current.append(character)
            inWord = true
        }
    }
    if quote != nil { throw UsageError("unbalanced quote") }
    if escaped { throw UsageError("a line cannot end with a backslash") }
    if inWord { words.append(current) }
    return words
}
