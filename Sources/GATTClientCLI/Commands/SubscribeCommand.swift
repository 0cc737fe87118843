import BLE
import ATT
import Bluetooth
import GATT
import HCI

/// `subscribe ADDR HANDLE|UUID [--indicate] [--count N] [--duration S] [--write HANDLE|UUID=HEX]…`:
/// writes the `--write` values, then the CCCD, says so on standard error (`subscribed to …;
/// waiting…`), then prints every notification (or indication) with a timestamp until the count,
/// the duration, Ctrl-C or a disconnect, and ends with `N notifications in S s`; switches the
/// CCCD off on the way out. Under `--json` both are `event` lines on standard output too.
struct SubscribeCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    var target: AttributeSelector
    var indicate = false
    var count: Int?
    var duration: Double?
    /// `--write`: written first, in order, with response.
    var writes: [SubscribeWrite] = []

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        let subscription: GATTSubscription
        var uuid: BluetoothUUID?
        do {
            if case .uuid(let wanted) = target { uuid = wanted }
            // A CCCD write refused for the link's security raises it (bond, else pairing) and
            // subscribes again.
            let (client, target, indicate) = (session.client, target, indicate)
            for write in writes {
                let handle: UInt16
                switch write.target {
                case .handle(let given): handle = given
                case .uuid(let wanted): handle = try await client.locateCharacteristic(uuid: wanted).valueHandle
                }
                let value = write.value
                _ = try await session.peripheral.securing(doing: "writing to \(peer)") {
                    try await client.write(handle: handle, value: value)
                }
                SessionDiagnostics.note("wrote \(value.count) octet\(value.count == 1 ? "" : "s") to 0x\(hex(handle, 4))", verbosity: options.verbosity)
            }
            let characteristic: GATT.Characteristic
            switch target {
            case .uuid(let wanted):
                characteristic = try await client.locateCharacteristic(uuid: wanted)
            case .handle(let handle):
                characteristic = try await Self.characteristic(at: handle, client: client, peer: peer)
                uuid = characteristic.uuid
            }
            // A characteristic that cannot notify (or indicate) has nothing to subscribe to.
            let wanted: CharacteristicProperties = indicate ? .indicate : .notify
            guard characteristic.properties.contains(wanted) else {
                throw CommandFailure(
                    "\(handleText(characteristic.valueHandle, characteristic.uuid)) cannot \(indicate ? "indicate" : "notify"): "
                        + "its properties are \(characteristic.properties.names.joined(separator: ", "))"
                        + (characteristic.properties.contains(indicate ? .notify : .indicate)
                            ? (indicate ? "; subscribe without --indicate" : "; subscribe with --indicate") : ""),
                    kind: "usage", handle: characteristic.valueHandle)
            }
            subscription = try await session.peripheral.securing(doing: "subscribing to \(peer)") {
                try await client.subscribe(characteristic: characteristic, indications: indicate)
            }
            Self.announce(characteristic, indicate: indicate, json: options.json, output: &output)
        } catch {
            await session.close()
            if case .uuid(let wanted) = target, case GATTError.notFound = error { throw noCharacteristic(wanted, on: peer) }
            if case GATTError.ambiguousUUID(let uuid, let handles) = error {
                throw severalAttributes(uuid, handles: handles, on: peer, command: "subscribe")
            }
            throw CommandFailure.from(error, doing: "subscribing to \(peer)")
        }
        let events = CommandEvents<GATTNotification>(duration: duration)
        events.forward(subscription)
        let clock = ContinuousClock()
        let start = clock.now
        var received = 0
        var failure: (any Error)?
        loop: for await event in events.stream {
            switch event {
            case .value(let notification):
                // The peer's protocol violations so far, as `event` lines, before the value.
                SessionDiagnostics.current?.drainEvents(into: &output)
                received += 1
                let elapsed = clock.now - start
                let seconds = seconds(elapsed)
                output.writeLine(Self.line(notification, uuid: uuid, seconds: seconds, json: options.json))
                output.flush()
                if let count, received >= count { break loop }
            case .ended(let error):
                failure = error
                break loop
            case .durationElapsed, .interrupted:
                break loop
            }
        }
        events.finish()
        let elapsed = clock.now - start
        Self.summarize(received, indicate: indicate, seconds: seconds(elapsed), json: options.json, output: &output)
        try? await session.client.unsubscribe(subscription)
        await session.close()
        if let failure { throw CommandFailure.from(failure, doing: "receiving from \(peer)") }
    }
}

