#if canImport(Glibc)
import Glibc
#endif
import BLE
import Bluetooth
import GATT
import MQTT
import SystemSupport
import Synchronization

/// `gateway --mqtt`: the broker connection. The client (``MQTTClient``) keeps what waits for the
/// broker in a bounded queue and reconnects with back-off; this says `online` on
/// `PREFIX/status` (retained) at every connection, leaves `offline` as the last will (and says it
/// itself at a clean end), subscribes the command topics and hands their messages to the engine,
/// and warns on standard error when the broker goes and when a value had to be dropped.
final class GatewayBroker: Sendable {
    let client: MQTTClient
    let prefix: String
    let endpoint: String
    private let errors: Int32
    /// `--commands`: the set/read topics are followed.
    private let commands: Bool
    private let commandQueue: Int
    private let gate = Mutex<GatewayCommandGate?>(nil)
    private let listener = Mutex<Task<Void, Never>?>(nil)
    /// The end has begun: `offline` is said, no `online` may follow it.
    private let finishing = Mutex(false)

    init(_ options: GatewayMQTTOptions, prefix: String, adapter: Adapter, errors: Int32) throws {
        self.prefix = prefix
        self.errors = errors
        commands = options.commands
        commandQueue = options.commandQueue
        endpoint = "\(options.host):\(options.port)"
        let identity = adapter.address.address.description.split(separator: ":").joined().lowercased()
        var configuration = MQTTClient.Configuration(
            host: options.host, port: options.port, clientID: options.clientID ?? "gattclient-\(identity)")
        configuration.username = options.username
        if let path = options.passwordFile {
            let bytes: [UInt8]
            do {
                bytes = try FileSystem.readFile(atPath: path)
            } catch {
                throw CommandFailure("--password-file \(path): \(error)", kind: "usage", exitCode: .usage)
            }
            // The first line, without its line end.
            configuration.password = String(decoding: bytes.prefix { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self)
        }
        if options.caFile != nil, !options.tls {
            throw CommandFailure("--tls-ca is for TLS: give --mqtt mqtts://HOST[:PORT]", kind: "usage", exitCode: .usage)
        }
        configuration.tls = options.tls
        configuration.caFile = options.caFile
        configuration.queueCapacity = options.queue
        configuration.will = MQTTMessage(topic: prefix + "/status", payload: Array("offline".utf8), qos: 1, retain: true, kind: .state)
        do {
            client = try MQTTClient(configuration)
        } catch {
            throw CommandFailure("--mqtt: \(error.message)", kind: "mqtt", exitCode: .unavailable)
        }
    }

    /// Subscribes the command topics, follows the client's events, and connects.
    func start(engine: GatewayEngine) throws {
        if commands {
            let gate = GatewayCommandGate(
                capacity: commandQueue, prefix: prefix, client: client, policy: engine.commandPolicy, errors: errors
            ) { command in
                await engine.command(command)
            }
            self.gate.withLock { $0 = gate }
            // Decided as they arrive, on the network thread: nothing waits unbounded.
            client.setMessageHandler { topic, payload, retained in gate.receive(topic: topic, payload: payload, retained: retained) }
            if !engine.configuration.devices.contains(where: { !$0.commands.isEmpty }) {
                printError(
                    "gattclient: warning: --commands: no device of the configuration lists commands (\"commands\": {\"write\": […], "
                        + "\"read\": […]}): every command will be refused", to: errors)
            }
            // QoS 0: a command sent while the gateway was away is not kept for it (it would run
            // late); a retained one is ignored.
            client.subscribe(prefix + "/dev/+/+/+/set", qos: 0)
            client.subscribe(prefix + "/dev/+/+/+/read", qos: 0)
        }
        let (client, prefix, endpoint, errors) = (client, prefix, endpoint, errors)
        let task = Task { [self] in
            // The failures said since the last connection: each distinct one once (a TLS failure
            // repeats at every attempt; the client retries with back-off by itself). Bounded: a
            // broker cannot make the gateway keep more than 64 texts.
            var told: Set<String> = []
            var droppedValues = 0
            for await event in client.events {
                switch event {
                case .connected:
                    // Under the lock: `finish` says offline under it too, so online never follows.
                    self.finishing.withLock { finished in
                        if !finished {
                            client.publish(MQTTMessage(topic: prefix + "/status", payload: Array("online".utf8), retain: true, kind: .state))
                        }
                    }
                    printError("gattclient: mqtt: connected to \(endpoint)", to: errors)
                    told = []
                case .connectionFailed(let why), .disconnected(let why):
                    guard !told.contains(why), told.count < 64 else { continue }
                    told.insert(why)
                    printError(
                        "gattclient: mqtt: \(endpoint): \(why); messages wait (queue up to \(client.configuration.queueCapacity)); "
                            + "retrying with back-off", to: errors)
                case .attempt:
                    continue
                case .message:
                    // The command gate takes every message (``MQTTClient/setMessageHandler(_:)``).
                    continue
                case .refused(let message, let why):
                    printError("gattclient: warning: mqtt: the broker client refused \(message.topic): \(why); dropped", to: errors)
                case .dropped(let message):
                    guard message.kind != .advertisement else { continue }
                    droppedValues += 1
                    printError(
                        "gattclient: warning: mqtt: the queue is full (\(client.configuration.queueCapacity)): dropped \(message.topic) "
                            + "(\(droppedValues) value\(droppedValues == 1 ? "" : "s") dropped so far)", to: errors)
                }
            }
        }
        listener.withLock { $0 = task }
        do {
            try client.start()
        } catch {
            throw CommandFailure("--mqtt: \(error.message)", kind: "mqtt", exitCode: .unavailable)
        }
    }

    /// Says `offline`, waits (at most 5 s) for the broker to take what waits, and disconnects.
    func finish() async {
        if let gate = gate.withLock({ $0 }) {
            await gate.stop()
            let refused = gate.refused
            let total = refused.notAllowed + refused.queueFull + refused.invalid
            if total > 0 {
                printError(
                    "gattclient: mqtt: \(total) commands refused: \(refused.notAllowed) not allowed, "
                        + "\(refused.queueFull) for a full queue (\(gate.capacity)), \(refused.invalid) invalid", to: errors)
            }
        }
        finishing.withLock { finished in
            finished = true
            client.publish(MQTTMessage(topic: prefix + "/status", payload: Array("offline".utf8), retain: true, kind: .state))
        }
        let delivered = await client.drain(timeout: .seconds(5))
        let statistics = client.statistics
        client.stop()
        await listener.withLock({ $0 })?.value
        if !delivered {
            printError(
                "gattclient: warning: mqtt: \(statistics.queued + statistics.inFlight) messages not delivered to \(endpoint) at the end",
                to: errors)
        }
    }
}

/// The commands each managed device allows (its configuration entry's `commands`), kept where
/// the broker's network thread can read them at once.
final class GatewayCommandPolicy: Sendable {
    private let allowed = Mutex<[BluetoothAddress: GatewayConfiguration.Commands]>([:])

