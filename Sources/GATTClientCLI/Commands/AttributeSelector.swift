import ATT
import BLE
import Bluetooth
import GATT

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
    /// Decimal digits with a leading zero (`041`) that are not a UUID's 4 or 8 are refused with
    /// both readings: a number the user typed is read one way only.
    init(parsing text: String) throws(UsageError) {
        let decimal = !text.isEmpty && text.allSatisfy { $0.isASCII && $0.isNumber }
        if decimal, text.count != 4, text.count != 8 { try refuseLeadingZero(text) }
        if text.hasPrefix("0x") || text.hasPrefix("0X") || decimal && text.count < 4 {
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

/// The one wording of "no such characteristic" (read, write, subscribe) for a UUID, with what the
/// argument may have meant: a service UUID is said to be one; four decimal digits without `0x`
/// were read as a UUID and may have meant a handle.
func noCharacteristic(_ uuid: BluetoothUUID, on peer: PeerAddress) -> CommandFailure {
    let text = jsonUUID(uuid)
    if let entry = GATTNames.entry(for: uuid), entry.kind == .service {
        return CommandFailure(
            "\(text) is a service (\(entry.name)), not a characteristic; `gattclient services \(peer.address)` lists "
                + "its characteristics", kind: "notFound")
    }
    var message = "no characteristic \(displayName(uuid)) on \(peer.address)"
    if text.count == 4, text.allSatisfy(\.isNumber) {
        message += " (\(text) was read as a UUID; for a handle write 0x\(text.lowercased()))"
    }
    return CommandFailure(message, kind: "notFound")
}

/// The one wording of "this UUID names several attributes" (write, subscribe; `read` prints them
/// all, each with its handle): the handles, and how to name one. Exit 64.
func severalAttributes(_ uuid: BluetoothUUID, handles: [UInt16], on peer: PeerAddress, command: String) -> CommandFailure {
    let kind = GATTNames.entry(for: uuid)?.kind == .descriptor ? "descriptors" : "attributes"
    return CommandFailure(
        "\(displayName(uuid)) names \(handles.count) \(kind) on \(peer.address) (handles "
            + handles.map { "0x" + hex($0, 4) }.joined(separator: ", ")
            + "): \(command) takes one, by handle (gattclient \(command) \(peer.address) 0x\(hex(handles[0], 4)) …)",
        kind: "usage", exitCode: .usage)
}

/// The handle of the one attribute with type `uuid` that is not a characteristic's value (a
/// descriptor: Read Using Characteristic UUID finds every attribute of a type the server lets
/// be read); `notFound` when there is none, `ambiguousUUID` when there are several.
func attributeHandle(uuid: BluetoothUUID, client: GATTClient) async throws(GATTError) -> UInt16 {
    let found: [ReadByTypeResponse.AttributeData]
    do {
        found = try await client.read(uuid: uuid)
    } catch {
        throw .notFound(uuid)
    }
    guard let first = found.first else { throw .notFound(uuid) }
    guard found.count == 1 else { throw .ambiguousUUID(uuid, handles: found.map(\.handle)) }
    return first.handle
}

/// Whether `error` says the UUID names nothing: not found in the database, or Attribute Not
/// Found to a read or search by that type.
func isNoSuchCharacteristic(_ error: any Error) -> Bool {
    switch error {
    case GATTError.notFound: return true
    case GATTError.peerError(_, _, .attributeNotFound): return true
    case let failure as BLEError: return failure.kind == "notFound" || failure.attError == .attributeNotFound
    default: return false
    }
}

/// `0x0029 (Device Name, 2A00)`: a handle, and what it holds where that is known.
func handleText(_ handle: UInt16, _ uuid: BluetoothUUID?) -> String {
    "0x\(hex(handle, 4))" + (uuid.map { " (\(displayName($0)))" } ?? "")
}

/// The whole value of a Read Using Characteristic UUID entry: one the response had to cut
/// (ATT_MTU − 4 octets) is read again with Read Blob (`always`: every value is read again).
func wholeValue(
    _ entry: ReadByTypeResponse.AttributeData, client: GATTClient, always: Bool = false
) async throws(GATTError) -> [UInt8] {
    let mtu = await client.mtu
    guard always || entry.value.count >= mtu - 4 else { return entry.value }
    return try await client.readLong(handle: entry.handle)
}
