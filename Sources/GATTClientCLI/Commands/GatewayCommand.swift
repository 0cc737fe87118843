#if canImport(Glibc)
import Glibc
#endif
import BLE
import Bluetooth
import GATT
import MQTT
import SystemSupport
import Synchronization

/// `gateway --config FILE`'s configuration (JSON):
///
/// ```json
/// {
///   "prefix": "gattclient",
///   "advertisements": {"forward": true, "active": false, "names": ["Counter"], "services": ["180F"], "manufacturers": [13]},
///   "devices": [
///     {"address": "54:6C:0E:9A:3B:01/public",
///      "write": [{"characteristic": "F000AA02-0451-4000-B000-000000000000", "value": "01"}],
///      "subscribe": ["F000AA01-0451-4000-B000-000000000000"],
///      "read": [{"characteristic": "2A19", "every": 60}],
///      "commands": {"write": ["F000AA03-0451-4000-B000-000000000000"], "read": ["2A19"]}},
///     {"match": {"service": "C0DE0001-0000-4000-8000-00805F9B34FB", "name": "Counter"},
///      "subscribe": ["C0DE0002-0000-4000-8000-00805F9B34FB"]}
///   ]
/// }
/// ```
///
/// `advertisements.forward`: every advertising report (a passive scan unless `active`, no
/// de-duplication; a name sent only in a scan response needs `active`), or only
/// those matching one of `names` (part of the name, any case), `services`, `manufacturers`
/// (company identifiers) when any is given. A device entry names an address (with `/public` or
/// `/random`; without, public) or a `match` (`service`, `name`, `manufacturer`: all given must
/// hold) that every advertising device is checked against; each matching device is managed.
/// `commands` is the allow-list of `gateway --commands`: the characteristics an MQTT command may
/// write (`…/set`) or read (`…/read`) on that entry's devices; nothing else is reachable.
struct GatewayConfiguration: Equatable, Sendable {
    struct Read: Equatable, Sendable {
        var characteristic: BluetoothUUID
        var every: Double
    }

    struct Write: Equatable, Sendable {
        var characteristic: BluetoothUUID
        var value: [UInt8]
    }

    struct Match: Equatable, Sendable {
        var service: BluetoothUUID?
        var name: String?
        var manufacturer: UInt16?

        func matches(_ advertisement: Advertisement) -> Bool {
            if let service {
                let advertised = advertisement.serviceUUIDs + advertisement.serviceData.map(\.uuid)
                guard advertised.contains(service) else { return false }
            }
            if let name {
                guard let advertised = advertisement.name, advertised.lowercased().contains(name.lowercased()) else { return false }
            }
            if let manufacturer {
                guard advertisement.manufacturerData.contains(where: { $0.companyID == manufacturer }) else { return false }
            }
            return true
        }
    }

    /// What `--commands` may do to a device: the characteristics it may write and read.
    struct Commands: Equatable, Sendable {
        var write: Set<BluetoothUUID> = []
        var read: Set<BluetoothUUID> = []

        var isEmpty: Bool { write.isEmpty && read.isEmpty }
    }

    struct Device: Equatable, Sendable {
        var address: PeerAddress?
        var match: Match?
        var writes: [Write] = []
        var subscribe: [BluetoothUUID] = []
        var reads: [Read] = []
        var commands = Commands()
    }

    struct Advertisements: Equatable, Sendable {
        var forward = false
        /// Active scanning (scan requests: names a device sends only in its scan response).
        var active = false
        var names: [String] = []
        var services: [BluetoothUUID] = []
        var manufacturers: [UInt16] = []

        func forwards(_ advertisement: Advertisement) -> Bool {
            guard forward else { return false }
            if names.isEmpty && services.isEmpty && manufacturers.isEmpty { return true }
            if let name = advertisement.name?.lowercased(), names.contains(where: { name.contains($0.lowercased()) }) { return true }
            let advertised = advertisement.serviceUUIDs + advertisement.serviceData.map(\.uuid)
            if services.contains(where: advertised.contains) { return true }
            return advertisement.manufacturerData.contains { manufacturers.contains($0.companyID) }
        }
    }

