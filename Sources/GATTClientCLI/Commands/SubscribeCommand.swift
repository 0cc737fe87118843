import BLE
import ATT
import Bluetooth
import GATT
import HCI

/// `subscribe ADDR HANDLE|UUID [--indicate] [--count N] [--duration S]`: writes the CCCD, then
/// prints every notification (or indication) with a timestamp until the count, the duration,
/// Ctrl-C or a disconnect; switches the CCCD off on the way out.
struct SubscribeCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    var target: AttributeSelector
    var indicate = false
    var count: Int?
    var duration: Double?

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        let subscription: GATTSubscription
        var uuid: BluetoothUUID?
        do {
            if case .uuid(let wanted) = target { uuid = wanted }
            // A CCCD write refused for the link's security raises it (bond, else pairing) and
            // subscribes again.
            let (client, target, indicate) = (session.client, target, indicate)
            subscription = try await session.peripheral.securing(doing: "subscribing to \(peer)") {
                switch target {
                case .uuid(let wanted):
                    return try await client.subscribe(uuid: wanted, indications: indicate)
                case .handle(let handle):
                    // The CCCD follows the value: descriptor discovery from the next handle stops
                    // at the next declaration, so no full discovery is needed.
                    let mtu = await client.mtu
                    let descriptors = handle == 0xFFFF ? [] : try await client.run(
                        DiscoverAllCharacteristicDescriptors(range: (handle + 1)...0xFFFF, mtu: mtu))
                    let characteristic = Characteristic(
                        uuid: .bit16(0), declarationHandle: handle - 1, valueHandle: handle,
                        properties: indicate ? .indicate : .notify, descriptors: descriptors)
                    return try await client.subscribe(characteristic: characteristic, indications: indicate)
                }
            }
        } catch {
            await session.close()
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
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                if options.json {
                    var json = JSONWriter()
                    json.beginObject()
                    json.field("handle", Int(notification.handle))
                    json.field("value", hex: notification.value)
                    json.field("indication", notification.isIndication)
                    json.field("time", (seconds * 1_000_000).rounded() / 1_000_000)
                    json.endObject()
                    output.writeLine(bytes: json.bytes)
                } else {
                    output.writeLine(
                        format6(seconds) + "  0x\(hex(notification.handle, 4)) "
                            + "\(notification.isIndication ? "indication" : "notification"): "
                            + ValueText.describe(notification.value, uuid: uuid))
                }
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
        try? await session.client.unsubscribe(subscription)
        await session.close()
        if let failure { throw CommandFailure.from(failure, doing: "receiving from \(peer)") }
    }
}

/// `12.345678`.
func format6(_ seconds: Double) -> String {
    let micros = Int64((seconds * 1_000_000).rounded())
    let fraction = String(micros % 1_000_000)
    return "\(micros / 1_000_000)." + String(repeating: "0", count: 6 - fraction.count) + fraction
}

