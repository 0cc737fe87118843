import ATT
import Bluetooth

/// Finds the one characteristic with a UUID and its descriptors without discovering services
/// or sweeping every declaration: what `subscribe(uuid:)` needs.
///
/// 1. Read Using Characteristic UUID requests (§4.8.2) over 0x0001–0xFFFF name the value
///    handle(s): a value the server will not return still names its handle in the Error
///    Response (Vol 3 Part F §3.4.4.1: the Attribute Handle In Error is the attribute that
///    caused it). The search runs to Attribute Not Found, so a UUID used twice is reported.
/// 2. A Read Request on the handle before the value: the characteristic declaration, which
///    must name this value handle and UUID (the value immediately follows its declaration,
///    Vol 3 Part G §3.3).
/// 3. Find Information from the value to the next declaration (§4.7.1): the descriptors.
///
/// The result is nil when step 2 finds no matching declaration (a server that breaks the
/// layout, or an Error Response naming some other handle): the caller then falls back to
/// Discover Characteristics by UUID.
public struct LocateCharacteristic: GATTClientProcedure {
    public typealias Result = Characteristic?

    public let uuid: BluetoothUUID
    public private(set) var mtu: Int

    private enum Phase: Sendable {
        case idle
        case searching(from: UInt16)
        case declaration(value: UInt16)
        case descriptors(DiscoverAllCharacteristicDescriptors, Characteristic)
        case finished
    }

    private var phase = Phase.idle
    private var valueHandles: [UInt16] = []

    public init(uuid: BluetoothUUID, mtu: Int = GATTLimits.defaultMTU) {
        self.uuid = uuid
        self.mtu = mtu
    }

    public mutating func updateMTU(_ mtu: Int) {
        self.mtu = mtu
        if case .descriptors(var procedure, let characteristic) = phase {
            procedure.updateMTU(mtu)
            phase = .descriptors(procedure, characteristic)
        }
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard case .idle = phase else { return .misuse(.finished) }
        if let error = checkMTU(mtu) { return finish(.fail(error)) }
        return search(from: 0x0001)
    }

    private mutating func search(from start: UInt16) -> GATTProcedureAction<Result> {
        phase = .searching(from: start)
        return .send(
            .readByTypeRequest(ReadByTypeRequest(startingHandle: start, endingHandle: 0xFFFF, attributeType: uuid)))
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        if let error = checkLength(pdu, mtu: mtu) { return finish(.fail(error)) }
        switch phase {
        case .idle: return .misuse(.idle)
        case .finished: return .misuse(.finished)
        case .searching(let start):
            return searched(pdu, from: start)
        case .declaration(let value):
            switch pdu {
            case .readResponse(let response):
                guard let declaration = try? CharacteristicDeclaration(decoding: response.value, handle: value - 1),
                    declaration.valueHandle == value, declaration.uuid == uuid
                else { return finish(.done(nil)) }
                let characteristic = Characteristic(
                    uuid: uuid, declarationHandle: value - 1, valueHandle: value, endHandle: value,
                    properties: declaration.properties)
                guard value < 0xFFFF else { return finish(.done(characteristic)) }
                var procedure = DiscoverAllCharacteristicDescriptors(range: (value + 1)...0xFFFF, mtu: mtu)
                let action = procedure.start()
                phase = .descriptors(procedure, characteristic)
                return descriptorsAction(action, characteristic)
            case .errorResponse(let error) where error.requestOpcode == .readRequest:
                return finish(.done(nil))
            default:
                return finish(.fail(.unexpectedResponse(request: .readRequest, received: pdu.opcode)))
            }
        case .descriptors(var procedure, let characteristic):
            let action = procedure.receive(pdu)
            phase = .descriptors(procedure, characteristic)
            return descriptorsAction(action, characteristic)
        }
    }

    private mutating func searched(_ pdu: ATTPDU, from start: UInt16) -> GATTProcedureAction<Result> {
        let range = start...0xFFFF
        var last: UInt16
        switch pdu {
        case .readByTypeResponse(let response):
            last = start
            for entry in response.entries {
                guard range.contains(entry.handle) else {
                    return finish(
                        .fail(
                            .invalidResponse(opcode: pdu.opcode, reason: .handleOutOfRange(entry.handle, range: range)))
                    )
                }
                if let previous = valueHandles.last, entry.handle <= previous {
                    return finish(
                        .fail(
                            .invalidResponse(
                                opcode: pdu.opcode, reason: .handleNotAdvancing(entry.handle, previous: previous))))
                }
                valueHandles.append(entry.handle)
                last = entry.handle
            }
        case .errorResponse(let error)
        where error.requestOpcode == .readByTypeRequest && error.errorCode == .attributeNotFound:
            return located()
        case .errorResponse(let error) where error.requestOpcode == .readByTypeRequest:
            // A value the server will not return (permissions) still names its handle.
            guard range.contains(error.handle), valueHandles.last.map({ error.handle > $0 }) ?? true else {
                return finish(.fail(errorFor(error, request: .readByTypeRequest)))
            }
            valueHandles.append(error.handle)
            last = error.handle
        default:
            return finish(.fail(.unexpectedResponse(request: .readByTypeRequest, received: pdu.opcode)))
        }
        guard last < 0xFFFF else { return located() }
        return search(from: last + 1)
    }

    private mutating func located() -> GATTProcedureAction<Result> {
        guard let value = valueHandles.first else { return finish(.fail(.notFound(uuid))) }
        guard valueHandles.count == 1 else { return finish(.fail(.ambiguousUUID(uuid, handles: valueHandles))) }
        guard value > 1 else { return finish(.done(nil)) }
        phase = .declaration(value: value)
        return .send(.readRequest(ReadRequest(handle: value - 1)))
    }

    private mutating func descriptorsAction(
        _ action: GATTProcedureAction<[Descriptor]>, _ characteristic: Characteristic
    ) -> GATTProcedureAction<Result> {
        switch action {
        case .send(let pdu): return .send(pdu)
        case .fail(let error): return finish(.fail(error))
        case .done(let descriptors):
            var characteristic = characteristic
            characteristic.descriptors = descriptors
            characteristic.endHandle = descriptors.last?.handle ?? characteristic.valueHandle
            return finish(.done(characteristic))
        }
    }

    private mutating func finish(_ action: GATTProcedureAction<Result>) -> GATTProcedureAction<Result> {
        phase = .finished
        return action
    }
}
