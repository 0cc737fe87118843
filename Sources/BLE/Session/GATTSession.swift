import Kernel
import Capture
import ATT
import Bluetooth
import GATT
import HCI
import L2CAP

/// One connection for a GATT command: transport → ATT channel → bearer → client, with the
/// largest MTU exchanged first, and everything closed at the end.
package struct GATTSession {
    package let central: any Central
    package let connection: ATTConnection
    package let client: GATTClient
    package let peer: PeerAddress
    /// The connection under the ATT channel: its end and how to end it.
    package let link: CentralLink
    /// Whether ``close()`` also closes the central (a session opened on its own transport).
    package var ownsCentral = true

    /// Our Rx MTU: the largest ATT allows on LE (a 4.x peer answers with its own, often 23).
    package static let preferredMTU = 517

    /// Connects to `peer` through an open `central` (which the caller keeps) and exchanges the
    /// MTU; `close()` then leaves the central open when `ownsCentral` is false. `link`: a link
    /// already made to `peer`.
    package static func connect(
        _ peer: PeerAddress, through central: any Central, options: AdapterOptions, hooks: SessionHooks,
        ownsCentral: Bool, link given: CentralLink? = nil
    ) async throws -> GATTSession {
        let link: CentralLink
        if let given { link = given } else { link = try await central.link(to: peer, timeout: options.timeout) }
        let channel = link.channel
        var bearerChannel = channel
        if let trace = hooks.trace {
            bearerChannel = ObservedATTChannel(
                channel, onReceive: { trace(false, $0) }, onSend: { trace(true, $0) })
        }
        if let path = options.record, !central.recordsHCI {
            // ATT SDUs inside synthetic ACL/L2CAP headers: a valid H4 btsnoop on any transport.
            do {
                bearerChannel = try RecordingATTChannel(
                    wrapping: bearerChannel, path: path,
                    peer: RecordingATTChannel.Peer(address: peer.address, addressType: LEAddressType(peer.type)))
            } catch {
                await channel.close()
                throw BLEError("--record \(path): \(error)", kind: "record")
            }
        }
        var violationHandler: ATTConnection.ViolationHandler?
        if let report = hooks.violation {
            let peerName = peer.address.description
            violationHandler = { violation in report(violation, peerName) }
        }
        let connection = ATTConnection(
            channel: bearerChannel, configuration: ATTBearer.Configuration(rxMTU: options.clientMTU),
            violationHandler: violationHandler)
        hooks.opened?(connection)
        let session = GATTSession(
            central: central, connection: connection, client: GATTClient(connection: connection), peer: peer,
            link: link, ownsCentral: ownsCentral)
        do {
            _ = try await session.client.exchangeMTU(options.clientMTU)
        } catch {
            await session.close()
            throw BLEError.gatt(error, doing: "exchanging the MTU with \(peer)")
        }
        return session
    }

    package func close() async {
        await client.close()
        await connection.close()
        if ownsCentral { await central.close() }
    }
}

/// What a session tells its caller as it runs: `-v` tracing, the peer's tolerated protocol
/// violations, the connection once it exists (for `--strict`).
package struct SessionHooks: Sendable {
    /// Each ATT SDU as it passes (`sent`: ours).
    package var trace: (@Sendable (_ sent: Bool, _ sdu: [UInt8]) -> Void)?
    /// A violation the ATT connection tolerated, with the peer's address.
    package var violation: (@Sendable (_ violation: ATTError, _ peer: String) -> Void)?
    /// The ATT connection, as soon as it is made.
    package var opened: (@Sendable (ATTConnection) -> Void)?

    package init() {}
}
