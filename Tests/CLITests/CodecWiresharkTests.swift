import BLE
import Bluetooth
import Emulator
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import GATTClientCLI

/// Issue 22: the standard models' codecs cross-checked by Wireshark. Our models talk to the
/// emulated servers (the heart-rate monitor, the thermometer, the SensorTag's Device
/// Information, and a health station our own LocalPeripheral serves: Blood Pressure, Weight
/// Scale, Current Time, with values our encoders made) while the central adapter records HCI;
/// then each value the recording carries (read responses, notifications, indications, as our
/// `dump` finds them with their characteristic) is decoded by our codec and by tshark's `btatt`
/// dissector, field by field. Skipped (said) where tshark is not installed.
@Suite(
    "Codecs against Wireshark: tshark's btatt decoding of a recording of the emulated servers",
    .enabled(if: Wireshark.tshark != nil, "needs tshark (apt install tshark)"), .serialized)
struct CodecWiresharkTests {

    struct HealthStation: BluetoothDevice {
        @Service var bloodPressure = BloodPressureService()
        @Service var weight = WeightScaleService()
        @Service var time = CurrentTimeService()
        @Service var access = GenericAccessService()
        init() {}
    }

    struct Monitor: BluetoothDevice {
        @Service var heartRate = HeartRateService()
        @Service var battery = BatteryService()
        init() {}
    }

    struct Thermometer: BluetoothDevice {
        @Service var thermometer = HealthThermometerService()
        init() {}
    }

    /// The thermometer's user types the passkey it shows (its display: the simulation's log).
    final class Typist: PairingDelegate {
        let shown: AsyncStream<UInt32>
        init(_ shown: AsyncStream<UInt32>) { self.shown = shown }
        func displayPasskey(_ passkey: UInt32, for peer: PeerAddress) async {}
        func enterPasskey(for peer: PeerAddress) async throws -> UInt32 {
            for await passkey in shown { return passkey }
            throw BLEError("the thermometer showed no passkey", kind: "test")
        }
        func confirm(_ number: UInt32, for peer: PeerAddress) async -> Bool { false }
    }

    static let time = DateTime(year: 2026, month: 12, day: 2, hours: 16, minutes: 5, seconds: 9)
    static let pressures: [BloodPressureMeasurement] = [
        BloodPressureMeasurement(
            systolic: MedFloat16(mantissa: 120, exponent: 0)!, diastolic: MedFloat16(mantissa: 80, exponent: 0)!,
            meanArterialPressure: MedFloat16(mantissa: 93, exponent: 0)!),
        BloodPressureMeasurement(
            systolic: MedFloat16(mantissa: 160, exponent: -1)!, diastolic: MedFloat16(mantissa: 107, exponent: -1)!,
            meanArterialPressure: MedFloat16(mantissa: 125, exponent: -1)!, unit: .kPa, timestamp: time,
            pulseRate: MedFloat16(mantissa: 72, exponent: 0)!, userID: 3, status: [.bodyMovement]),
    ]
    static let weights: [WeightMeasurement] = [
        WeightMeasurement(rawWeight: 14500),
        WeightMeasurement(rawWeight: 15984, units: .imperial, timestamp: time, userID: 2, rawBMI: 234, rawHeight: 693),
        WeightMeasurement(rawWeight: 14200, timestamp: time, rawBMI: 229, rawHeight: 1760),
    ]
    static let currentTime = CurrentTime(dateTime: time, dayOfWeek: 3, fractions256: 64, adjustReason: [.manualTimeUpdate, .daylightSavingChange])

