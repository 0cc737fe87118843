import ATT
import Bluetooth

/// The server side of the read requests: Read, Read Blob, Read Multiple and Read Multiple
/// Variable Length. A missing handle is Invalid Handle; permissions are checked before
/// anything else about the value.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.3–§3.4.4.8, §3.4.4.11, §3.4.4.12
extension GATTServer {
    /// The attribute at `handle` and the value the client may read, or the error code.
    private func readable(_ handle: UInt16, _ client: ClientState) -> ReadAccess {
        guard let attribute = database.attribute(at: handle) else { return .failure(.invalidHandle) }
        if let code = attribute.permissions.readError(at: client.security, authorized: client.authorized) {
            return .failure(code)
        }
        return .success(currentValue(attribute, client))
    }

    /// §3.4.4.3/§3.4.4.4: the value, its first ATT_MTU − 1 octets when longer.
    func read(_ request: ReadRequest, _ client: ClientID) -> ATTPDU {
        let client = state(client)
        switch readable(request.handle, client) {
        case .failure(let code): return error(ReadRequest.opcode, request.handle, code)
        case .success(let value): return .readResponse(ReadResponse(value: Array(value.prefix(client.mtu - 1))))
        }
    }

    /// §3.4.4.5/§3.4.4.6: the value from Value Offset, at most ATT_MTU − 1 octets. An offset
    /// past the end is Invalid Offset; an offset equal to the length reads nothing. (Attribute
    /// Not Long, which the spec allows for short values, is not used: the read succeeds.)
    func readBlob(_ request: ReadBlobRequest, _ client: ClientID) -> ATTPDU {
        let client = state(client)
        switch readable(request.handle, client) {
        case .failure(let code):
            return error(ReadBlobRequest.opcode, request.handle, code)
        case .success(let value):
            let offset = Int(request.offset)
            guard offset <= value.count else { return error(ReadBlobRequest.opcode, request.handle, .invalidOffset) }
            return .readBlobResponse(ReadBlobResponse(value: Array(value[offset...].prefix(client.mtu - 1))))
        }
    }

    /// §3.4.4.7/§3.4.4.8: the values concatenated, cut at ATT_MTU − 1 octets. The first
    /// handle that fails (missing, not readable) is the answer, with its handle.
    func readMultiple(_ request: ReadMultipleRequest, _ client: ClientID) -> ATTPDU {
        let client = state(client)
        var values: [UInt8] = []
        for handle in request.handles {
            switch readable(handle, client) {
            case .failure(let code): return error(ReadMultipleRequest.opcode, handle, code)
            case .success(let value): values += value
            }
        }
        return .readMultipleResponse(ReadMultipleResponse(values: Array(values.prefix(client.mtu - 1))))
    }

    /// §3.4.4.11/§3.4.4.12: Length–Value pairs; Length is always the whole value's, the last
    /// value that does not fit is cut at ATT_MTU − 1 octets and nothing follows it.
    func readMultipleVariable(_ request: ReadMultipleVariableRequest, _ client: ClientID) -> ATTPDU {
        let client = state(client)
        var values: [[UInt8]] = []
        for handle in request.handles {
            switch readable(handle, client) {
            case .failure(let code): return error(ReadMultipleVariableRequest.opcode, handle, code)
            case .success(let value): values.append(value)
            }
        }
        var entries: [ReadMultipleVariableResponse.LengthValue] = []
        var room = client.mtu - 1
        for value in values {
            guard room >= 2 else { break }
            let fitted = Array(value.prefix(room - 2))
            entries.append(ReadMultipleVariableResponse.LengthValue(length: UInt16(value.count), value: fitted))
            room -= 2 + fitted.count
            if fitted.count < value.count { break }
        }
        return .readMultipleVariableResponse(ReadMultipleVariableResponse(entries: entries))
    }
}

/// The outcome of reading one attribute for a client.
enum ReadAccess {
    case success([UInt8])
    case failure(ATTErrorCode)
}
