import BLE
import ATT
import Bluetooth
import GATT

/// `services ADDR`: the whole database — services, included services, characteristics with
/// properties, descriptors — as a tree with SIG names and handles, or DESIGN.md's JSON.
struct ServicesCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        let database: GATTDatabase
        do {
            database = try await session.client.discoverDatabase()
        } catch {
            await session.close()
            throw CommandFailure.gatt(error, doing: "discovering \(peer)")
        }
        let mtu = await session.connection.mtu
        let requests = await session.connection.requestsSent
        await session.close()
        // The violations met on the way, as `event` lines before the result.
        SessionDiagnostics.current?.drainEvents(into: &output)
        if options.json {
            output.writeLine(bytes: Self.json(database, peer: peer, mtu: mtu, requests: requests))
        } else {
            let style = TextStyle.forDescriptor(output.fileDescriptor)
            for line in Self.tree(database, peer: peer, mtu: mtu, requests: requests, style: style) {
                output.writeLine(line)
            }
        }
    }

    static func json(_ database: GATTDatabase, peer: PeerAddress, mtu: Int, requests: Int) -> [UInt8] {
        var json = JSONWriter(capacity: 4096)
        json.beginObject()
        json.field("kind", "services")
        json.field("address", peer.address.description)
        json.field("addressType", peer.type == .random ? "random" : "public")
        json.field("mtu", mtu)
        json.field("attRequests", requests)
        json.beginArray("services")
        for service in database.services {
            json.beginObject()
            json.field("uuid", jsonUUID(service.uuid))
            if let name = GATTNames.name(for: service.uuid) { json.field("name", name) }
            json.field("start", Int(service.startHandle))
            json.field("end", Int(service.endHandle))
            json.field("primary", service.isPrimary)
            json.beginArray("includes")
            for include in service.includes {
                json.beginObject()
                json.field("handle", Int(include.handle))
                json.field("start", Int(include.startHandle))
                json.field("end", Int(include.endHandle))
                if let uuid = include.uuid { json.field("uuid", jsonUUID(uuid)) }
                json.endObject()
            }
            json.endArray()
            json.beginArray("characteristics")
            for characteristic in service.characteristics {
                json.beginObject()
                json.field("uuid", jsonUUID(characteristic.uuid))
                if let name = GATTNames.name(for: characteristic.uuid) { json.field("name", name) }
                json.field("declarationHandle", Int(characteristic.declarationHandle))
                json.field("valueHandle", Int(characteristic.valueHandle))
                json.beginArray("properties")
                for name in characteristic.properties.names { json.element(name) }
                json.endArray()
                json.beginArray("descriptors")
                for descriptor in characteristic.descriptors {
                    json.beginObject()
                    json.field("uuid", jsonUUID(descriptor.uuid))
                    if let name = GATTNames.name(for: descriptor.uuid) { json.field("name", name) }
                    json.field("handle", Int(descriptor.handle))
                    json.endObject()
                }
                json.endArray()
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return json.bytes
    }

    /// The readable tree (on a terminal: services bold, characteristics cyan, handles dim).
    static func tree(
        _ database: GATTDatabase, peer: PeerAddress, mtu: Int, requests: Int, style: TextStyle = .plain
    ) -> [String] {
        var lines = ["\(peer): \(database.services.count) services, ATT_MTU \(mtu), \(requests) ATT requests"]
        for service in database.services {
            lines.append(
                "\(service.isPrimary ? "primary" : "secondary") service \(style.bold(displayName(service.uuid)))  "
                    + style.dim("handles 0x\(hex(service.startHandle, 4))-0x\(hex(service.endHandle, 4))"))
            for include in service.includes {
                lines.append("  include \(include.uuid.map(displayName) ?? "service")  0x\(hex(include.startHandle, 4))-0x\(hex(include.endHandle, 4))")
            }
            for characteristic in service.characteristics {
                lines.append(
                    "  characteristic \(style.cyan(displayName(characteristic.uuid)))  "
                        + style.dim("value 0x\(hex(characteristic.valueHandle, 4))")
                        + "  [\(characteristic.properties.names.joined(separator: ", "))]")
                for descriptor in characteristic.descriptors {
                    lines.append(
                        "    descriptor \(displayName(descriptor.uuid))  " + style.dim("0x\(hex(descriptor.handle, 4))"))
                }
            }
        }
        return lines
    }
}
