import BLE
import ATT
import Bluetooth
import Foundation
import GATT
import Synchronization
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 14: paths that used to give a result that looked right and was not. Each test failed on
/// the code before the issue: `--security` was ignored where nothing honours it, `read
/// --multiple` dropped the handles whose tuples did not fit, `read HANDLE` returned ATT_MTU − 1
/// octets of a longer value, a long `write` failed, `write --no-response` said "wrote", and the
/// peer's tolerated protocol violations went unsaid.
@Suite struct NoSilentWrongResultTests {
    static let tag = "54:6C:0E:9A:3B:01"

    // MARK: 1. --security where it cannot be honoured

    /// Issue 17 made --security pair in user space: on `sim` the emulated SensorTag answers
    /// Pairing Not Supported (as its firmware does), so the read fails saying so rather than run
    /// unencrypted; a transport that cannot be opened fails as one.
    @Test(arguments: ["sim", "sim:sensortag"])
    func securityPairsOnTheSimulationAndFailsWhenThePeerCannot(transport: String) async {
        for level in ["medium", "high", "fips"] {
            let result = await runInProcess(["--transport", transport, "--security", level, "read", Self.tag, "0x0003"])
            #expect(result.code == 1, "\(transport) --security \(level): \(result.stderr)")
            #expect(result.stderr.contains("Pairing Not Supported"), "\(result.stderr)")
            #expect(result.stdout.isEmpty, "no value from an unsecured link")
        }
    }

    @Test(arguments: ["tcp:127.0.0.1:9", "unix:/nonexistent/h4.sock", "serial:/dev/null", "hci-user:0"])
    func securityOnAnUnreachableTransportFailsAsTheTransport(transport: String) async {
        let result = await runInProcess(["--transport", transport, "--security", "medium", "read", Self.tag, "0x0003"])
        #expect(result.code == 69 || result.code == 77, "\(result.stderr)")
        #expect(!result.stderr.contains("kernel path"))
    }

    @Test(arguments: ["sim", "tcp:127.0.0.1:9"])
    func securityIsRefusedWhereNothingHonoursIt(transport: String) async {
        // Scanning makes no connection; our peripheral pairs per attribute, not per link.
        let scan = await runInProcess(["--transport", transport, "--security", "high", "scan", "--duration", "1"])
        #expect(scan.code == 64, "\(scan.stderr)")
        #expect(scan.stderr.contains("scan makes none"))
        let serve = await runInProcess(
            ["--transport", transport, "--security", "high", "peripheral", "sensortag", "--duration", "1"])
        #expect(serve.code == 69, "\(serve.stderr)")
        #expect(serve.stderr.contains("does not require a level of the whole link"))
    }

    @Test func securityIsAUsageErrorOnReplayAndRefusedByTheDemo() async {
        let replay = await runInProcess(
            ["--transport", "replay:/nonexistent/session.btsnoop", "--security", "medium", "services", Self.tag])
        #expect(replay.code == 64, "\(replay.stderr)")
        #expect(replay.stderr.contains("replayed capture cannot pair"))
        let demo = await runInProcess(["--security", "high", "demo"])
        #expect(demo.code == 64, "\(demo.stderr)")
        #expect(demo.stdout.isEmpty, "refused before the first step")
    }

    @Test func lowSecurityMeansNoneAndWorksEverywhere() async throws {
        let result = await runInProcess(["--json", "--transport", "sim", "--security", "low", "read", Self.tag, "0x0003"])
        #expect(result.code == 0, "\(result.stderr)")
        let value = try #require(Self.objects(result.stdout).first?["value"] as? String)
        #expect(value == Hex.encode(Array("CC2650 SensorTag".utf8)))
    }

    // MARK: 2. read --multiple returns every handle

