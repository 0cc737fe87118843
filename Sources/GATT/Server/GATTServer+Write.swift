import ATT
import Bluetooth

/// The server side of the write requests and commands: Write Request, Write Command, Signed
/// Write Command, Prepare Write and Execute Write.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.5, §3.4.6; Vol 3, Part G, §4.9, §4.12
extension GATTServer {
    // MARK: Checks

    /// The error a write of the whole new `value` must get, permissions first, or `nil`.
    func writeError(
        _ attribute: ServerAttribute, _ value: [UInt8], _ client: ClientState, security: SecurityLevel
    ) -> ATTErrorCode? {
        if let code = attribute.permissions.writeError(at: security, authorized: client.authorized) { return code }
        return valueError(attribute, value, client)
    }

    /// The error a new `value` breaks: too long or of the wrong length (Invalid Attribute
    /// Value Length 0x0D); a Client Characteristic Configuration with reserved bits or asking
    /// for what the characteristic cannot do (0xFD, Vol 3 Part G §3.3.3.3 and the Core
    /// Specification Supplement's Common Profile errors; BlueZ's gatt-database answers these
    /// writes the same way); Client Supported Features clearing
    /// a bit the client set (Value Not Allowed 0x13, Vol 3 Part G §7.2).
    func valueError(_ attribute: ServerAttribute, _ value: [UInt8], _ client: ClientState) -> ATTErrorCode? {
        guard value.count <= attribute.maximumLength else { return .invalidAttributeValueLength }
        if attribute.isFixedLength, value.count != attribute.value.count { return .invalidAttributeValueLength }
        if attribute.isClientConfiguration {
            guard value.count == 2 else { return .invalidAttributeValueLength }
            let requested = ClientCharacteristicConfiguration(rawValue: UInt16(value[0]) | UInt16(value[1]) << 8)
            var allowed: ClientCharacteristicConfiguration = []
            let properties = attribute.characteristicValueHandle.flatMap(database.properties(ofValue:)) ?? []
            if properties.contains(.notify) { allowed.insert(.notifications) }
            if properties.contains(.indicate) { allowed.insert(.indications) }
            guard allowed.isSuperset(of: requested) else { return .cccdImproperlyConfigured }
        }
        if isClientSupportedFeatures(attribute) {
            let old = currentValue(attribute, client)
            for (index, bits) in old.enumerated() where bits & ~(index < value.count ? value[index] : 0) != 0 {
                return .valueNotAllowed
            }
        }
        return nil
    }

    private func isClientSupportedFeatures(_ attribute: ServerAttribute) -> Bool {
        attribute.kind == .characteristicValue && attribute.type == GATTUUID.clientSupportedFeatures
    }

    /// Stores a checked value: per client for configurations and Client Supported Features,
    /// in the database otherwise.
    mutating func apply(_ attribute: ServerAttribute, _ value: [UInt8], _ client: ClientID) {
        if attribute.isClientConfiguration {
            let raw = UInt16(value[0]) | UInt16(value[1]) << 8
            clients[client, default: ClientState()].clientConfigurations[attribute.handle] = raw
            record(
                .clientConfigurationChanged(
                    client, valueHandle: attribute.characteristicValueHandle ?? attribute.handle,
                    ClientCharacteristicConfiguration(rawValue: raw)))
            return
        }
        if isClientSupportedFeatures(attribute) {
            var stored = value
            // Reserved bits of the first octet are not kept (Vol 3 Part G §7.2).
            if !stored.isEmpty { stored[0] &= ClientSupportedFeatures.defined.rawValue }
            clients[client, default: ClientState()].supportedFeatures = stored
            record(.valueWritten(client, handle: attribute.handle, value: stored))
            return
        }
        do {
            try database.setValue(value, handle: attribute.handle)
            record(.valueWritten(client, handle: attribute.handle, value: value))
        } catch {
            // Unreachable: `valueError` checked the length and the handle exists.
        }
    }

    // MARK: Write Request, Write Command

    /// §3.4.5.1/§3.4.5.2.
    mutating func write(_ request: WriteRequest, _ client: ClientID) -> ATTPDU {
        let state = state(client)
        guard let attribute = database.attribute(at: request.handle) else {
            return error(WriteRequest.opcode, request.handle, .invalidHandle)
        }
        if let code = writeError(attribute, request.value, state, security: state.security) {
            return error(WriteRequest.opcode, request.handle, code)
        }
        apply(attribute, request.value, client)
        return .writeResponse(WriteResponse())
    }

    /// §3.4.5.3: as a Write Request, but a refused write is dropped silently.
    mutating func writeCommand(_ command: WriteCommand, _ client: ClientID) {
        let state = state(client)
        guard let attribute = database.attribute(at: command.handle),
            writeError(attribute, command.value, state, security: state.security) == nil
        else { return }
        apply(attribute, command.value, client)
    }

    // MARK: Signed Write Command

