import BLE
import ATT
import Bluetooth
import GATT

/// `uart ADDR [--send TEXT] [--controller button:N|color:R,G,B] [--with-response] [--duration S]`:
/// an interactive terminal for the Nordic UART Service (Adafruit Bluefruit LE): standard input
/// lines go to RX (split to ATT_MTU − 3, write without response by default), TX notifications go
/// to standard output. `--send`/`--controller` send once, print what comes back for `--duration`
/// (default 1 s), and exit.
struct UARTCommand {
    enum Message: Sendable {
        case line(String)
        case received(GATTNotification)
        case inputEnded
    }

    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    var send: [UInt8]?
    var withResponse = false
    var duration: Double?
    /// Lines to send instead of reading standard input (tests).
    var input: [String]?
    /// Printed before each received chunk in text mode (the demo marks the echo with it).
    var echoPrefix: String?

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        let client = session.client
        let rx: Characteristic
        let subscription: GATTSubscription
        do {
            // The service by UUID, then its characteristics and descriptors: a few requests,
            // and nothing reads RX (write-only).
            guard let service = try await client.discoverPrimaryServices(uuid: NordicUART.service).first else {
                throw GATTError.notFound(NordicUART.service)
            }
            let definitions = try await client.discoverDefinitions(of: service, findIncludes: false)
            guard let foundRX = definitions.characteristics.first(where: { $0.uuid == NordicUART.rx }) else {
                throw GATTError.notFound(NordicUART.rx)
            }
            guard let tx = definitions.characteristics.first(where: { $0.uuid == NordicUART.tx }) else {
                throw GATTError.notFound(NordicUART.tx)
            }
            rx = foundRX
            subscription = try await client.subscribe(characteristic: tx)
        } catch {
            await session.close()
            throw CommandFailure.from(error, doing: "opening the Nordic UART Service on \(peer)")
        }
        let oneShot = send != nil
        let events = CommandEvents<Message>(duration: oneShot ? (duration ?? 1) : duration)
        events.forward(subscription.map { Message.received($0) })
        var failure: (any Error)?
        if let input {
            for line in input { events.yield(.line(line)) }
        } else if !oneShot {
            do {
                try events.readStandardInput(line: { .line($0) }, end: .inputEnded)
            } catch {
                failure = error
            }
        }
        var atLineStart = true
        do {
            if failure == nil, let send { try await write(send, rx: rx, client: client) }
        } catch {
            failure = error
        }
        if failure == nil {
            loop: for await event in events.stream {
                switch event {
                case .value(.line(let line)):
                    do {
                        try await write(Array((line + "\n").utf8), rx: rx, client: client)
                    } catch {
                        failure = error
                        break loop
                    }
                case .value(.received(let notification)):
                    if options.json {
                        var json = JSONWriter()
                        json.beginObject()
                        json.field("handle", Int(notification.handle))
                        json.field("value", hex: notification.value)
                        if let text = String(validating: notification.value, as: UTF8.self) { json.field("text", text) }
                        json.endObject()
                        output.writeLine(bytes: json.bytes)
                    } else {
                        let text = String(decoding: notification.value, as: UTF8.self)
                        output.write((atLineStart ? echoPrefix ?? "" : "") + text)
                        atLineStart = text.hasSuffix("\n")
                    }
                    output.flush()
                case .value(.inputEnded):
                    // Let the peer's answer to the last line arrive (bounded), then stop.
                    if duration == nil { break loop }
                case .ended(let error):
                    failure = error
                    break loop
                case .durationElapsed, .interrupted:
                    break loop
                }
            }
        }
        events.finish()
        try? await client.unsubscribe(subscription)
        await session.close()
        if let failure { throw CommandFailure.from(failure, doing: "uart \(peer)") }
    }

    /// Writes in chunks of ATT_MTU − 3 (never inside a UTF-8 sequence).
    private func write(_ bytes: [UInt8], rx: Characteristic, client: GATTClient) async throws {
        let noResponse = !withResponse && rx.properties.contains(.writeWithoutResponse)
        for chunk in NordicUART.chunks(bytes, mtu: await client.mtu) {
            if noResponse {
                try await client.writeWithoutResponse(handle: rx.valueHandle, value: chunk)
            } else {
                try await client.write(handle: rx.valueHandle, value: chunk)
            }
        }
    }
}
