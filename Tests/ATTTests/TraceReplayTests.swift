import Bluetooth
import Testing

@testable import ATT

/// Recorded conversations (Fixtures/traces) replayed through the driver over the scripted
/// channel: the bytes our stack sends must equal the recording, line by line.
@Suite("Trace replay through the driver", .timeLimit(.minutes(1)))
struct TraceReplayTests {
    typealias F = BearerFixtures

    /// Primary service discovery by Read By Group Type (GATT §4.4.1), written out here so the
    /// test does not depend on the GATT module: (start, end, UUID) of each service.
    static func discoverPrimaryServices(_ connection: ATTConnection) async throws -> [(UInt16, UInt16, BluetoothUUID)] {
        var services: [(UInt16, UInt16, BluetoothUUID)] = []
        var start: UInt16 = 0x0001
        while true {
            let response: ATTPDU
            do {
                response = try await connection.request(
                    .readByGroupTypeRequest(
                        ReadByGroupTypeRequest(
                            startingHandle: start, endingHandle: 0xFFFF, attributeGroupType: .bit16(0x2800))))
            } catch {
                // Attribute Not Found ends the procedure; anything else is a failure.
                guard case .peerError(_, _, .attributeNotFound) = error else { throw error }
                return services
            }
            guard case .readByGroupTypeResponse(let list) = response else {
                Issue.record("unexpected \(response)")
                return services
            }
            for entry in list.entries {
                services.append((entry.handle, entry.endGroupHandle, BluetoothUUID(littleEndian: entry.value)!))
            }
            guard let last = list.entries.last?.endGroupHandle, last < 0xFFFF else { return services }
            start = last + 1
        }
    }

    /// The value of each notification, in order (nil for any other PDU).
    static func notificationValues(_ pdus: [ATTPDU]) -> [[UInt8]?] {
        pdus.map { pdu in
            if case .handleValueNotification(let notification) = pdu { return notification.value }
            return nil
        }
    }

