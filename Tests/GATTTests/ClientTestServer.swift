import ATT
import Bluetooth
import Synchronization

@testable import GATT

/// A small ATT attribute server for the client tests: answers Read By Group Type, Read By
/// Type, Find Information, Find By Type Value, Read and Write Requests over an attribute table,
/// packing list responses as Core 5.4 Vol 3 Part F §3.4 requires at the bearer's ATT_MTU (cut
/// at the first entry of another length or at ATT_MTU). Counts requests by opcode and keeps the
/// CCCD values written.
final class ClientTestServer: Sendable {
    struct Attribute: Sendable {
        var handle: UInt16
        var type: BluetoothUUID
        var value: [UInt8]
        /// End Group Handle for a service declaration.
        var groupEnd: UInt16?
    }

    struct State {
        var attributes: [Attribute]
        var mtu: Int
        var requests: [ATTOpcode] = []
        var writes: [(handle: UInt16, value: [UInt8])] = []
    }

    let state: Mutex<State>
    /// Called after each Write Request is applied (inside the handler, before the response).
    let onWrite: @Sendable (UInt16, [UInt8]) async -> Void
    /// Called with each request before it is answered (a test can hold the answer back).
    let beforeAnswer: @Sendable (ATTPDU) async -> Void

    init(
        attributes: [Attribute], mtu: Int = 23,
        onWrite: @escaping @Sendable (UInt16, [UInt8]) async -> Void = { _, _ in },
        beforeAnswer: @escaping @Sendable (ATTPDU) async -> Void = { _ in }
    ) {
        state = Mutex(State(attributes: attributes.sorted { $0.handle < $1.handle }, mtu: mtu))
        self.onWrite = onWrite
        self.beforeAnswer = beforeAnswer
    }

    var requests: [ATTOpcode] { state.withLock { $0.requests } }
    var writes: [(handle: UInt16, value: [UInt8])] { state.withLock { $0.writes } }

    func setMTU(_ mtu: Int) { state.withLock { $0.mtu = mtu } }

    func replace(_ attributes: [Attribute]) {
        state.withLock { $0.attributes = attributes.sorted { $0.handle < $1.handle } }
    }

    /// The handler for `ATTConnection(serverHandler:)`.
    var handler: ATTConnection.ServerHandler {
        { [self] pdu in
            await self.beforeAnswer(pdu)
            let answer = self.answer(pdu)
            if case .writeRequest(let write) = pdu, case .writeResponse = answer {
                await self.onWrite(write.handle, write.value)
            }
            return answer
        }
    }

    private static func error(_ request: ATTOpcode, _ handle: UInt16, _ code: ATTErrorCode) -> ATTPDU {
        .errorResponse(ErrorResponse(requestOpcode: request, handle: handle, errorCode: code))
    }

    func answer(_ request: ATTPDU) -> ATTPDU {
        state.withLock { state in
            state.requests.append(request.opcode)
            return Self.answer(request, state: &state)
        }
    }