    /// The topics' prefix; nil: `gattclient/<adapter address>`.
    var prefix: String?
    var advertisements = Advertisements()
    var devices: [Device] = []

    /// Parses and checks the document; a problem is a usage error naming where it is.
    init(json bytes: [UInt8]) throws(UsageError) {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw UsageError("gateway configuration: \(error)")
        }
        guard let members = document.members else { throw UsageError("gateway configuration: not a JSON object") }
        for (key, _) in members where !["prefix", "advertisements", "devices"].contains(key) {
            throw UsageError("gateway configuration: unknown member '\(key)' (prefix, advertisements, devices)")
        }
        if let prefix = document["prefix"] {
            guard let text = prefix.string, !text.isEmpty, !text.contains("#"), !text.contains("+") else {
                throw UsageError("gateway configuration: prefix must be a non-empty topic without # or +")
            }
            self.prefix = text
        }
        if let forward = document["advertisements"] {
            advertisements = try Self.advertisements(forward)
        }
        for (index, entry) in (document["devices"]?.array ?? []).enumerated() {
            devices.append(try Self.device(entry, at: "devices[\(index)]"))
        }
        if document["devices"] != nil, document["devices"]?.array == nil {
            throw UsageError("gateway configuration: devices must be an array")
        }
        guard !devices.isEmpty || advertisements.forward else {
            throw UsageError("gateway configuration: no devices and no advertisements to forward: nothing to do")
        }
    }

    private static func uuid(_ value: JSONValue?, _ place: String) throws(UsageError) -> BluetoothUUID {
        guard let text = value?.string, let uuid = BluetoothUUID(text) else {
            throw UsageError("gateway configuration: \(place) must be a UUID (like 2A19 or 128-bit)")
        }
        return uuid
    }

    private static func advertisements(_ value: JSONValue) throws(UsageError) -> Advertisements {
        guard let members = value.members else { throw UsageError("gateway configuration: advertisements must be an object") }
        var result = Advertisements()
        for (key, member) in members {
            switch key {
            case "forward":
                guard let flag = member.bool else { throw UsageError("gateway configuration: advertisements.forward must be true or false") }
                result.forward = flag
            case "active":
                guard let flag = member.bool else { throw UsageError("gateway configuration: advertisements.active must be true or false") }
                result.active = flag
            case "names":
                guard let names = member.array?.compactMap(\.string), names.count == member.array?.count else {
                    throw UsageError("gateway configuration: advertisements.names must be strings")
                }
                result.names = names
            case "services":
                for (index, item) in (member.array ?? []).enumerated() {
                    result.services.append(try uuid(item, "advertisements.services[\(index)]"))
                }
            case "manufacturers":
                for item in member.array ?? [] {
                    guard let id = item.int, (0...0xFFFF).contains(id) else {
                        throw UsageError("gateway configuration: advertisements.manufacturers must be company identifiers (0–65535)")
                    }
                    result.manufacturers.append(UInt16(id))
                }
            default:
                throw UsageError("gateway configuration: unknown member advertisements.\(key) (forward, active, names, services, manufacturers)")
            }
        }
        return result
    }

    private static func device(_ value: JSONValue, at place: String) throws(UsageError) -> Device {
        guard let members = value.members else { throw UsageError("gateway configuration: \(place) must be an object") }
        var device = Device()
        for (key, member) in members {
            switch key {
            case "address":
                guard let text = member.string, let peer = PeerAddress(text, random: false) else {
                    throw UsageError("gateway configuration: \(place).address must be AA:BB:CC:DD:EE:FF[/random|/public]")
                }
                device.address = peer
            case "match":
                guard member.members != nil else { throw UsageError("gateway configuration: \(place).match must be an object") }
                var match = Match()
                for (name, item) in member.members ?? [] {
                    switch name {
                    case "service": match.service = try uuid(item, "\(place).match.service")
                    case "name":
                        guard let text = item.string else { throw UsageError("gateway configuration: \(place).match.name must be text") }
                        match.name = text
                    case "manufacturer":
                        guard let id = item.int, (0...0xFFFF).contains(id) else {
                            throw UsageError("gateway configuration: \(place).match.manufacturer must be a company identifier")
                        }
                        match.manufacturer = UInt16(id)
                    default:
                        throw UsageError("gateway configuration: unknown member \(place).match.\(name) (service, name, manufacturer)")
                    }
                }
                guard match != Match() else { throw UsageError("gateway configuration: \(place).match is empty") }
                device.match = match
            case "subscribe":
                for (index, item) in (member.array ?? []).enumerated() {
                    device.subscribe.append(try uuid(item, "\(place).subscribe[\(index)]"))
                }
            case "read":
                for (index, item) in (member.array ?? []).enumerated() {
                    let every = item["every"]?.double ?? 0
                    guard every >= 1, every <= 86_400 else {
                        throw UsageError("gateway configuration: \(place).read[\(index)].every must be seconds from 1 to 86400")
                    }
                    device.reads.append(Read(characteristic: try uuid(item["characteristic"], "\(place).read[\(index)].characteristic"), every: every))
                }
            case "write":
                for (index, item) in (member.array ?? []).enumerated() {
                    guard let hex = item["value"]?.string, let bytes = Hex.decode(hex) else {
                        throw UsageError("gateway configuration: \(place).write[\(index)].value must be hex")
                    }
                    device.writes.append(Write(characteristic: try uuid(item["characteristic"], "\(place).write[\(index)].characteristic"), value: bytes))
                }
            case "commands":
                guard let lists = member.members else {
                    throw UsageError("gateway configuration: \(place).commands must be an object ({\"write\": [UUID…], \"read\": [UUID…]})")
                }
                for (name, list) in lists {
                    guard name == "write" || name == "read" else {
                        throw UsageError("gateway configuration: unknown member \(place).commands.\(name) (write, read)")
                    }
                    guard let items = list.array else {
                        throw UsageError("gateway configuration: \(place).commands.\(name) must be an array of characteristic UUIDs")
                    }
                    for (index, item) in items.enumerated() {
                        let uuid = try uuid(item, "\(place).commands.\(name)[\(index)]")
                        if name == "write" { device.commands.write.insert(uuid) } else { device.commands.read.insert(uuid) }
                    }
                }
            default:
                throw UsageError("gateway configuration: unknown member \(place).\(key) (address, match, write, subscribe, read, commands)")
            }
        }
        guard (device.address == nil) != (device.match == nil) else {
            throw UsageError("gateway configuration: \(place) needs exactly one of address and match")
        }
        return device
    }
}