    func allow(_ commands: GatewayConfiguration.Commands, for address: BluetoothAddress) {
        allowed.withLock { $0[address] = commands }
    }

    /// The device's allow-list; nil for a device the gateway does not manage.
    func commands(of address: BluetoothAddress) -> GatewayConfiguration.Commands? {
        allowed.withLock { $0[address] }
    }
}

/// `gateway --commands`: a command topic's message (`PREFIX/dev/ADDRESS/SERVICE/CHARACTERISTIC/set`,
/// a write of the payload: hex, or `{"value": "hex"}`; or `…/read`), from anyone who may
/// publish to the broker, so untrusted. Decided on the broker's network thread as it arrives:
/// a device the gateway does not manage, a characteristic its entry's `commands` does not list
/// for that request, or a full queue (`capacity` commands waiting or running, or as many
/// messages waiting for the broker: the answers must leave as fast as commands come) is refused at
/// once — answered on `…/result` at QoS 0, never queued for the broker, so a flood cannot grow
/// the gateway's memory — and counted, said on standard error at the first refusal and at each
/// tenfold of the running count. An accepted command waits in its device's queue: one command
/// at a time per device, in arrival order; its answer goes out as every value does.
final class GatewayCommandGate: Sendable {
    enum Request: String, Sendable {
        case set, read
    }