    /// The answer to `request` from `state` (shared with `SimulatedAttributeServer`).
    static func answer(_ request: ATTPDU, state: inout State) -> ATTPDU {
        let mtu = state.mtu
        func inRange(_ start: UInt16, _ end: UInt16) -> [Attribute] {
            state.attributes.filter { $0.handle >= start && $0.handle <= end }
        }
        switch request {
        case .readByGroupTypeRequest(let r):
            guard r.startingHandle != 0, r.startingHandle <= r.endingHandle else {
                return error(request.opcode, r.startingHandle, .invalidHandle)
            }
            var entries: [ReadByGroupTypeResponse.AttributeData] = []
            for attribute in inRange(r.startingHandle, r.endingHandle) where attribute.type == r.attributeGroupType {
                let value = Array(attribute.value.prefix(min(mtu - 6, 251)))
                if let first = entries.first, first.value.count != value.count { break }
                guard 2 + (entries.count + 1) * (4 + value.count) <= mtu else { break }
                entries.append(
                    .init(
                        handle: attribute.handle, endGroupHandle: attribute.groupEnd ?? attribute.handle, value: value))
            }
            guard !entries.isEmpty else { return error(request.opcode, r.startingHandle, .attributeNotFound) }
            return .readByGroupTypeResponse(ReadByGroupTypeResponse(entries: entries))
        case .readByTypeRequest(let r):
            guard r.startingHandle != 0, r.startingHandle <= r.endingHandle else {
                return error(request.opcode, r.startingHandle, .invalidHandle)
            }
            var entries: [ReadByTypeResponse.AttributeData] = []
            for attribute in inRange(r.startingHandle, r.endingHandle) where attribute.type == r.attributeType {
                let value = Array(attribute.value.prefix(min(mtu - 4, 253)))
                if let first = entries.first, first.value.count != value.count { break }
                guard 2 + (entries.count + 1) * (2 + value.count) <= mtu else { break }
                entries.append(.init(handle: attribute.handle, value: value))
            }
            guard !entries.isEmpty else { return error(request.opcode, r.startingHandle, .attributeNotFound) }
            return .readByTypeResponse(ReadByTypeResponse(entries: entries))
        case .findInformationRequest(let r):
            guard r.startingHandle != 0, r.startingHandle <= r.endingHandle else {
                return error(request.opcode, r.startingHandle, .invalidHandle)
            }
            var entries: [FindInformationResponse.Information] = []
            var short: Bool?
            for attribute in inRange(r.startingHandle, r.endingHandle) {
                let isShort = attribute.type.uuid16 != nil
                if let short, short != isShort { break }
                short = isShort
                guard 2 + (entries.count + 1) * (isShort ? 4 : 18) <= mtu else { break }
                entries.append(.init(handle: attribute.handle, uuid: attribute.type))
            }
            guard !entries.isEmpty else { return error(request.opcode, r.startingHandle, .attributeNotFound) }
            return .findInformationResponse(FindInformationResponse(entries: entries))
        case .findByTypeValueRequest(let r):
            guard r.startingHandle != 0, r.startingHandle <= r.endingHandle else {
                return error(request.opcode, r.startingHandle, .invalidHandle)
            }
            var entries: [FindByTypeValueResponse.HandlesInformation] = []
            for attribute in inRange(r.startingHandle, r.endingHandle)
            where attribute.type == .bit16(r.attributeType) && attribute.value == r.attributeValue {
                guard 1 + (entries.count + 1) * 4 <= mtu else { break }
                entries.append(
                    .init(
                        foundAttributeHandle: attribute.handle, groupEndHandle: attribute.groupEnd ?? attribute.handle))
            }
            guard !entries.isEmpty else { return error(request.opcode, r.startingHandle, .attributeNotFound) }
            return .findByTypeValueResponse(FindByTypeValueResponse(entries: entries))
        case .readRequest(let r):
            guard let attribute = state.attributes.first(where: { $0.handle == r.handle }) else {
                return error(request.opcode, r.handle, .invalidHandle)
            }
            return .readResponse(ReadResponse(value: Array(attribute.value.prefix(mtu - 1))))
        case .writeRequest(let r):
            guard let index = state.attributes.firstIndex(where: { $0.handle == r.handle }) else {
                return error(request.opcode, r.handle, .invalidHandle)
            }
            state.attributes[index].value = r.value
            state.writes.append((r.handle, r.value))
            return .writeResponse(WriteResponse())
        default:
            return error(request.opcode, 0, .requestNotSupported)
        }
    }
}

/// The CC2650-like database of `scripts/bumble_peer.py --device sensortag` (branch `host`):
/// 11 services, 32 characteristics, 26 descriptors, handles 0x0001–0x0065 as Bumble assigns
/// them (one after another, in declaration order).
enum BumbleSensorTag {
    typealias A = ClientTestServer.Attribute

    static func ti(_ short: UInt16) -> BluetoothUUID {
        BluetoothUUID("F000" + hex4(short) + "-0451-4000-B000-000000000000")!
    }

    /// (UUID, properties, value, descriptors) of one characteristic.
    struct Spec {
        var uuid: BluetoothUUID
        var properties: UInt8
        var value: [UInt8]
        var descriptors: [(BluetoothUUID, [UInt8])]
    }

    static let read: UInt8 = 0x02
    static let write: UInt8 = 0x08
    static let notify: UInt8 = 0x10
    static let indicate: UInt8 = 0x20

    static func cccd() -> (BluetoothUUID, [UInt8]) { (0x2902, [0, 0]) }
    static func cud(_ text: String) -> (BluetoothUUID, [UInt8]) { (0x2901, Array(text.utf8)) }

    static func sensor(_ service: UInt16, _ data: UInt16, _ size: Int, _ name: String, _ period: UInt16, _ p: UInt8)
        -> (BluetoothUUID, [Spec])
    {
        (
            ti(service),
            [
                Spec(
                    uuid: ti(data), properties: read | notify, value: Array(repeating: 0, count: size),
                    descriptors: [cccd(), cud("\(name) Data")]),
                Spec(uuid: ti(data + 1), properties: read | write, value: [0], descriptors: [cud("\(name) Conf.")]),
                Spec(uuid: ti(period), properties: read | write, value: [p], descriptors: [cud("\(name) Period")]),
            ]
        )
    }

