import BLE
import Bluetooth
import GATT

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
    /// `--security low|medium|high|fips`: the kernel L2CAP socket's `BT_SECURITY` level (the
    /// kernel then encrypts, pairing where the peer supports it).
    public var security: String?
    /// `--replay-match any`: a replayed capture answers each request with the first unused
    /// recorded response to an identical request, whatever the order.
    public var replayMatchAny = false
    /// `--replay-conn H`: the recorded connection to replay when a capture holds several.
    public var replayConnection: UInt16?
    /// `--strict`: a protocol violation by the peer that the ATT connection tolerates (and
    /// reports as a warning) fails the command instead (exit 1).
    public var strict = false
    /// `--bonds DIR`: where bonds are kept.
    public var bonds: String?
    /// `--repair`: pair again with a peer that lost its bond.
    public var repair = false
    /// `--min-key-size N`: the smallest encryption key accepted from a pairing (7–16; default 16).
    public var minimumKeySize = 16
    /// The device's address was given without a type (no `/random|/public`, no `--random`): the
    /// type comes from the address-type cache, else the adapter tries both.
    public var automaticAddressType = false
    /// `--no-cache`: the address-type cache is neither read nor written.
    public var noCache = false
    /// Where the address-type cache is (set by the runner from the environment; nil: none, as
    /// for commands run directly in tests).
    public var addressCacheDirectory: String?
    /// `--interval MS[-MS]`, `--latency N`, `--supervision-timeout MS`, `--phy`, `--data-length N`:
    /// what each connection this invocation makes is asked for.
    public var link = LinkPreferences()
    /// `--parameter-requests accept|refuse`: a peripheral's requests for other parameters.
    public var refuseParameterRequests = false
    /// Which link options were given, as typed (for the refusal where they cannot apply).
    public var linkOptionNames: [String] = []
    /// `--eatt N`: Enhanced ATT bearers opened on the connection (after encryption).
    public var enhancedBearers: Int?
    /// `--mtu N` (before or after a client command): the ATT_MTU our client offers.
    public var clientMTU: Int?
    /// `--eatt-required`: a peer refusing Enhanced ATT fails the command (else a warning and the
    /// unenhanced bearer).
    public var enhancedBearersRequired = false

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
    /// `--services FILE`: a `services --json` document naming the handles (otherwise they are
    /// learnt from the discovery traffic in the capture).
    public var services: String?
    /// `--follow`: keep reading as another program appends to the file, until Ctrl-C.
    public var follow = false
    /// `-w FILE`: the matching records written as btsnoop instead of printed.
    public var writePath: String?
    /// `--from` / `--to`: only records at or after / at or before these times.
    public var from: DumpTimeBound?
    public var to: DumpTimeBound?
    /// `-t` / `-T`: how the text dump shows time (btmon's options).
    public var time: DumpTimeFormat = .relative

    public init(path: String) { self.path = path }

    /// Whether the path names standard input (`-`).
    public var readsStandardInput: Bool { path == "-" }
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

/// What `read`, `write` and `subscribe` act on.
public enum Target: Equatable, Sendable {
    case handle(UInt16)
    case uuid(BluetoothUUID)
}

public enum WriteMode: Equatable, Sendable { case request, noResponse, long, reliable }

/// `subscribe … --write HANDLE|UUID=HEX`: a value written (with response) before subscribing, in
/// the same connection (a sensor switched on).
public struct SubscribeWrite: Equatable, Sendable {
    public var target: Target
    public var value: [UInt8]

    public init(target: Target, value: [UInt8]) {
        self.target = target
        self.value = value
    }
}

public enum Command: Equatable, Sendable {
    case help
    /// `gattclient COMMAND --help`.
    case commandHelp(String)
    case version
    case dump(DumpOptions)
    case monitor(MonitorOptions)
    /// `values`: `--values`, every readable value and every descriptor read and decoded.
    case services(PeerAddress, values: Bool = false)
    /// `info ADDR`: what the device says it is, decoded.
    case info(PeerAddress)
    /// `long`: `--long` (by UUID, every value read again in full); `noLong`: `--no-long` (the
    /// single response, not completed with Read Blob).
    case read(PeerAddress, Target?, long: Bool, multiple: [UInt16], noLong: Bool = false)
    case write(PeerAddress, Target, value: [UInt8], mode: WriteMode)
    case subscribe(PeerAddress, Target, indicate: Bool, count: Int?, duration: Double?, writes: [SubscribeWrite] = [])
    case scan(ScanCommandOptions)
    case sensortag(PeerAddress, SensorTagOptions)
    /// `linger`: after the end of standard input, how long a quiet link ends the session (`--linger`).
    case uart(PeerAddress, send: [UInt8]?, withResponse: Bool, duration: Double?, linger: Double? = nil, input: UARTInput = UARTInput())
    /// `watch ADDR --service NAME`: a standard service's typed values, reconnecting.
    case watch(PeerAddress, service: String, count: Int?, duration: Double?)
    case demo
    case peripheral(PeripheralOptions)
    /// `pair ADDR`: LE pairing as central in user space, and a bond.
    case pair(PeerAddress, PairCommandOptions)
    /// `bonds`: the bonds of the adapter's controller address.
    case bonds
    /// `unpair ADDR`: forget a bond.
    case unpair(PeerAddress)
    /// `adapters`: the kernel's adapters, or the `--transport` controller.
    case adapters
    /// `shell [ADDR]` (or `-I`): commands typed against one connection.
    case shell(PeerAddress?)
    /// `gateway --config FILE [--duration S]`: managed devices and advertisements as JSON Lines.
    case gateway(config: String, duration: Double?, mqtt: GatewayMQTTOptions? = nil)
}