/// `gateway --mqtt URL …`: where and how the gateway publishes.
public struct GatewayMQTTOptions: Equatable, Sendable {
    public var host: String
    public var port: Int
    /// `mqtts://`: TLS (with `--tls-ca`).
    public var tls = false
    public var clientID: String?
    public var username: String?
    public var passwordFile: String?
    public var caFile: String?
    public var qos = 1
    /// Messages waiting while the broker is unreachable (`--queue`).
    public var queue = 100_000
    /// Home Assistant MQTT discovery for the SensorTag's sensors and every battery level.
    public var homeAssistant = false
    /// `--commands`: the set/read command topics write and read the characteristics the
    /// configuration lists under each device's `commands`.
    public var commands = false
    /// `--command-queue N`: commands waiting or running at most; the excess is refused.
    public var commandQueue = 64

    /// `mqtt://HOST[:PORT]` (1883) or `mqtts://HOST[:PORT]` (8883).
    public init(url: String) throws(UsageError) {
        let tls: Bool
        let rest: Substring
        if url.hasPrefix("mqtt://") {
            (tls, rest) = (false, url.dropFirst(7))
        } else if url.hasPrefix("mqtts://") {
            (tls, rest) = (true, url.dropFirst(8))
        } else {
            throw UsageError("--mqtt takes mqtt://HOST[:PORT] or mqtts://HOST[:PORT], not '\(url)'")
        }
        let hostPart = rest.hasSuffix("/") ? rest.dropLast() : rest
        var host = String(hostPart)
        var port = tls ? 8883 : 1883
        if let colon = hostPart.lastIndex(of: ":"), !hostPart.hasSuffix("]") {
            guard let number = Int(hostPart[hostPart.index(after: colon)...]), (1...65535).contains(number) else {
                throw UsageError("--mqtt: '\(hostPart[hostPart.index(after: colon)...])' is not a port (1–65535)")
            }
            port = number
            host = String(hostPart[..<colon])
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains("/") else { throw UsageError("--mqtt: no host in '\(url)'") }
        self.host = host
        self.port = port
        self.tls = tls
    }
}

/// `gateway --config FILE [--duration S]`: the managed-device engine from the shell. Every
/// configured device is kept connected (``ManagedDevice``); what they send, what is read from
/// them every N seconds, their states, and the forwarded advertisements are written as JSON Lines,
/// one `{"topic","payload"}` per message, in the MQTT topic layout:
///
/// - `PREFIX/adv/ADDRESS`: an advertising report (address, type, rssi, name, services, data…)
/// - `PREFIX/dev/ADDRESS/state`: `waiting`, `connecting`, `connected` (with `gapSeconds` after a
///   loss), `disconnected` (with its reason)
/// - `PREFIX/dev/ADDRESS/SERVICE/CHARACTERISTIC`: a value (`value` hex, `time`, `decoded`, `read`
///   for a periodic read)
///
/// Runs until Ctrl-C or `--duration`, then ends every link; exit 0.
struct GatewayCommand {
    var configuration: GatewayConfiguration
    var duration: Double?
    /// `--mqtt`: publish to a broker instead of writing lines.
    var mqtt: GatewayMQTTOptions?