    static var services: [(BluetoothUUID, [Spec])] {
        [
            (
                0x1800,
                [
                    Spec(uuid: 0x2A00, properties: read, value: Array("CC2650 SensorTag".utf8), descriptors: []),
                    Spec(uuid: 0x2A01, properties: read, value: [0, 0], descriptors: []),
                    Spec(uuid: 0x2A04, properties: read, value: [80, 0, 160, 0, 0, 0, 0xE8, 0x03], descriptors: []),
                ]
            ),
            (0x1801, [Spec(uuid: 0x2A05, properties: indicate, value: [0, 0, 0, 0], descriptors: [cccd()])]),
            (
                0x180A,
                [0x2A23, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29, 0x2A2A, 0x2A50].map {
                    Spec(uuid: .bit16($0), properties: read, value: Array("N.A.".utf8), descriptors: [])
                }
            ),
            (0x180F, [Spec(uuid: 0x2A19, properties: read | notify, value: [0x5C], descriptors: [cccd()])]),
            sensor(0xAA00, 0xAA01, 4, "IR Temp.", 0xAA03, 100),
            sensor(0xAA20, 0xAA21, 4, "Hum.", 0xAA23, 100),
            sensor(0xAA40, 0xAA41, 6, "Barometer", 0xAA44, 100),
            sensor(0xAA70, 0xAA71, 2, "Luxometer", 0xAA73, 80),
            (
                ti(0xAA80),
                [
                    Spec(
                        uuid: ti(0xAA81), properties: read | notify, value: Array(repeating: 0, count: 18),
                        descriptors: [cccd(), cud("Movement Data")]),
                    Spec(
                        uuid: ti(0xAA82), properties: read | write, value: [0, 0], descriptors: [cud("Movement Conf.")]),
                    Spec(
                        uuid: ti(0xAA83), properties: read | write, value: [0x64], descriptors: [cud("Movement Period")]
                    ),
                ]
            ),
            (
                ti(0xAA64),
                [
                    Spec(uuid: ti(0xAA65), properties: read | write, value: [0], descriptors: [cud("IO Data")]),
                    Spec(uuid: ti(0xAA66), properties: read | write, value: [0], descriptors: [cud("IO Config")]),
                ]
            ),
            (
                0xFFE0,
                [
                    Spec(
                        uuid: 0xFFE1, properties: read | notify, value: [0],
                        descriptors: [cccd(), cud("Key Press State")])
                ]
            ),
        ]
    }

    /// The attribute table, starting at handle `first`, with `extra` services appended.
    static func attributes(first: UInt16 = 1, services: [(BluetoothUUID, [Spec])] = BumbleSensorTag.services) -> [A] {
        var out: [A] = []
        var handle = first
        for (uuid, characteristics) in services {
            let start = handle
            out.append(A(handle: handle, type: 0x2800, value: uuid.littleEndianBytes))
            handle += 1
            for spec in characteristics {
                let valueHandle = handle + 1
                out.append(
                    A(
                        handle: handle, type: 0x2803,
                        value: [spec.properties, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)]
                            + spec.uuid.littleEndianBytes))
                out.append(A(handle: valueHandle, type: spec.uuid, value: spec.value))
                handle += 2
                for (type, value) in spec.descriptors {
                    out.append(A(handle: handle, type: type, value: value))
                    handle += 1
                }
            }
            if let index = out.firstIndex(where: { $0.handle == start }) { out[index].groupEnd = handle - 1 }
        }
        return out
    }
}

/// A client and a served attribute table over `InMemoryATTChannel.pair()`.
struct ClientServerPair {
    let client: GATTClient
    let server: ClientTestServer
    let serverConnection: ATTConnection
    let clientConnection: ATTConnection
    let serverChannel: InMemoryATTChannel

    /// `serverMTU` is the server's Rx MTU (the ATT_MTU after the client's exchange of 517).
    init(
        attributes: [ClientTestServer.Attribute] = BumbleSensorTag.attributes(), serverMTU: Int = 517,
        configuration: GATTClient.Configuration = GATTClient.Configuration(),
        onWrite: @escaping @Sendable (UInt16, [UInt8]) async -> Void = { _, _ in },
        beforeAnswer: @escaping @Sendable (ATTPDU) async -> Void = { _ in }
    ) {
        let (clientChannel, serverChannel) = InMemoryATTChannel.pair()
        let server = ClientTestServer(
            attributes: attributes, mtu: min(serverMTU, configuration.exchangeMTU ?? 23), onWrite: onWrite,
            beforeAnswer: beforeAnswer)
        self.server = server
        self.serverChannel = serverChannel
        serverConnection = ATTConnection(
            channel: serverChannel, configuration: ATTBearer.Configuration(rxMTU: serverMTU),
            serverHandler: server.handler)
        clientConnection = ATTConnection(channel: clientChannel)
        client = GATTClient(connection: clientConnection, configuration: configuration)
    }
}

/// A value set once, read from `@Sendable` closures (the server connection a write hook
/// notifies through, which exists only after the hook was built).
final class Box<Value: Sendable>: Sendable {
    private let storage = Mutex<Value?>(nil)
    var value: Value? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

/// A gate a test opens once: waiters resume when it opens.
actor Gate {
    private var open = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private(set) var arrivals = 0

    func wait() async {
        arrivals += 1
        if open { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func openGate() {
        open = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
