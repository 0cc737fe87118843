import BLE
import ATT
import Bluetooth
import GATT

/// `info ADDR`: what the device says it is, decoded — GAP name, appearance and preferred
/// connection parameters, the Device Information strings, System ID and PnP ID, the battery
/// level — with the address type, the ATT_MTU and the connection parameters where the transport shows them. Each value is one Read Using Characteristic UUID
/// (no discovery); a value the device does not have is left out, one refused for security raises
/// it (bond, else pairing) as `read` does.
struct InfoCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil

    /// What is read, in the order shown: (UUID, label).
    static let fields: [(UInt16, String)] = [
        (0x2A00, "name"), (0x2A01, "appearance"), (0x2A04, "preferred parameters"),
        (0x2A29, "manufacturer"), (0x2A24, "model"), (0x2A25, "serial number"), (0x2A27, "hardware revision"),
        (0x2A26, "firmware revision"), (0x2A28, "software revision"), (0x2A23, "system ID"), (0x2A50, "PnP ID"),
        (0x2A19, "battery"),
    ]

    func run(options: GlobalOptions, output: inout BufferedOutput) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: false, central: central)
        var values: [(UInt16, String, [UInt8])] = []
        let mtu: Int
        do {
            let client = session.client
            for (uuid, label) in Self.fields {
                let found: [ReadByTypeResponse.AttributeData]
                do {
                    found = try await session.peripheral.securing(doing: "reading \(label) from \(peer)") {
                        try await client.read(uuid: .bit16(uuid))
                    }
                } catch {
                    // Attribute Not Found: the device has no such value.
                    if isNoSuchCharacteristic(error) { continue }
                    throw error
                }
                guard let entry = found.first else { continue }
                values.append((uuid, label, try await wholeValue(entry, client: client)))
            }
            mtu = await client.mtu
        } catch {
            await session.close()
            throw CommandFailure.from(error, doing: "reading what \(peer) is")
        }
        let peer = session.peer
        let parameters = session.peripheral.connectionParameters
        // The link's RSSI now, where our host runs the link; a controller without Read RSSI is said.
        var rssi: Int?
        if session.peripheral.phy != nil {
            do {
                rssi = try await session.peripheral.readRSSI()
            } catch {
                SessionDiagnostics.libraryMessage("warning: \(error.message)")
            }
        }
        let phy = session.peripheral.phy
        let dataLength = session.peripheral.dataLength
        await session.close()
        SessionDiagnostics.current?.drainEvents(into: &output)
        if options.json {
            var json = JSONWriter()
            json.beginObject()
            json.field("kind", "info")
            json.field("address", peer.address.description)
            json.field("addressType", peer.type == .random ? "random" : "public")
            json.field("mtu", mtu)
            if let parameters {
                json.beginObject("connectionParameters")
                json.field("intervalMs", parameters.intervalMilliseconds)
                json.field("peripheralLatency", Int(parameters.peripheralLatency))
                json.field("supervisionTimeoutMs", parameters.supervisionTimeoutMilliseconds)
                json.endObject()
            } else {
                json.fieldNull("connectionParameters")
            }
            if let rssi { json.field("rssi", rssi) } else { json.fieldNull("rssi") }
            if let phy {
                json.beginObject("phy")
                json.field("tx", "\(phy.tx)")
                json.field("rx", "\(phy.rx)")
                json.endObject()
            } else {
                json.fieldNull("phy")
            }
            if let dataLength {
                json.beginObject("dataLength")
                Self.writeDataLength(dataLength, into: &json)
                json.endObject()
            } else {
                json.fieldNull("dataLength")
            }
            for (uuid, label, value) in values {
                json.beginObject(JSONKey(Self.jsonKey(label)))
                json.field("uuid", jsonUUID(.bit16(uuid)))
                json.field("value", hex: value)
                if let decoded = Self.decoded(uuid, value) { json.field("decoded", decoded) }
                json.endObject()
            }
            json.endObject()
            output.writeLine(bytes: json.bytes)
            return
        }
        output.writeLine("\(peer.address) (\(peer.type == .random ? "random" : "public") address), ATT_MTU \(mtu)")
        for (uuid, label, value) in values {
            output.writeLine("  " + label.padding(toLength: 22) + (Self.decoded(uuid, value) ?? Hex.encode(value)))
        }
        output.writeLine(
            "  " + "connection".padding(toLength: 22)
                + (parameters.map(\.description) ?? "parameters not available (the kernel path hides the link layer)"))
        if let phy { output.writeLine("  " + "PHY".padding(toLength: 22) + "\(phy)") }
        if let dataLength { output.writeLine("  " + "data length".padding(toLength: 22) + "\(dataLength)") }
        if let rssi { output.writeLine("  " + "RSSI".padding(toLength: 22) + "\(rssi) dBm") }
    }

    /// The data length's four fields.
    static func writeDataLength(_ length: DataLength, into json: inout JSONWriter) {
        json.field("txOctets", length.txOctets)
        json.field("txTimeUs", length.txTime)
        json.field("rxOctets", length.rxOctets)
        json.field("rxTimeUs", length.rxTime)
    }

    /// `preferred parameters` → `preferredParameters`.
    static func jsonKey(_ label: String) -> String {
        let words = label.split(separator: " ")
        return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.prefix(1).uppercased() + $0.element.dropFirst() }
            .joined()
    }

    /// The value decoded for people; nil where it does not decode (shown as hex).
    static func decoded(_ uuid: UInt16, _ value: [UInt8]) -> String? { ValueText.decoded(value, uuid: .bit16(uuid)) }
}