    @Test func readMultipleReturnsEveryHandleInTheOrderAsked() async throws {
        // At ATT_MTU 23 the emulated SensorTag's Read Multiple Variable Response holds the first
        // two values only; the third used to disappear with exit 0.
        let short = await runInProcess(["--json", "--transport", "sim", "read", Self.tag, "--multiple", "0x0003,0x0021,0x001a"])
        #expect(short.code == 0, "\(short.stderr)")
        let values = Self.objects(short.stdout).filter { $0["kind"] as? String == "value" }
        #expect(values.compactMap { $0["handle"] as? Int } == [0x0003, 0x0021, 0x001A])
        #expect(values[0]["value"] as? String == Hex.encode(Array("CC2650 SensorTag".utf8)))
        #expect((values[1]["value"] as? String)?.count == 2, "the battery level, one octet")
        #expect(values[2]["value"] as? String == Hex.encode(Array("Texas Instruments".utf8)))

        // Five: the second response cuts the Model Number String (completed with Read Blob) and
        // leaves the Appearance for a last single read.
        let five = await runInProcess(
            ["--json", "--transport", "sim", "read", Self.tag, "--multiple", "0x0003,0x0021,0x001a,0x0010,0x0005"])
        #expect(five.code == 0, "\(five.stderr)")
        let all = Self.objects(five.stdout).filter { $0["kind"] as? String == "value" }
        #expect(all.compactMap { $0["handle"] as? Int } == [0x0003, 0x0021, 0x001A, 0x0010, 0x0005])
        #expect(all[3]["value"] as? String == Hex.encode(Array("CC2650 SensorTag".utf8)))
        #expect(all[4]["value"] as? String == "0000")
    }

    @Test func readMultipleFallsBackWhenThePeerAnswersBeyondTheMTUAndStrictFailsIt() async throws {
        let a = Array("first value, 16.".utf8), b = Array("four".utf8)
        let values: [UInt16: [UInt8]] = [0x0003: a, 0x0005: b]
        let central = ScriptedPeerCentral { sdu in
            switch sdu.first {
            case 0x02: return [[0x03, 23, 0]]
            case 0x20:
                // 1 + (2 + 16) + (2 + 4) = 25 octets at ATT_MTU 23.
                return [[0x21, 16, 0] + a + [4, 0] + b]
            case 0x0A:
                let handle = UInt16(sdu[1]) | UInt16(sdu[2]) << 8
                return [[0x0B] + (values[handle] ?? [])]
            default: return []
            }
        }
        let arguments = ["--json", "read", "54:6C:0E:12:34:56", "--multiple", "0x0003,0x0005"]
        let tolerated = await Self.run(arguments, through: central)
        #expect(tolerated.code == 0, "\(tolerated.stderr)")
        let objects = Self.objects(tolerated.stdout)
        let read = objects.filter { $0["kind"] as? String == "value" }
        #expect(read.compactMap { $0["value"] as? String } == [Hex.encode(a), Hex.encode(b)])
        #expect(objects.first?["event"] as? String == "protocolViolation")
        #expect((objects.first?["message"] as? String)?.contains("exceeds ATT_MTU 23") == true)
        #expect(Self.warnings(tolerated.stderr).count == 1, "\(tolerated.stderr)")

        let strict = await Self.run(["--strict"] + arguments, through: central)
        #expect(strict.code == 1, "\(strict.stderr)")
        #expect(strict.stderr.contains("--strict"))
        #expect(Self.objects(strict.stdout).last?["error"] != nil)
    }

    // MARK: 3 and 4. long reads and writes

    static let longValue = (0..<40).map { UInt8($0) }

    static func longValueDatabase() throws -> AttributeDatabase {
        try AttributeDatabase(services: [
            StandardServices.genericAccess(deviceName: "Long values"),
            ServiceDefinition(uuid: 0xFFF0, handle: 0x0020, characteristics: [
                CharacteristicDefinition(
                    uuid: 0xFFF1, properties: [.read, .write], value: longValue, declarationHandle: 0x0021, valueHandle: 0x0022),
                CharacteristicDefinition(
                    uuid: 0xFFF2, properties: [.read, .write], value: [0], declarationHandle: 0x0023, valueHandle: 0x0024),
            ]),
        ])
    }

    @Test func readByHandleCompletesALongValueAndNoLongGivesTheSingleResponse() async throws {
        let central = InMemoryCentral(database: try Self.longValueDatabase())
        let peer = "54:6C:0E:12:34:56"
        for flags in [[], ["--long"]] {
            let whole = await Self.run(["--json", "read", peer, "0x0022"] + flags, through: central)
            #expect(whole.code == 0, "\(whole.stderr)")
            #expect(Self.objects(whole.stdout).first?["value"] as? String == Hex.encode(Self.longValue), "\(flags)")
        }
        let single = await Self.run(["--json", "read", peer, "0x0022", "--no-long"], through: central)
        #expect(single.code == 0, "\(single.stderr)")
        #expect(Self.objects(single.stdout).first?["value"] as? String == Hex.encode(Array(Self.longValue.prefix(22))))
        let byUUID = await Self.run(["--json", "read", peer, "FFF1"], through: central)
        #expect(Self.objects(byUUID.stdout).first { $0["kind"] as? String == "value" }?["value"] as? String == Hex.encode(Self.longValue))
        #expect(await runInProcess(["read", peer, "0x0022", "--long", "--no-long"]).code == 64)
        #expect(await runInProcess(["read", peer, "--multiple", "3,5", "--no-long"]).code == 64)
    }