/// `pair ADDR` options.
public struct PairCommandOptions: Equatable, Sendable {
    /// `--io-capability`; nil: keyboard-display on a terminal, none otherwise.
    public var ioCapability: IOCapability?
    /// `--passkey N`: the passkey the peer shows.
    public var passkey: UInt32?
    /// `--confirm`: accept a numeric comparison without asking.
    public var confirm = false
    /// `--legacy`: LE legacy pairing even when both support Secure Connections.
    public var legacy = false
    /// `--no-bond`: pair, encrypt, keep nothing.
    public var noBond = false
    /// `--force`: pair again although a bond exists.
    public var force = false
    /// `--sc-only`: Secure Connections Only mode: a peer offering only LE legacy pairing is
    /// refused (Pairing Failed, Authentication Requirements).
    public var secureConnectionsOnly = false

    public init() {}
}

/// `sensortag ADDR` options.
public struct SensorTagOptions: Equatable, Sendable {
    public var sensors: [String] = ["ir", "humidity", "barometer", "optical", "movement", "keys", "battery"]
    public var periodMilliseconds: Int?
    public var count: Int?
    public var duration: Double?
    public var csv: String?

    public init() {}
}

public struct Invocation: Equatable, Sendable {
    public var options: GlobalOptions
    public var command: Command
}

/// The commands this build implements, for help and errors.
public let commandSummaries: [(String, String)] = [
    ("demo", "the whole job against the built-in simulated SensorTag and Bluefruit (no hardware needed)"),
    ("dump FILE|- [--summary] [--conn H] [--handle H] [--att-only|--adv-only] [--services FILE.json] [--follow] [--from T] [--to T] [-t|-T] [-w OUT|-]",
     "decode a capture (btsnoop H4/monitor, pcap/pcapng H4); -w writes the matching records (btsnoop, .pcapng, - for stdout)"),
    ("monitor [hciN] [--duration S] [--conn H] [--handle H] [--att-only|--adv-only]",
     "live decode of every adapter's HCI traffic (kernel monitor channel; --record FILE keeps it)"),
    ("scan [--duration S] [--name TEXT] [--service UUID] [--min-rssi DBM] [--passive] [--all-reports] [--rssi-changes]",
     "advertisers, ADV and SCAN_RSP merged per device (live list on a terminal)"),
    ("services ADDR [--values]",
     "full discovery: services, included services, characteristics, descriptors (--values: every value read, decoded)"),
    ("info ADDR",
     "what the device says it is: name, appearance, preferred parameters, Device Information, PnP ID, battery"),
    ("read ADDR HANDLE|UUID [--long|--no-long] [--multiple H,H,...]",
     "read a value, whole (by UUID: Read Using Characteristic UUID)"),
    ("write ADDR HANDLE|UUID HEX|--text STR [--no-response|--long|--reliable]", "write a value"),
    ("subscribe ADDR HANDLE|UUID [--indicate] [--count N] [--duration S] [--write HANDLE|UUID=HEX]",
     "print notifications or indications (after writing --write values)"),
    ("uart ADDR [--send TEXT | --controller button:N|color:R,G,B] [--with-response] [--duration S] [--linger S]",
     "Nordic UART (Bluefruit): stdin lines to RX, TX notifications to stdout"),
    ("watch ADDR --service battery|heart-rate|thermometer|blood-pressure|weight-scale|current-time|device-information|generic-access [--count N] [--duration S]",
     "a standard service's typed values (read on connecting, notified), reconnecting until Ctrl-C"),
    ("sensortag ADDR [--sensors ir,humidity,barometer,optical,movement,keys,battery] [--period MS] [--count N] [--duration S] [--csv FILE]",
     "decoded CC2650 SensorTag readings; the sensors are switched off on exit"),
    ("peripheral sensortag|bluefruit|--database FILE.json [--mtu N] [--duration S] [--io-capability CAP] [--passkey N] [--confirm] [--security-request]",
     "advertise and serve GATT (stdin: notify|indicate|set HANDLE HEX; ends at EOF unless --duration); pairs when asked"),
    ("pair ADDR [--io-capability CAP] [--passkey N] [--confirm] [--legacy|--sc-only] [--no-bond] [--force]",
     "LE pairing as central (Secure Connections or legacy), the bond kept under --bonds"),
    ("bonds", "the bonds of this adapter (--json: with their keys)"),
    ("unpair ADDR", "forget the bond with ADDR"),
    ("shell [ADDR] (or -I [ADDR])",
     "interactive: services, read, write, subscribe/unsubscribe, info, mtu, pair, connect, disconnect on one connection"),
    ("gateway --config FILE.json [--duration S]",
     "keep the configured devices connected; their values, states and advertisements as {\"topic\",\"payload\"} lines"),
    ("adapters",
     "the kernel's adapters (up, powered, LE, bluetoothd), or with --transport the controller's version, features, buffers"),
]

