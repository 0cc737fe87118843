import BLE
import ATT
import Bluetooth
import GATT

/// `read ADDR HANDLE|UUID [--long | --no-long] [--multiple H,H,...]`.
///
/// Every value comes back whole: a Read Response that fills ATT_MTU − 1 octets is completed with
/// Read Blob (``GATTClient/read(handle:complete:)``), a Read Using Characteristic UUID value cut
/// at ATT_MTU − 4 likewise, and `--multiple` returns every handle asked, in order
/// (``GATTClient/readMultipleVariable(handles:)``). `--no-long` gives the single response.
struct ReadCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    var target: AttributeSelector?
    /// `--long`: by UUID, every value is read again in full (by handle a value is always whole).
    var long = false
    var multiple: [UInt16] = []
    /// `--no-long`: the one response as it came, not completed.
    var noLong = false

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        var values: [(UInt16, [UInt8])] = []
        var uuid: BluetoothUUID?
        do {
            // A refusal for the link's security raises it (bond, else pairing) and reads again.
            let client = session.client
            let (multiple, target, long, noLong) = (multiple, target, long, noLong)
            if multiple.isEmpty, case .uuid(let wanted)? = target { uuid = wanted }
            values = try await session.peripheral.securing(doing: "reading from \(peer)") {
                () async throws -> [HandleValue] in
                if !multiple.isEmpty {
                    return try await client.readMultipleVariable(handles: multiple)
                } else if case .handle(let handle)? = target {
                    return [HandleValue(handle: handle, value: try await client.read(handle: handle, complete: !noLong))]
                } else if case .uuid(let wanted)? = target {
                    // Read Using Characteristic UUID: no discovery needed.
                    let found = try await client.read(uuid: wanted)
                    var values: [HandleValue] = []
                    for entry in found {
                        // A value the response had to cut (ATT_MTU − 4) is read again in full.
                        values.append(
                            HandleValue(
                                handle: entry.handle,
                                value: noLong ? entry.value : try await wholeValue(entry, client: client, always: long)))
                    }
                    return values
                }
                return []
            }.map { ($0.handle, $0.value) }
            // By handle, the value's type says how to show it: one Find Information Request
            // (not in a replay, whose capture may not hold it).
            if multiple.isEmpty, case .handle(let handle)? = target, !options.isReplay {
                uuid = try? await client.attributeType(at: handle)
            }
        } catch {
            await session.close()
            if multiple.isEmpty, case .uuid(let wanted)? = target, isNoSuchCharacteristic(error) {
                throw noCharacteristic(wanted, on: peer)
            }
            throw CommandFailure.from(error, doing: "reading from \(peer)")
        }
        await session.close()
        // The violations met on the way, as `event` lines before the result.
        SessionDiagnostics.current?.drainEvents(into: &output)
        if options.json {
            // One line per handle, however asked (by handle, by UUID, --multiple).
            for (handle, value) in values {
                var json = JSONWriter()
                json.beginObject()
                json.field("kind", "value")
                json.field("handle", Int(handle))
                if let uuid {
                    json.field("uuid", jsonUUID(uuid))
                    if let name = GATTNames.name(for: uuid) { json.field("name", name) }
                }
                json.field("value", hex: value)
                if let decoded = ValueText.decoded(value, uuid: uuid) { json.field("decoded", decoded) }
                json.endObject()
                output.writeLine(bytes: json.bytes)
            }
        } else {
            for (handle, value) in values {
                output.writeLine("0x\(hex(handle, 4)): " + ValueText.describe(value, uuid: uuid))
            }
        }
    }
}

