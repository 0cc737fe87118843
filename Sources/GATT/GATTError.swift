import ATT
import Bluetooth

/// Every failure the GATT module reports. Malformed peer data, a refusal by the peer, a local
/// misuse and a lookup that has no single answer are distinct cases.
public enum GATTError: Error, Hashable, Sendable, CustomStringConvertible {
    // MARK: Peer data

    /// An attribute value (a declaration, a descriptor) whose layout breaks the spec.
    /// `handle` is the attribute's handle when the decoder knew it.
    case invalidAttributeValue(type: BluetoothUUID, handle: UInt16?, reason: ValueReason)

    /// A response that breaks the procedure's rules (a handle outside the requested range or
    /// going backwards, a value longer than ATT_MTU allows, a Prepare Write echo that differs).
    case invalidResponse(opcode: ATTOpcode, reason: ResponseReason)
    /// A PDU that is not an answer to the request outstanding (`request`).
    case unexpectedResponse(request: ATTOpcode, received: ATTOpcode)

    // MARK: Peer refusal

    /// The server answered `request` with ATT_ERROR_RSP (`handle` as the server gave it).
    case peerError(request: ATTOpcode, handle: UInt16, code: ATTErrorCode)

    /// The ATT bearer failed under the procedure: no answer in 30 s, a disconnect, a
    /// protocol violation the bearer caught, a request it could not send.
    case att(ATTError)

    // MARK: Lookups

    /// No characteristic (or service) with this UUID in the database.
    case notFound(BluetoothUUID)
    /// No attribute at this handle in the database.
    case noAttribute(handle: UInt16)
    /// The UUID names several characteristics; `handles` are their value handles: ask for one.
    case ambiguousUUID(BluetoothUUID, handles: [UInt16])
    /// A database whose groups do not nest (`GATTDatabase.validate()`).
    case inconsistentDatabase(handle: UInt16, reason: String)

    // MARK: Local

    /// The crypto shim failed (`code` is the negative value `chcrypto_*` returned).
    case crypto(code: Int32)
    /// A local caller passed something unusable (a key of the wrong length, an empty range).
    case invalidParameter(String)
    /// A value to write is longer than the procedure can carry (`maximum` octets).
    case valueTooLong(length: Int, maximum: Int)
    /// A procedure was driven out of order (`receive` before `start`, anything after the end).
    case procedureState(String)
    /// A value the computation needs is not known (a Characteristic Extended Properties
    /// descriptor whose value was never read, for the Database Hash).
    case valueUnknown(handle: UInt16)

    // MARK: Client

    /// The task running the procedure was cancelled; the procedure stopped after the
    /// outstanding response (ATT cannot withdraw a request).
    case cancelled
    /// A subscription's buffer (`limit` values) overflowed under the `.fail` policy: the
    /// stream of the characteristic value at `handle` ended rather than drop a value.
    case subscriptionOverflow(handle: UInt16, limit: Int)
    /// The database cache could not be read or written (`reason` names the file).
    case cache(reason: String)

    /// Why a response breaks the procedure.
    public enum ResponseReason: Hashable, Sendable, CustomStringConvertible {
        /// An entry's handle lies outside the requested range.
        case handleOutOfRange(UInt16, range: ClosedRange<UInt16>)
        /// An entry's handle is not above `previous`, the last handle already covered.
        case handleNotAdvancing(UInt16, previous: UInt16)
        /// A characteristic's value handle is not above its declaration handle, or beyond the range.
        case invalidValueHandle(declaration: UInt16, value: UInt16)
        /// The PDU is longer than ATT_MTU.
        case exceedsMTU(length: Int, mtu: Int)
        /// The value read so far is longer than an attribute value can be (512 octets).
        case valueTooLong(length: Int, maximum: Int)
        /// A Prepare Write Response that does not echo the request.
        case echoMismatch(handle: UInt16, offset: UInt16)
        /// More values than handles requested.
        case tooManyValues(count: Int, requested: Int)

