import ATT
import Bluetooth
import Synchronization
import Testing

@testable import GATT

/// Reads that give every value whole (issue 14): `read(handle:)` completes a full Read Response
/// with Read Blob; `readMultipleVariable(handles:)` returns every handle asked, in order,
/// completing a cut value and asking again for the tuples that did not fit, and falls back to
/// single reads when the server rejects the request or answers beyond ATT_MTU. All at ATT_MTU 23
/// against scripted servers (no MTU exchange: `.manual`).
@Suite("GATT client: complete reads")
struct CompleteReadTests {
    /// `count` octets counting up from `first`, as the trace's hex.
    static func octets(_ first: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8((first + $0) & 0xFF) } }
    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    /// A scripted client whose connection hands its tolerated violations to `violations`.
    static func client(_ script: String) throws -> (GATTClient, ScriptedATTChannel, Violations) {
        let channel = ScriptedATTChannel(trace: try ATTTrace(parsing: script), matching: .strict)
        let violations = Violations()
        let connection = ATTConnection(
            channel: channel, configuration: ATTBearer.Configuration(rxMTU: 23),
            violationHandler: { violations.append($0) })
        return (GATTClient(connection: connection, configuration: .manual), channel, violations)
    }

    final class Violations: Sendable {
        private let list = Mutex<[ATTError]>([])
        func append(_ error: ATTError) { list.withLock { $0.append(error) } }
        var all: [ATTError] { list.withLock { $0 } }
    }

    @Test func aFullReadResponseIsCompletedWithReadBlob() async throws {
        let value = Self.octets(0, 32)
        let (client, channel, _) = try Self.client(
            """
            > 0a 1000
            < 0b \(Self.hex(Array(value[0..<22])))
            > 0c 1000 1600
            < 0d \(Self.hex(Array(value[22...])))
            """)
        #expect(try await client.read(handle: 0x0010) == value)
        await channel.waitUntilComplete()
        #expect(channel.failure == nil)
        await client.close()
    }

    @Test func completeFalseGivesTheSingleResponse() async throws {
        let value = Self.octets(0, 22)
        let (client, channel, _) = try Self.client(
            """
            > 0a 1000
            < 0b \(Self.hex(value))
            """)
        #expect(try await client.read(handle: 0x0010, complete: false) == value)
        #expect(await client.connection.requestsSent == 1)
        #expect(channel.failure == nil)
        await client.close()
    }

    @Test func aShortValueTakesOneRequest() async throws {
        let (client, channel, _) = try Self.client(
            """
            > 0a 0300
            < 0b 4869
            """)
        #expect(try await client.read(handle: 0x0003) == [0x48, 0x69])
        #expect(await client.connection.requestsSent == 1)
        #expect(channel.failure == nil)
        await client.close()
    }

    @Test func readMultipleVariableCompletesTheCutValueAndAsksAgainForTheRest() async throws {
        let a = Self.octets(0x10, 16), b = Self.octets(0x40, 10)
        // 1 + (2 + 16) + (2 + 2 of b's 10) = 23: b is cut, 0x0007 and 0x0009 did not fit.
        let (client, channel, _) = try Self.client(
            """
            > 20 0300 0500 0700 0900
            < 21 1000 \(Self.hex(a)) 0a00 \(Self.hex(Array(b[0..<2])))
            > 0c 0500 0200
            < 0d \(Self.hex(Array(b[2...])))
            > 20 0700 0900
            < 21 0100 07 0200 0909
            """)
        let values = try await client.readMultipleVariable(handles: [0x0003, 0x0005, 0x0007, 0x0009])
        #expect(
            values == [
                HandleValue(handle: 0x0003, value: a), HandleValue(handle: 0x0005, value: b),
                HandleValue(handle: 0x0007, value: [0x07]), HandleValue(handle: 0x0009, value: [0x09, 0x09]),
            ])
        await channel.waitUntilComplete()
        #expect(channel.failure == nil)
        await client.close()
    }

    @Test func aLastHandleLeftAloneIsReadSingly() async throws {
        let a = Self.octets(0x20, 20)
        // 1 + 2 + 20 = 23: only the first tuple fits; one handle left → a Read Request.
        let (client, channel, _) = try Self.client(
            """
            > 20 0300 0500
            < 21 1400 \(Self.hex(a))
            > 0a 0500
            < 0b 55
            """)
        let values = try await client.readMultipleVariable(handles: [0x0003, 0x0005])
        #expect(values.map(\.handle) == [0x0003, 0x0005])
        #expect(values.map(\.value) == [a, [0x55]])
        #expect(channel.failure == nil)
        await client.close()
    }

    @Test func requestNotSupportedFallsBackToSingleReads() async throws {
        let (client, channel, violations) = try Self.client(
            """
            > 20 0300 0500 0300
            < 01 20 0300 06
            > 0a 0300
            < 0b 41
            > 0a 0500
            < 0b 42
            > 0a 0300
            < 0b 41
            """)
        let values = try await client.readMultipleVariable(handles: [0x0003, 0x0005, 0x0003])
        #expect(values.map(\.value) == [[0x41], [0x42], [0x41]], "a handle asked twice comes back twice")
        #expect(violations.all.isEmpty, "rejecting an optional request is no violation")
        #expect(channel.failure == nil)
        await client.close()
    }

    @Test func anAnswerBeyondATTMTUFallsBackAndIsReported() async throws {
        let a = Self.octets(0x30, 16), b = Self.octets(0x50, 4)
        // 1 + 18 + 6 = 25 octets at ATT_MTU 23 (as Bumble answers).
        let (client, channel, violations) = try Self.client(
            """
            > 20 0300 0500
            < 21 1000 \(Self.hex(a)) 0400 \(Self.hex(b))
            > 0a 0300
            < 0b \(Self.hex(a))
            > 0a 0500
            < 0b \(Self.hex(b))
            """)
        let values = try await client.readMultipleVariable(handles: [0x0003, 0x0005])
        #expect(values.map(\.value) == [a, b])
        #expect(violations.all.count == 1)
        #expect("\(violations.all)".contains("exceeds ATT_MTU 23"))
        #expect(await client.connection.violationsTolerated == 1)
        #expect(channel.failure == nil)
        await client.close()
    }

    @Test func anotherRefusalFailsTheReadNamingItsHandle() async throws {
        let (client, _, _) = try Self.client(
            """
            > 20 0300 0500
            < 01 20 0500 02
            """)
        await #expect(throws: GATTError.peerError(request: .readMultipleVariableRequest, handle: 5, code: .readNotPermitted)) {
            _ = try await client.readMultipleVariable(handles: [0x0003, 0x0005])
        }
        await client.close()
    }
}