    @Test func aValueBeyondOneWriteRequestGoesAsALongWrite() async throws {
        let central = InMemoryCentral(database: try Self.longValueDatabase())
        let peer = "54:6C:0E:12:34:56"
        let value = (0..<60).map { UInt8(0xA0 &+ $0) }
        let write = await Self.run(["-v", "write", peer, "0x0024", Hex.encode(value)], through: central)
        #expect(write.code == 0, "\(write.stderr)")
        #expect(write.stdout == "wrote 60 octets to 0x0024\n")
        #expect(write.stderr.contains("60 octets do not fit one Write Request at ATT_MTU 23"), "\(write.stderr)")
        #expect(write.stderr.contains("> ATT Prepare Write Request"), "the -v trace shows the long write")
        let back = await Self.run(["--json", "read", peer, "0x0024"], through: central)
        #expect(Self.objects(back.stdout).first?["value"] as? String == Hex.encode(value))
        // Without -v it just works, silently.
        let quiet = await Self.run(["write", peer, "0x0024", Hex.encode(value)], through: central)
        #expect(quiet.code == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    @Test func aWriteCommandSaysSentAndWarnsWhenThePropertiesForbidIt() async throws {
        let central = InMemoryCentral(database: try Self.longValueDatabase())
        let peer = "54:6C:0E:12:34:56"
        let byUUID = await Self.run(["write", peer, "FFF2", "01", "--no-response"], through: central)
        #expect(byUUID.code == 0, "\(byUUID.stderr)")
        #expect(byUUID.stdout == "sent 1 octet to 0x0024\n")
        #expect(byUUID.stderr.contains("warning:") && byUUID.stderr.contains("lack write-without-response"), "\(byUUID.stderr)")
        // By handle the properties are not known: sent, and nothing to warn about.
        let byHandle = await Self.run(["write", peer, "0x0024", "01", "--no-response"], through: central)
        #expect(byHandle.stdout == "sent 1 octet to 0x0024\n")
        #expect(byHandle.stderr.isEmpty, "\(byHandle.stderr)")
        let request = await Self.run(["write", peer, "FFF2", "02"], through: central)
        #expect(request.stdout == "wrote 1 octet to 0x0024\n")
    }

    // MARK: 5. tolerated protocol violations

    /// A server that, once indications are on (CCCD 0x0026 of value 0x0025), sends in one burst a
    /// response to nothing, two indications without waiting for our confirmation, a notification
    /// over ATT_MTU and a third indication.
    static func misbehavingServer() -> ScriptedPeerCentral {
        let burstSent = Mutex(false)
        return ScriptedPeerCentral { sdu in
            switch sdu.first {
            case 0x02: return [[0x03, 23, 0]]
            // The declaration before the value (subscribe by handle reads it): indicate, FFF1.
            case 0x08: return [[0x09, 0x07, 0x24, 0x00, 0x20, 0x25, 0x00, 0xF1, 0xFF]]
            case 0x04:
                let start = UInt16(sdu[1]) | UInt16(sdu[2]) << 8
                if start == 0x0026 { return [[0x05, 0x01, 0x26, 0x00, 0x02, 0x29]] }
                return [[0x01, 0x04, sdu[1], sdu[2], 0x0A]]
            case 0x12:
                let enabling = Array(sdu.dropFirst(3)) == [0x02, 0x00]
                guard enabling, !burstSent.withLock({ let was = $0; $0 = true; return was }) else { return [[0x13]] }
                return [
                    [0x13],
                    [0x0B, 0x01],
                    [0x1D, 0x25, 0x00, 0x01],
                    [0x1D, 0x25, 0x00, 0x02],
                    [0x1B, 0x25, 0x00] + [UInt8](repeating: 0xEE, count: 25),
                    [0x1D, 0x25, 0x00, 0x03],
                ]
            default: return []
            }
        }
    }