    struct Command: Sendable {
        var request: Request
        var address: BluetoothAddress
        var service: BluetoothUUID
        var characteristic: BluetoothUUID
        /// A `set`'s value, decoded and checked on arrival (empty for `read`).
        var payload: [UInt8]
    }

    /// The longest value a `set` may carry (an attribute value's maximum, Vol 3 Part F §3.2.9).
    static let maximumValue = 512

    /// Why a command was refused, for the counts.
    enum Refusal: Sendable {
        case notAllowed, queueFull, invalid
    }

    private struct State {
        var waiting: [BluetoothAddress: FIFOBuffer<Command>] = [:]
        /// Devices whose queue a task is working through.
        var running: Set<BluetoothAddress> = []
        /// Commands waiting or running.
        var pending = 0
        var refusedNotAllowed = 0
        var refusedQueueFull = 0
        var refusedInvalid = 0
        var ignoredRetained = 0
        var stopped = false
        var tasks: [BluetoothAddress: Task<Void, Never>] = [:]
    }

    let capacity: Int
    let prefix: String
    private let client: MQTTClient
    private let policy: GatewayCommandPolicy
    private let errors: Int32
    private let state = Mutex(State())
    private let execute: @Sendable (Command) async -> Void

    init(
        capacity: Int, prefix: String, client: MQTTClient, policy: GatewayCommandPolicy, errors: Int32,
        execute: @escaping @Sendable (Command) async -> Void
    ) {
        self.capacity = max(1, capacity)
        self.prefix = prefix
        self.client = client
        self.policy = policy
        self.errors = errors
        self.execute = execute
    }

    /// Commands refused so far: not allowed (unknown device, unlisted characteristic, a topic
    /// that names neither) and for a full queue.
    var refused: (notAllowed: Int, queueFull: Int, invalid: Int) {
        state.withLock { ($0.refusedNotAllowed, $0.refusedQueueFull, $0.refusedInvalid) }
    }

    /// A message on a command topic (the network thread: decides at once, never waits).
    func receive(topic: String, payload: [UInt8], retained: Bool) {
        // A retained command is an old one the broker keeps: never run it again.
        // Whoever may publish can leave any number of them at the broker: counted, said at the
        // first and each tenfold.
        if retained {
            let count = state.withLock { state -> Int in
                state.ignoredRetained += 1
                return state.ignoredRetained
            }
            if Self.isMilestone(count) {
                printError("gattclient: warning: mqtt: ignored a retained command on \(topic) (\(count) ignored so far)", to: errors)
            }
            return
        }
        guard topic.hasPrefix(prefix + "/dev/") else { return }
        let parts = topic.utf8.dropFirst(prefix.utf8.count + 5).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 4, let request = Request(rawValue: String(decoding: parts[3], as: UTF8.self)) else { return }
        let (addressText, service, characteristicText) = (
            String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self), String(decoding: parts[2], as: UTF8.self)
        )
        var base = "\(prefix)/dev/\(addressText)/\(service)/\(characteristicText)"
        guard let address = BluetoothAddress(addressText), let serviceUUID = BluetoothUUID(service),
            let characteristic = BluetoothUUID(characteristicText)
        else {
            return refuse(base, request, "the topic names no device address, service UUID and characteristic UUID", .notAllowed)
        }
        // Answers (and values) go to the canonical topic, as the gateway publishes it.
        base = "\(prefix)/dev/\(address)/\(jsonUUID(serviceUUID))/\(jsonUUID(characteristic))"
        guard let commands = policy.commands(of: address) else {
            return refuse(base, request, "\(address) is not a device of this gateway", .notAllowed)
        }
        let listed = request == .set ? commands.write : commands.read
        guard listed.contains(characteristic) else {
            let list = request == .set ? "write" : "read"
            return refuse(
                base, request, "\(jsonUUID(characteristic)) is not in the configuration's commands.\(list) for \(address): refused",
                .notAllowed)
        }
        // A set's value decoded and bounded on arrival: what waits in the queue is at most
        // `maximumValue` octets, whatever a publisher sends.
        var value: [UInt8] = []
        if request == .set {
            guard payload.count <= 4 * Self.maximumValue + 64, let decoded = GatewayEngine.commandValue(payload), !decoded.isEmpty,
                decoded.count <= Self.maximumValue
            else {
                return refuse(
                    base, request, "the payload is not 1 to \(Self.maximumValue) octets of hex (or {\"value\": \"hex\"})", .invalid)
            }
            value = decoded
        }
        let command = Command(request: request, address: address, service: serviceUUID, characteristic: characteristic, payload: value)
        enum Outcome { case queued, start, full, backlog(Int), stopped }
        // Back-pressure: the answers (and values) of accepted commands wait in the outbox at
        // QoS 1 until the broker takes them; while it is behind, no more are accepted.
        let backlog = client.backlog
        let outcome = state.withLock { state -> Outcome in
            guard !state.stopped else { return .stopped }
            guard state.pending < capacity else { return .full }
            guard backlog < capacity else { return .backlog(backlog) }
            state.pending += 1
            state.waiting[address, default: FIFOBuffer()].append(command)
            return state.running.insert(address).inserted ? .start : .queued
        }
        switch outcome {
        case .queued: return
        case .stopped: return refuse(base, request, "the gateway is ending", .notAllowed)
        case .full: return refuse(base, request, "the command queue is full (\(capacity) pending): refused", .queueFull)
        case .backlog(let waiting):
            return refuse(
                base, request, "the command queue is full (\(capacity) pending; \(waiting) messages wait for the broker): refused",
                .queueFull)
        case .start:
            // One task per device with commands waiting (never one per command): it works
            // through the device's queue in order and ends when it is empty.
            let task = Task { await self.work(address) }
            state.withLock { state in
                if state.running.contains(address) { state.tasks[address] = task }
            }
        }
    }

