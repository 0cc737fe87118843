import ATT
import Bluetooth
import Foundation
import GATT
import Testing
import TestSupport

/// The far end of an in-memory ATT channel, played by a test: what our side sent arrives,
/// in order, on `received`.
final class PeerEnd: Sendable {
    let channel: InMemoryATTChannel
    let received: AsyncStream<[UInt8]>
    private let forwarder: Task<Void, Never>

    init(_ channel: InMemoryATTChannel) {
        self.channel = channel
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .unbounded)
        received = stream
        forwarder = Task {
            do {
                for try await sdu in channel.incoming { continuation.yield(sdu) }
            } catch {}
            continuation.finish()
        }
    }

    func send(_ pdu: ATTPDU) async throws { try await channel.send(pdu.encoded) }

    deinit { forwarder.cancel() }
}

/// Our side (an ATTConnection and a GATTClient that sends only what it is asked to) and the
/// peer's end of the link. On the system clock the ATT transaction timeout is 30 s times TEST_TIMEOUT_SCALE: the peer
/// end is a task of this process, and a loaded suite (the sanitized run) can hold it that long;
/// an injected clock keeps the specification's 30 s.
func makeLink(clock: (any BluetoothClock)? = nil) -> (ATTConnection, GATTClient, PeerEnd) {
    let (ours, theirs) = InMemoryATTChannel.pair()
    var configuration = ATTBearer.Configuration()
    if clock == nil { configuration.transactionTimeout = .seconds(30 * testTimeoutScale) }
    let connection = ATTConnection(channel: ours, configuration: configuration, clock: clock ?? SystemClock())
    let client = GATTClient(connection: connection, configuration: .manual)
    return (connection, client, PeerEnd(theirs))
}

extension GATTError {
    var isBearerClosed: Bool {
        if case .att(.bearerClosed) = self { return true }
        return false
    }
}

/// The resident set size of this process, from /proc/self/statm (pages × page size).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}


/// A small database for the peer's GATT server.
///
///     0x0001 Primary 0x1800   0x0002 decl   0x0003 Device Name "Peer" (read)
///     0x0004 Primary 0x180F   0x0005 decl   0x0006 Battery Level (read, notify)  0x0007 CCCD
///     0x0008 Primary 0xFFF0   0x0009 decl   0x000A long value, 300 octets (read, write)
///                             0x000B decl   0x000C write-only (write)
///                             0x000D decl   0x000E encrypted (read/write encrypted)
enum PeerDatabase {
    static let longValue = (0..<300).map { UInt8($0 & 0xFF) }

    static func definitions() -> [ServiceDefinition] {
        [
            ServiceDefinition(
                uuid: GATTUUID.genericAccess,
                characteristics: [CharacteristicDefinition(uuid: GATTUUID.deviceName, properties: [.read], value: Array("Peer".utf8))]),
            ServiceDefinition(
                uuid: 0x180F,
                characteristics: [
                    CharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [0x64], descriptors: [.clientConfiguration()])
                ]),
            ServiceDefinition(
                uuid: 0xFFF0,
                characteristics: [
                    CharacteristicDefinition(uuid: 0xFFF1, properties: [.read, .write], value: longValue),
                    CharacteristicDefinition(uuid: 0xFFF2, properties: [.write], value: [0]),
                    CharacteristicDefinition(
                        uuid: 0xFFF3, properties: [.read, .write], permissions: [.readEncrypted, .writeEncrypted], value: Array("secret".utf8)),
                ]),
        ]
    }

    static func server(configuration: GATTServer.Configuration = GATTServer.Configuration()) throws -> GATTServer {
        GATTServer(database: try AttributeDatabase(services: definitions()), configuration: configuration)
    }
}

/// Serves `peer` from a GATT server until the `disconnectAt`-th request (0-based) arrives, then
/// drops the link (a clean close, or a link loss). Returns how many requests it answered.
func servePeer(_ peer: PeerEnd, disconnectAt: Int, linkLoss: Bool) -> Task<Int, Never> {
    Task {
        guard var server = try? PeerDatabase.server() else { return 0 }
        let client = server.connect()
        var answered = 0
        for await sdu in peer.received {
            guard let pdu = try? ATTPDU(decoding: sdu), pdu.opcode.kind == .request else { continue }
            if answered == disconnectAt {
                if linkLoss { peer.channel.fail("link lost") } else { await peer.channel.close() }
                return answered
            }
            answered += 1
            if let response = server.respond(to: pdu, from: client) { try? await peer.send(response) }
        }
        return answered
    }
}
