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
    private let listener = Mutex<Task<Void, Never>?>(nil)
    /// The end has begun: `offline` is said, no `online` may follow it.
    private let finishing = Mutex(false)

    init(_ options: GatewayMQTTOptions, prefix: String, adapter: Adapter, errors: Int32) throws {
        self.prefix = prefix
        self.errors = errors
        commands = options.commands
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
            // QoS 0: a command sent while the gateway was away is not kept for it (it would run
            // late); a retained one is ignored below.
            client.subscribe(prefix + "/dev/+/+/+/set", qos: 0)
            client.subscribe(prefix + "/dev/+/+/+/read", qos: 0)
        }
        let (client, prefix, endpoint, errors) = (client, prefix, endpoint, errors)
        let task = Task { [self] in
            var lastProblem: String?
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
                    lastProblem = nil
                case .connectionFailed(let why), .disconnected(let why):
                    // Once per problem: the client retries with back-off by itself.
                    if lastProblem != why {
                        printError("gattclient: mqtt: \(endpoint): \(why); messages wait (queue up to \(client.configuration.queueCapacity))", to: errors)
                        lastProblem = why
                    }
                case .message(let topic, let payload, let retained):
                    // A retained command is an old one the broker keeps: never run it again.
                    guard !retained else {
                        printError("gattclient: warning: mqtt: ignored a retained command on \(topic)", to: errors)
                        continue
                    }
                    // In a task of its own: a slow device does not hold up the broker's events.
                    Task { await engine.command(topic: topic, payload: payload) }
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

extension GatewayEngine {
    /// A command topic's message: `PREFIX/dev/ADDRESS/SERVICE/CHARACTERISTIC/set` (a write of
    /// the payload: hex, or `{"value": "hex"}`) or `…/read`; answered on `…/result`.
    func command(topic: String, payload: [UInt8]) async {
        guard topic.hasPrefix(prefix + "/dev/") else { return }
        let parts = topic.dropFirst(prefix.count + 5).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, parts[3] == "set" || parts[3] == "read" else { return }
        let base = "\(prefix)/dev/\(parts[0])/\(parts[1])/\(parts[2])"
        let request = parts[3]
        func answer(_ fields: [(String, JSONValue)]) {
            sink.send(
                topic: base + "/result",
                [("request", .string(request)), ("time", .number(JSONNumber(GatewayCommand.now()) ?? JSONNumber(0)))] + fields)
        }
        func failed(_ message: String) { answer([("ok", .bool(false)), ("error", .string(message))]) }
        guard let address = BluetoothAddress(parts[0]), let characteristic = BluetoothUUID(parts[2]) else {
            return failed("the topic names no device address and characteristic UUID")
        }
        guard let device = await adapter.managedDevices.first(where: { $0.peer.address == address }) else {
            return failed("\(address) is not a device of this gateway")
        }
        guard device.state == .connected, let peripheral = device.peripheral else {
            return failed("\(address) is not connected now")
        }
        do throws(BLEError) {
            if request == "read" {
                let value = try await peripheral.read(characteristic)
                Self.publishValue(value, service: BluetoothUUID(parts[1]), characteristic: characteristic, read: true, base: "\(prefix)/dev/\(address)", sink: sink)
                answer([("ok", .bool(true)), ("value", .string(Hex.encode(value)))])
            } else {
                guard let value = Self.commandValue(payload) else {
                    return failed("the payload is not hex (or {\"value\": \"hex\"})")
                }
                try await peripheral.write(value, to: characteristic)
                answer([("ok", .bool(true)), ("value", .string(Hex.encode(value)))])
            }
        } catch {
            failed(error.message)
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
