import ATT
import Bluetooth
import GATT

/// Targets over GATT: the client procedures and the server.
enum GATTFuzz {
    // MARK: client procedures

    /// GATT client procedures fed arbitrary responses: requests fit ATT_MTU, done/fail is final,
    /// and once the input runs dry, Attribute Not Found answers end the procedure within a
    /// bound proportional to what it has found so far.
    static func clientProcedure(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let selector = input.byte()
        let mtu = 23 + Int(input.byte())
        let handle = max(1, input.uint16())
        let uuid: BluetoothUUID = input.byte() & 1 == 0 ? 0x2A00 : BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0")!
        let range: ClosedRange<UInt16> = handle...max(handle, input.uint16())
        switch selector % 16 {
        case 0: drive(DiscoverAllPrimaryServices(range: range, mtu: mtu), mtu, &input)
        case 1: drive(DiscoverPrimaryServiceByServiceUUID(uuid: uuid, range: range, mtu: mtu), mtu, &input)
        case 2: drive(FindIncludedServices(range: range, mtu: mtu), mtu, &input)
        case 3: drive(DiscoverAllCharacteristics(range: range, mtu: mtu), mtu, &input)
        case 4: drive(DiscoverCharacteristicsByUUID(uuid: uuid, range: range, mtu: mtu), mtu, &input)
        case 5: drive(DiscoverAllCharacteristicDescriptors(range: range, mtu: mtu), mtu, &input)
        case 6: drive(ReadCharacteristicValue(handle: handle, mtu: mtu), mtu, &input)
        case 7: drive(ReadUsingCharacteristicUUID(uuid: uuid, range: range, mtu: mtu), mtu, &input)
        case 8: drive(ReadLongCharacteristicValues(handle: handle, offset: range.upperBound % 600, mtu: mtu), mtu, &input)
        case 9: drive(ReadMultipleCharacteristicValues(handles: [handle, range.upperBound], mtu: mtu), mtu, &input)
        case 10:
            drive(ReadMultipleVariableLengthCharacteristicValues(handles: [handle, range.upperBound], mtu: mtu), mtu, &input)
        case 11: drive(WriteCharacteristicValue(handle: handle, value: input.chunk(), mtu: mtu), mtu, &input)
        case 12:
            let value = input.longChunk(limit: 600)
            drive(WriteLongCharacteristicValues(handle: handle, value: value, offset: range.upperBound % 600, mtu: mtu), mtu, &input)
        case 13:
            let writes = [
                ReliableWrites.Write(handle: handle, value: input.chunk()),
                ReliableWrites.Write(handle: range.upperBound, value: input.chunk(), offset: UInt16(input.byte())),
            ]
            drive(ReliableWrites(writes: writes, mtu: mtu), mtu, &input)
        default: drive(DatabaseDiscovery(range: range, mtu: mtu, findIncludes: selector & 0x10 == 0), mtu, &input)
        }
    }

    private static func drive<P: GATTClientProcedure>(_ procedure: P, _ initialMTU: Int, _ input: inout FuzzInput) {
        var procedure = procedure
        var mtu = initialMTU
        var action = procedure.start()
        var sends = 0
        var starvedSteps = 0
        while case .send(let request) = action {
            sends += 1
            require(request.encodedLength <= mtu, "request \(request.opcode) of \(request.encodedLength) octets over ATT_MTU \(mtu)")
            require(sends <= 200_000, "more than 200 000 requests")
            if input.isEmpty {
                // The peer now answers everything with Attribute Not Found.
                starvedSteps += 1
                require(starvedSteps <= 4 * sends + 64, "no end after \(starvedSteps) Attribute Not Found answers")
                action = procedure.receive(
                    .errorResponse(ErrorResponse(requestOpcode: request.opcode, handle: 0x0001, errorCode: .attributeNotFound)))
                continue
            }
            let control = input.byte()
            if control & 0xE0 == 0xE0 {
                // ATT_MTU grows mid-procedure (an exchange finished).
                mtu = min(517, mtu + Int(control & 0x1F) * 8)
                procedure.updateMTU(mtu)
            }
            let answer = input.longChunk(limit: 600)
            let pdu = (try? ATTPDU(decoding: answer))
                ?? .errorResponse(ErrorResponse(requestOpcode: request.opcode, handle: 0x0001, errorCode: .attributeNotFound))
            action = procedure.receive(pdu)
        }
        // done/fail is final: anything fed afterwards is refused.
        let after = procedure.receive(.handleValueConfirmation(HandleValueConfirmation()))
        if case .fail = after {} else { require(false, "the procedure acted after it ended: \(after)") }
    }

    // MARK: server

    static let secretUUID = BluetoothUUID("0000FF01-0000-1000-8000-00805F9B34FB")!

