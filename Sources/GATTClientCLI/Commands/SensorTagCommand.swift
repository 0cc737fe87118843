#if canImport(Glibc)
import BLE
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ATT
import Bluetooth
import GATT
import SystemSupport

/// `sensortag ADDR [--sensors LIST] [--period MS] [--count N] [--csv FILE]`: switches the chosen
/// sensors on at the period, subscribes, prints one decoded reading per line (or JSON Lines), and
/// switches them off again on the way out (count, duration, Ctrl-C or disconnect).
struct SensorTagCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    var sensors: [SensorTag.Sensor] = [.ir, .humidity, .barometer, .optical, .movement, .keys, .battery]
    /// Period in milliseconds (10 ms units on the wire), for the sensors that have one.
    var periodMilliseconds: Int?
    var count: Int?
    var duration: Double?
    var csvPath: String?
    var accelerometerRange: SensorTag.AccelerometerRange = .g8
    /// Tests: awaited with the number of readings printed so far, after each.
    var printed: (@Sendable (Int) async -> Void)? = nil

    struct Reading: Sendable {
        var sensor: SensorTag.Sensor
        var value: SensorTag.Reading
    }

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        if let periodMilliseconds {
            for sensor in sensors where sensor.period != nil {
                let minimum = Int(sensor.minimumPeriod) * 10
                guard periodMilliseconds >= minimum, periodMilliseconds <= 2550 else {
                    throw CommandFailure(
                        "--period \(periodMilliseconds) ms: the \(sensor.rawValue) sensor takes \(minimum)–2550 ms", kind: "usage",
                        exitCode: .usage)
                }
            }
        }
        // --csv: the header now, one line per field of each reading as it comes.
        var csv: (descriptor: Int32, path: String)?
        if let csvPath {
            do {
                csv = (try FileSystem.createFile(atPath: csvPath, contents: Array("time,sensor,field,value\n".utf8)), csvPath)
            } catch {
                throw CommandFailure("--csv: cannot create the file: \(error)", kind: "csv")
            }
        }
        defer { if let csv { _ = close(csv.descriptor) } }

        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        // The library's SensorTag model on this link, bound to the database discovered as before
        // with nothing read or subscribed: the command turns on only the sensors chosen (the
        // traffic recorded sessions replay).
        var started: [SensorTag.Sensor] = []
        var subscribed: [SensorTag.Sensor] = []
        let events = CommandEvents<Reading>(duration: duration)
        var failure: (any Error)?
        var tag: CC2650SensorTag?
        do {
            let database = try await session.client.loadDatabase(findIncludes: false)
            var bindOptions = ModelBindOptions()
            bindOptions.services = database.services
            bindOptions.reads = false
            bindOptions.subscribes = false
            bindOptions.requiresServices = false
            let bound = try await session.adapter.bind(CC2650SensorTag.self, to: session.peripheral, options: bindOptions)
            tag = bound
            for sensor in sensors {
                try await start(sensor, on: bound, events: events, started: &started)
                subscribed.append(sensor)
            }
        } catch {
            failure = error
        }

        let clock = ContinuousClock()
        let start = clock.now
        var received = 0
        if failure == nil {
            loop: for await event in events.stream {
                switch event {
                case .value(let reading):
                    let decoded = reading.value
                    received += 1
                    let elapsed = clock.now - start
                    let seconds = seconds(elapsed)
                    let fields = Self.fields(decoded)
                    if options.json {
                        var json = JSONWriter()
                        json.beginObject()
                        json.field("kind", "reading")
                        json.field("sensor", reading.sensor.rawValue)
                        json.field("time", (seconds * 1_000_000).rounded() / 1_000_000)
                        Self.write(decoded, into: &json)
                        json.endObject()
                        output.writeLine(bytes: json.bytes)
                    } else {
                        output.writeLine(format6(seconds) + "  " + reading.sensor.rawValue.padding(toLength: 10) + decoded.description)
                    }
                    output.flush()
                    if let csv {
                        let rows = fields.map { "\(format6(seconds)),\(reading.sensor.rawValue),\($0.0),\($0.1)\n" }.joined()
                        do {
                            try FileSystem.append(Array(rows.utf8), to: csv.descriptor, path: csv.path)
                        } catch {
                            failure = CommandFailure("--csv: \(error)", kind: "csv")
                            break loop
                        }
                    }
                    await printed?(received)
                    if let count, received >= count { break loop }
                case .ended(let error):
                    // The typed values end with the link: a peer's disconnect is a failure.
                    let state = await session.peripheral.state
                    failure = error ?? Self.linkEnded(state)
                    break loop
                case .durationElapsed, .interrupted:
                    break loop
                }
            }
        }
        events.finish()
        // Switch the sensors off again (the firmware would only on disconnect), then their
        // notifications.
        if let tag {
            for sensor in started { try? await switchOff(sensor, on: tag) }
            for sensor in subscribed { try? await notifications(of: sensor, on: tag).disable() }
        }
        await session.close()
        if let failure { throw CommandFailure.from(failure, doing: "sensortag \(peer)") }
    }

    /// Why the values ended when their stream finished: the link's end (nil while it is up).
    static func linkEnded(_ state: PeripheralState) -> BLEError? {
        guard case .disconnected(let reason) = state else { return nil }
        return BLEError(ConnectionVisibility.describe(reason), kind: "disconnected")
    }

    /// A sensor's data notifications, typed as readings, and their switch.
    private struct Notifications {
        var values: @Sendable () -> AsyncStream<SensorTag.Reading>
        var isPresent: Bool
        var enable: @Sendable () async throws(BLEError) -> Void
        var disable: @Sendable () async throws(BLEError) -> Void
    }

    private func notifications(of sensor: SensorTag.Sensor, on tag: CC2650SensorTag) -> Notifications {
        let range = accelerometerRange
        func typed<V: ByteDecodable>(
            _ access: CharacteristicAccess<V>, _ reading: @escaping @Sendable (V) -> SensorTag.Reading?
        ) -> Notifications {
            Notifications(
                values: {
                    let (stream, continuation) = AsyncStream.makeStream(of: SensorTag.Reading.self)
                    let values = access.values()
                    let pump = Task {
                        for await value in values {
                            if let converted = reading(value) { continuation.yield(converted) }
                        }
                        continuation.finish()
                    }
                    continuation.onTermination = { _ in pump.cancel() }
                    return stream
                }, isPresent: access.isPresent,
                enable: { () async throws(BLEError) in try await access.enableNotifications() },
                disable: { () async throws(BLEError) in try await access.enableNotifications(false) })
        }
        switch sensor {
        case .ir: return typed(tag.ir.$data) { $0.reading }
        case .humidity: return typed(tag.humidity.$data) { $0.reading }
        case .barometer: return typed(tag.barometer.$data) { $0.reading }
        case .optical: return typed(tag.optical.$data) { $0.reading }
        case .movement: return typed(tag.movement.$data) { $0.reading(accelerometerRange: range) }
        case .keys: return typed(tag.keys.$keys) { $0.reading }
        // A level above 100 % is not a reading (the decoder's check).
        case .battery: return typed(tag.battery.$level) { SensorTag.decode(.battery, [$0]) }
        }
    }

    /// The period (when asked and present), the switch (when present), then the data's
    /// notifications, forwarded typed.
    private func start(
        _ sensor: SensorTag.Sensor, on tag: CC2650SensorTag, events: CommandEvents<Reading>, started: inout [SensorTag.Sensor]
    ) async throws {
        let data = notifications(of: sensor, on: tag)
        guard data.isPresent else {
            throw CommandFailure(
                "\(peer) has no \(sensor.rawValue) data characteristic (\(sensor.data)): not a CC2650 SensorTag?", kind: "notFound")
        }
        // The --period was checked against every chosen sensor (10 ms units on the wire).
        if let milliseconds = periodMilliseconds {
            let period = SensorTag.Period(rawValue: UInt8(milliseconds / 10))
            switch sensor {
            case .ir where tag.ir.$period.isPresent: try await tag.ir.$period.write(period)
            case .humidity where tag.humidity.$period.isPresent: try await tag.humidity.$period.write(period)
            case .barometer where tag.barometer.$period.isPresent: try await tag.barometer.$period.write(period)
            case .optical where tag.optical.$period.isPresent: try await tag.optical.$period.write(period)
            case .movement where tag.movement.$period.isPresent: try await tag.movement.$period.write(period)
            default: break
            }
        }
        if try await switchOn(sensor, on: tag) { started.append(sensor) }
        events.forward(data.values().map { Reading(sensor: sensor, value: $0) })
        try await data.enable()
    }

    /// Writes the sensor's switch where it has one; true when it did.
    private func switchOn(_ sensor: SensorTag.Sensor, on tag: CC2650SensorTag) async throws -> Bool {
        switch sensor {
        case .ir where tag.ir.$enabled.isPresent: try await tag.ir.switchSensor(on: true)
        case .humidity where tag.humidity.$enabled.isPresent: try await tag.humidity.switchSensor(on: true)
        case .barometer where tag.barometer.$enabled.isPresent: try await tag.barometer.switchSensor(on: true)
        case .optical where tag.optical.$enabled.isPresent: try await tag.optical.switchSensor(on: true)
        case .movement where tag.movement.$configuration.isPresent:
            try await tag.movement.$configuration.write(.allAxes(range: accelerometerRange))
        default: return false
        }
        return true
    }

    private func switchOff(_ sensor: SensorTag.Sensor, on tag: CC2650SensorTag) async throws {
        switch sensor {
        case .ir: try await tag.ir.switchSensor(on: false)
        case .humidity: try await tag.humidity.switchSensor(on: false)
        case .barometer: try await tag.barometer.switchSensor(on: false)
        case .optical: try await tag.optical.switchSensor(on: false)
        case .movement: try await tag.movement.switchSensor(on: false)
        case .keys, .battery: break
        }
    }

    /// DESIGN.md's JSON fields of a reading.
    static func write(_ reading: SensorTag.Reading, into json: inout JSONWriter) {
        func vector(_ key: String, _ v: SensorTag.Reading.Vector) {
            json.beginObject(JSONKey(key))
            json.field("x", v.x)
            json.field("y", v.y)
            json.field("z", v.z)
            json.endObject()
        }
        switch reading {
        case .ir(let object, let ambient):
            json.field("objectC", object)
            json.field("ambientC", ambient)
        case .humidity(let temperature, let humidity):
            json.field("temperatureC", temperature)
            json.field("humidityPercent", humidity)
        case .barometer(let temperature, let pressure):
            json.field("temperatureC", temperature)
            json.field("pressureHPa", pressure)
        case .optical(let lux):
            json.field("lux", lux)
        case .movement(let gyro, let accel, let mag):
            vector("gyroDps", gyro)
            vector("accelG", accel)
            vector("magMicroT", mag)
        case .keys(let user, let power, let reed):
            json.field("user", user)
            json.field("power", power)
            json.field("reed", reed)
        case .battery(let percent):
            json.field("percent", percent)
        }
    }

    /// Flat (field, value) pairs for the CSV file.
    static func fields(_ reading: SensorTag.Reading) -> [(String, String)] {
        switch reading {
        case .ir(let object, let ambient): return [("objectC", "\(object)"), ("ambientC", "\(ambient)")]
        case .humidity(let t, let h): return [("temperatureC", "\(t)"), ("humidityPercent", "\(h)")]
        case .barometer(let t, let p): return [("temperatureC", "\(t)"), ("pressureHPa", "\(p)")]
        case .optical(let lux): return [("lux", "\(lux)")]
        case .movement(let g, let a, let m):
            return [("gyroX", "\(g.x)"), ("gyroY", "\(g.y)"), ("gyroZ", "\(g.z)"), ("accelX", "\(a.x)"), ("accelY", "\(a.y)"),
                    ("accelZ", "\(a.z)"), ("magX", "\(m.x)"), ("magY", "\(m.y)"), ("magZ", "\(m.z)")]
        case .keys(let user, let power, let reed): return [("user", "\(user)"), ("power", "\(power)"), ("reed", "\(reed)")]
        case .battery(let percent): return [("percent", "\(percent)")]
        }
    }
}
