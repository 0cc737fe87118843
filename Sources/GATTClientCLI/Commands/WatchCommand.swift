import BLE
import Bluetooth
import GATT

/// `watch ADDR --service NAME [--count N] [--duration S]`: the typed values of one standard
/// service through the library's device models, kept connected: a retrieved model reconnects
/// after every link loss (re-subscribing, the database cached) until Ctrl-C, `--count` values
/// or `--duration`. Prints each value read on connecting and each one notified or indicated,
/// decoded, and each change of the link.
struct WatchCommand {
    /// The services `--service` names, each a standard model.
    enum Watched: String, CaseIterable, Sendable {
        case battery
        case heartRate = "heart-rate"
        case thermometer
        case bloodPressure = "blood-pressure"
        case weightScale = "weight-scale"
        case currentTime = "current-time"
        case deviceInformation = "device-information"
        case genericAccess = "generic-access"
    }

    var peer: PeerAddress
    var service: Watched
    var count: Int?
    var duration: Double?
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    /// Tests: awaited with the number of values printed so far, after each.
    var printed: (@Sendable (Int) async -> Void)? = nil

    /// A device model of one service (required).
    struct Model<S: BluetoothService>: BluetoothDevice {
        @BLE.Service var service = S()
        @DeviceAction(\.connect) var connect: ConnectAction
        @DeviceAction(\.disconnect) var disconnect: DisconnectAction
        init() {}

        var actions: (connect: ConnectAction, disconnect: DisconnectAction) { (connect, disconnect) }
    }

    enum Event: Sendable {
        case value(characteristic: BluetoothUUID, bytes: [UInt8], text: String)
        case state(String)
        /// The device has not the service (its binding failed).
        case failed(BLEError)
    }

    /// The standard model's service UUID.
    var serviceID: BluetoothUUID {
        switch service {
        case .battery: return BatteryService.id
        case .heartRate: return HeartRateService.id
        case .thermometer: return HealthThermometerService.id
        case .bloodPressure: return BloodPressureService.id
        case .weightScale: return WeightScaleService.id
        case .currentTime: return CurrentTimeService.id
        case .deviceInformation: return DeviceInformationService.id
        case .genericAccess: return GenericAccessService.id
        }
    }

    func run(options: GlobalOptions, output: inout BufferedOutput) async throws {
        var adapterOptions = options.adapterOptions
        adapterOptions.replayMatchAny = options.replayMatchAny
        let adapter = try await CommandConnection.adapter(
            options: options, adapterOptions: adapterOptions, central: central ?? CommandConnection.injectedCentral)
        // The terminal answers a pairing's passkey or comparison (a device that needs security).
        await adapter.setPairingDelegate(
            CLIPairingDelegate(
                passkey: nil, confirmAll: false, errors: SessionDiagnostics.current?.errors ?? 2,
                diagnostics: SessionDiagnostics.current))
        let events = CommandEvents<Event>(duration: duration)
        var failure: (any Error)?
        var disconnect: DisconnectAction?
        var binding: Task<Void, Never>?
        do {
            // A bare address: the type of a first connection (cache, scan, or both types).
            var peer = self.peer
            if options.automaticAddressType {
                let first = try await CommandConnection.connect(adapter, to: peer, options: options, timeout: adapterOptions.timeout)
                peer = first.peer
                await first.disconnect()
            }
            let managed = await adapter.manage(peer)
            events.forward(managed.events().compactMap { event -> Event? in
                switch event {
                case .state(.connected): return .state("connected")
                case .state(.disconnected(let reason)): return .state(ConnectionVisibility.describe(reason))
                case .reconnected(let gap, let attempts, _):
                    return .state("reconnected after \(formatSeconds(seconds(gap), decimals: 3)) s, \(attempts) attempt\(attempts == 1 ? "" : "s")")
                case .attemptFailed(let error, let retry):
                    return .state("connecting failed (\(error.message)); again in \(formatSeconds(seconds(retry), decimals: 1)) s")
                default: return nil
                }
            })
            let actions = try await follow(service, adapter: adapter, peer: peer, events: events)
            disconnect = actions.disconnect
            // A retrieved model's connect returns once it is bound, or fails with why not.
            binding = Task {
                do throws(BLEError) {
                    try await actions.connect()
                } catch {
                    events.yield(.failed(error))
                }
            }
        } catch {
            failure = error
        }
        let clock = ContinuousClock()
        let start = clock.now
        var values = 0
        if failure == nil {
            loop: for await event in events.stream {
                let time = seconds(clock.now - start)
                switch event {
                case .value(.value(let characteristic, let bytes, let text)):
                    values += 1
                    let name = GATTNames.name(for: characteristic) ?? characteristic.description
                    Self.write("value", time: time, text: name + ": " + text, json: options.json, output: &output) { json in
                        json.field("service", service.rawValue)
                        json.field("characteristic", characteristic.description)
                        json.field("name", name)
                        json.field("value", hex: bytes)
                        json.field("text", text)
                    }
                    await printed?(values)
                    if let count, values >= count { break loop }
                case .value(.state(let state)):
                    Self.write("state", time: time, text: state, json: options.json, output: &output) { json in
                        json.field("state", state)
                    }
                case .value(.failed(let error)):
                    failure =
                        error.kind == "notFound"
                        ? CommandFailure(
                            "\(peer) has no \(service.rawValue) service (\(serviceID))", kind: "notFound")
                        : error
                    break loop
                case .ended(let error):
                    failure = error
                    break loop
                case .durationElapsed, .interrupted:
                    break loop
                }
            }
        }
        events.finish()
        binding?.cancel()
        await disconnect?()
        await adapter.close()
        if let failure { throw CommandFailure.from(failure, doing: "watch \(peer)") }
    }

