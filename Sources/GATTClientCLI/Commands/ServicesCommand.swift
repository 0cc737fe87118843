import BLE
import ATT
import Bluetooth
import GATT
import Synchronization

/// `services ADDR`: the whole database — services, included services, characteristics with
/// properties, descriptors — as a tree with SIG names and handles, or DESIGN.md's JSON. With
/// `--values`, every characteristic value with the read property and every descriptor is read
/// (whole) and shown decoded; a read the server refuses shows its ATT error, and one refused for
/// the link's security raises it first (bond, else pairing), as `read` does.
struct ServicesCommand {
    var peer: PeerAddress
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil
    /// `--values`.
    var readsValues = false

    /// What reading one attribute gave.
    enum ReadOutcome: Equatable {
        case value([UInt8])
        /// The server's ATT error (the read went on with the next attribute).
        case refused(ATTErrorCode)
        /// Refused for the link's security, which could not be raised (the pairing failed or was
        /// refused): the ATT error and why.
        case unsecured(ATTErrorCode, String)
    }

    func run(options: GlobalOptions, replayMatchAny: Bool, output: inout BufferedOutput) async throws {
        let session = try await CommandConnection.open(peer, options: options, replayMatchAny: replayMatchAny, central: central)
        let database: GATTDatabase
        do {
            database = try await session.client.discoverDatabase()
        } catch {
            await session.close()
            throw CommandFailure.gatt(error, doing: "discovering \(peer)")
        }
        var values: [UInt16: ReadOutcome]?
        if readsValues {
            do {
                values = try await Self.readValues(of: database, session: session)
            } catch {
                await session.close()
                throw CommandFailure.from(error, doing: "reading the values of \(peer)")
            }
        }
        // Values that stayed unread because security could not be raised: said once; the tree is
        // printed all the same (exit 0), unless --strict.
        let unsecured = values?.values.compactMap { outcome -> String? in
            if case .unsecured(_, let why) = outcome { return why }
            return nil
        } ?? []
        if let why = unsecured.first {
            SessionDiagnostics.libraryMessage(
                "warning: \(unsecured.count) value(s) not read: the link's security could not be raised (\(why))")
        }
        let mtu = await session.connection.mtu
        // Every bearer's requests (Enhanced ATT bearers included).
        var requests = 0
        let bearers = await session.client.bearers
        for bearer in bearers { requests += await bearer.requestsSent }
        // With Enhanced ATT bearers: how many, and the discovery's sequential round trips.
        let enhanced = bearers.count > 1 ? (bearers: bearers.count, roundTrips: await session.client.lastDiscovery?.roundTrips) : nil
        await session.close()
        // The violations met on the way, as `event` lines before the result.
        SessionDiagnostics.current?.drainEvents(into: &output)
        if options.json {
            output.writeLine(bytes: Self.json(database, peer: peer, mtu: mtu, requests: requests, values: values, enhanced: enhanced))
        } else {
            let style = TextStyle.forDescriptor(output.fileDescriptor)
            for line in Self.tree(database, peer: peer, mtu: mtu, requests: requests, style: style, values: values, enhanced: enhanced) {
                output.writeLine(line)
            }
        }
        if options.strict, let why = unsecured.first {
            output.flush()
            throw CommandFailure("--strict: \(unsecured.count) value(s) not read, the link's security could not be raised: \(why)", kind: "security")
        }
    }

    /// Reads every characteristic value with the read property and every descriptor, whole, in
    /// handle order. An ATT error for one is kept as its outcome; one for the link's security
    /// raises it and reads again; anything else (the link lost) ends the command.
    ///
    /// When raising security fails (a pairing that cannot happen: no passkey, refused, failed),
    /// that value shows the ATT error and why, the rest are read without trying again.
    static func readValues(of database: GATTDatabase, session: CommandConnection) async throws -> [UInt16: ReadOutcome] {
        var outcomes: [UInt16: ReadOutcome] = [:]
        let client = session.client
        var handles: [UInt16] = []
        for service in database.services {
            for characteristic in service.characteristics {
                if characteristic.properties.contains(.read) { handles.append(characteristic.valueHandle) }
                handles += characteristic.descriptors.map(\.handle)
            }
        }
        var securityFailure: String?
        for handle in handles {
            let refusal = Mutex<ATTErrorCode?>(nil)
            do {
                let value: [UInt8]
                if securityFailure == nil {
                    value = try await session.peripheral.securing(doing: "reading 0x\(hex(handle, 4))") {
                        do {
                            return try await client.read(handle: handle, complete: true)
                        } catch {
                            if case GATTError.peerError(_, _, let code)? = error as? GATTError { refusal.withLock { $0 = code } }
                            throw error
                        }
                    }
                } else {
                    value = try await client.read(handle: handle, complete: true)
                }
                outcomes[handle] = .value(value)
            } catch GATTError.peerError(_, _, let code) {
                outcomes[handle] = securityFailure.map { .unsecured(code, $0) } ?? .refused(code)
            } catch let error as BLEError where error.kind == "pairing" || error.kind == "security" {
                // Raising security failed: this value, and those refused after it, say so.
                guard let code = refusal.withLock({ $0 }), await session.peripheral.state == .connected else { throw error }
                securityFailure = error.message
                outcomes[handle] = .unsecured(code, error.message)
            }
        }
        return outcomes
    }

