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
        // The library's SensorTag model on this link: typed sensors, TI's conversions.
        var started: [SensorTag.Sensor] = []
        let events = CommandEvents<Reading>(duration: duration)
        var failure: (any Error)?
        var tag: CC2650SensorTag?
        do {
            let bound = try await Self.bind(session)
            tag = bound
            for sensor in sensors {
                try await start(sensor, on: bound, events: events)
                started.append(sensor)
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
                    if let count, received >= count { break loop }
                case .ended(let error):
                    failure = error
                    break loop
                case .durationElapsed, .interrupted:
                    break loop
                }
            }
        }
        events.finish()
        // Switch the sensors off again (the firmware would only on disconnect).
        if let tag {
            for sensor in started { try? await stop(sensor, on: tag) }
        }
        await session.close()
        if let failure { throw CommandFailure.from(failure, doing: "sensortag \(peer)") }
    }

    /// The model on the command's link; a missing sensor service says what the device is not.
    private static func bind(_ session: CommandConnection) async throws -> CC2650SensorTag {
        let result: Result<CC2650SensorTag, BLEError> = await {
            do throws(BLEError) {
                return .success(try await session.adapter.bind(CC2650SensorTag.self, to: session.peripheral))
            } catch {
                return .failure(error)
            }
        }()
        switch result {
        case .success(let tag): return tag
        case .failure(let error) where error.kind == "notFound":
            throw CommandFailure("\(error.message): not a CC2650 SensorTag?", kind: "notFound", exitCode: .unavailable)
        case .failure(let error): throw error
        }
    }

    /// The period (when asked), the switch, then the data's notifications, forwarded typed.
    private func start(_ sensor: SensorTag.Sensor, on tag: CC2650SensorTag, events: CommandEvents<Reading>) async throws {
        // The --period was checked against every chosen sensor (10 ms units on the wire).
        let period = periodMilliseconds.map { SensorTag.Period(rawValue: UInt8($0 / 10)) }
        func begin<S: SensorTagSensorService>(_ service: S, reading: @escaping @Sendable (S.Reading) -> SensorTag.Reading) async throws {
            events.forward(service.dataAccess.values().map { Reading(sensor: sensor, value: reading($0)) })
            if let period { try await service.periodAccess.write(period) }
            try await service.switchSensor(on: true)
            try await service.dataAccess.enableNotifications()
        }
        switch sensor {
        case .ir: try await begin(tag.ir) { $0.reading }
        case .humidity: try await begin(tag.humidity) { $0.reading }
        case .barometer: try await begin(tag.barometer) { $0.reading }
        case .optical: try await begin(tag.optical) { $0.reading }
        case .movement:
            let range = accelerometerRange
            events.forward(tag.movement.$data.values().map { Reading(sensor: sensor, value: $0.reading(accelerometerRange: range)) })
            if let period { try await tag.movement.$period.write(period) }
            try await tag.movement.$configuration.write(.allAxes(range: range))
            try await tag.movement.$data.enableNotifications()
        case .keys:
            events.forward(tag.keys.$keys.values().map { Reading(sensor: sensor, value: $0.reading) })
        case .battery:
            guard tag.battery.$level.isPresent else {
                throw CommandFailure(
                    "\(peer) has no battery level (\(sensor.data)): not a CC2650 SensorTag?", kind: "notFound", exitCode: .unavailable)
            }
            events.forward(tag.battery.$level.values().compactMap { level -> Reading? in
                guard let reading = SensorTag.decode(.battery, [level]) else { return nil }
                return Reading(sensor: sensor, value: reading)
            })
        }
    }

    /// The switch off, the notifications off (keys and battery stay as the model keeps them).
    private func stop(_ sensor: SensorTag.Sensor, on tag: CC2650SensorTag) async throws {
        switch sensor {
        case .ir: try await tag.ir.stop()
        case .humidity: try await tag.humidity.stop()
        case .barometer: try await tag.barometer.stop()
        case .optical: try await tag.optical.stop()
        case .movement: try await tag.movement.stop()
        case .keys, .battery: break
        }
    }

    /// DESIGN.md's JSON fields of a reading.
    static func write(_ reading: SensorTag.Reading, into json: inout JSONWriter) {
        func vector(_ key: String, _ v: SensorTag.Reading.Vector) {
            json.beginObject(key)
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