    /// One message.
    static func line(topic: String, payload: [(String, JSONValue)]) -> [UInt8] {
        JSONValue.object([("topic", .string(topic)), ("payload", .object(payload))]).encoded()
    }

    /// Seconds since 1970 (the wall clock), to the microsecond.
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return (Double(spec.tv_sec) * 1e6 + Double(spec.tv_nsec / 1000)) / 1e6
    }

    func run(global: GlobalOptions, output: inout BufferedOutput) async throws {
        let adapter = try await CommandConnection.adapter(options: global, central: CommandConnection.injectedCentral)
        let prefix = configuration.prefix ?? "gattclient/\(adapter.address.address)"
        let sink: GatewaySink
        var broker: GatewayBroker?
        if let mqtt {
            do {
                let connection = try GatewayBroker(mqtt, prefix: prefix, adapter: adapter, errors: SessionDiagnostics.current?.errors ?? 2)
                broker = connection
                sink = GatewaySink(mqtt: connection.client, qos: mqtt.qos)
            } catch {
                await adapter.close()
                throw error
            }
        } else {
            sink = GatewaySink(output: output.fileDescriptor)
        }
        let engine = GatewayEngine(
            configuration: configuration, prefix: prefix, adapter: adapter, sink: sink, homeAssistant: mqtt?.homeAssistant ?? false)
        await engine.start()
        if let broker { try broker.start(engine: engine) }
        let events = CommandEvents<Never>(duration: duration)
        for await event in events.stream {
            if case .durationElapsed = event { break }
            if case .interrupted = event { break }
        }
        events.finish()
        await engine.stop()
        await adapter.close()
        sink.flush()
        if let broker { await broker.finish() }
    }
}

