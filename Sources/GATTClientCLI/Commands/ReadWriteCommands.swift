import ATT
import Bluetooth
import GATT

/// `read ADDR HANDLE|UUID [--long] [--multiple H,H,...]`.
struct ReadCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    var target: AttributeSelector?
    var long = false
    var multiple: [UInt16] = []

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await GATTSession.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        var values: [(UInt16, [UInt8])] = []
        var single = false
        var uuid: BluetoothUUID?
        do {
            if !multiple.isEmpty {
                values = try await readMultiple(session.client)
            } else if case .handle(let handle)? = target {
                values = [(handle, long ? try await session.client.readLong(handle: handle) : try await session.client.read(handle: handle))]
                single = true
            } else if case .uuid(let wanted)? = target {
                // Read Using Characteristic UUID: no discovery needed.
                uuid = wanted
                let found = try await session.client.read(uuid: wanted)
                let mtu = await session.client.mtu
                for entry in found {
                    // A value the response had to cut (ATT_MTU − 4) is read again in full.
                    let full = long || entry.value.count >= mtu - 4
                    values.append((entry.handle, full ? try await session.client.readLong(handle: entry.handle) : entry.value))
                }
            }
        } catch {
            await session.close()
            throw CommandFailure.from(error, doing: "reading from \(peer)")
        }
        await session.close()
        if options.json {
            var json = JSONWriter()
            json.beginObject()
            if single, let (handle, value) = values.first {
                json.field("handle", Int(handle))
                json.field("value", hex: value)
            } else {
                json.beginArray("values")
                for (handle, value) in values {
                    json.beginObject()
                    json.field("handle", Int(handle))
                    json.field("value", hex: value)
                    json.endObject()
                }
                json.endArray()
            }
            json.endObject()
            output.writeLine(bytes: json.bytes)
        } else {
            for (handle, value) in values {
                output.writeLine("0x\(hex(handle, 4)): " + ValueText.describe(value, uuid: uuid))
            }
        }
    }

    /// Read Multiple Variable Length when the server has it (values come back separated);
    /// otherwise one Read per handle, since plain Read Multiple cannot tell the values apart.
    private func readMultiple(_ client: GATTClient) async throws -> [(UInt16, [UInt8])] {
        var out: [(UInt16, [UInt8])] = []
        let values: [ReadMultipleVariableResponse.LengthValue]
        do {
            values = try await client.run(ReadMultipleVariableLengthCharacteristicValues(handles: multiple, mtu: await client.mtu))
        } catch {
            guard case .peerError(_, _, .requestNotSupported) = error else { throw error }
            for handle in multiple { out.append((handle, try await client.read(handle: handle))) }
            return out
        }
        // The last value may have been cut at ATT_MTU: read it again in full.
        for (handle, entry) in zip(multiple, values) {
            if entry.value.count < Int(entry.length) {
                out.append((handle, try await client.readLong(handle: handle)))
            } else {
                out.append((handle, entry.value))
            }
        }
        return out
    }
}

/// `write ADDR HANDLE|UUID VALUE [--text STR] [--no-response] [--long] [--reliable]`.
struct WriteCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    var target: AttributeSelector
    var value: [UInt8]
    var mode: WriteMode = .request

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await GATTSession.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        let handle: UInt16
        do {
            switch target {
            case .handle(let given):
                handle = given
            case .uuid(let uuid):
                let found = try await session.client.findCharacteristics(uuid: uuid)
                guard let first = found.first else { throw GATTError.notFound(uuid) }
                guard found.count == 1 else { throw GATTError.ambiguousUUID(uuid, handles: found.map(\.valueHandle)) }
                handle = first.valueHandle
            }
            switch mode {
            case .request: try await session.client.write(handle: handle, value: value)
            case .noResponse: try await session.client.writeWithoutResponse(handle: handle, value: value)
            case .long: try await session.client.writeLong(handle: handle, value: value)
            case .reliable: try await session.client.reliableWrite([ReliableWrites.Write(handle: handle, value: value)])
            }
        } catch {
            await session.close()
            throw CommandFailure.from(error, doing: "writing to \(peer)")
        }
        await session.close()
        if options.json {
            var json = JSONWriter()
            json.beginObject()
            json.field("handle", Int(handle))
            json.field("length", value.count)
            json.endObject()
            output.writeLine(bytes: json.bytes)
        } else {
            output.writeLine("wrote \(value.count) octet\(value.count == 1 ? "" : "s") to 0x\(hex(handle, 4))")
        }
    }
}

/// Values for people: hex, the text when it is printable, and the decoded reading of a
/// characteristic we know.
enum ValueText {
    static func describe(_ value: [UInt8], uuid: BluetoothUUID?) -> String {
        var text = value.isEmpty ? "(empty)" : Hex.encode(value)
        if let uuid, let sensor = SensorTag.sensor(data: uuid), let reading = SensorTag.decode(sensor, value) {
            text += "  \(reading)"
        } else if !value.isEmpty, let string = String(validating: value, as: UTF8.self),
                  string.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) {
            text += "  \"\(string)\""
        }
        return text
    }
}