public let usageText: String = {
    var text = """
    try `gattclient demo`: the whole job on built-in simulated devices, no hardware needed.

    usage: gattclient [GLOBAL OPTIONS] COMMAND ...

    simulated devices (--transport sim; sim:thermometer, sim:heartrate, sim:counter*N add the others):
      54:6C:0E:9A:3B:01          CC2650 SensorTag (public address)
      E8:7F:3A:21:9C:05/random   Adafruit Bluefruit LE UART
      C4:7E:11:09:2A:1C/random   Secure Thermometer (needs pairing; shows its passkey in the log)
      D1:7E:A8:70:00:01/random   Heart Rate Monitor (Heart Rate, Battery, Device Information)
      C0:DE:00:00:00:01/random   Counter 1 (a 32-bit count notified every 50 ms; copy N adds N - 1)

    commands:

    """
    for (synopsis, summary) in commandSummaries {
        text += "  \(synopsis)\n      \(summary)\n"
    }
    text += """

    global options (before or after the command):
      --transport URI, -t URI   the controller: hci0 (default) | hci:N (the kernel's host) | hci-user:N |
                                tcp:HOST:PORT | unix:PATH | serial:DEV[@BAUD] (our host in user space) |
                                sim[:sensortag,bluefruit,thermometer,heartrate,counter*N] | replay:FILE (a recorded session)
      --json                    JSON Lines on stdout, each with a "kind" (see the README's table)
      --record FILE.btsnoop     keep the session's HCI (or ATT) traffic as btsnoop (mode 0600)
      --timeout S               bound on connecting and on each wait (default 30)
      --security LEVEL          low | medium (encrypted) | high (authenticated, MITM) | fips (Secure
                                Connections, MITM, 16-octet key), before the first request: the bond's
                                key, else pairing (user space, or the kernel's BT_SECURITY on hciN)
      --bonds DIR               where bonds are kept (default $XDG_STATE_HOME/gattclient/bonds)
      --repair                  pair again with a peer that lost its bond (else said, and refused)
      --min-key-size N          the smallest encryption key a pairing may give, 7-16 octets (default 16);
                                checked before anything is stored, on every transport
      --no-cache                neither read nor write the address-type cache ($XDG_CACHE_HOME/gattclient)
      --replay-match strict|any replay: answer requests in recorded order (strict) or by content (any)
      --replay-conn H           replay: the recorded connection to use when a capture holds several
      --strict                  a protocol violation by the peer fails the command instead of warning
    the link of a connection we make (our host in user space and sim; refused on hciN and replay:):
      --interval MS[-MS]        connection interval (7.5 to 4000 ms in steps of 1.25), one or a range
      --latency N               connection events the peripheral may skip (0 to 499)
      --supervision-timeout MS  the link's supervision timeout (100 to 32000 ms in steps of 10)
      --phy 1m|2m|coded         the PHY asked for once connected (LE Set PHY; a controller without it: warned)
      --data-length N           the largest link-layer payload asked for, 27 to 251 octets (LE Set Data Length)
      --parameter-requests accept|refuse
                                what a peripheral's requests for other parameters get (default accept)
      --eatt N                  open N (1 to 5) Enhanced ATT bearers after encrypting the link (pairing if
                                needed); independent requests then run side by side; a peer that refuses
                                them is said and the command goes on with the unenhanced bearer
      --eatt-required           with --eatt: a peer that refuses Enhanced ATT fails the command instead
      --mtu N                   the ATT_MTU our client offers in Exchange MTU (23-517, default 517): small-MTU paths
      -v, -vv                   more detail on stderr (the ATT PDUs; the connection's parameters and events)
      -I, --interactive         the shell (gattclient -I ADDR is gattclient shell ADDR)
      --help, --version
    addresses: AA:BB:CC:DD:EE:FF (its type from a recent scan, else found), AA:BB:CC:DD:EE:FF/random
      or /public; handles: 0x0021 or 33 (never 033: a leading zero is refused); UUIDs: 2A19 or 128-bit;
      times (--timeout, --duration, --linger, dump --from/--to): seconds, at most 31536000 (365 days)

    'gattclient COMMAND --help' shows a command's options and examples.
    exit codes: 0 success, 1 runtime failure, 64 usage error, 69 adapter/transport unavailable,
    77 permission denied, 130 interrupted (Ctrl-C; scan, subscribe, uart, monitor and peripheral end 0)
    """
    return text
}()

/// The global options (before or after the command).
let globalOptionNames = [
    "--transport", "-t", "--json", "--record", "--timeout", "--security", "--replay-conn", "--replay-match", "--strict",
    "--bonds", "--repair", "--min-key-size", "--no-cache", "-v", "--verbose", "-vv", "-h", "--help", "--version", "-I", "--interactive",
    "--interval", "--latency", "--supervision-timeout", "--phy", "--data-length", "--parameter-requests", "--eatt",
    "--eatt-required", "--mtu",
]

extension GlobalOptions {
    /// Changes the connection parameters asked for (the host's default 30–50 ms range where no
    /// `--interval` was given) and notes the option.
    mutating func changeConnectionParameters(_ option: String, _ change: (inout ConnectionParameterRequest) -> Void) {
        var request = link.connectionParameters
            ?? ConnectionParameterRequest(minimumInterval: .microseconds(30_000), maximumInterval: .microseconds(50_000))
        change(&request)
        link.connectionParameters = request
        linkOptionNames.append(option)
    }
}

/// The commands that connect to a device as central, where the link options apply.
let linkOptionCommands: Set<String> = [
    "services", "info", "read", "write", "subscribe", "uart", "sensortag", "watch", "pair", "shell", "gateway",
]

/// `7.5` or `30-50` (ms): one interval or a range, in milliseconds.
func parseIntervalRange(_ text: String) throws(UsageError) -> (Duration, Duration) {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
    func ms(_ part: String) throws(UsageError) -> Duration {
        guard let value = Double(part), value.isFinite, value >= 7.5, value <= 4000 else {
            throw UsageError("--interval takes milliseconds from 7.5 to 4000 (steps of 1.25) like 30 or 15-30, not '\(text)'")
        }
        return .microseconds(Int64((value * 1000).rounded()))
    }
    switch parts.count {
    case 1: let one = try ms(parts[0]); return (one, one)
    case 2: return (try ms(parts[0]), try ms(parts[1]))
    default: throw UsageError("--interval takes milliseconds like 30 or 15-30, not '\(text)'")
    }
}