/// Where the gateway's messages go: one JSON line each `{"topic", "payload"}` on standard
/// output, or the broker (`--mqtt`), with the message's kind for the outbox's drop order and
/// states retained.
final class GatewaySink: Sendable {
    private let output: Mutex<BufferedOutput>?
    private let mqtt: MQTTClient?
    private let qos: Int

    init(output descriptor: Int32) {
        output = Mutex(BufferedOutput(fileDescriptor: descriptor))
        mqtt = nil
        qos = 1
    }

    init(mqtt: MQTTClient, qos: Int) {
        output = nil
        self.mqtt = mqtt
        self.qos = qos
    }

    func send(topic: String, _ payload: [(String, JSONValue)], kind: MQTTMessage.Kind = .value, retain: Bool = false) {
        if let mqtt {
            mqtt.publish(MQTTMessage(topic: topic, payload: JSONValue.object(payload).encoded(), qos: qos, retain: retain, kind: kind))
            return
        }
        let line = GatewayCommand.line(topic: topic, payload: payload)
        output?.withLock { output in
            output.writeLine(bytes: line)
            output.flush()
        }
    }

    /// A device's state: retained, so a subscriber arriving later learns it at once.
    func sendState(topic: String, _ payload: [(String, JSONValue)]) { send(topic: topic, payload, kind: .state, retain: true) }

    func flush() { output?.withLock { $0.flush() } }
}