    private func work(_ address: BluetoothAddress) async {
        while let command = state.withLock({ state -> Command? in
            if let next = state.waiting[address]?.popFirst() { return next }
            state.waiting[address] = nil
            state.running.remove(address)
            state.tasks[address] = nil
            return nil
        }) {
            await execute(command)
            state.withLock { $0.pending -= 1 }
        }
    }

    /// Takes no more commands (refused: the gateway is ending) and waits for those accepted,
    /// each answered (the end).
    func stop() async {
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            state.stopped = true
            return Array(state.tasks.values)
        }
        for task in tasks { await task.value }
    }

    private func refuse(_ base: String, _ request: Request, _ message: String, _ refusal: Refusal) {
        let payload: [(String, JSONValue)] = [
            ("request", .string(request.rawValue)), ("time", .number(JSONNumber(GatewayCommand.now()) ?? JSONNumber(0))),
            ("ok", .bool(false)), ("error", .string(message)),
        ]
        client.publishNow(MQTTMessage(topic: base + "/result", payload: JSONValue.object(payload).encoded(), qos: 0))
        let count = state.withLock { state -> Int in
            switch refusal {
            case .notAllowed:
                state.refusedNotAllowed += 1
                return state.refusedNotAllowed
            case .queueFull:
                state.refusedQueueFull += 1
                return state.refusedQueueFull
            case .invalid:
                state.refusedInvalid += 1
                return state.refusedInvalid
            }
        }
        // The first, then each tenfold: a flood says a handful of lines, with the running count.
        guard Self.isMilestone(count) else { return }
        let kind: String
        switch refusal {
        case .queueFull: kind = "for a full queue"
        case .notAllowed: kind = "as not allowed"
        case .invalid: kind = "as invalid"
        }
        printError(
            "gattclient: warning: mqtt: command refused \(kind): \(message) (\(count) refused \(kind) so far; each answered on …/result)",
            to: errors)
    }

    static func isMilestone(_ count: Int) -> Bool {
        var power = 1
        while power < count { power *= 10 }
        return power == count
    }
}