    static let stationServices: [ServiceDefinition] = [
        ServiceDefinition(uuid: 0x1810, characteristics: [
            CharacteristicDefinition(uuid: 0x2A35, properties: [.indicate], value: []),
            CharacteristicDefinition(
                uuid: 0x2A49, properties: [.read], value: BloodPressureFeature([.bodyMovementDetection, .irregularPulseDetection]).encoded()),
        ]),
        ServiceDefinition(uuid: 0x181D, characteristics: [
            CharacteristicDefinition(uuid: 0x2A9E, properties: [.read], value: WeightScaleFeature(rawValue: 0x0000_01BF).encoded()),
            CharacteristicDefinition(uuid: 0x2A9D, properties: [.indicate], value: []),
        ]),
        ServiceDefinition(uuid: 0x1805, characteristics: [
            CharacteristicDefinition(uuid: 0x2A2B, properties: [.read, .notify], value: currentTime.encoded()),
            CharacteristicDefinition(uuid: 0x2A0F, properties: [.read], value: LocalTimeInformation(timeZone: 4, dstOffset: 4).encoded()),
            CharacteristicDefinition(
                uuid: 0x2A14, properties: [.read],
                value: ReferenceTimeInformation(source: 1, accuracy: 8, daysSinceUpdate: 0, hoursSinceUpdate: 3).encoded()),
        ]),
    ]

    static func take<T: Sendable>(_ count: Int, from stream: AsyncStream<T>) async -> [T] {
        var taken: [T] = []
        var iterator = stream.makeAsyncIterator()
        while taken.count < count, let value = await iterator.next() { taken.append(value) }
        return taken
    }

    /// Records our models' sessions with every emulated server, one file per server (each
    /// connection alone in its capture, as tshark tracks one database per capture); returns the
    /// files.
    static func record() async throws -> [String] {
        let stem = NSTemporaryDirectory() + "codec-crosscheck-\(UInt64.random(in: 0...UInt64.max))"
        let paths = ["station", "monitor", "thermometer", "sensortag"].map { "\(stem)-\($0).btsnoop" }
        let bonds = paths.indices.map { "\(stem)-bonds-\($0)" }
        // The bonds are of no use after the recording; the captures are the caller's once returned.
        var returned = false
        defer {
            bonds.forEach(removeTree)
            if !returned { paths.forEach(removeTree) }
        }
        try await withTimeout(90, "recording the models' sessions") {
            let (shown, display) = AsyncStream.makeStream(of: UInt32.self)
            let simulation = try await Simulation.start(devices: [.heartrate, .thermometer, .sensortag]) { line in
                // `… shows passkey 123456`
                if let range = line.range(of: "passkey "), let passkey = UInt32(line[range.upperBound...].prefix(6)) {
                    display.yield(passkey)
                }
            }
            let server = try await Adapter.simulated(simulation)
            let station = try await server.advertise(name: "health station", services: Self.stationServices)
            func client(_ index: Int) async throws -> Adapter {
                var options = AdapterOptions()
                options.record = paths[index]
                options.bondsDirectory = bonds[index]
                return try await Adapter.simulated(simulation, options: options)
            }

            let first = try await client(0)
            let health = try await first.connect(to: server.address, as: HealthStation.self)
            #expect(health.time.currentTime == Self.currentTime)
            let pressures = health.bloodPressure.$measurement.values()
            for value in Self.pressures { try await station.notify(value.encoded(), for: 0x2A35) }
            #expect(await Self.take(Self.pressures.count, from: pressures) == Self.pressures)
            let weights = health.weight.$measurement.values()
            for value in Self.weights { try await station.notify(value.encoded(), for: 0x2A9D) }
            #expect(await Self.take(Self.weights.count, from: weights) == Self.weights)
            await first.close()

            let second = try await client(1)
            let monitor = try await second.connect(
                to: PeerAddress(address: EmulatedHeartRateMonitor.defaultAddress, type: .random), as: Monitor.self)
            #expect(await Self.take(6, from: monitor.heartRate.$measurement.values()).count == 6)
            await second.close()

            let third = try await client(2)
            await third.setPairingDelegate(Typist(shown))
            let thermometer = try await third.connect(
                to: PeerAddress(address: EmulatedThermometer.defaultAddress, type: .random), as: Thermometer.self)
            #expect(thermometer.thermometer.temperatureType == .body)
            await third.close()

            let fourth = try await client(3)
            let tag = try await fourth.connect(
                to: PeerAddress(address: EmulatedSensorTag.defaultAddress, type: .public), as: CC2650SensorTag.self)
            #expect(tag.deviceInformation.pnpID != nil)
            await fourth.close()
            await server.close()
            await simulation.stop()
        }
        returned = true
        return paths
    }