    /// The database: one characteristic per permission shape.
    static let database: AttributeDatabase = {
        func characteristic(
            _ uuid: UInt16, _ properties: CharacteristicProperties, _ permissions: AttributePermissions, _ value: String,
            descriptors: [DescriptorDefinition] = []
        ) -> CharacteristicDefinition {
            CharacteristicDefinition(
                uuid: .bit16(uuid), properties: properties, permissions: permissions, value: Array(value.utf8),
                descriptors: descriptors)
        }
        let services = [
            ServiceDefinition(
                uuid: GATTUUID.genericAccess,
                characteristics: [characteristic(0x2A00, [.read], [.read], "Fuzz")]),
            StandardServices.genericAttributeWithServiceChangedOnly(),
            ServiceDefinition(
                uuid: 0xFFF0,
                characteristics: [
                    characteristic(0xFFF1, [.read, .write, .notify], .readWrite, "open", descriptors: [.clientConfiguration(), .userDescription("open")]),
                    characteristic(0xFFF2, [.read, .write], [.readEncrypted, .writeEncrypted], "encrypted"),
                    characteristic(0xFFF3, [.read, .write, .indicate], [.readAuthenticated, .writeAuthenticated], "authenticated",
                        descriptors: [.clientConfiguration(permissions: [.readAuthenticated, .writeAuthenticated])]),
                    characteristic(0xFFF4, [.read, .write], [.readAuthorized, .writeAuthorized], "authorized"),
                    characteristic(0xFFF5, [.write, .writeWithoutResponse], [.write], "write-only"),
                    characteristic(0xFFF6, [.read], [], "no access",
                        descriptors: [DescriptorDefinition(uuid: secretUUID, permissions: [.readEncrypted], value: Array("desc-secret".utf8))]),
                    characteristic(0xFFF7, [.read, .write], [.read, .writeEncrypted], String(repeating: "L", count: 300)),
                    characteristic(0xFFF8, [.read], [.read], String(repeating: "R", count: 100)),
                ]),
        ]
        return try! AttributeDatabase(services: services)
    }()

    /// GATT server fed arbitrary requests from clients at every security level: never returns
    /// or changes an attribute the permissions forbid; every response fits ATT_MTU.
    static func server(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var server = GATTServer(database: database)
        let security = SecurityLevel(rawValue: 1 + Int(input.byte() % 4)) ?? .none
        let authorized = input.byte() & 1 == 1
        var mtu = 23 + Int(input.byte())
        let client = server.connect(mtu: mtu, security: security)
        server.setAuthorized(authorized, for: client)
        let initial = database.attributes
        var steps = 0
        while !input.isEmpty && steps < 300 {
            steps += 1
            // The bearer hands the server only well-formed requests within ATT_MTU.
            guard let request = try? ATTPDU(decoding: input.longChunk(limit: 600), mtu: mtu) else { continue }
            let response = server.respond(to: request, from: client)
            if case .exchangeMTURequest(let exchange) = request, case .exchangeMTUResponse(let answer)? = response {
                mtu = max(23, min(Int(exchange.clientRxMTU), Int(answer.serverRxMTU)))
            }
            if let response {
                require(response.encodedLength <= mtu, "\(response.opcode) of \(response.encodedLength) octets over ATT_MTU \(mtu)")
                checkRead(request, response, security: security, authorized: authorized)
                if case .writeResponse = response, case .writeRequest(let write) = request {
                    require(canWrite(write.handle, security, authorized), "Write Response for forbidden 0x\(write.handle)")
                }
            }
            _ = server.takeEvents()
            // No attribute the client may not write has changed.
            for (old, new) in zip(initial, server.database.attributes) where old.value != new.value {
                require(
                    old.permissions.writeError(at: security, authorized: authorized) == nil,
                    "attribute 0x\(old.handle) (\(old.permissions)) changed by a client at \(security)")
            }
        }
        server.disconnect(client)
    }

    private static func canRead(_ handle: UInt16, _ security: SecurityLevel, _ authorized: Bool) -> Bool {
        guard let attribute = database.attribute(at: handle) else { return false }
        return attribute.permissions.readError(at: security, authorized: authorized) == nil
    }

    private static func canWrite(_ handle: UInt16, _ security: SecurityLevel, _ authorized: Bool) -> Bool {
        guard let attribute = database.attribute(at: handle) else { return false }
        return attribute.permissions.writeError(at: security, authorized: authorized) == nil
    }

    /// Every value in a read answer comes from an attribute the client may read.
    private static func checkRead(_ request: ATTPDU, _ response: ATTPDU, security: SecurityLevel, authorized: Bool) {
        switch (request, response) {
        case (.readRequest(let read), .readResponse):
            require(canRead(read.handle, security, authorized), "Read Response for forbidden handle \(read.handle)")
        case (.readBlobRequest(let read), .readBlobResponse):
            require(canRead(read.handle, security, authorized), "Read Blob Response for forbidden handle \(read.handle)")
        case (.readMultipleRequest(let read), .readMultipleResponse):
            for handle in read.handles {
                require(canRead(handle, security, authorized), "Read Multiple Response with forbidden handle \(handle)")
            }
        case (.readMultipleVariableRequest(let read), .readMultipleVariableResponse):
            for handle in read.handles {
                require(canRead(handle, security, authorized), "Read Multiple Variable Response with forbidden handle \(handle)")
            }
        case (_, .readByTypeResponse(let answer)):
            for entry in answer.entries {
                require(canRead(entry.handle, security, authorized), "Read By Type Response with forbidden handle \(entry.handle)")
            }
        case (_, .readByGroupTypeResponse(let answer)):
            for entry in answer.entries {
                require(canRead(entry.handle, security, authorized), "Read By Group Type Response with forbidden handle \(entry.handle)")
            }
        case (_, .readResponse), (_, .readBlobResponse), (_, .readMultipleResponse), (_, .readMultipleVariableResponse):
            require(false, "\(response.opcode) answering \(request.opcode)")
        default:
            break
        }
    }
}
