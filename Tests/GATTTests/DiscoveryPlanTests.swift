import ATT
import Bluetooth
import Testing

@testable import GATT

/// The descriptor-phase arithmetic and the engine's handling of includes and secondary
/// services, run on the sans-I/O engine against the in-test attribute server.
@Suite("GATT discovery plan")
struct DiscoveryPlanTests {
    /// Drives `DatabaseDiscovery` against `server` and returns the outcome and the requests.
    static func run(
        _ attributes: [ClientTestServer.Attribute], mtu: Int, findIncludes: Bool = true
    ) -> (GATTProcedureAction<GATTDatabase>, [ATTOpcode]) {
        let server = ClientTestServer(attributes: attributes, mtu: mtu)
        var discovery = DatabaseDiscovery(mtu: mtu, findIncludes: findIncludes)
        var action = discovery.start()
        var sent = 0
        while case .send(let request) = action, sent < 1000 {
            sent += 1
            action = discovery.receive(server.answer(request))
        }
        return (action, server.requests)
    }

    @Test func mergesGapsOnlyWhenItSavesResponses() {
        let short: (UInt16) -> Bool = { _ in true }
        // ATT_MTU 517: 128 entries per response; the two gaps fit one response.
        #expect(DiscoveryPlan.informationRuns(gaps: [11...11, 34...34], mtu: 517, isShortType: short) == [11...34])
        // ATT_MTU 23: 5 entries per response; 24 handles would need 5 responses instead of 2.
        #expect(
            DiscoveryPlan.informationRuns(gaps: [11...11, 34...34], mtu: 23, isShortType: short) == [11...11, 34...34])
        // 96 and 100-101: 6 handles, 2 responses at ATT_MTU 23 either way: not merged.
        #expect(
            DiscoveryPlan.informationRuns(gaps: [96...96, 100...101], mtu: 23, isShortType: short) == [
                96...96, 100...101,
            ])
        // A 128-bit attribute between them would cut the response: not merged.
        #expect(
            DiscoveryPlan.informationRuns(gaps: [38...39, 42...42], mtu: 517, isShortType: { $0 != 41 }) == [
                38...39, 42...42,
            ])
        #expect(DiscoveryPlan.informationRuns(gaps: [], mtu: 517, isShortType: short).isEmpty)
    }

    @Test func subtract() {
        #expect(DiscoveryPlan.subtract([], from: 5...9) == [5...9])
        #expect(DiscoveryPlan.subtract([6...7], from: 5...9) == [5...5, 8...9])
        #expect(DiscoveryPlan.subtract([1...5, 9...20], from: 5...9) == [6...8])
        #expect(DiscoveryPlan.subtract([0...0xFFFF], from: 5...9).isEmpty)
    }

    @Test func descriptorsStopAtADeclaration() {
        let characteristic = Characteristic(
            uuid: 0x2A19, declarationHandle: 1, valueHandle: 2, endHandle: 6, properties: .read)
        let types: [UInt16: BluetoothUUID] = [1: 0x2803, 2: 0x2A19, 3: 0x2902, 4: 0x2901, 5: 0x2800, 6: 0x2902]
        #expect(
            DiscoveryPlan.descriptors(of: characteristic, types: types) == [
                Descriptor(handle: 3, uuid: 0x2902), Descriptor(handle: 4, uuid: 0x2901),
            ])
    }

    /// Two secondary services included by one primary, both beyond the primaries' handles:
    /// both are swept, and their own include gaps searched.
    @Test(arguments: [23, 517])
    func twoSecondaryServicesBeyondThePrimaries(mtu: Int) throws {
        typealias A = ClientTestServer.Attribute
        let attributes: [A] = [
            A(handle: 1, type: 0x2800, value: [0x0F, 0x18], groupEnd: 5),
            A(handle: 2, type: 0x2802, value: [0x20, 0x00, 0x22, 0x00, 0x0A, 0x18]),
            A(handle: 3, type: 0x2802, value: [0x30, 0x00, 0x33, 0x00, 0x0D, 0x18]),
            A(handle: 4, type: 0x2803, value: [0x02, 0x05, 0x00, 0x19, 0x2A]),
            A(handle: 5, type: 0x2A19, value: [0x50]),
            A(handle: 0x20, type: 0x2801, value: [0x0A, 0x18], groupEnd: 0x22),
            A(handle: 0x21, type: 0x2803, value: [0x02, 0x22, 0x00, 0x29, 0x2A]),
            A(handle: 0x22, type: 0x2A29, value: [0x41]),
            A(handle: 0x30, type: 0x2801, value: [0x0D, 0x18], groupEnd: 0x33),
            A(handle: 0x31, type: 0x2803, value: [0x10, 0x32, 0x00, 0x37, 0x2A]),
            A(handle: 0x32, type: 0x2A37, value: [0, 60]),
            A(handle: 0x33, type: 0x2902, value: [0, 0]),
        ]
        let (outcome, requests) = Self.run(attributes, mtu: mtu)
        guard case .done(let database) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        try database.validate()
        #expect(database.services.map(\.startHandle) == [1, 0x20, 0x30])
        #expect(database.services.map(\.isPrimary) == [true, false, false])
        #expect(database.services[0].includes.map(\.startHandle) == [0x20, 0x30])
        #expect(database.characteristics.map(\.uuid) == [0x2A19, 0x2A29, 0x2A37])
        #expect(
            try database.characteristic(uuid: 0x2A37).descriptors == [Descriptor(handle: 0x33, uuid: 0x2902)],
            "\(database) \(requests)")
    }

    /// A server that answers everything with its first response again cannot make the engine
    /// loop: the handle checks fail it.
    @Test func repeatingServerFails() {
        var discovery = DatabaseDiscovery(mtu: 23)
        guard case .send = discovery.start() else {
            Issue.record("no first request")
            return
        }
        let response = ATTPDU.readByGroupTypeResponse(
            ReadByGroupTypeResponse(entries: [.init(handle: 1, endGroupHandle: 5, value: [0x0F, 0x18])]))
        guard case .send = discovery.receive(response) else {
            Issue.record("expected a second request")
            return
        }
        guard case .fail(let error) = discovery.receive(response) else {
            Issue.record("a repeated answer must fail")
            return
        }
        #expect(
            error == .invalidResponse(opcode: .readByGroupTypeResponse, reason: .handleNotAdvancing(1, previous: 5)))
    }

    /// Locating a characteristic whose value the server will not return: the Error Response
    /// names its handle.
    @Test func locateUnreadableCharacteristic() {
        let tx = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
        var locate = LocateCharacteristic(uuid: tx, mtu: 23)
        #expect(
            locate.start()
                == .send(
                    .readByTypeRequest(ReadByTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeType: tx))))
        let refused = ATTPDU.errorResponse(
            ErrorResponse(requestOpcode: .readByTypeRequest, handle: 0x0E, errorCode: .readNotPermitted))
        #expect(
            locate.receive(refused)
                == .send(
                    .readByTypeRequest(ReadByTypeRequest(startingHandle: 0x0F, endingHandle: 0xFFFF, attributeType: tx))
                ))
        let notFound = ATTPDU.errorResponse(
            ErrorResponse(requestOpcode: .readByTypeRequest, handle: 0x0F, errorCode: .attributeNotFound))
        #expect(locate.receive(notFound) == .send(.readRequest(ReadRequest(handle: 0x0D))))
        let declaration = ATTPDU.readResponse(ReadResponse(value: [0x10, 0x0E, 0x00] + tx.littleEndianBytes))
        #expect(
            locate.receive(declaration)
                == .send(.findInformationRequest(FindInformationRequest(startingHandle: 0x0F, endingHandle: 0xFFFF))))
        let information = ATTPDU.findInformationResponse(
            FindInformationResponse(entries: [.init(handle: 0x0F, uuid: 0x2902), .init(handle: 0x10, uuid: 0x2803)]))
        #expect(
            locate.receive(information)
                == .done(
                    Characteristic(
                        uuid: tx, declarationHandle: 0x0D, valueHandle: 0x0E, endHandle: 0x0F, properties: .notify,
                        descriptors: [Descriptor(handle: 0x0F, uuid: 0x2902)])))
    }

    /// A declaration that does not name the value: nil, so the client falls back to the sweep.
    @Test func locateFallsBackOnAnOddLayout() {
        var locate = LocateCharacteristic(uuid: 0x2A19, mtu: 23)
        _ = locate.start()
        _ = locate.receive(.readByTypeResponse(ReadByTypeResponse(entries: [.init(handle: 0x10, value: [0x50])])))
        _ = locate.receive(
            .errorResponse(
                ErrorResponse(requestOpcode: .readByTypeRequest, handle: 0x11, errorCode: .attributeNotFound)))
        #expect(locate.receive(.readResponse(ReadResponse(value: [0x02, 0x20, 0x00, 0x19, 0x2A]))) == .done(nil))
    }

    @Test func locateAmbiguousAndMissing() {
        var twice = LocateCharacteristic(uuid: 0x2A19, mtu: 23)
        _ = twice.start()
        _ = twice.receive(
            .readByTypeResponse(
                ReadByTypeResponse(entries: [.init(handle: 0x10, value: [0x50]), .init(handle: 0x20, value: [0x51])])))
        #expect(
            twice.receive(
                .errorResponse(
                    ErrorResponse(requestOpcode: .readByTypeRequest, handle: 0x21, errorCode: .attributeNotFound)))
                == .fail(.ambiguousUUID(0x2A19, handles: [0x10, 0x20])))
        var missing = LocateCharacteristic(uuid: 0x2A19, mtu: 23)
        _ = missing.start()
        #expect(
            missing.receive(
                .errorResponse(
                    ErrorResponse(requestOpcode: .readByTypeRequest, handle: 0x01, errorCode: .attributeNotFound)))
                == .fail(.notFound(0x2A19)))
    }
}