/// Each command's own options (what its parser takes), for "unknown option" and "did you mean".
let commandOptionNames: [String: [String]] = [
    "demo": [],
    "dump": [
        "--summary", "--conn", "--handle", "--att-only", "--adv-only", "--services", "--follow", "-w", "--from", "--to", "-t", "-T",
        "--time", "--date",
    ],
    "monitor": ["--duration", "--conn", "--handle", "--att-only", "--adv-only"],
    "scan": ["--duration", "--name", "--service", "--min-rssi", "--manufacturer", "--passive", "--all-reports", "--rssi-changes"],
    "sensortag": ["--random", "--sensors", "--period", "--count", "--duration", "--csv"],
    "uart": ["--random", "--send", "--controller", "--with-response", "--duration", "--linger", "--text", "--raw", "--eol"],
    "watch": ["--random", "--service", "--count", "--duration"],
    "services": ["--random", "--values"],
    "info": ["--random"],
    "read": ["--random", "--long", "--no-long", "--multiple"],
    "write": ["--random", "--text", "--no-response", "--long", "--reliable"],
    "subscribe": ["--random", "--indicate", "--count", "--duration", "--write"],
    "peripheral": [
        "--database", "--mtu", "--duration", "--io-capability", "--passkey", "--confirm", "--security-request", "--bondable",
        "--max-bonds", "--static-passkey-insecure", "--sc-only",
    ],
    "pair": ["--random", "--io-capability", "--passkey", "--confirm", "--legacy", "--no-bond", "--force", "--sc-only"],
    "bonds": [],
    "unpair": ["--random"],
    "adapters": [],
    "shell": ["--random"],
    "gateway": [
        "--config", "--duration", "--mqtt", "--client-id", "--username", "--password-file", "--tls-ca", "--qos", "--queue",
        "--home-assistant", "--commands", "--command-queue",
    ],
    "help": [],
]

/// The edit distance between two short words (insertions, deletions, substitutions).
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return previous[b.count]
}

/// "; did you mean X?" for the candidate nearest to `word` (at most 2 edits, or a prefix), or "".
func didYouMean(_ word: String, among candidates: [String]) -> String {
    let scored = candidates.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= (word.count <= 3 ? 1 : 2) }
    if let best = scored.min(by: { $0.1 < $1.1 }) { return "; did you mean \(best.0)?" }
    if word.count >= 4, let prefixed = candidates.first(where: { $0.hasPrefix(word) }) { return "; did you mean \(prefixed)?" }
    return ""
}