    @Test func peerExchangeMTUIsAnsweredWhileOurDiscoveryRequestIsOutstanding() async throws {
        let trace = try TraceReplay.load("bumble-peer-mtu-during-discovery.trace")
        let channel = ScriptedATTChannel(trace: trace)
        let connection = ATTConnection(channel: channel, configuration: .init(rxMTU: 247))
        let outcome = try await TraceReplay.replayAsClient(trace, connection: connection, channel: channel)
        #expect(channel.failure == nil)
        #expect(channel.isComplete)
        #expect(await connection.mtu == 247)
        // The notification came before any request of ours.
        #expect(outcome.inbound == [F.notification(0x0017, [0x44, 0x01, 0x00])])
        // Our Exchange MTU Response went out before the discovery request was answered (the
        // peer answers only after it): the first two SDUs we sent.
        #expect(
            channel.sentSDUs.prefix(2) == [[0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28], [0x03, 0xF7, 0x00]])
        // 16 discovery requests, then a 43-octet Write Request only ATT_MTU 247 allows.
        #expect(outcome.requests == 17)
        #expect(channel.sentSDUs.last?.count == 43)
        #expect(outcome.peerErrors.count == 6)
        #expect(
            outcome.peerErrors.first
                == .peerError(request: .readByGroupTypeRequest, handle: 0x0020, code: .attributeNotFound))
        await connection.close()
    }

    @Test func peerExchangeMTUTracePrimaryServices() async throws {
        let channel = ScriptedATTChannel(trace: try TraceReplay.load("bumble-peer-mtu-during-discovery.trace"))
        let connection = ATTConnection(channel: channel, configuration: .init(rxMTU: 247))
        let services = try await Self.discoverPrimaryServices(connection)
        #expect(services.map(\.0) == [0x0001, 0x0006, 0x000E, 0x0015, 0x001C])
        #expect(services.map(\.1) == [0x0005, 0x000D, 0x0014, 0x001B, 0x001F])
        let uuids: [UInt16?] = services.prefix(4).map { $0.2.uuid16 }
        let expected: [UInt16?] = [0x1800, 0x1801, 0x180A, 0xFFF0]
        #expect(uuids == expected)
        #expect(services.last?.2.byteWidth == 16)
        #expect(await connection.mtu == 247)
        #expect(channel.failure == nil)
        await connection.close()
    }

    @Test func notificationBurstsAfterTheCCCWriteArriveInRecordedOrder() async throws {
        let trace = try TraceReplay.load("bumble-ccc-notification-burst.trace")
        let channel = ScriptedATTChannel(trace: trace)
        let connection = ATTConnection(channel: channel)
        let outcome = try await TraceReplay.replayAsClient(trace, connection: connection, channel: channel)
        #expect(channel.failure == nil)
        #expect(channel.isComplete)
        let recorded = trace.entries.filter { $0.direction == .peerToHost && $0.bytes[0] == 0x1B }
        #expect(outcome.inbound.count == recorded.count)
        #expect(outcome.inbound.count == 37)
        // The CCC write (0x0019 = 0100) is answered, then the peer's first notification.
        #expect(channel.sentSDUs.contains([0x12, 0x19, 0x00, 0x01, 0x00]))
        #expect(outcome.inbound.first == F.notification(0x0017, [0x01, 0x00]))
        // Then three bursts of 12, each after a Write Response: sample `i` of block `b`
        // starts with the bytes `b`, `i`.
        let heads: [[UInt8]?] = Self.notificationValues(Array(outcome.inbound.dropFirst())).map { value in
            value.map { Array($0.prefix(2)) }
        }
        let expected: [[UInt8]?] = (0..<3).flatMap { block in (0..<12).map { [UInt8(block), UInt8($0)] } }
        #expect(heads == expected)
        #expect(outcome.requests == 10)
        #expect(
            outcome.peerErrors == [
                .peerError(request: .findByTypeValueRequest, handle: 0x001C, code: .attributeNotFound),
                .peerError(request: .readByTypeRequest, handle: 0x001B, code: .attributeNotFound),
            ])
        await connection.close()
    }

    @Test func discoveryEndsEachRoundWithAttributeNotFound() async throws {
        let trace = try TraceReplay.load("bumble-discovery-errors.trace")
        let channel = ScriptedATTChannel(trace: trace)
        let connection = ATTConnection(channel: channel)
        let outcome = try await TraceReplay.replayAsClient(trace, connection: connection, channel: channel)
        #expect(channel.failure == nil)
        #expect(channel.isComplete)
        #expect(outcome.requests == 34)
        #expect(outcome.peerErrors.count == 17)
        var readByType = 0
        var findInformation: [UInt16] = []
        for error in outcome.peerErrors {
            switch error {
            case .peerError(.readByTypeRequest, _, .attributeNotFound): readByType += 1
            case .peerError(.findInformationRequest, let handle, .attributeNotFound): findInformation.append(handle)
            default: Issue.record("unexpected \(error)")
            }
        }
        #expect(readByType == 16)  // included services and characteristics, 8 services
        #expect(findInformation == [0x002B])  // past the last descriptor, group ending at 0xFFFF
        await connection.close()
    }

    @Test func discoveryTracePrimaryServicesEndAtFFFF() async throws {
        let channel = ScriptedATTChannel(trace: try TraceReplay.load("bumble-discovery-errors.trace"))
        let connection = ATTConnection(channel: channel)
        let services = try await Self.discoverPrimaryServices(connection)
        #expect(services.map(\.0) == [0x0001, 0x0006, 0x000E, 0x0015, 0x0019, 0x001E, 0x0022, 0x0027])
        let uuids: [UInt16?] = services.prefix(7).map { $0.2.uuid16 }
        let expected: [UInt16?] = [0x1800, 0x1801, 0x180A, 0x180F, 0xFFE0, 0xFFE5, 0xFFA0]
        #expect(uuids == expected)
        #expect(services.last?.2.byteWidth == 16)
        #expect(services.last?.1 == 0xFFFF)
        #expect(channel.failure == nil)
        await connection.close()
    }

    @Test func anyOrderReplayServesARecordedDiscoveryInAnotherOrder() async throws {
        let trace = try TraceReplay.load("bumble-discovery-errors.trace")
        let channel = ScriptedATTChannel(trace: trace, matching: .anyOrder)
        let connection = ATTConnection(channel: channel)
        // Characteristic discovery of three services, last recorded first.
        let declarations: [(UInt16, UInt16, [UInt16])] = [
            (0x0022, 0x0026, [0x0023, 0x0025]), (0x0015, 0x0018, [0x0016]), (0x0001, 0x0005, [0x0002, 0x0004]),
        ]
        for (start, end, handles) in declarations {
            let response = try await connection.request(
                .readByTypeRequest(
                    ReadByTypeRequest(startingHandle: start, endingHandle: end, attributeType: .bit16(0x2803))))
            guard case .readByTypeResponse(let list) = response else {
                Issue.record("unexpected \(response)")
                continue
            }
            #expect(list.entries.map(\.handle) == handles)
        }
        #expect(channel.failure == nil)
        #expect(channel.sentSDUs.count == 3)
        #expect(!channel.isComplete)
        await connection.close()
    }

    @Test func divergingFromTheTraceFailsWithLineAndBothPDUs() async throws {
        let trace = try TraceReplay.load("bumble-discovery-errors.trace")
        let firstLine = try #require(trace.entries.first { $0.direction == .hostToPeer }).line
        #expect(firstLine == 13)  // the example in Fixtures/traces/README.md
        let connection = ATTConnection(channel: ScriptedATTChannel(trace: trace))
        await #expect {
            _ = try await connection.request(
                .readByGroupTypeRequest(
                    ReadByGroupTypeRequest(
                        startingHandle: 0x0002, endingHandle: 0xFFFF, attributeGroupType: .bit16(0x2800))))
        } throws: { error in
            guard case ATTError.bearerClosed(let reason) = error else { return false }
            return reason.contains("trace line \(firstLine): expected > 100100ffff0028, host sent > 100200ffff0028")
        }
    }

    @Test func indicationsAreConfirmedAfterHandOff() async throws {
        let trace = try TraceReplay.load("synthetic-client-indications.trace")
        let channel = ScriptedATTChannel(trace: trace)
        let connection = ATTConnection(channel: channel)
        let outcome = try await TraceReplay.replayAsClient(trace, connection: connection, channel: channel)
        #expect(channel.failure == nil)
        #expect(channel.isComplete)
        #expect(
            outcome.inbound == [F.indication(0x29, [1]), F.notification(0x25, [0xAA, 0xBB]), F.indication(0x29, [2])])
        await connection.close()
    }

    @Test func serverRoleAnswersTheRecordedClient() async throws {
        let trace = try TraceReplay.load("synthetic-server-role.trace")
        let channel = ScriptedATTChannel(trace: trace)
        let server = ATTConnection(channel: channel, configuration: .init(rxMTU: 247))
        await server.setServerHandler { pdu in
            switch pdu {
            case .readRequest(let request) where request.handle == 0x0003:
                return .readResponse(ReadResponse(value: Array("CC2650 SensorTag".utf8)))
            case .readRequest(let request):
                return F.errorResponse(.readRequest, request.handle, .invalidHandle)
            case .writeRequest(let request) where request.handle == 0x002A:
                return .writeResponse(WriteResponse())
            default:
                return nil
            }
        }
        let writeResponseLine = try #require(trace.entries.first { $0.bytes == [0x13] }).line
        await channel.waitUntilReached(line: writeResponseLine)
        #expect(await server.mtu == 247)
        try await server.indicate(HandleValueIndication(handle: 0x0029, value: [0x4E, 0x01]))
        await channel.waitUntilComplete()
        #expect(channel.failure == nil)
        #expect(channel.isComplete)
        await server.close()
    }
}