    /// tshark's fields for each ATT frame: frame number → field → values (in order).
    static func wireshark(_ path: String, fields: [String]) async throws -> [Int: [String: [String]]] {
        let tshark = try #require(Wireshark.tshark)
        let arguments =
            [tshark, "-r", path, "-Y", "btatt", "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=;",
             "-e", "frame.number"] + fields.flatMap { ["-e", $0] }
        let run = try await ChildProcess.run(arguments, timeout: 120)
        #expect(run.code == 0)
        var rows: [Int: [String: [String]]] = [:]
        for line in String(decoding: run.output, as: UTF8.self).split(separator: "\n") {
            let columns = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard columns.count == fields.count + 1, let frame = Int(columns[0]) else { continue }
            var row: [String: [String]] = [:]
            for (field, column) in zip(fields, columns.dropFirst()) where !column.isEmpty {
                row[field] = column.split(separator: ";").map(String.init)
            }
            rows[frame] = row
        }
        return rows
    }

    /// Each frame's `<field>_raw` octets (hex) from tshark's JSON view of the frames `filter`
    /// selects: frame number → field → hex.
    static func wiresharkRaw(_ path: String, filter: String) async throws -> [Int: [String: String]] {
        let tshark = try #require(Wireshark.tshark)
        let run = try await ChildProcess.run([tshark, "-r", path, "-Y", filter, "-T", "json", "-x"], timeout: 120)
        #expect(run.code == 0)
        let packets = try #require(try JSONSerialization.jsonObject(with: Data(run.output)) as? [[String: Any]])
        var result: [Int: [String: String]] = [:]
        for packet in packets {
            let layers = (packet["_source"] as? [String: Any])?["layers"] as? [String: Any] ?? [:]
            guard let frame = ((layers["frame"] as? [String: Any])?["frame.number"] as? String).flatMap(Int.init) else { continue }
            var raws: [String: String] = [:]
            func walk(_ node: Any) {
                if let object = node as? [String: Any] {
                    for (key, value) in object {
                        if key.hasSuffix("_raw"), let array = value as? [Any], let hex = array.first as? String { raws[key] = hex }
                        walk(value)
                    }
                } else if let array = node as? [Any] {
                    for element in array { walk(element) }
                }
            }
            walk(layers)
            result[frame] = raws
        }
        return result
    }

    /// An integer as tshark prints it (decimal, or 0x… for hexadecimal fields).
    static func integer(_ text: String?) -> Int? {
        guard let text else { return nil }
        return text.hasPrefix("0x") ? Int(text.dropFirst(2), radix: 16) : Int(text)
    }