    @Test func toleratedViolationsAreWarnedOnceEach() async throws {
        let result = await Self.run(
            ["subscribe", "54:6C:0E:12:34:56", "0x0025", "--indicate", "--count", "3"], through: Self.misbehavingServer())
        #expect(result.code == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == 3, "the three indications: \(result.stdout)")
        let warnings = Self.warnings(result.stderr)
        #expect(warnings.count == 4, "\(result.stderr)")
        #expect(warnings.contains { $0.contains("with no request outstanding") })
        #expect(warnings.filter { $0.contains("§3.4.7.2") }.count == 2, "the second and the third indication")
        #expect(warnings.contains { $0.contains("exceed ATT_MTU 23") })
        #expect(warnings.allSatisfy { $0.contains("54:6C:0E:12:34:56") && $0.contains("--strict") })
    }

    @Test func underJSONEachViolationIsAnEventLine() async throws {
        let result = await Self.run(
            ["--json", "subscribe", "54:6C:0E:12:34:56", "0x0025", "--indicate", "--count", "3"],
            through: Self.misbehavingServer())
        #expect(result.code == 0, "\(result.stderr)")
        let objects = Self.objects(result.stdout)
        let events = objects.filter { $0["event"] as? String == "protocolViolation" }
        #expect(events.count == 4)
        #expect(events.allSatisfy { $0["peer"] as? String == "54:6C:0E:12:34:56" && $0["message"] is String })
        #expect(objects.filter { $0["indication"] as? Bool == true }.count == 3)
    }

    @Test func strictMakesAViolationAFailure() async throws {
        let result = await Self.run(
            ["--json", "--strict", "subscribe", "54:6C:0E:12:34:56", "0x0025", "--indicate", "--count", "3"],
            through: Self.misbehavingServer())
        #expect(result.code == 1, "\(result.stderr)")
        let error = try #require(Self.objects(result.stdout).last?["error"] as? [String: Any])
        #expect(error["kind"] as? String == "protocol")
        #expect((error["message"] as? String)?.contains("with no request outstanding") == true, "the first violation")
        #expect(Self.parsesStrict())
    }

    static func parsesStrict() -> Bool {
        (try? parse(["--strict", "services", "54:6C:0E:12:34:56"]).options.strict) == true
    }

    // MARK: Helpers

    static func objects(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    static func warnings(_ stderr: String) -> [Substring] {
        stderr.split(separator: "\n").filter { $0.contains("warning:") }
    }

    static func run(_ arguments: [String], through central: any Central) async -> CapturedRun {
        await runInProcess(arguments, through: central)
    }
}

/// A central whose every connection reaches a peer scripted as a function: each SDU we send is
/// answered by the batch of SDUs `respond` returns, delivered at once (as the user-space L2CAP
/// channel delivers what arrived together), so what the peer sends back-to-back reaches the
/// bearer before our reaction to the first of it.
final class ScriptedPeerCentral: Central {
    let respond: @Sendable ([UInt8]) -> [[UInt8]]

    init(respond: @escaping @Sendable ([UInt8]) -> [[UInt8]]) { self.respond = respond }

    func connect(to peer: PeerAddress, timeout: Duration) async throws -> any ATTChannel {
        BurstPeerChannel(respond: respond)
    }

    func close() async {}
}

final class BurstPeerChannel: ATTBatchReceivingChannel, @unchecked Sendable {
    // @unchecked: `iterator` is used by the one reader only (ATTBatchReceivingChannel's rule).
    private let respond: @Sendable ([UInt8]) -> [[UInt8]]
    private let continuation: AsyncStream<[[UInt8]]>.Continuation
    private var iterator: AsyncStream<[[UInt8]]>.AsyncIterator
    /// Not used: the connection reads through `receiveAll(into:)`.
    let incoming = AsyncThrowingStream<[UInt8], any Error> { $0.finish() }

    init(respond: @escaping @Sendable ([UInt8]) -> [[UInt8]]) {
        self.respond = respond
        let (stream, continuation) = AsyncStream<[[UInt8]]>.makeStream()
        self.continuation = continuation
        iterator = stream.makeAsyncIterator()
    }

    var maximumSDUSize: Int? { nil }

    func send(_ sdu: [UInt8]) async throws {
        let batch = respond(sdu)
        if !batch.isEmpty { continuation.yield(batch) }
    }

    func receiveAll(into sdus: inout [[UInt8]]) async throws -> Bool {
        guard let batch = await iterator.next() else { return false }
        sdus += batch
        return true
    }

    func close() async { continuation.finish() }
}