extension GatewayEngine {
    /// Runs one accepted command against its device (never pairing: a peer that wants a secure
    /// link gets the error) and answers on `…/result`.
    func command(_ command: GatewayCommandGate.Command) async {
        let base = "\(prefix)/dev/\(command.address)/\(jsonUUID(command.service))/\(jsonUUID(command.characteristic))"
        func answer(_ fields: [(String, JSONValue)]) {
            sink.send(
                topic: base + "/result",
                [("request", .string(command.request.rawValue)), ("time", .number(JSONNumber(GatewayCommand.now()) ?? JSONNumber(0)))]
                    + fields)
        }
        func failed(_ message: String) { answer([("ok", .bool(false)), ("error", .string(message))]) }
        guard let device = await adapter.managedDevices.first(where: { $0.peer.address == command.address }) else {
            return failed("\(command.address) is not a device of this gateway")
        }
        guard device.state == .connected, let peripheral = device.peripheral else {
            return failed("\(command.address) is not connected now")
        }
        do throws(BLEError) {
            // The topic's service must hold the characteristic (never a value published under a
            // service of the publisher's choosing).
            let services = try await peripheral.services()
            guard services.contains(where: { $0.uuid == command.service && $0.characteristics.contains { $0.uuid == command.characteristic } })
            else {
                return failed("\(command.address) has no characteristic \(jsonUUID(command.characteristic)) in service \(jsonUUID(command.service))")
            }
            switch command.request {
            case .read:
                let value = try await peripheral.read(command.characteristic, raisingSecurity: false)
                Self.publishValue(
                    value, service: command.service, characteristic: command.characteristic, read: true,
                    base: "\(prefix)/dev/\(command.address)", sink: sink)
                answer([("ok", .bool(true)), ("value", .string(Hex.encode(value)))])
            case .set:
                try await peripheral.write(command.payload, to: command.characteristic, raisingSecurity: false)
                answer([("ok", .bool(true)), ("value", .string(Hex.encode(command.payload)))])
            }
        } catch {
            switch error.attError {
            case .insufficientAuthentication?, .insufficientEncryption?, .encryptionKeySizeTooShort?:
                failed("\(error.message): the gateway never pairs on a command (pair the device with gattclient pair; a bonded device is encrypted at every connection)")
            default:
                failed(error.message)
            }
        }
    }

    /// A `set` payload: hex text (spaces allowed), or a JSON object with `value` in hex.
    static func commandValue(_ payload: [UInt8]) -> [UInt8]? {
        if let document = try? JSONValue(parsing: payload), let text = document["value"]?.string { return Hex.decode(text) }
        let text = String(decoding: payload, as: UTF8.self).filter { !$0.isWhitespace }
        return Hex.decode(text)
    }
}

/// The decoded fields of a value of a known service, for its message's `fields` (Home
/// Assistant's templates read them): Battery Level, Heart Rate Measurement, Temperature
/// Measurement, Blood Pressure Measurement, Weight Measurement, the SensorTag's sensors.
enum GatewayFields {
    static func fields(_ value: [UInt8], uuid: BluetoothUUID) -> [(String, JSONValue)]? {
        func number(_ x: Double) -> JSONValue { x.isFinite ? .number(JSONNumber(x) ?? JSONNumber(0)) : .null }
        switch uuid {
        case 0x2A19:
            guard let level = try? UInt8(decoding: value), level <= 100 else { return nil }
            return [("level", .integer(Int(level)))]
        case 0x2A37:
            guard let m = try? HeartRateMeasurement(decoding: value) else { return nil }
            var fields: [(String, JSONValue)] = [("heartRate", .integer(m.heartRate))]
            if let energy = m.energyExpended { fields.append(("energyExpended", .integer(energy))) }
            if !m.rrIntervals.isEmpty { fields.append(("rrIntervals", .array(m.rrIntervals.map(number)))) }
            return fields
        case 0x2A1C, 0x2A1E:
            guard let m = try? TemperatureMeasurement(decoding: value) else { return nil }
            return [("temperature", number(m.temperature.doubleValue)), ("unit", .string(m.unit == .celsius ? "°C" : "°F"))]
        case 0x2A35, 0x2A36:
            guard let m = try? BloodPressureMeasurement(decoding: value) else { return nil }
            var fields: [(String, JSONValue)] = [
                ("systolic", number(m.systolic.doubleValue)), ("diastolic", number(m.diastolic.doubleValue)),
                ("meanArterialPressure", number(m.meanArterialPressure.doubleValue)), ("unit", .string(m.unit == .mmHg ? "mmHg" : "kPa")),
            ]
            if let pulse = m.pulseRate { fields.append(("pulseRate", number(pulse.doubleValue))) }
            return fields
        case 0x2A9D:
            guard let m = try? WeightMeasurement(decoding: value), let weight = m.weight else { return nil }
            return [("weight", number(weight)), ("unit", .string(m.units == .si ? "kg" : "lb"))]
        default:
            guard let sensor = SensorTag.sensor(data: uuid), let reading = SensorTag.decode(sensor, value) else { return nil }
            switch reading {
            case .ir(let object, let ambient): return [("objectC", number(object)), ("ambientC", number(ambient))]
            case .humidity(let temperature, let humidity):
                return [("temperatureC", number(temperature)), ("humidityPercent", number(humidity))]
            case .barometer(let temperature, let pressure): return [("temperatureC", number(temperature)), ("pressureHPa", number(pressure))]
            case .optical(let lux): return [("lux", number(lux))]
            case .movement(let gyro, let accel, let mag):
                func vector(_ v: SensorTag.Reading.Vector) -> JSONValue {
                    .object([("x", number(v.x)), ("y", number(v.y)), ("z", number(v.z))])
                }
                return [("gyroDps", vector(gyro)), ("accelG", vector(accel)), ("magMicroT", vector(mag))]
            case .keys(let user, let power, let reed): return [("user", .bool(user)), ("power", .bool(power)), ("reed", .bool(reed))]
            case .battery(let percent): return [("level", .integer(percent))]
            }
        }
    }