/// The engine: managed devices from the configuration, the discovery scan for `match` entries
/// and forwarded advertisements, the periodic reads.
actor GatewayEngine {
    let configuration: GatewayConfiguration
    let prefix: String
    let adapter: Adapter
    let sink: GatewaySink
    /// Home Assistant discovery messages for the SensorTag's sensors and battery levels.
    let homeAssistant: Bool
    private var tasks: [Task<Void, Never>] = []
    /// The tasks publishing each device's events (they end with the device's stream).
    private var followers: [Task<Void, Never>] = []
    private var managedAddresses: Set<BluetoothAddress> = []
    /// Advertisers seen while `match` entries wait, their reports merged (bounded, forgotten when
    /// silent: the adapter's scan cache limits).
    private var seenDevices = ExpiringCache<BluetoothAddress, Advertisement>()
    private var adapterClock: any BluetoothClock { adapter.options.clock }
    /// The commands each managed device allows (the configuration's allow-lists), read by the
    /// broker's network thread when a command arrives.
    nonisolated let commandPolicy = GatewayCommandPolicy()

    init(configuration: GatewayConfiguration, prefix: String, adapter: Adapter, sink: GatewaySink, homeAssistant: Bool = false) {
        self.configuration = configuration
        self.prefix = prefix
        self.adapter = adapter
        self.sink = sink
        self.homeAssistant = homeAssistant
    }

    func start() async {
        for entry in configuration.devices {
            if let address = entry.address { await manage(address, entry) }
        }
        let matching = configuration.devices.filter { $0.match != nil }
        if configuration.advertisements.forward || !matching.isEmpty {
            // A name usually comes in the scan response: matching on it needs an active scan,
            // whatever `advertisements.active` says of forwarding (said once).
            let namesMatched = matching.contains { $0.match?.name != nil }
            if namesMatched, !configuration.advertisements.active {
                SessionDiagnostics.libraryMessage(
                    "warning: gateway configuration: a match on name needs scan responses: the scan is active "
                        + "for matching; advertisements.active false still keeps scan responses out of what is forwarded")
            }
            var options = ScanOptions(active: configuration.advertisements.active || namesMatched)
            options.everyReport = true
            let scan = await adapter.scan(options)
            tasks.append(
                Task { [weak self] in
                    do {
                        for try await advertisement in scan { await self?.seen(advertisement, matching) }
                    } catch {
                        self?.sink.send(topic: (self?.prefix ?? "gattclient") + "/error", [
                            ("message", .string("the scan ended: \(error)"))
                        ])
                    }
                })
        }
    }

    func stop() async {
        // The scan and the periodic reads first; then every device (its last event, `removed`,
        // is published: its follower ends with its stream).
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        tasks = []
        for device in await adapter.managedDevices { await adapter.stopManaging(device) }
        for follower in followers { await follower.value }
        followers = []
    }

    private func seen(_ advertisement: Advertisement, _ matching: [GatewayConfiguration.Device]) async {
        // `advertisements.active: false` forwards what a passive scan would give: no scan response.
        if configuration.advertisements.forwards(advertisement), configuration.advertisements.active || !advertisement.isScanResponse {
            // The fields `scan --json` gives a report (kind `report`), plus `connectable`.
            var payload: [(String, JSONValue)] = [
                ("kind", .string("report")),
                ("address", .string(advertisement.peer.address.description)),
                ("addressType", .string(advertisement.peer.type == .random ? "random" : "public")),
                ("rssi", .integer(advertisement.rssi)),
                ("connectable", .bool(advertisement.isConnectable)),
                ("time", .number(JSONNumber(GatewayCommand.now()) ?? JSONNumber(0))),
                ("data", .string(Hex.encode(advertisement.data))),
            ]
            if let identity = advertisement.identity {
                payload.append(("identity", .string(identity.address.description)))
                payload.append(("identityType", .string(identity.type == .random ? "random" : "public")))
            }
            if let txPower = advertisement.txPower { payload.append(("txPower", .integer(txPower))) }
            if let name = advertisement.name { payload.append(("name", .string(name))) }
            if !advertisement.serviceUUIDs.isEmpty {
                payload.append(("serviceUUIDs", .array(advertisement.serviceUUIDs.map { .string(jsonUUID($0)) })))
            }
            if !advertisement.serviceData.isEmpty {
                payload.append(
                    ("serviceData", .array(advertisement.serviceData.map {
                        .object([("uuid", .string(jsonUUID($0.uuid))), ("data", .string(Hex.encode($0.data)))])
                    })))
            }
            if !advertisement.manufacturerData.isEmpty {
                payload.append(
                    ("manufacturerData", .array(advertisement.manufacturerData.map {
                        .object([("companyID", .integer($0.companyID)), ("data", .string(Hex.encode($0.data)))])
                    })))
            }
            sink.send(topic: "\(prefix)/adv/\(advertisement.peer.address)", payload, kind: .advertisement)
        }
        guard !matching.isEmpty, !managedAddresses.contains(advertisement.peer.address) else { return }
        // Criteria hold on the device as `scan` shows it: its advertising and scan response
        // merged (a SensorTag lists its service in ADV_IND and its name in SCAN_RSP).
        var merged = seenDevices[advertisement.peer.address] ?? advertisement
        if merged != advertisement {
            merged.name = advertisement.name ?? merged.name
            merged.isConnectable = merged.isConnectable || advertisement.isConnectable
            merged.serviceUUIDs += advertisement.serviceUUIDs.filter { !merged.serviceUUIDs.contains($0) }
            merged.serviceData += advertisement.serviceData.filter { new in !merged.serviceData.contains { $0.uuid == new.uuid } }
            merged.manufacturerData += advertisement.manufacturerData.filter { new in
                !merged.manufacturerData.contains { $0.companyID == new.companyID }
            }
        }
        seenDevices.set(advertisement.peer.address, merged, now: adapterClock.now)
        guard merged.isConnectable, let entry = matching.first(where: { $0.match?.matches(merged) == true }) else { return }
        await manage(advertisement.peer, entry)
    }

    private func manage(_ peer: PeerAddress, _ entry: GatewayConfiguration.Device) async {
        guard managedAddresses.insert(peer.address).inserted else { return }
        commandPolicy.allow(entry.commands, for: peer.address)
        let device = await adapter.manage(peer)
        let (sink, prefix) = (sink, self.prefix)
        let base = "\(prefix)/dev/\(peer.address)"
        let events = device.events()
        // The state it had before this stream began, then every event.
        Self.publish(.state(device.state), base: base, sink: sink)
        followers.append(
            Task {
                for await event in events { Self.publish(event, base: base, sink: sink) }
            })
        if homeAssistant {
            // Discovery once the device is first connected (its database says what it has).
            tasks.append(
                Task { [weak self] in
                    for await state in device.states() where state == .connected {
                        if let peripheral = device.peripheral { await self?.announceToHomeAssistant(peripheral, name: nil) }
                        return
                    }
                })
        }
        for write in entry.writes { try? await device.write(onEveryConnection: write.value, to: write.characteristic) }
        for characteristic in entry.subscribe { try? await device.subscribe(to: characteristic) }
        for read in entry.reads {
            tasks.append(
                Task {
                    // Each time the link is (back) up: a read at once, then every `every` seconds
                    // while it stays up.
                    for await state in device.states() where state == .connected {
                        while !Task.isCancelled, device.state == .connected, let peripheral = device.peripheral {
                            if let value = try? await peripheral.read(read.characteristic) {
                                let service = (try? await peripheral.services())?.first { service in
                                    service.characteristics.contains { $0.uuid == read.characteristic }
                                }?.uuid
                                Self.publishValue(
                                    value, service: service, characteristic: read.characteristic, read: true, base: base, sink: sink)
                            }
                            try? await Task.sleep(for: .milliseconds(Int(read.every * 1000)))
                        }
                    }
                })
        }
    }

    nonisolated static func publish(_ event: ManagedDevice.Event, base: String, sink: GatewaySink) {
        let time: JSONValue = .number(JSONNumber(GatewayCommand.now()) ?? JSONNumber(0))
        switch event {
        case .state(let state):
            var payload: [(String, JSONValue)] = [("time", time)]
            switch state {
            case .waiting: payload.insert(("state", .string("waiting")), at: 0)
            case .connecting: payload.insert(("state", .string("connecting")), at: 0)
            case .connected: payload.insert(("state", .string("connected")), at: 0)
            case .disconnected(let reason):
                payload.insert(("state", .string("disconnected")), at: 0)
                payload.append(("reason", .string(ConnectionVisibility.describe(reason))))
            case .removed: payload.insert(("state", .string("removed")), at: 0)
            }
            sink.sendState(topic: base + "/state", payload)
        case .notification(let service, let characteristic, let value):
            publishValue(value.value, service: service, characteristic: characteristic, read: false, base: base, sink: sink)
        case .reconnected(let gap, let attempts, let restoredIn):
            sink.sendState(topic: base + "/state", [
                ("state", .string("reconnected")), ("gapSeconds", .number(JSONNumber(seconds(gap)) ?? JSONNumber(0))),
                ("attempts", .integer(attempts)),
                ("restoredSeconds", .number(JSONNumber(seconds(restoredIn)) ?? JSONNumber(0))), ("time", time),
            ])
        case .attemptFailed(let error, let retry):
            sink.sendState(topic: base + "/state", [
                ("state", .string("attemptFailed")), ("error", .string(error.message)),
                ("retrySeconds", .number(JSONNumber(seconds(retry)) ?? JSONNumber(0))), ("time", time),
            ])
        }
    }

    nonisolated static func publishValue(
        _ value: [UInt8], service: BluetoothUUID?, characteristic: BluetoothUUID, read: Bool, base: String, sink: GatewaySink
    ) {
        var payload: [(String, JSONValue)] = [
            ("value", .string(Hex.encode(value))), ("time", .number(JSONNumber(GatewayCommand.now()) ?? JSONNumber(0))),
        ]
        if let decoded = ValueText.decoded(value, uuid: characteristic) { payload.append(("decoded", .string(decoded))) }
        if let fields = GatewayFields.fields(value, uuid: characteristic) { payload.append(("fields", .object(fields))) }
        if read { payload.append(("read", .bool(true))) }
        sink.send(topic: base + "/" + (service.map(jsonUUID) ?? "unknown") + "/" + jsonUUID(characteristic), payload)
    }
}