    /// One line: `time  text`, or a JSON object of `kind` with its time and `fields`.
    private static func write(
        _ kind: String, time: Double, text: String, json: Bool, output: inout BufferedOutput, fields: (inout JSONWriter) -> Void
    ) {
        if json {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("kind", kind)
            writer.field("time", (time * 1_000_000).rounded() / 1_000_000)
            fields(&writer)
            writer.endObject()
            output.writeLine(bytes: writer.bytes)
        } else {
            output.writeLine(format6(time) + "  " + text)
        }
        output.flush()
    }

    /// Retrieves the service's model and forwards every value of its characteristics (read on
    /// each connection, or notified) as text; returns the model's connect and disconnect.
    private func follow(
        _ watched: Watched, adapter: Adapter, peer: PeerAddress, events: CommandEvents<Event>
    ) async throws -> (connect: ConnectAction, disconnect: DisconnectAction) {
        // Each value with the octets it came as.
        func forward<V: ByteDecodable & CustomStringConvertible>(_ access: CharacteristicAccess<V>, id: BluetoothUUID) {
            access.onChangeWithBytes { value, bytes in events.yield(.value(characteristic: id, bytes: bytes, text: value.description)) }
        }
        func forward<V: ByteDecodable>(_ access: CharacteristicAccess<V>, id: BluetoothUUID, text: @escaping @Sendable (V) -> String) {
            access.onChangeWithBytes { value, bytes in events.yield(.value(characteristic: id, bytes: bytes, text: text(value))) }
        }
        switch watched {
        case .battery:
            let model = await adapter.retrieve(Model<BatteryService>.self, peer: peer)
            forward(model.service.$level, id: 0x2A19) { "\($0) %" }
            return model.actions
        case .heartRate:
            let model = await adapter.retrieve(Model<HeartRateService>.self, peer: peer)
            forward(model.service.$measurement, id: 0x2A37)
            forward(model.service.$bodySensorLocation, id: 0x2A38)
            return model.actions
        case .thermometer:
            let model = await adapter.retrieve(Model<HealthThermometerService>.self, peer: peer)
            forward(model.service.$measurement, id: 0x2A1C)
            forward(model.service.$temperatureType, id: 0x2A1D)
            forward(model.service.$measurementInterval, id: 0x2A21) { "\($0) s" }
            return model.actions
        case .bloodPressure:
            let model = await adapter.retrieve(Model<BloodPressureService>.self, peer: peer)
            forward(model.service.$measurement, id: 0x2A35)
            forward(model.service.$feature, id: 0x2A49) { "0x" + String($0.rawValue, radix: 16) }
            return model.actions
        case .weightScale:
            let model = await adapter.retrieve(Model<WeightScaleService>.self, peer: peer)
            forward(model.service.$feature, id: 0x2A9E) { "0x" + String($0.rawValue, radix: 16) }
            forward(model.service.$measurement, id: 0x2A9D)
            return model.actions
        case .currentTime:
            let model = await adapter.retrieve(Model<CurrentTimeService>.self, peer: peer)
            forward(model.service.$currentTime, id: 0x2A2B)
            forward(model.service.$localTimeInformation, id: 0x2A0F)
            forward(model.service.$referenceTimeInformation, id: 0x2A14) {
                "source \($0.source), accuracy \($0.accuracy), \($0.daysSinceUpdate) d \($0.hoursSinceUpdate) h since update"
            }
            return model.actions
        case .deviceInformation:
            let model = await adapter.retrieve(Model<DeviceInformationService>.self, peer: peer)
            let service = model.service
            for (access, id) in [
                (service.$manufacturerName, 0x2A29), (service.$modelNumber, 0x2A24), (service.$serialNumber, 0x2A25),
                (service.$hardwareRevision, 0x2A27), (service.$firmwareRevision, 0x2A26), (service.$softwareRevision, 0x2A28),
            ] as [(CharacteristicAccess<String>, BluetoothUUID)] {
                forward(access, id: id)
            }
            forward(service.$systemID, id: 0x2A23)
            forward(service.$pnpID, id: 0x2A50)
            return model.actions
        case .genericAccess:
            let model = await adapter.retrieve(Model<GenericAccessService>.self, peer: peer)
            forward(model.service.$deviceName, id: 0x2A00)
            forward(model.service.$appearance, id: 0x2A01)
            forward(model.service.$preferredConnectionParameters, id: 0x2A04)
            forward(model.service.$centralAddressResolution, id: 0x2AA6) { $0 ? "supported" : "not supported" }
            return model.actions
        }
    }
}