        public var description: String {
            switch self {
            case .handleOutOfRange(let handle, let range):
                return "handle 0x\(hex4(handle)) outside 0x\(hex4(range.lowerBound))-0x\(hex4(range.upperBound))"
            case .handleNotAdvancing(let handle, let previous):
                return "handle 0x\(hex4(handle)) does not follow 0x\(hex4(previous))"
            case .invalidValueHandle(let declaration, let value):
                return "value handle 0x\(hex4(value)) invalid for declaration 0x\(hex4(declaration))"
            case .exceedsMTU(let length, let mtu): return "\(length) octets exceed ATT_MTU \(mtu)"
            case .valueTooLong(let length, let maximum): return "value of \(length) octets (maximum \(maximum))"
            case .echoMismatch(let handle, let offset):
                return "Prepare Write echo differs (handle 0x\(hex4(handle)), offset \(offset))"
            case .tooManyValues(let count, let requested): return "\(count) values for \(requested) handles"
            }
        }
    }

    /// Why an attribute value is invalid.
    public enum ValueReason: Hashable, Sendable, CustomStringConvertible {
        /// The value has `length` octets; the spec allows only `allowed`.
        case invalidLength(Int, allowed: [Int])
        /// A handle field is 0x0000.
        case zeroHandle(field: String)
        /// A handle range whose start is above its end.
        case invalidRange(start: UInt16, end: UInt16)

        public var description: String {
            switch self {
            case .invalidLength(let length, let allowed):
                return "length \(length), expected " + allowed.map(String.init).joined(separator: " or ")
            case .zeroHandle(let field): return "\(field) is 0x0000"
            case .invalidRange(let start, let end): return "invalid range 0x\(hex4(start))-0x\(hex4(end))"
            }
        }
    }

    public var description: String {
        switch self {
        case .invalidAttributeValue(let type, let handle, let reason):
            let at = handle.map { " at handle 0x\(hex4($0))" } ?? ""
            return "invalid \(gattName(of: type)) value\(at): \(reason)"
        case .invalidResponse(let opcode, let reason):
            return "invalid \(opcode): \(reason)"
        case .unexpectedResponse(let request, let received):
            return "unexpected \(received) while waiting for the answer to \(request)"
        case .peerError(let request, let handle, let code):
            return "\(request) on handle 0x\(hex4(handle)) failed: \(code)"
        case .att(let error):
            return error.description
        case .notFound(let uuid):
            return "no attribute with UUID \(uuid)"
        case .noAttribute(let handle):
            return "no attribute at handle 0x\(hex4(handle))"
        case .ambiguousUUID(let uuid, let handles):
            return "UUID \(uuid) names \(handles.count) characteristics (value handles "
                + handles.map { "0x" + hex4($0) }.joined(separator: ", ") + "); give a handle"
        case .inconsistentDatabase(let handle, let reason):
            return "inconsistent database at handle 0x\(hex4(handle)): \(reason)"
        case .crypto(let code):
            if code == -7 {
                return "AES-CMAC needs OpenSSL 3's libcrypto.so.3, which could not be loaded (apt-get install libssl3)"
            }
            return "AES-CMAC failed (libcrypto error \(code))"
        case .invalidParameter(let reason):
            return "invalid parameter: \(reason)"
        case .valueTooLong(let length, let maximum):
            return "value of \(length) octets is too long (maximum \(maximum))"
        case .procedureState(let reason):
            return "procedure misuse: \(reason)"
        case .valueUnknown(let handle):
            return "the value at handle 0x\(hex4(handle)) is not known"
        case .cancelled:
            return "the GATT procedure was cancelled"
        case .subscriptionOverflow(let handle, let limit):
            return "subscription to handle 0x\(hex4(handle)) overflowed its buffer of \(limit) values"
        case .cache(let reason):
            return "GATT cache: \(reason)"
        }
    }

    /// The same error with `handle` filled in where the decoder did not know it.
    func at(handle: UInt16) -> GATTError {
        if case .invalidAttributeValue(let type, nil, let reason) = self {
            return .invalidAttributeValue(type: type, handle: handle, reason: reason)
        }
        return self
    }
}

/// Four lower-case hex digits (handles print as `0x001a` everywhere).
@usableFromInline
func hex4(_ value: UInt16) -> String {
    let raw = String(value, radix: 16)
    return String(repeating: "0", count: 4 - raw.count) + raw
}

/// A UUID's name from the SIG table, or its text.
func gattName(of uuid: BluetoothUUID) -> String {
    GATTNames.name(for: uuid) ?? uuid.description
}
