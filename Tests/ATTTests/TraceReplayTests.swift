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

    @Test func smartPenAnswersThePeersExchangeMTUWhileDiscovering() async throws {
        let trace = try TraceReplay.load("smartpen-mtu-discovery.trace")
        let channel = ScriptedATTChannel(trace: trace)
        let connection = ATTConnection(channel: channel, configuration: .init(rxMTU: 247))
        let outcome = try await TraceReplay.replayAsClient(trace, connection: connection, channel: channel)
        #expect(channel.failure == nil)
        #expect(channel.isComplete)
        #expect(await connection.mtu == 247)
        #expect(outcome.inbound == [F.notification(0x0017, [0x44, 0x01, 0x00])])
        #expect(outcome.requests == 20)
        #expect(outcome.peerErrors.count == 9)
        #expect(
            outcome.peerErrors.first
                == .peerError(request: .readByGroupTypeRequest, handle: 0x0031, code: .attributeNotFound))
        await connection.close()
    }

    @Test func smartPenPrimaryServices() async throws {
        let channel = ScriptedATTChannel(trace: try TraceReplay.load("smartpen-mtu-discovery.trace"))
        let connection = ATTConnection(channel: channel, configuration: .init(rxMTU: 247))
        let services = try await Self.discoverPrimaryServices(connection)
        #expect(services.map(\.0) == [0x0001, 0x0008, 0x000C, 0x0015, 0x001D, 0x0025, 0x002D])
        #expect(services.map(\.1) == [0x0007, 0x000B, 0x0014, 0x001C, 0x0024, 0x002C, 0x0030])
        let uuids: [UInt16?] = services.prefix(6).map { $0.2.uuid16 }
        let expected: [UInt16?] = [0x1800, 0x1801, 0x180A, 0xF100, 0xFFF0, 0xF200]
        #expect(uuids == expected)
        #expect(services.last?.2.byteWidth == 16)
        #expect(channel.failure == nil)
        await connection.close()
    }

    @Test func treadmillNotificationsArriveInRecordedOrder() async throws {
        let trace = try TraceReplay.load("horizon-ccc-notifications.trace")
        let channel = ScriptedATTChannel(trace: trace)
        let connection = ATTConnection(channel: channel)
        let outcome = try await TraceReplay.replayAsClient(trace, connection: connection, channel: channel)
        #expect(channel.failure == nil)
        #expect(channel.isComplete)
        let recorded = trace.entries.filter { $0.direction == .peerToHost && $0.bytes[0] == 0x1B }
        #expect(outcome.inbound.count == recorded.count)
        #expect(outcome.inbound.count == 53)
        #expect(outcome.inbound.first == F.notification(0x0012, [0x05, 0x02]))
        #expect(outcome.requests == 9)
        await connection.close()
    }

    @Test func toyCarDiscoveryWithAttributeNotFoundErrors() async throws {
        let trace = try TraceReplay.load("revcar-discovery-errors.trace")
        let channel = ScriptedATTChannel(trace: trace)
        let connection = ATTConnection(channel: channel)
        let outcome = try await TraceReplay.replayAsClient(trace, connection: connection, channel: channel)
        #expect(channel.failure == nil)
        #expect(channel.isComplete)
        #expect(outcome.requests == 22)
        #expect(outcome.peerErrors.count == 12)
        #expect(
            outcome.peerErrors.allSatisfy {
                if case .peerError(.readByTypeRequest, _, .attributeNotFound) = $0 { return true }
                return false
            })
        await connection.close()
    }

    @Test func toyCarPrimaryServicesEndAtFFFF() async throws {
        let channel = ScriptedATTChannel(trace: try TraceReplay.load("revcar-discovery-errors.trace"))
        let connection = ATTConnection(channel: channel)
        let services = try await Self.discoverPrimaryServices(connection)
        #expect(services.map(\.0) == [0x0001, 0x0008, 0x0009, 0x0010, 0x0015, 0x0019, 0x001F, 0x0030, 0x0033])
        let uuids: [UInt16?] = services.map { $0.2.uuid16 }
        let expected: [UInt16?] = [0x1800, 0x1801, 0x180A, 0xFFE0, 0xFFE5, 0xFFA0, 0xFF90, 0xFF30, 0xFF10]
        #expect(uuids == expected)
        #expect(services.last?.1 == 0xFFFF)
        await connection.close()
    }

    @Test func divergingFromTheTraceFailsWithLineAndBothPDUs() async throws {
        let trace = try TraceReplay.load("revcar-discovery-errors.trace")
        let firstLine = try #require(trace.entries.first { $0.direction == .hostToPeer }).line
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
