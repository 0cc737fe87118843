import ATT
import Bluetooth
import Testing

@testable import GATT

/// One scripted exchange: the server's answers, the requests the procedure must send, and how
/// it must end.
struct Exchange<R: Hashable & Sendable>: Sendable, CustomTestStringConvertible {
    let name: String
    let replies: [String]
    let sent: [String]
    let outcome: GATTProcedureAction<R>
    var testDescription: String { name }

    init(_ name: String, replies: [String], sent: [String], _ outcome: GATTProcedureAction<R>) {
        self.name = name
        self.replies = replies
        self.sent = sent
        self.outcome = outcome
    }

    func check<P: GATTClientProcedure>(_ procedure: P) where P.Result == R {
        let run = ProcedureRun(procedure, replies: replies.map(pdu))
        #expect(run.sentHex == sent.map { $0.replacingOccurrences(of: " ", with: "") })
        #expect(run.outcome == outcome)
    }
}

private let notFound = ATTErrorCode.attributeNotFound

@Suite("GATT discovery procedures: action tables")
struct GATTDiscoveryProcedureTests {
    static let gap = Service(uuid: 0x1800, startHandle: 0x0001, endHandle: 0x0007)
    static let gatt = Service(uuid: 0x1801, startHandle: 0x0008, endHandle: 0x000B)
    static let nus = Service(
        uuid: BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!, startHandle: 0x000C, endHandle: 0xFFFF)

    static let allPrimary: [Exchange<[Service]>] = [
        .init(
            "two rounds, then Attribute Not Found",
            replies: [
                "11 06 0100 0700 0018 0800 0b00 0118", "11 14 0c00 2000 9ecadc240ee5a9e093f3a3b50100406e",
                "01 10 2100 0a",
            ],
            sent: [
                "10 0100 ffff 0028", "10 0c00 ffff 0028",
                "10 2100 ffff 0028",
            ],
            .done([gap, gatt, Service(uuid: nus.uuid, startHandle: 0x000C, endHandle: 0x0020)])),
        .init(
            "a group ending at 0xFFFF needs no further request",
            replies: ["11 06 0100 0700 0018 0800 0b00 0118", "11 14 0c00 ffff 9ecadc240ee5a9e093f3a3b50100406e"],
            sent: ["10 0100 ffff 0028", "10 0c00 ffff 0028"],
            .done([gap, gatt, nus])),
        .init(
            "Attribute Not Found at once: no services",
            replies: ["01 10 0100 0a"], sent: ["10 0100 ffff 0028"], .done([])),
        .init(
            "a server repeating itself is caught, not looped on",
            replies: ["11 06 0100 0700 0018", "11 06 0100 0700 0018"],
            sent: ["10 0100 ffff 0028", "10 0800 ffff 0028"],
            .fail(
                .invalidResponse(
                    opcode: .readByGroupTypeResponse, reason: .handleNotAdvancing(0x0001, previous: 0x0007)))),
        .init(
            "entries going backwards inside one response",
            replies: ["11 06 0800 0b00 0118 0100 0700 0018"],
            sent: ["10 0100 ffff 0028"],
            .fail(
                .invalidResponse(
                    opcode: .readByGroupTypeResponse, reason: .handleNotAdvancing(0x0001, previous: 0x000B)))),
        .init(
            "an entry inside the previous group",
            replies: ["11 06 0100 0700 0018 0500 0b00 0118"],
            sent: ["10 0100 ffff 0028"],
            .fail(
                .invalidResponse(
                    opcode: .readByGroupTypeResponse, reason: .handleNotAdvancing(0x0005, previous: 0x0007)))),
        .init(
            "a 32-bit service UUID is not a valid declaration value",
            replies: ["11 08 0100 0700 0f180000"],
            sent: ["10 0100 ffff 0028"],
            .fail(.invalidAttributeValue(type: 0x2800, handle: 0x0001, reason: .invalidLength(4, allowed: [2, 16])))),
        .init(
            "another error is the peer's refusal",
            replies: ["01 10 0100 08"], sent: ["10 0100 ffff 0028"],
            .fail(.peerError(request: .readByGroupTypeRequest, handle: 0x0001, code: .insufficientAuthorization))),
        .init(
            "an error for another request",
            replies: ["01 08 0100 0a"], sent: ["10 0100 ffff 0028"],
            .fail(.unexpectedResponse(request: .readByGroupTypeRequest, received: .readByTypeRequest))),
        .init(
            "a PDU of the wrong kind",
            replies: ["0b 0102"], sent: ["10 0100 ffff 0028"],
            .fail(.unexpectedResponse(request: .readByGroupTypeRequest, received: .readResponse))),
        .init(
            "a response longer than ATT_MTU 23",
            replies: ["11 06 0100 0200 0018 0300 0400 0118 0500 0600 0a18 0700 0800 0f18"],
            sent: ["10 0100 ffff 0028"],
            .fail(.invalidResponse(opcode: .readByGroupTypeResponse, reason: .exceedsMTU(length: 26, mtu: 23)))),
    ]