/// `write ADDR HANDLE|UUID VALUE [--text STR] [--no-response] [--long] [--reliable]`.
///
/// A Write Request whose value does not fit (longer than ATT_MTU − 3) goes as Prepare/Execute
/// Write instead (said with `-v`). A Write Command is unconfirmed: it prints "sent", and warns
/// when the characteristic's properties (known when it is named by UUID) lack
/// write-without-response.
struct WriteCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    var target: AttributeSelector
    var value: [UInt8]
    var mode: WriteMode = .request

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        let handle: UInt16
        var properties: CharacteristicProperties?
        do {
            switch target {
            case .handle(let given):
                handle = given
            case .uuid(let uuid):
                let found = try await session.client.findCharacteristics(uuid: uuid)
                if let first = found.first {
                    guard found.count == 1 else { throw GATTError.ambiguousUUID(uuid, handles: found.map(\.valueHandle)) }
                    handle = first.valueHandle
                    properties = first.properties
                } else {
                    // Not a characteristic: a descriptor's type, written where exactly one has it.
                    handle = try await attributeHandle(uuid: uuid, client: session.client)
                }
            }
            // A refusal for the link's security raises it (bond, else pairing) and writes again.
            let client = session.client
            let (value, mode, verbosity) = (value, mode, options.verbosity)
            let known = properties
            try await session.peripheral.securing(doing: "writing to \(peer)") {
                switch mode {
                case .request:
                    let mtu = await client.mtu
                    if value.count > mtu - 3 {
                        SessionDiagnostics.note(
                            "\(value.count) octets do not fit one Write Request at ATT_MTU \(mtu) (at most \(mtu - 3)): "
                                + "writing with Prepare/Execute Write (--long)", verbosity: verbosity)
                        try await client.writeLong(handle: handle, value: value)
                    } else {
                        try await client.write(handle: handle, value: value)
                    }
                case .noResponse:
                    if let properties = known, !properties.contains(.writeWithoutResponse) {
                        SessionDiagnostics.warn(
                            "the properties of 0x\(hex(handle, 4)) \(properties) lack write-without-response: "
                                + "the peer may ignore this Write Command, and nothing would tell")
                    }
                    try await client.writeWithoutResponse(handle: handle, value: value)
                case .long: try await client.writeLong(handle: handle, value: value)
                case .reliable: try await client.reliableWrite([ReliableWrites.Write(handle: handle, value: value)])
                }
            }
        } catch {
            await session.close()
            if case .uuid(let wanted) = target, case GATTError.notFound = error { throw noCharacteristic(wanted, on: peer) }
            if case GATTError.ambiguousUUID(let uuid, let handles) = error {
                throw severalAttributes(uuid, handles: handles, on: peer, command: "write")
            }
            throw CommandFailure.from(error, doing: "writing to \(peer)")
        }
        await session.close()
        // The violations met on the way, as `event` lines before the result.
        SessionDiagnostics.current?.drainEvents(into: &output)
        if options.json {
            var json = JSONWriter()
            json.beginObject()
            json.field("kind", "write")
            json.field("handle", Int(handle))
            json.field("length", value.count)
            json.endObject()
            output.writeLine(bytes: json.bytes)
        } else {
            // A Write Command has no answer: it was sent, not known to be written.
            let verb = mode == .noResponse ? "sent" : "wrote"
            output.writeLine("\(verb) \(value.count) octet\(value.count == 1 ? "" : "s") to 0x\(hex(handle, 4))")
        }
    }
}

/// Values for people: hex, and the value decoded by its type — a SensorTag reading, a standard
/// characteristic or descriptor (``StandardValues``), the text of a text type. A vendor type we
/// do not know shows its text when every octet is printable UTF-8; a value whose type is unknown
/// (a handle whose type could not be learnt) or that is malformed for its type gets no guess.
enum ValueText {
    /// The value decoded, and whether it is text (shown in quotes); nil when nothing decodes.
    static func decodedValue(_ value: [UInt8], uuid: BluetoothUUID?) -> (text: String, isText: Bool)? {
        guard let uuid else { return nil }
        if let sensor = SensorTag.sensor(data: uuid), let reading = SensorTag.decode(sensor, value) {
            return ("\(reading)", false)
        }
        if StandardValues.knowsFormat(of: uuid) {
            return StandardValues.decode(value, uuid: uuid).map { ($0, StandardValues.textTypes.contains(uuid)) }
        }
        if GATTNames.entry(for: uuid)?.isVendor == false { return nil }  // a SIG type whose format we do not decode
        if !value.isEmpty, let string = String(validating: value, as: UTF8.self),
            string.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
        {
            return (string, true)
        }
        return nil
    }

    /// The value decoded, for JSON's `decoded` and `info`; nil when nothing decodes.
    static func decoded(_ value: [UInt8], uuid: BluetoothUUID?) -> String? { decodedValue(value, uuid: uuid)?.text }

    /// `64  100 %`, `43433236…  "CC2650 SensorTag"`, or the hex alone.
    static func describe(_ value: [UInt8], uuid: BluetoothUUID?) -> String {
        var text = value.isEmpty ? "(empty)" : Hex.encode(value)
        if let (decoded, isText) = decodedValue(value, uuid: uuid) {
            text += isText ? "  \"\(decoded)\"" : "  \(decoded)"
        }
        return text
    }
}