extension SubscribeCommand {
    /// One value as `subscribe` (and the shell) prints it: `seconds  0x0025 notification: HEX
    /// decoded`, or a `notification` JSON line.
    static func line(_ notification: GATTNotification, uuid: BluetoothUUID?, seconds: Double, json: Bool) -> String {
        if json {
            var line = JSONWriter()
            line.beginObject()
            line.field("kind", "notification")
            line.field("handle", Int(notification.handle))
            line.field("value", hex: notification.value)
            line.field("indication", notification.isIndication)
            line.field("time", (seconds * 1_000_000).rounded() / 1_000_000)
            line.endObject()
            return String(decoding: line.bytes, as: UTF8.self)
        }
        return format6(seconds) + "  0x\(hex(notification.handle, 4)) "
            + "\(notification.isIndication ? "indication" : "notification"): " + ValueText.describe(notification.value, uuid: uuid)
    }

    /// `subscribed to 0x0025 (UUID), CCCD 0x0026; waiting… (Ctrl-C to stop)` on standard error,
    /// and an `event` line under `--json`.
    static func announce(_ characteristic: GATT.Characteristic, indicate: Bool, json: Bool, output: inout BufferedOutput) {
        let cccd = characteristic.clientConfigurationHandle
        SessionDiagnostics.say(
            "subscribed to \(handleText(characteristic.valueHandle, characteristic.uuid))"
                + (cccd.map { ", CCCD 0x\(hex($0, 4))" } ?? "") + "; waiting for \(indicate ? "indications" : "notifications")… (Ctrl-C to stop)")
        guard json else { return }
        var line = JSONWriter()
        line.beginObject()
        line.field("kind", "event")
        line.field("event", "subscribed")
        line.field("handle", Int(characteristic.valueHandle))
        line.field("uuid", jsonUUID(characteristic.uuid))
        if let cccd { line.field("cccd", Int(cccd)) }
        line.endObject()
        output.writeLine(bytes: line.bytes)
        output.flush()
    }

    /// `3 notifications in 2.104 s` on standard error, and an `event` line under `--json`.
    static func summarize(_ count: Int, indicate: Bool, seconds: Double, json: Bool, output: inout BufferedOutput) {
        let noun = (indicate ? "indication" : "notification") + (count == 1 ? "" : "s")
        let rounded = (seconds * 1000).rounded() / 1000
        SessionDiagnostics.say("\(count) \(noun) in \(rounded) s")
        guard json else { return }
        var line = JSONWriter()
        line.beginObject()
        line.field("kind", "event")
        line.field("event", "ended")
        line.field(indicate ? "indications" : "notifications", count)
        line.field("seconds", rounded)
        line.endObject()
        output.writeLine(bytes: line.bytes)
    }

    /// The characteristic whose value is at `handle`, with its descriptors: its declaration (one
    /// Read By Type over the handle before) and the descriptors after it (Find Information up to
    /// the next declaration), no full discovery.
    static func characteristic(at handle: UInt16, client: GATTClient, peer: PeerAddress) async throws -> GATT.Characteristic {
        let mtu = await client.mtu
        // The declaration is the attribute before the value: one Read By Type of 0x2803 there.
        var declared: CharacteristicDeclaration?
        if handle > 1 {
            let entries: [ReadByTypeResponse.AttributeData]
            do {
                entries = try await client.read(uuid: CharacteristicDeclaration.attributeType, in: (handle - 1)...(handle - 1))
            } catch {
                // Attribute Not Found: no declaration there, so no characteristic value here.
                guard case .peerError(_, _, .attributeNotFound) = error else { throw error }
                entries = []
            }
            if let entry = entries.first {
                declared = try CharacteristicDeclaration(decoding: entry.value, handle: entry.handle)
            }
        }
        guard let declared, declared.valueHandle == handle else {
            throw CommandFailure(
                "no characteristic value at handle 0x\(hex(handle, 4)) (no characteristic declaration at 0x\(hex(handle &- 1, 4)));"
                    + " `gattclient services \(peer.address)` lists the value handles", kind: "notFound", handle: handle)
        }
        var characteristic = GATT.Characteristic(
            uuid: declared.uuid, declarationHandle: handle - 1, valueHandle: handle, properties: declared.properties)
        // The CCCD follows the value: descriptor discovery from the next handle stops at the
        // next declaration.
        characteristic.descriptors = handle == 0xFFFF ? [] : try await client.run(
            DiscoverAllCharacteristicDescriptors(range: (handle + 1)...0xFFFF, mtu: mtu))
        return characteristic
    }
}

/// `12.345678`.
func format6(_ seconds: Double) -> String { formatSeconds(seconds, decimals: 6) }

/// `1.234`.
func format3(_ seconds: Double) -> String { formatSeconds(seconds, decimals: 3) }

/// `seconds` with exactly `decimals` decimals (no Foundation formatter).
func formatSeconds(_ seconds: Double, decimals: Int) -> String {
    var scale: Int64 = 1
    for _ in 0..<decimals { scale *= 10 }
    let units = Int64((seconds * Double(scale)).rounded())
    let fraction = String(units % scale)
    return "\(units / scale)." + String(repeating: "0", count: decimals - fraction.count) + fraction
}

/// A duration in seconds.
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