    /// Home Assistant sensors for the values a device has: (key, name, field, unit, device class).
    static let homeAssistantSensors: [BluetoothUUID: [(key: String, name: String, field: String, unit: String, deviceClass: String?)]] = [
        0x2A19: [("battery", "Battery", "level", "%", "battery")],
        SensorTag.Sensor.ir.data: [
            ("ir_object", "IR object temperature", "objectC", "°C", "temperature"),
            ("ir_ambient", "Ambient temperature", "ambientC", "°C", "temperature"),
        ],
        SensorTag.Sensor.humidity.data: [
            ("humidity", "Humidity", "humidityPercent", "%", "humidity"),
            ("humidity_temperature", "Temperature", "temperatureC", "°C", "temperature"),
        ],
        SensorTag.Sensor.barometer.data: [
            ("pressure", "Pressure", "pressureHPa", "hPa", "pressure"),
            ("barometer_temperature", "Barometer temperature", "temperatureC", "°C", "temperature"),
        ],
        SensorTag.Sensor.optical.data: [("light", "Light", "lux", "lx", "illuminance")],
    ]
}

extension GatewayEngine {
    /// Home Assistant MQTT discovery (retained, `homeassistant/sensor/ID/config`) for every
    /// battery level and SensorTag sensor `peripheral` has, pointing at the value topics.
    func announceToHomeAssistant(_ peripheral: Peripheral, name: String?) async {
        guard let services = try? await peripheral.services() else { return }
        let address = peripheral.peer.address
        let identity = "gattclient_" + address.description.split(separator: ":").joined().lowercased()
        for service in services {
            for characteristic in service.characteristics {
                for sensor in GatewayFields.homeAssistantSensors[characteristic.uuid] ?? [] {
                    var payload: [(String, JSONValue)] = [
                        ("name", .string(sensor.name)),
                        ("unique_id", .string("\(identity)_\(sensor.key)")),
                        ("state_topic", .string("\(prefix)/dev/\(address)/\(jsonUUID(service.uuid))/\(jsonUUID(characteristic.uuid))")),
                        ("value_template", .string("{{ value_json.fields.\(sensor.field) }}")),
                        ("unit_of_measurement", .string(sensor.unit)),
                        ("availability_topic", .string(prefix + "/status")),
                        ("device", .object([("identifiers", .array([.string(identity)])), ("name", .string(name ?? address.description))])),
                    ]
                    if let deviceClass = sensor.deviceClass { payload.append(("device_class", .string(deviceClass))) }
                    payload.append(("state_class", .string("measurement")))
                    sink.send(topic: "homeassistant/sensor/\(identity)_\(sensor.key)/config", payload, kind: .state, retain: true)
                }
            }
        }
    }
}
