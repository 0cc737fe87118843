import Kernel
import Capture
import ATT
import Bluetooth
import GATT
import HCI
import L2CAP

/// One connection for a GATT command: transport → ATT channel → bearer → client, with the
/// largest MTU exchanged first, and everything closed at the end.
struct GATTSession {
    let central: any Central
    let connection: ATTConnection
    let client: GATTClient
    let peer: PeerAddress

    /// Our Rx MTU: the largest ATT allows on LE (a 4.x peer answers with its own, often 23).
    static let preferredMTU = 517

    /// Tests: the central every session of this task uses instead of `--transport`'s
    /// (``runGATTClient(_:through:standardOutput:standardError:)``).
    @TaskLocal static var injectedCentral: (any Central)?

    /// `central` replaces the one `--transport` names (tests use an in-memory one).
    static func open(
        _ peer: PeerAddress, options: GlobalOptions, replayMatchAny: Bool, central given: (any Central)? = nil
    ) async throws -> GATTSession {
        let central: any Central
        if let given = given ?? injectedCentral {
            central = given
        } else {
            central = try await openCentral(options.transport, options: options, replayMatchAny: replayMatchAny)
        }
        let channel: any ATTChannel
        do {
            channel = try await central.connect(to: peer, timeout: .milliseconds(Int64(options.timeout * 1000)))
        } catch {
            await central.close()
            throw error
        }
        var bearerChannel = channel
        if options.verbosity > 0 {
            bearerChannel = ATTTracing.channel(channel, errorDescriptor: SessionDiagnostics.current?.errors ?? 2)
        }
        if let path = options.record, !central.recordsHCI {
            // ATT SDUs inside synthetic ACL/L2CAP headers: a valid H4 btsnoop on any transport.
            do {
                bearerChannel = try RecordingATTChannel(
                    wrapping: bearerChannel, path: path,
                    peer: RecordingATTChannel.Peer(address: peer.address, addressType: LEAddressType(peer.type)))
            } catch {
                await channel.close()
                await central.close()
                throw CommandFailure("--record \(path): \(error)", kind: "record")
            }
        }
        let diagnostics = SessionDiagnostics.current
        var violationHandler: ATTConnection.ViolationHandler?
        if let diagnostics {
            let peerName = peer.address.description
            violationHandler = { violation in diagnostics.report(violation, peer: peerName) }
        }
        let connection = ATTConnection(
            channel: bearerChannel, configuration: ATTBearer.Configuration(rxMTU: preferredMTU),
            violationHandler: violationHandler)
        diagnostics?.attach(connection)
        let session = GATTSession(central: central, connection: connection, client: GATTClient(connection: connection), peer: peer)
        do {
            _ = try await session.client.exchangeMTU(preferredMTU)
        } catch {
            await session.close()
            throw CommandFailure.gatt(error, doing: "exchanging the MTU with \(peer)")
        }
        return session
    }

    func close() async {
        await client.close()
        await connection.close()
        await central.close()
    }
}

extension CommandFailure {
    static func att(_ error: ATTError, doing what: String) -> CommandFailure {
        switch error {
        case .peerError(let request, let handle, let code):
            return CommandFailure(
                "\(what): the peer refused \(request) on handle 0x\(hex(handle, 4)): \(code)", kind: "att",
                handle: handle, attError: code.rawValue)
        case .timeout(let request):
            return CommandFailure("\(what): the peer did not answer \(request) within 30 s (the ATT transaction limit)", kind: "timeout")
        case .bearerClosed(let reason):
            return CommandFailure("\(what): the connection closed: \(reason)", kind: "disconnected")
        default:
            return CommandFailure("\(what): \(error)", kind: "att")
        }
    }

    static func gatt(_ error: GATTError, doing what: String) -> CommandFailure {
        switch error {
        case .att(let att):
            return .att(att, doing: what)
        case .peerError(let request, let handle, let code):
            return CommandFailure(
                "\(what): the peer refused \(request) on handle 0x\(hex(handle, 4)): \(code)", kind: "att",
                handle: handle, attError: code.rawValue)
        case .ambiguousUUID(let uuid, let handles):
            return CommandFailure(
                "\(what): \(uuid) names \(handles.count) characteristics (value handles "
                    + handles.map { "0x" + hex($0, 4) }.joined(separator: ", ") + "); give a handle instead",
                kind: "usage", exitCode: .usage)
        case .notFound(let uuid):
            return CommandFailure("\(what): the peer has no characteristic \(uuid)", kind: "notFound")
        default:
            return CommandFailure("\(what): \(error)", kind: "gatt")
        }
    }

    /// Maps any error of a GATT command.
    static func from(_ error: any Error, doing what: String) -> CommandFailure {
        switch error {
        case let failure as CommandFailure: return failure
        case let gatt as GATTError: return .gatt(gatt, doing: what)
        case let att as ATTError: return .att(att, doing: what)
        case let kernel as KernelBluetoothError: return .kernel(kernel, doing: what)
        case let scan as KernelScanner.Failure:
            // Says what failed on its own ("the controller refused …", "scanning: …").
            if case .refused(_, let status) = scan { return CommandFailure("\(scan)", kind: "hci", hciStatus: status.rawValue) }
            return CommandFailure("\(scan)", kind: "failure")
        case let hci as HCIError:
            if case .commandFailed(_, let status) = hci {
                return CommandFailure("\(what): \(hci)", kind: "hci", hciStatus: status.rawValue)
            }
            return CommandFailure("\(what): \(hci)", kind: "hci")
        default: return CommandFailure("\(what): \(error)", kind: "failure")
        }
    }
}

/// JSON text of a UUID as DESIGN.md gives it: 16-bit as 4 upper-case hex digits, every other
/// UUID in canonical upper-case 128-bit form.
func jsonUUID(_ uuid: BluetoothUUID) -> String {
    switch uuid.shortened {
    case .bit16(let value): return BluetoothUUID.bit16(value).description
    default: return BluetoothUUID.bit128(uuid.uuid128).description
    }
}

/// `Battery Level (2A19)` or the UUID alone.
func displayName(_ uuid: BluetoothUUID) -> String {
    if let name = GATTNames.name(for: uuid) { return "\(name) (\(jsonUUID(uuid)))" }
    return jsonUUID(uuid)
}

/// A handle or a UUID, as commands take them.
enum AttributeSelector: Equatable, Sendable {
    case handle(UInt16)
    case uuid(BluetoothUUID)

    init(_ target: Target) {
        switch target {
        case .handle(let handle): self = .handle(handle)
        case .uuid(let uuid): self = .uuid(uuid)
        }
    }

    /// `0x0021` or `33` is a handle; `2A19`, `0x2a19` with 4 digits… is ambiguous, so a handle
    /// is decimal or `0x` + up to 4 digits, and a UUID is 4 hex digits without `0x`, 8 or 32.
    init(parsing text: String) throws(UsageError) {
        if text.hasPrefix("0x") || text.hasPrefix("0X") || text.allSatisfy(\.isNumber) && text.count < 4 {
            self = .handle(try parseHandle(text, what: "the attribute handle"))
        } else if let uuid = BluetoothUUID(text) {
            self = .uuid(uuid)
        } else if text.allSatisfy(\.isNumber) {
            self = .handle(try parseHandle(text, what: "the attribute handle"))
        } else {
            throw UsageError("'\(text)' is neither a handle (0x0021 or 33) nor a UUID (2A19 or a 128-bit UUID)")
        }
    }
}