    /// §3.4.5.4 and Vol 3 Part C §10.4.2: verified with the client's CSRK; the SignCounter
    /// must exceed the last one accepted. Without a key, with a bad signature or a replayed
    /// counter the command is dropped (an event says why). A valid signature counts as an
    /// encrypted link (authenticated when the key came from authenticated pairing).
    mutating func signedWrite(_ command: SignedWriteCommand, _ client: ClientID) {
        let state = state(client)
        func reject(_ reason: String) {
            record(.signedWriteRejected(client, handle: command.handle, reason: reason))
        }
        guard let key = state.signingKey else { return reject("no CSRK for this client") }
        if let last = state.lastSignCounter, command.signCounter <= last {
            return reject("SignCounter \(command.signCounter) not above \(last)")
        }
        var message: [UInt8] = [SignedWriteCommand.opcode.rawValue]
        message += [UInt8(truncatingIfNeeded: command.handle), UInt8(truncatingIfNeeded: command.handle >> 8)]
        message += command.value
        let expected: UInt64
        do {
            expected = try ATTSigning.mac(csrk: key, message: message, signCounter: command.signCounter)
        } catch {
            return reject("signature not computed: \(error)")
        }
        guard expected == command.mac else { return reject("signature mismatch") }
        clients[client]?.lastSignCounter = command.signCounter
        let security = max(state.security, state.signingKeyAuthenticated ? .authenticated : .encrypted)
        guard let attribute = database.attribute(at: command.handle) else { return reject("no attribute") }
        if let code = writeError(attribute, command.value, state, security: security) {
            return reject("write refused: \(code)")
        }
        apply(attribute, command.value, client)
    }

    // MARK: Queued writes

    /// §3.4.6.1/§3.4.6.2: permissions are checked now; offsets and lengths at execution. The
    /// queue holds `preparedWriteLimit` requests and `preparedOctetsPerAttribute` octets per
    /// attribute, then Prepare Queue Full.
    mutating func prepareWrite(_ request: PrepareWriteRequest, _ client: ClientID) -> ATTPDU {
        let state = state(client)
        guard let attribute = database.attribute(at: request.handle) else {
            return error(PrepareWriteRequest.opcode, request.handle, .invalidHandle)
        }
        if let code = attribute.permissions.writeError(at: state.security, authorized: state.authorized) {
            return error(PrepareWriteRequest.opcode, request.handle, code)
        }
        let queuedOctets = state.prepareQueue.reduce(0) { $0 + ($1.handle == request.handle ? $1.value.count : 0) }
        guard state.prepareQueue.count < configuration.preparedWriteLimit,
            queuedOctets + request.value.count <= configuration.preparedOctetsPerAttribute
        else {
            return error(PrepareWriteRequest.opcode, request.handle, .prepareQueueFull)
        }
        clients[client, default: ClientState()].prepareQueue.append(request)
        return .prepareWriteResponse(PrepareWriteResponse(echoing: request))
    }

    /// §3.4.6.3/§3.4.6.4: cancel clears the queue; write applies every queued value in order,
    /// all or nothing. Each part is written at its offset over the value so far (Invalid Offset
    /// when the offset is past its end); the result ends where the furthest part ends, and
    /// must fit the attribute (Invalid Attribute Value Length). The queue is empty afterwards,
    /// whatever the outcome; an error names the handle of the first failing part.
    mutating func executeWrite(_ request: ExecuteWriteRequest, _ client: ClientID) -> ATTPDU {
        let state = state(client)
        let queue = state.prepareQueue
        clients[client, default: ClientState()].prepareQueue = []
        guard request.flags == .writeAll else { return .executeWriteResponse(ExecuteWriteResponse()) }

        var order: [UInt16] = []
        var working: [UInt16: [UInt8]] = [:]
        var furthest: [UInt16: Int] = [:]
        for part in queue {
            guard let attribute = database.attribute(at: part.handle) else {
                return error(ExecuteWriteRequest.opcode, part.handle, .invalidHandle)
            }
            if working[part.handle] == nil {
                order.append(part.handle)
                working[part.handle] = currentValue(attribute, state)
            }
            var value = working[part.handle] ?? []
            let offset = Int(part.offset)
            guard offset <= value.count else { return error(ExecuteWriteRequest.opcode, part.handle, .invalidOffset) }
            let end = offset + part.value.count
            guard end <= attribute.maximumLength else {
                return error(ExecuteWriteRequest.opcode, part.handle, .invalidAttributeValueLength)
            }
            if value.count < end { value += [UInt8](repeating: 0, count: end - value.count) }
            value.replaceSubrange(offset..<end, with: part.value)
            working[part.handle] = value
            furthest[part.handle] = max(furthest[part.handle] ?? 0, end)
        }
        var writes: [(ServerAttribute, [UInt8])] = []
        for handle in order {
            guard let attribute = database.attribute(at: handle), let value = working[handle] else { continue }
            let final = Array(value.prefix(furthest[handle] ?? value.count))
            if let code = writeError(attribute, final, state, security: state.security) {
                return error(ExecuteWriteRequest.opcode, handle, code)
            }
            writes.append((attribute, final))
        }
        for (attribute, value) in writes { apply(attribute, value, client) }
        return .executeWriteResponse(ExecuteWriteResponse())
    }

    /// The number of Prepare Write Requests queued for `client`.
    public func preparedWriteCount(of client: ClientID) -> Int { clients[client]?.prepareQueue.count ?? 0 }
}