    /// What tshark must show for `value` of characteristic `uuid`, decoded by our codec: field →
    /// values (integers as numbers, floats as doubles); nil for a type this check leaves out.
    static func expectations(_ uuid: String, _ value: [UInt8]) throws -> [String: [Double]]? {
        func d(_ x: some BinaryInteger) -> Double { Double(x) }
        func date(_ prefix: String, _ t: DateTime) -> [String: [Double]] {
            ["btatt.year": [d(t.year)], "btatt.month": [d(t.month)], "btatt.day": [d(t.day)], "btatt.hours": [d(t.hours)],
             "btatt.minutes": [d(t.minutes)], "btatt.seconds": [d(t.seconds)]]
        }
        switch uuid {
        case "2A37":
            let m = try HeartRateMeasurement(decoding: value)
            var fields: [String: [Double]] = [
                m.sixteenBitValue ? "btatt.heart_rate_measurement.value.16" : "btatt.heart_rate_measurement.value.8": [d(m.heartRate)]
            ]
            if let energy = m.energyExpended { fields["btatt.heart_rate_measurement.energy_expended"] = [d(energy)] }
            if !m.rrIntervals.isEmpty { fields["btatt.heart_rate_measurement.rr_interval"] = m.rrIntervals.map { ($0 * 1024).rounded() } }
            return fields
        case "2A38": return ["btatt.body_sensor_location": [d(try BodySensorLocation(decoding: value).rawValue)]]
        case "2A19": return ["btatt.battery_level": [d(try UInt8(decoding: value))]]
        case "2A1D": return ["btatt.temperature_type": [d(try TemperatureType(decoding: value).rawValue)]]
        case "2A1C":
            let m = try TemperatureMeasurement(decoding: value)
            let key = m.unit == .celsius ? "btatt.temperature_measurement.value.celsius" : "btatt.temperature_measurement.value.fahrenheit"
            var fields = [key: [m.temperature.doubleValue]]
            if let t = m.timestamp { fields.merge(date("", t)) { $1 } }
            if let type = m.type { fields["btatt.temperature_type"] = [d(type.rawValue)] }
            return fields
        case "2A35":
            let m = try BloodPressureMeasurement(decoding: value)
            let unit = m.unit == .mmHg ? "mmhg" : "kpa"
            var fields: [String: [Double]] = [
                "btatt.blood_pressure_measurement.compound_value.systolic.\(unit)": [m.systolic.doubleValue],
                "btatt.blood_pressure_measurement.compound_value.diastolic.\(unit)": [m.diastolic.doubleValue],
                "btatt.blood_pressure_measurement.compound_value.arterial_pressure.\(unit)": [m.meanArterialPressure.doubleValue],
            ]
            if let t = m.timestamp { fields.merge(date("", t)) { $1 } }
            if let pulse = m.pulseRate { fields["btatt.blood_pressure_measurement.pulse_rate"] = [pulse.doubleValue] }
            if let user = m.userID { fields["btatt.blood_pressure_measurement.user_id"] = [d(user)] }
            return fields
        case "2A49": return ["btatt.blood_pressure.feature": [d(try BloodPressureFeature(decoding: value).rawValue)]]
        case "2A9D":
            let m = try WeightMeasurement(decoding: value)
            var fields: [String: [Double]] = [
                m.units == .si ? "btatt.weight_measurement.weight.kg" : "btatt.weight_measurement.weight.lb": [d(m.rawWeight)]
            ]
            if let t = m.timestamp { fields.merge(date("", t)) { $1 } }
            if let user = m.userID { fields["btatt.weight_measurement.user_id"] = [d(user)] }
            if let bmi = m.rawBMI, let height = m.rawHeight {
                fields["btatt.weight_measurement.bmi"] = [d(bmi)]
                fields[m.units == .si ? "btatt.weight_measurement.height.m" : "btatt.weight_measurement.height.in"] = [d(height)]
            }
            return fields
        case "2A9E": return ["btatt.weight_scale_feature": [d(try WeightScaleFeature(decoding: value).rawValue)]]
        case "2A2B":
            let m = try CurrentTime(decoding: value)
            var fields = date("", m.dateTime)
            fields["btatt.day_of_week"] = [d(m.dayOfWeek)]
            fields["btatt.fractions256"] = [d(m.fractions256)]
            fields["btatt.adjust_reason"] = [d(m.adjustReason.rawValue)]
            return fields
        case "2A0F":
            let m = try LocalTimeInformation(decoding: value)
            return ["btatt.timezone": [d(m.timeZone)], "btatt.dst_offset": [d(m.dstOffset)]]
        case "2A14":
            let m = try ReferenceTimeInformation(decoding: value)
            return [
                "btatt.time_source": [d(m.source)], "btatt.time_accuracy": [d(m.accuracy)],
                "btatt.days_since_update": [d(m.daysSinceUpdate)], "btatt.hours_since_update": [d(m.hoursSinceUpdate)],
            ]
        case "2A23":
            let m = try SystemID(decoding: value)
            return [
                "btatt.system_id.manufacturer_identifier": [d(m.manufacturerIdentifier)],
                "btatt.system_id.organizationally_unique_identifier": [d(m.organizationallyUniqueIdentifier)],
            ]
        case "2A50":
            let m = try PnPID(decoding: value)
            return [
                "btatt.pnp_id.vendor_id_source": [d(m.vendorIDSource)], "btatt.pnp_id.vendor_id": [d(m.vendorID)],
                "btatt.pnp_id.product_id": [d(m.productID)], "btatt.pnp_id.product_version": [d(m.productVersion)],
            ]
        case "2A01": return ["btatt.appearance": [d(try Appearance(decoding: value).rawValue)]]
        default: return nil
        }
    }