    @Test(arguments: allPrimary)
    func discoverAllPrimaryServices(_ exchange: Exchange<[Service]>) {
        exchange.check(DiscoverAllPrimaryServices())
    }

    static let subRange: [Exchange<[Service]>] = [
        .init(
            "a group running past the range end ends the procedure",
            replies: ["11 06 0010 0030 0f18"], sent: ["10 0010 0020 0028"],
            .done([Service(uuid: 0x180F, startHandle: 0x1000, endHandle: 0x3000)])),
        .init(
            "an entry before the range",
            replies: ["11 06 0500 0700 0f18"], sent: ["10 0010 0020 0028"],
            .fail(
                .invalidResponse(
                    opcode: .readByGroupTypeResponse, reason: .handleOutOfRange(0x0005, range: 0x1000...0x2000)))),
        .init(
            "an entry after the range",
            replies: ["11 06 0121 0221 0f18"], sent: ["10 0010 0020 0028"],
            .fail(
                .invalidResponse(
                    opcode: .readByGroupTypeResponse, reason: .handleOutOfRange(0x2101, range: 0x1000...0x2000)))),
    ]

    @Test(arguments: subRange)
    func discoverPrimaryServicesInSubRange(_ exchange: Exchange<[Service]>) {
        exchange.check(DiscoverAllPrimaryServices(range: 0x1000...0x2000))
    }

    static let byUUID: [Exchange<[Service]>] = [
        .init(
            "two instances, then Attribute Not Found",
            replies: ["07 0100 0700 1000 1200", "01 06 1300 0a"],
            sent: ["06 0100 ffff 0028 0f18", "06 1300 ffff 0028 0f18"],
            .done([
                Service(uuid: 0x180F, startHandle: 1, endHandle: 7),
                Service(uuid: 0x180F, startHandle: 0x10, endHandle: 0x12),
            ])),
        .init(
            "a group ending at 0xFFFF needs no further request",
            replies: ["07 0100 ffff"], sent: ["06 0100 ffff 0028 0f18"],
            .done([Service(uuid: 0x180F, startHandle: 1, endHandle: 0xFFFF)])),
        .init(
            "a handle going backwards",
            replies: ["07 0800 0900", "07 0100 0200"], sent: ["06 0100 ffff 0028 0f18", "06 0a00 ffff 0028 0f18"],
            .fail(.invalidResponse(opcode: .findByTypeValueResponse, reason: .handleNotAdvancing(1, previous: 9)))),
    ]

    @Test(arguments: byUUID)
    func discoverPrimaryServiceByUUID(_ exchange: Exchange<[Service]>) {
        exchange.check(DiscoverPrimaryServiceByServiceUUID(uuid: 0x180F))
    }