/// Parses `gattclient`'s arguments (without the program name). Pure: no I/O.
public func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
    var options = GlobalOptions()
    var positional: [String] = []
    var commandOptions: [(name: String, value: String?)] = []
    var interactiveShell = false
    var index = 0

    func value(for name: String) throws(UsageError) -> String {
        index += 1
        guard index < arguments.count else { throw UsageError("\(name) needs a value") }
        return arguments[index]
    }

    /// Options that take a value, per command.
    let valued: Set<String> = [
        "--conn", "--handle", "--services", "--duration", "--multiple", "--text", "--count", "--name", "--service",
        "--min-rssi", "--manufacturer", "--sensors", "--period", "--csv", "--send", "--controller", "--database", "--mtu",
        "--io-capability", "--passkey", "--write", "--linger", "--config", "--mqtt", "--client-id", "--username", "--password-file",
        "--tls-ca", "--qos", "--queue", "--command-queue", "-w", "--from", "--to", "--max-bonds", "--eol",
    ]

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
        // After `dump`, -t is btmon's time of day; before a command it is --transport.
        if positional.first == "dump", argument == "-t" || argument == "-T" {
            commandOptions.append((argument, nil))
            index += 1
            continue
        }
        switch argument {
        case "--transport", "-t": options.transport = try take()
        case "--json":
            if inlineValue != nil { throw UsageError("--json takes no value") }
            options.json = true
        case "--record":
            let path = try take()
            let lowered = path.lowercased()
            if lowered.hasSuffix(".pcap") || lowered.hasSuffix(".pcapng") {
                let stem = path.prefix(upTo: path.lastIndex(of: ".") ?? path.endIndex)
                throw UsageError(
                    "--record writes btsnoop (what btmon, Wireshark and `gattclient dump` read), not pcap: name it \(stem).btsnoop")
            }
            options.record = path
        case "--timeout":
            options.timeout = try parseSeconds(try take(), argument)
        case "--security":
            let level = try take()
            guard ["low", "medium", "high", "fips"].contains(level) else {
                throw UsageError("--security is low, medium, high or fips, not '\(level)'")
            }
            options.security = level
        case "--replay-conn":
            options.replayConnection = try parseHandle(try take(), what: "--replay-conn", allowZero: true, maximum: 0x0EFF)
        case "--replay-match":
            switch try take() {
            case "any": options.replayMatchAny = true
            case "strict": options.replayMatchAny = false
            case let other: throw UsageError("--replay-match is 'strict' or 'any', not '\(other)'")
            }
        case "--strict":
            if inlineValue != nil { throw UsageError("--strict takes no value") }
            options.strict = true
        case "--bonds":
            let directory = try take()
            guard !directory.isEmpty else { throw UsageError("--bonds needs a directory") }
            options.bonds = directory
        case "--repair":
            if inlineValue != nil { throw UsageError("--repair takes no value") }
            options.repair = true
        case "--min-key-size":
            let text = try take()
            guard let size = Int(text), (7...16).contains(size), text == String(size) else {
                throw UsageError("--min-key-size takes a key size in octets from 7 to 16, not '\(text)'")
            }
            options.minimumKeySize = size
        case "--no-cache":
            if inlineValue != nil { throw UsageError("--no-cache takes no value") }
            options.noCache = true
        case "--interval":
            let (low, high) = try parseIntervalRange(try take())
            options.changeConnectionParameters(argument) {
                $0.minimumInterval = low
                $0.maximumInterval = high
            }
        case "--latency":
            let text = try take()
            guard let latency = Int(text), (0...499).contains(latency) else {
                throw UsageError("--latency takes 0 to 499 connection events, not '\(text)'")
            }
            options.changeConnectionParameters(argument) { $0.peripheralLatency = latency }
        case "--supervision-timeout":
            let text = try take()
            guard let ms = Int(text), (100...32_000).contains(ms), ms % 10 == 0 else {
                throw UsageError("--supervision-timeout takes 100 to 32000 ms in steps of 10, not '\(text)'")
            }
            options.changeConnectionParameters(argument) { $0.supervisionTimeout = .milliseconds(ms) }
        case "--phy":
            switch try take().lowercased() {
            case "1m": options.link.phy = .le1M
            case "2m": options.link.phy = .le2M
            case "coded": options.link.phy = .leCoded
            case let other: throw UsageError("--phy is 1m, 2m or coded, not '\(other)'")
            }
            options.linkOptionNames.append(argument)
        case "--data-length":
            let text = try take()
            guard let octets = Int(text), (27...251).contains(octets) else {
                throw UsageError("--data-length takes 27 to 251 octets, not '\(text)'")
            }
            options.link.dataLength = octets
            options.linkOptionNames.append(argument)
        case "--eatt":
            let text = try take()
            guard let count = Int(text), (1...5).contains(count) else {
                throw UsageError("--eatt takes 1 to 5 Enhanced ATT bearers, not '\(text)'")
            }
            options.enhancedBearers = count
            options.linkOptionNames.append(argument)
        case "--mtu" where positional.first != "peripheral":
            // The client's ATT_MTU (peripheral has its own --mtu, the server's).
            let text = try take()
            guard let mtu = Int(text), (23...517).contains(mtu), text == String(mtu) else {
                throw UsageError("--mtu takes an ATT_MTU from 23 to 517, not '\(text)'")
            }
            options.clientMTU = mtu
        case "--eatt-required":
            if inlineValue != nil { throw UsageError("--eatt-required takes no value") }
            options.enhancedBearersRequired = true
        case "--parameter-requests":
            switch try take() {
            case "accept": options.refuseParameterRequests = false
            case "refuse": options.refuseParameterRequests = true
            case let other: throw UsageError("--parameter-requests is accept or refuse, not '\(other)'")
            }
            options.linkOptionNames.append(argument)
        case "-I", "--interactive":
            if inlineValue != nil { throw UsageError("\(argument) takes no value") }
            interactiveShell = true
        case "-v", "--verbose": options.verbosity += 1
        case "-vv": options.verbosity += 2
        case "-h", "--help":
            // `COMMAND --help` shows that command's help; `--help` alone the overview.
            if let name = positional.first, commandHelpText[name] != nil {
                return Invocation(options: options, command: .commandHelp(name))
            }
            if index + 1 < arguments.count, commandHelpText[arguments[index + 1]] != nil {
                return Invocation(options: options, command: .commandHelp(arguments[index + 1]))
            }
            return Invocation(options: options, command: .help)
        case "--version": return Invocation(options: options, command: .version)
        case "--":
            positional.append(contentsOf: arguments[(index + 1)...])
            index = arguments.count
            continue
        default:
            if argument.hasPrefix("-") && argument.count > 1 {
                // An option no command knows is reported as itself, before its value could be
                // taken for an argument (`scan --durration 1`).
                let known = commandOptionNames.values.contains { $0.contains(argument) }
                if !known, Double(argument) == nil {
                    let command = positional.first.flatMap { commandOptionNames[$0] }
                    throw UsageError(
                        "unknown option \(argument)" + (positional.first.map { commandOptionNames[$0] != nil ? " for \($0)" : "" } ?? "")
                            + didYouMean(argument, among: (command ?? commandOptionNames.values.flatMap { $0 }) + globalOptionNames))
                }
                // `uart --text` is a mode (what a typed line becomes); `write --text TEXT` a value.
                if valued.contains(argument), !(argument == "--text" && positional.first == "uart") {
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

    // `-I [ADDR]`: the shell, as gatttool's -I.
    if interactiveShell, positional.first != "shell" { positional.insert("shell", at: 0) }
    guard let name = positional.first else {
        throw UsageError("no command given: try `gattclient demo` (no hardware needed), or `gattclient --help`")
    }
    let rest = Array(positional.dropFirst())
    // The link options ask something of a connection this command makes; elsewhere they would be dropped.
    if let first = options.linkOptionNames.first, !linkOptionCommands.contains(name), commandHelpText[name] != nil || name == "help" {
        throw UsageError(
            "\(first) applies to the commands that connect to a device (\(linkOptionCommands.sorted().joined(separator: ", "))); "
                + "\(name) makes no such connection")
    }
    if let request = options.link.connectionParameters {
        do {
            _ = try request.hciParameters()
        } catch {
            throw UsageError(error.message)
        }
    }
    // A device address without a type: the cache's type, else both (issue 19, item 3).
    let addressed: Set<String> = ["services", "info", "read", "write", "subscribe", "uart", "sensortag", "watch", "pair", "unpair", "shell"]
    if addressed.contains(name), let address = rest.first, !address.contains("/"),
        !commandOptions.contains(where: { $0.name == "--random" })
    {
        options.automaticAddressType = true
    }
    switch name {
    case "help":
        guard let topic = rest.first else { return Invocation(options: options, command: .help) }
        guard rest.count == 1 else { throw UsageError("help takes one command: gattclient help dump") }
        guard commandHelpText[topic] != nil else {
            let names = commandSummaries.map { String($0.0.prefix { $0 != " " }) }
            let suggestion = didYouMean(topic, among: names)
            throw UsageError(
                "no help on '\(topic)': it is not a command" + (suggestion.isEmpty ? "; commands: " + names.joined(separator: ", ") : suggestion))
        }
        return Invocation(options: options, command: .commandHelp(topic))
    case "dump":
        if options.record != nil {
            throw UsageError("--record keeps a live session's HCI traffic; dump reads a capture and has none to record (copy the file instead)")
        }
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
            case "--services": dump.services = value
            case "--follow": dump.follow = true
            case "-w": dump.writePath = value
            case "--from": dump.from = try parseTimeBound(value ?? "", what: flag)
            case "--to": dump.to = try parseTimeBound(value ?? "", what: flag)
            case "-t", "--time": dump.time = .timeOfDay
            case "-T", "--date": dump.time = .dateAndTime
            default: throw UsageError("dump does not know \(flag)")
            }
        }
        if dump.attOnly && dump.advOnly { throw UsageError("--att-only and --adv-only exclude each other") }
        try checkDumpCombinations(dump, json: options.json)
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
            case "--duration": monitor.duration = try parseSeconds(value, flag)
            default: throw UsageError("monitor does not know \(flag)")
            }
        }
        if monitor.attOnly && monitor.advOnly { throw UsageError("--att-only and --adv-only exclude each other") }
        return Invocation(options: options, command: .monitor(monitor))
    case "demo":
        guard rest.isEmpty, commandOptions.isEmpty else { throw UsageError("demo takes no arguments") }
        if let transport = options.transport, transport != "sim" {
            throw UsageError(
                "demo runs on the built-in simulation only (--transport sim: its SensorTag and Bluefruit), "
                    + "not \(transport); on that transport try "
                    + "`gattclient --transport \(transport) scan`, then sensortag ADDR or uart ADDR")
        }
        return Invocation(options: options, command: .demo)
    case "scan":
        guard rest.isEmpty else { throw UsageError("scan takes no arguments, only options") }
        var scan = ScanCommandOptions()
        for (flag, value) in commandOptions {
            switch flag {
            case "--duration": scan.duration = try parseSeconds(value, flag)
            case "--name": scan.name = value
            case "--service":
                guard let uuid = BluetoothUUID(value ?? "") else { throw UsageError("--service needs a UUID (180F or 128-bit), not '\(value ?? "")'") }
                scan.service = uuid
            case "--min-rssi":
                guard let dbm = Int(value ?? ""), (-127...20).contains(dbm) else { throw UsageError("--min-rssi needs dBm like -70, not '\(value ?? "")'") }
                scan.minimumRSSI = dbm
            case "--manufacturer":
                // A Company Identifier (Assigned Numbers): 0x004C or 76, one reading each.
                let text = value ?? ""
                let parsed: UInt16? =
                    text.lowercased().hasPrefix("0x") && text.count > 2
                    ? UInt16(text.dropFirst(2), radix: 16)
                    : (text.first != "0" || text == "0") ? UInt16(text) : nil
                guard let id = parsed else {
                    throw UsageError("--manufacturer needs a Company Identifier like 0x004C or 76 (no leading zero), not '\(text)'")
                }
                scan.manufacturer = id
            case "--passive": scan.passive = true
            case "--all-reports": scan.allReports = true
            case "--rssi-changes": scan.rssiChanges = true
            default: throw UsageError("scan does not know \(flag)")
            }
        }
        return Invocation(options: options, command: .scan(scan))
    case "sensortag":
        guard rest.count == 1 else { throw UsageError("sensortag needs the SensorTag's address and nothing else") }
        var random = false
        var tag = SensorTagOptions()
        for (flag, value) in commandOptions {
            switch flag {
            case "--random": random = true
            case "--sensors":
                let names = (value ?? "").split(separator: ",").map(String.init)
                let known = ["ir", "humidity", "barometer", "optical", "movement", "keys", "battery"]
                guard !names.isEmpty, names.allSatisfy(known.contains) else {
                    throw UsageError("--sensors takes a list of \(known.joined(separator: ",")), not '\(value ?? "")'")
                }
                tag.sensors = names
            case "--period":
                guard let ms = Int(value ?? ""), ms > 0 else { throw UsageError("--period needs milliseconds like 500, not '\(value ?? "")'") }
                tag.periodMilliseconds = ms
            case "--count":
                guard let n = Int(value ?? ""), n > 0 else { throw UsageError("--count needs a positive number, not '\(value ?? "")'") }
                tag.count = n
            case "--duration": tag.duration = try parseSeconds(value, flag)
            case "--csv": tag.csv = value
            default: throw UsageError("sensortag does not know \(flag)")
            }
        }
        guard let peer = PeerAddress(rest[0], random: random) else {
            throw UsageError("'\(rest[0])' is not a Bluetooth address (AA:BB:CC:DD:EE:FF, or AA:BB:CC:DD:EE:FF/random)")
        }
        return Invocation(options: options, command: .sensortag(peer, tag))
    case "uart":
        guard rest.count == 1 else { throw UsageError("uart needs the board's address and nothing else") }
        var random = false, withResponse = false
        var send: [UInt8]?
        var duration: Double?
        var linger: Double?
        var input = UARTInput()
        for (flag, value) in commandOptions {
            switch flag {
            case "--random": random = true
            case "--text", "--raw":
                guard input.lines == nil else { throw UsageError("--text and --raw exclude each other") }
                input.lines = flag == "--text"
            case "--eol":
                switch value ?? "" {
                case "lf": input.endOfLine = [0x0A]
                case "crlf": input.endOfLine = [0x0D, 0x0A]
                case "cr": input.endOfLine = [0x0D]
                case "none": input.endOfLine = []
                case let other: throw UsageError("--eol is lf, crlf, cr or none, not '\(other)'")
                }
                input.endOfLineGiven = true
            case "--with-response": withResponse = true
            case "--duration": duration = try parseSeconds(value, flag)
            case "--linger": linger = try parseSeconds(value, flag)
            case "--send":
                guard send == nil else { throw UsageError("--send and --controller exclude each other") }
                send = Array((value ?? "").utf8)
            case "--controller":
                guard send == nil else { throw UsageError("--send and --controller exclude each other") }
                send = try controllerPacket(value ?? "")
            default: throw UsageError("uart does not know \(flag)")
            }
        }
        guard let peer = PeerAddress(rest[0], random: random) else {
            throw UsageError("'\(rest[0])' is not a Bluetooth address (AA:BB:CC:DD:EE:FF, or AA:BB:CC:DD:EE:FF/random)")
        }
        if linger != nil, send != nil {
            throw UsageError("--linger is for standard input's end; with --send or --controller, --duration says how long to listen")
        }
        if send != nil, input.lines != nil || input.endOfLineGiven {
            throw UsageError("--text, --raw and --eol say what standard input becomes; with --send or --controller it is not read")
        }
        if input.lines == false, input.endOfLineGiven {
            throw UsageError("--eol ends each typed line with --text; --raw sends standard input's octets as they are")
        }
        return Invocation(
            options: options, command: .uart(peer, send: send, withResponse: withResponse, duration: duration, linger: linger, input: input))
    case "watch":
        guard rest.count == 1 else { throw UsageError("watch needs the device's address and nothing else") }
        var random = false
        var service: String?
        var count: Int?
        var duration: Double?
        let known = ["battery", "heart-rate", "thermometer", "blood-pressure", "weight-scale", "current-time", "device-information", "generic-access"]
        for (flag, value) in commandOptions {
            switch flag {
            case "--random": random = true
            case "--service":
                guard let value, known.contains(value) else {
                    throw UsageError("--service takes one of \(known.joined(separator: "|")), not '\(value ?? "")'")
                }
                service = value
            case "--count":
                guard let n = Int(value ?? ""), n > 0 else { throw UsageError("--count needs a positive number, not '\(value ?? "")'") }
                count = n
            case "--duration": duration = try parseSeconds(value, flag)
            default: throw UsageError("watch does not know \(flag)")
            }
        }
        guard let service else { throw UsageError("watch needs --service \(known.joined(separator: "|"))") }
        guard let peer = PeerAddress(rest[0], random: random) else {
            throw UsageError("'\(rest[0])' is not a Bluetooth address (AA:BB:CC:DD:EE:FF, or AA:BB:CC:DD:EE:FF/random)")
        }
        return Invocation(options: options, command: .watch(peer, service: service, count: count, duration: duration))
    case "info":
        var random = false
        for (flag, _) in commandOptions {
            guard flag == "--random" else { throw UsageError("info does not know \(flag)") }
            random = true
        }
        guard rest.count == 1, let peer = PeerAddress(rest[0], random: random) else {
            throw UsageError("info needs the device's address and nothing else: gattclient info AA:BB:CC:DD:EE:FF")
        }
        return Invocation(options: options, command: .info(peer))
    case "services", "read", "write", "subscribe":
        return Invocation(options: options, command: try parseGATTCommand(name, rest, commandOptions))
    case "peripheral":
        if options.clientMTU != nil {
            throw UsageError("peripheral's --mtu is the server's Rx MTU: give it after the command (gattclient peripheral ... --mtu N)")
        }
        return Invocation(options: options, command: .peripheral(try parsePeripheralCommand(rest, commandOptions)))
    case "shell":
        var random = false
        for (flag, _) in commandOptions {
            guard flag == "--random" else { throw UsageError("shell does not know \(flag)") }
            random = true
        }
        guard rest.count <= 1 else { throw UsageError("shell takes at most one address, got \(rest.count) arguments") }
        guard let text = rest.first else {
            if random { throw UsageError("--random needs an address") }
            return Invocation(options: options, command: .shell(nil))
        }
        guard let peer = PeerAddress(text, random: random) else {
            throw UsageError("'\(text)' is not a Bluetooth address (AA:BB:CC:DD:EE:FF, or AA:BB:CC:DD:EE:FF/random)")
        }
        return Invocation(options: options, command: .shell(peer))
    case "gateway":
        guard rest.isEmpty else { throw UsageError("gateway takes its devices from --config FILE, not arguments") }
        var config: String?
        var duration: Double?
        var mqttURL: String?
        var mqttFlags: [(String, String?)] = []
        for (flag, value) in commandOptions {
            switch flag {
            case "--config": config = value
            case "--duration": duration = try parseSeconds(value, flag)
            case "--mqtt": mqttURL = value ?? ""
            case "--client-id", "--username", "--password-file", "--tls-ca", "--qos", "--queue", "--home-assistant", "--commands",
                "--command-queue":
                mqttFlags.append((flag, value))
            default: throw UsageError("gateway does not know \(flag)")
            }
        }
        guard let config, !config.isEmpty else { throw UsageError("gateway needs --config FILE.json (see gateway --help)") }
        var mqtt: GatewayMQTTOptions?
        if let mqttURL {
            var options = try GatewayMQTTOptions(url: mqttURL)
            for (flag, value) in mqttFlags {
                let text = value ?? ""
                switch flag {
                case "--client-id":
                    guard !text.isEmpty, text.utf8.count <= 65535 else { throw UsageError("--client-id needs an identifier") }
                    options.clientID = text
                case "--username":
                    guard !text.isEmpty else { throw UsageError("--username needs a name") }
                    options.username = text
                case "--password-file":
                    guard !text.isEmpty else { throw UsageError("--password-file needs a file (its first line is the password)") }
                    options.passwordFile = text
                case "--tls-ca":
                    guard !text.isEmpty else { throw UsageError("--tls-ca needs the broker's CA certificate file") }
                    options.caFile = text
                case "--qos":
                    guard let qos = Int(text), (0...2).contains(qos) else { throw UsageError("--qos takes 0, 1 or 2, not '\(text)'") }
                    options.qos = qos
                case "--queue":
                    guard let queue = Int(text), (1...10_000_000).contains(queue) else {
                        throw UsageError("--queue takes a number of messages from 1 to 10000000, not '\(text)'")
                    }
                    options.queue = queue
                case "--commands": options.commands = true
                case "--command-queue":
                    guard let queue = Int(text), (1...10_000).contains(queue) else {
                        throw UsageError("--command-queue takes a number of commands from 1 to 10000, not '\(text)'")
                    }
                    options.commandQueue = queue
                default: options.homeAssistant = true
                }
            }
            if options.passwordFile != nil, options.username == nil { throw UsageError("--password-file needs --username") }
            if options.caFile != nil, !options.tls { throw UsageError("--tls-ca is for TLS: give --mqtt mqtts://HOST[:PORT]") }
            if mqttFlags.contains(where: { $0.0 == "--command-queue" }), !options.commands {
                throw UsageError("--command-queue is for --commands")
            }
            mqtt = options
        } else if let (flag, _) = mqttFlags.first {
            throw UsageError("\(flag) is for the broker: give --mqtt mqtt://HOST[:PORT]")
        }
        return Invocation(options: options, command: .gateway(config: config, duration: duration, mqtt: mqtt))
    case "adapters":
        guard rest.isEmpty, commandOptions.isEmpty else {
            throw UsageError("adapters takes no arguments (--transport names one controller)")
        }
        return Invocation(options: options, command: .adapters)
    case "pair", "bonds", "unpair":
        return Invocation(options: options, command: try parsePairingCommand(name, rest, commandOptions))
    default:
        let names = commandSummaries.map { String($0.0.prefix { $0 != " " }) }
        let suggestion = didYouMean(name, among: names)
        throw UsageError(
            "unknown command '\(name)'" + (suggestion.isEmpty ? "; commands: " + names.joined(separator: ", ") : suggestion))
    }
}