    /// A value as the tree shows it: hex and decoded, or the refusal.
    static func describe(_ outcome: ReadOutcome, uuid: BluetoothUUID) -> String {
        switch outcome {
        case .value(let value): return ValueText.describe(value, uuid: uuid)
        case .refused(let code): return "(not read: \(code))"
        case .unsecured(let code, _): return "(not read: \(code); the link's security could not be raised)"
        }
    }

    static func writeValue(_ outcome: ReadOutcome?, uuid: BluetoothUUID, into json: inout JSONWriter) {
        switch outcome {
        case .value(let value)?:
            json.field("value", hex: value)
            if let decoded = ValueText.decoded(value, uuid: uuid) { json.field("decoded", decoded) }
        case .refused(let code)?:
            json.field("readError", Int(code.rawValue))
            json.field("readErrorName", code.description)
        case .unsecured(let code, let why)?:
            json.field("readError", Int(code.rawValue))
            json.field("readErrorName", code.description)
            json.field("securityError", why)
        case nil:
            break
        }
    }

    static func json(
        _ database: GATTDatabase, peer: PeerAddress, mtu: Int, requests: Int, values: [UInt16: ReadOutcome]? = nil,
        enhanced: (bearers: Int, roundTrips: Int?)? = nil
    ) -> [UInt8] {
        var json = JSONWriter(capacity: 4096)
        json.beginObject()
        json.field("kind", "services")
        json.field("address", peer.address.description)
        json.field("addressType", peer.type == .random ? "random" : "public")
        json.field("mtu", mtu)
        json.field("attRequests", requests)
        if let enhanced {
            json.field("bearers", enhanced.bearers)
            if let trips = enhanced.roundTrips { json.field("attRoundTrips", trips) }
        }
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
                writeValue(values?[characteristic.valueHandle], uuid: characteristic.uuid, into: &json)
                json.beginArray("descriptors")
                for descriptor in characteristic.descriptors {
                    json.beginObject()
                    json.field("uuid", jsonUUID(descriptor.uuid))
                    if let name = GATTNames.name(for: descriptor.uuid) { json.field("name", name) }
                    json.field("handle", Int(descriptor.handle))
                    writeValue(values?[descriptor.handle], uuid: descriptor.uuid, into: &json)
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
        _ database: GATTDatabase, peer: PeerAddress, mtu: Int, requests: Int, style: TextStyle = .plain,
        values: [UInt16: ReadOutcome]? = nil, enhanced: (bearers: Int, roundTrips: Int?)? = nil
    ) -> [String] {
        var summary = "\(peer): \(database.services.count) services, ATT_MTU \(mtu), \(requests) ATT requests"
        if let enhanced {
            summary += " on \(enhanced.bearers) bearers" + (enhanced.roundTrips.map { " (\($0) in sequence)" } ?? "")
        }
        var lines = [summary]
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
                if let outcome = values?[characteristic.valueHandle] {
                    lines.append("    = " + describe(outcome, uuid: characteristic.uuid))
                }
                for descriptor in characteristic.descriptors {
                    var line = "    descriptor \(displayName(descriptor.uuid))  " + style.dim("0x\(hex(descriptor.handle, 4))")
                    if let outcome = values?[descriptor.handle] { line += "  = " + describe(outcome, uuid: descriptor.uuid) }
                    lines.append(line)
                }
            }
        }
        return lines
    }
}