    @Test func everyRecordedValueDecodesAsWiresharkDecodesIt() async throws {
        let paths = try await Self.record()
        defer { for path in paths { try? FileManager.default.removeItem(atPath: path) } }
        var covered: Set<String> = []
        var compared = 0
        for path in paths {
            // Our records of the values, with the characteristic each belongs to.
            let records = try jsonObjects(try dump(path).lines).filter { record in
                guard record["kind"] as? String == "att", let opcode = record["opcode"] as? Int else { return false }
                return [0x0B, 0x1B, 0x1D].contains(opcode) && record["value"] != nil
            }
            var checks: [(frame: Int, uuid: String, fields: [String: [Double]])] = []
            for record in records {
                guard let frame = record["frame"] as? Int, let gatt = record["gatt"] as? [String: Any],
                    gatt["descriptorUUID"] == nil, let uuid = gatt["characteristicUUID"] as? String,
                    let hex = record["value"] as? String, let value = Hex.decode(hex),
                    let fields = try Self.expectations(uuid, value)
                else { continue }
                checks.append((frame, uuid, fields))
            }
            covered.formUnion(checks.map(\.uuid))
            let rows = try await Self.wireshark(path, fields: Array(Set(checks.flatMap { $0.fields.keys })).sorted())
            // IEEE-11073 FLOAT fields: tshark 4.0 shows every one as 0 (whatever its octets: a
            // Wireshark defect), so there the octets tshark assigns to the field are compared with
            // our encoding of the value instead, where tshark's number is not ours.
            let floats = try await Self.wiresharkRaw(path, filter: "btatt.temperature_measurement.flags")
            for check in checks {
                let row = rows[check.frame] ?? [:]
                for (field, expected) in check.fields {
                    if field.hasPrefix("btatt.temperature_measurement.value."), let raw = floats[check.frame]?[field + "_raw"],
                        row[field] == ["0"], expected != [0]
                    {
                        #expect(
                            MedFloat32.fromDouble(expected[0], matching: raw),
                            "frame \(check.frame) \(field): tshark's octets \(raw), ours \(expected)")
                        compared += 1
                        continue
                    }
                    let shown = row[field] ?? []
                    let values = shown.map { text -> Double? in Self.integer(text).map(Double.init) ?? Double(text) }
                    let agrees =
                        values.count == expected.count
                        && zip(values, expected).allSatisfy { value, want in
                            guard let value else { return false }
                            return want.isNaN ? value.isNaN : abs(value - want) <= 1e-9 * max(1, abs(want))
                        }
                    #expect(agrees, "\(path) frame \(check.frame) \(check.uuid) \(field): tshark \(shown), ours \(expected)")
                    compared += 1
                }
            }
        }
        #expect(
            covered.isSuperset(of: [
                "2A37", "2A38", "2A19", "2A1C", "2A1D", "2A35", "2A49", "2A9D", "2A9E", "2A2B", "2A0F", "2A14", "2A23", "2A50", "2A01",
            ]), "covered: \(covered.sorted())")
        #expect(compared > 60, "\(compared) fields compared")
    }
}

/// Where tshark is installed, if it is.
enum Wireshark {
    static let tshark = ["/usr/bin/tshark", "/usr/local/bin/tshark"].first(where: FileManager.default.fileExists)
}

extension MedFloat32 {
    /// Whether `hex` (4 octets) decodes to `value` with our codec.
    static func fromDouble(_ value: Double, matching hex: String) -> Bool {
        guard let bytes = Hex.decode(hex), let float = try? MedFloat32(decoding: bytes) else { return false }
        return value.isNaN ? float.doubleValue.isNaN : abs(float.doubleValue - value) <= 1e-9 * max(1, abs(value))
    }
}