/// A value written in hex (`0100`, `01:00`, `01 00`, `0x0100`): says whether the digits are odd
/// in number or not hex at all.
func parseHexValue(_ text: String) throws(UsageError) -> [UInt8] {
    if let bytes = Hex.decode(text) { return bytes }
    var body = Substring(text)
    if body.hasPrefix("0x") || body.hasPrefix("0X") { body = body.dropFirst(2) }
    let digits = body.filter { $0 != " " && $0 != ":" && $0 != "-" }
    if digits.allSatisfy(\.isHexDigit) {
        // The digits padded either side; where both read the same (`0`), one octet more.
        let before = "0" + digits, after = digits + "0"
        let examples = before == after ? "\(before) or \(before)00" : "\(before) or \(after)"
        throw UsageError("'\(text)': odd number of hex digits (\(digits.count)); a value is whole octets, like \(examples)")
    }
    throw UsageError("'\(text)' is not hex (like 0100 or 01:00)")
}

/// The one rule for a number typed as a handle: `0x…`, or decimal without a leading zero. `041`
/// could mean 0x0041 or 41, so it is refused with both readings (`what`: the option it was given
/// to, as a prefix).
func refuseLeadingZero(_ text: String, what: String? = nil) throws(UsageError) {
    guard text.count > 1, text.first == "0", text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return }
    let digits = text.drop { $0 == "0" }
    var readings: [String] = []
    if let value = Int(digits.isEmpty ? "0" : digits, radix: 16), value <= 0xFFFF { readings.append("0x" + hex(UInt16(value), 4)) }
    if let decimal = Int(digits.isEmpty ? "0" : digits), decimal <= 0xFFFF { readings.append(String(decimal)) }
    let prefix = what.map { "\($0) " } ?? ""
    throw UsageError(
        "\(prefix)\(text): a handle is 0x… or decimal without a leading zero"
            + (readings.isEmpty ? "" : ": did you mean \(readings.joined(separator: " or "))?"))
}