    /// The ATT decoder already refuses this; a hand-built PDU checks the procedure's own guard.
    @Test func primaryServiceByUUIDInvalidGroup() {
        var procedure = DiscoverPrimaryServiceByServiceUUID(uuid: 0x180F)
        _ = procedure.start()
        let reply = FindByTypeValueResponse(entries: [.init(foundAttributeHandle: 9, groupEndHandle: 7)])
        #expect(
            procedure.receive(.findByTypeValueResponse(reply))
                == .fail(
                    .invalidAttributeValue(
                        type: 0x2800, handle: 9, reason: .invalidRange(start: 9, end: 7))))
    }

    @Test func primaryServiceByUUIDWidths() {
        let nus = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        var procedure = DiscoverPrimaryServiceByServiceUUID(uuid: nus)
        #expect(procedure.start() == .send(pdu("06 0100 ffff 0028 9ecadc240ee5a9e093f3a3b50100406e")))
        var thirtyTwo = DiscoverPrimaryServiceByServiceUUID(uuid: .bit32(0x0000_180F))
        #expect(thirtyTwo.start() == .send(pdu("06 0100 ffff 0028 fb349b5f8000008000100000 0f180000")))
    }

    static let characteristics: [Exchange<[Characteristic]>] = [
        .init(
            "declarations over two rounds; end handles follow the next declaration",
            replies: [
                "09 07 1100 02 1200 002a 1300 12 1400 192a", "09 15 1500 10 1600 9ecadc240ee5a9e093f3a3b50300406e",
                "01 08 1600 0a",
            ],
            sent: ["08 1000 2000 0328", "08 1400 2000 0328", "08 1600 2000 0328"],
            .done([
                Characteristic(
                    uuid: 0x2A00, declarationHandle: 0x11, valueHandle: 0x12, endHandle: 0x12, properties: .read),
                Characteristic(
                    uuid: 0x2A19, declarationHandle: 0x13, valueHandle: 0x14, endHandle: 0x14,
                    properties: [.read, .notify]),
                Characteristic(
                    uuid: BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!, declarationHandle: 0x15,
                    valueHandle: 0x16, endHandle: 0x20, properties: .notify),
            ])),
        .init(
            "a value handle at the service end needs no further request",
            replies: ["09 07 1f00 02 2000 002a"], sent: ["08 1000 2000 0328"],
            .done([
                Characteristic(
                    uuid: 0x2A00, declarationHandle: 0x1F, valueHandle: 0x20, endHandle: 0x20, properties: .read)
            ])),
        .init(
            "a value handle before its declaration",
            replies: ["09 07 1100 02 1000 002a"], sent: ["08 1000 2000 0328"],
            .fail(
                .invalidResponse(
                    opcode: .readByTypeResponse, reason: .invalidValueHandle(declaration: 0x11, value: 0x10)))),
        .init(
            "a value handle past the service",
            replies: ["09 07 1100 02 2100 002a"], sent: ["08 1000 2000 0328"],
            .fail(
                .invalidResponse(
                    opcode: .readByTypeResponse, reason: .invalidValueHandle(declaration: 0x11, value: 0x21)))),
        .init(
            "a declaration at the previous value handle",
            replies: ["09 07 1100 02 1300 002a 1300 02 1400 012a"], sent: ["08 1000 2000 0328"],
            .fail(.invalidResponse(opcode: .readByTypeResponse, reason: .handleNotAdvancing(0x13, previous: 0x13)))),
        .init(
            "a declaration outside the service",
            replies: ["09 07 3000 02 3100 002a"], sent: ["08 1000 2000 0328"],
            .fail(.invalidResponse(opcode: .readByTypeResponse, reason: .handleOutOfRange(0x30, range: 0x10...0x20)))),
        .init(
            "a declaration value of 6 octets",
            replies: ["09 08 1100 02 1200 002a 00"], sent: ["08 1000 2000 0328"],
            .fail(.invalidAttributeValue(type: 0x2803, handle: 0x11, reason: .invalidLength(6, allowed: [5, 19])))),
        .init(
            "a zero value handle",
            replies: ["09 07 1100 02 0000 002a"], sent: ["08 1000 2000 0328"],
            .fail(
                .invalidAttributeValue(
                    type: 0x2803, handle: 0x11, reason: .zeroHandle(field: "Characteristic Value Attribute Handle")))),
        .init(
            "no characteristics", replies: ["01 08 1000 0a"], sent: ["08 1000 2000 0328"], .done([])),
    ]

    @Test(arguments: characteristics)
    func discoverAllCharacteristics(_ exchange: Exchange<[Characteristic]>) {
        exchange.check(DiscoverAllCharacteristics(service: Service(uuid: 0x180F, startHandle: 0x10, endHandle: 0x20)))
    }

    static let descriptors: [Exchange<[Descriptor]>] = [
        .init(
            "two rounds reaching the end",
            replies: ["05 01 1300 0229", "05 02 1400 9ecadc240ee5a9e093f3a3b50300406e"],
            sent: ["04 1300 1400", "04 1400 1400"],
            .done([
                Descriptor(handle: 0x13, uuid: 0x2902),
                Descriptor(handle: 0x14, uuid: BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!),
            ])),
        .init(
            "Attribute Not Found ends it", replies: ["05 01 1300 0229", "01 04 1400 0a"],
            sent: ["04 1300 1400", "04 1400 1400"], .done([Descriptor(handle: 0x13, uuid: 0x2902)])),
        .init(
            "a handle outside the range", replies: ["05 01 1500 0229"], sent: ["04 1300 1400"],
            .fail(
                .invalidResponse(opcode: .findInformationResponse, reason: .handleOutOfRange(0x15, range: 0x13...0x14)))
        ),
        .init(
            "a repeated handle", replies: ["05 01 1300 0229 1300 0129"], sent: ["04 1300 1400"],
            .fail(.invalidResponse(opcode: .findInformationResponse, reason: .handleNotAdvancing(0x13, previous: 0x13)))
        ),
        .init(
            "insufficient authentication", replies: ["01 04 1300 05"], sent: ["04 1300 1400"],
            .fail(.peerError(request: .findInformationRequest, handle: 0x13, code: .insufficientAuthentication))),
    ]

    @Test(arguments: descriptors)
    func discoverAllDescriptors(_ exchange: Exchange<[Descriptor]>) {
        exchange.check(DiscoverAllCharacteristicDescriptors(range: 0x13...0x14))
    }

    @Test func descriptorsStopAtADeclaration() {
        Exchange<[Descriptor]>(
            "the next service's declaration ends the definition",
            replies: ["05 01 1300 0229 1400 0028"], sent: ["04 1300 ffff"],
            .done([Descriptor(handle: 0x13, uuid: 0x2902)])
        ).check(DiscoverAllCharacteristicDescriptors(range: 0x13...0xFFFF))
        Exchange<[Descriptor]>(
            "a characteristic declaration in a later round",
            replies: ["05 01 1300 0229", "05 01 1400 0328"], sent: ["04 1300 ffff", "04 1400 ffff"],
            .done([Descriptor(handle: 0x13, uuid: 0x2902)])
        ).check(DiscoverAllCharacteristicDescriptors(range: 0x13...0xFFFF))
    }

    @Test func descriptorsUpToLastHandle() {
        // 0xFFFF is the end: no overflow, no further request.
        Exchange<[Descriptor]>(
            "last handle", replies: ["05 01 ffff 0229"], sent: ["04 feff ffff"],
            .done([Descriptor(handle: 0xFFFF, uuid: 0x2902)])
        ).check(DiscoverAllCharacteristicDescriptors(range: 0xFFFE...0xFFFF))
    }

    @Test func misuse() {
        var procedure = DiscoverAllPrimaryServices()
        #expect(procedure.receive(pdu("01 10 0100 0a")) == .fail(.procedureState("receive(_:) called before start()")))
        var started = DiscoverAllPrimaryServices()
        _ = started.start()
        #expect(started.start() == .fail(.procedureState("no answer expected")))
        #expect(started.receive(pdu("01 10 0100 0a")) == .done([]))
        #expect(started.receive(pdu("01 10 0100 0a")) == .fail(.procedureState("the procedure has already ended")))
        var zero = DiscoverAllCharacteristicDescriptors(range: 0...5)
        #expect(zero.start() == .fail(.invalidParameter("a handle range cannot start at 0x0000")))
        var small = DiscoverAllPrimaryServices(mtu: 22)
        #expect(small.start() == .fail(.invalidParameter("ATT_MTU 22 is below the minimum 23")))
    }

    /// Whatever a server answers, discovery sends at most one request per handle.
    @Test func terminatesAgainstAdversarialServer() {
        // A server answering every request with one service starting where asked and ending
        // there: the worst legal case, one request per handle of a small range.
        var procedure = DiscoverAllPrimaryServices(range: 0xFF00...0xFFFF)
        var action = procedure.start()
        var requests = 0
        while case .send(let request) = action {
            requests += 1
            guard case .readByGroupTypeRequest(let r) = request, requests < 1000 else { break }
            let reply = ReadByGroupTypeResponse(entries: [
                .init(handle: r.startingHandle, endGroupHandle: r.startingHandle, value: [0x0F, 0x18])
            ])
            action = procedure.receive(.readByGroupTypeResponse(reply))
        }
        #expect(requests == 256)
        guard case .done(let services) = action else {
            Issue.record("\(action)")
            return
        }
        #expect(services.count == 256)
    }
}