/// Parses a handle written `0x0021` or `33` (never `033`: ``refuseLeadingZero(_:what:)``).
public func parseHandle(_ text: String, what: String, allowZero: Bool = false, maximum: Int = 0xFFFF) throws(UsageError) -> UInt16 {
    try refuseLeadingZero(text, what: what == "the attribute handle" ? nil : what)
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


/// The longest time a time option takes: 365 days, in seconds. Longer waits mean nothing to
/// a command (and 1e16 seconds does not fit the clock's milliseconds).
public let maximumSeconds = 31_536_000

/// Every time option in seconds (`--timeout`, `--duration`, `--linger`, dump's `--from`/`--to`,
/// the shell's `wait`): a number more than 0 (or 0 when `allowZero`) and at most `maximum`;
/// negative, nan, inf or beyond the maximum is a usage error naming the maximum. `expected`
/// replaces "a positive number of seconds" in the message.
func parseSeconds(
    _ value: String?, _ flag: String, allowZero: Bool = false, maximum: Int = maximumSeconds, expected: String? = nil
) throws(UsageError) -> Double {
    let text = value ?? ""
    guard let seconds = Double(text), seconds.isFinite, allowZero ? seconds >= 0 : seconds > 0, seconds <= Double(maximum) else {
        let what = expected ?? (allowZero ? "a number of seconds (0 or more)" : "a positive number of seconds")
        let limit = maximum == maximumSeconds ? "\(maximum) (365 days)" : String(maximum)
        throw UsageError("\(flag) needs \(what) up to \(limit), not '\(text)'")
    }
    return seconds
}

/// `button:N` (pressed) or `color:R,G,B`: a Bluefruit LE Connect controller packet.
func controllerPacket(_ text: String) throws(UsageError) -> [UInt8] {
    let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
    if parts.count == 2, parts[0] == "button", let number = Int(parts[1]), let packet = NordicUART.button(number, pressed: true) {
        return packet
    }
    if parts.count == 2, parts[0] == "color" {
        let values = parts[1].split(separator: ",").compactMap { UInt8($0) }
        if values.count == 3 { return NordicUART.color(red: values[0], green: values[1], blue: values[2]) }
    }
    throw UsageError("--controller takes button:N (1–8) or color:R,G,B (0–255 each), not '\(text)'")
}

