import Bluetooth

/// Every failure the ATT module reports. Malformed input from the peer, a refusal by the peer,
/// a local misuse and a bearer failure are distinct cases.
public enum ATTError: Error, Hashable, Sendable, CustomStringConvertible {
    // MARK: Peer input

    /// A received PDU that cannot be parsed. `field` names the spec field where the problem was
    /// found (`"Length"`, `"Attribute Handle"`, `"Opcode"` ...); `offset` counts octets from the
    /// start of the PDU (the opcode is offset 0).
    case malformed(opcode: ATTOpcode, field: String, offset: Int, reason: MalformedReason)

    // MARK: Local

    /// A PDU we were asked to send is longer than ATT_MTU (never truncated).
    case pduTooLarge(opcode: ATTOpcode, length: Int, mtu: Int)
    /// A PDU we were asked to send cannot be encoded faithfully (an empty list, list entries of
    /// different lengths, a value longer than a Length field can express, mixed UUID widths).
    case invalidParameters(opcode: ATTOpcode, reason: String)

    // MARK: Bearer

    /// The request with this opcode (or an indication) got no answer within 30 s; the bearer
    /// is closed afterwards (Vol 3 Part F §3.3.3).
    case timeout(request: ATTOpcode)
    /// The bearer closed (disconnect, channel failure, local close, earlier timeout); every
    /// pending operation fails with this.
    case bearerClosed(reason: String)
    /// The peer broke the protocol: a response without a request, a response of the wrong
    /// opcode, a confirmation without an indication, a second indication while one is pending.
    case protocolError(String)
    /// The peer answered `request` with ATT_ERROR_RSP.
    case peerError(request: ATTOpcode, handle: UInt16, code: ATTErrorCode)
    /// A request (or an indication) is already outstanding; ATT allows one at a time.
    case requestInProgress
    /// The PDU with this opcode cannot be sent through this operation or in this role.
    case unsupportedRequest(ATTOpcode)

    /// Why a received PDU is malformed.
    public enum MalformedReason: Hashable, Sendable, CustomStringConvertible {
        /// `needed` octets were required, only `available` were left.
        case truncated(needed: Int, available: Int)
        /// `count` octets were left after the last field.
        case trailingBytes(count: Int)
        /// A Length field (or a parameter whose size the spec fixes) disagrees with the spec
        /// or with the bytes present: a list that is not a whole number of entries.
        case invalidLength(Int)
        /// A Format field holds a value the spec does not define.
        case invalidFormat(UInt8)
        /// A handle is 0x0000 where the spec forbids it.
        case zeroHandle
        /// A handle range whose start is above its end.
        case invalidRange(start: UInt16, end: UInt16)
        /// The PDU is longer than ATT_MTU.
        case exceedsMTU(length: Int, mtu: Int)
        /// A list response that carries no entry (the spec requires at least one).
        case emptyList
        /// The PDU has no opcode octet at all.
        case empty
        /// The opcode octet is not the one of the PDU being parsed.
        case wrongOpcode(UInt8)

        public var description: String {
            switch self {
            case .truncated(let needed, let available):
                return "truncated: needed \(needed) octet(s), \(available) left"
            case .trailingBytes(let count): return "\(count) trailing octet(s)"
            case .invalidLength(let value): return "invalid length \(value)"
            case .invalidFormat(let value): return "invalid format 0x" + hex2(value)
            case .zeroHandle: return "handle 0x0000"
            case .invalidRange(let start, let end): return "invalid range 0x\(hex4(start))-0x\(hex4(end))"
            case .exceedsMTU(let length, let mtu): return "\(length) octets exceed ATT_MTU \(mtu)"
            case .emptyList: return "empty list"
            case .empty: return "empty PDU"
            case .wrongOpcode(let value): return "unexpected opcode 0x" + hex2(value)
            }
        }
    }

    /// Wraps a cursor error as a malformed `opcode` PDU, naming the field being read.
    @inlinable
    public init(_ error: ByteReaderError, opcode: ATTOpcode, field: String) {
        switch error.kind {
        case .truncated(let needed, let available):
            self = .malformed(opcode: opcode, field: field, offset: error.offset,
                              reason: .truncated(needed: needed, available: available))
        case .trailingBytes(let count):
            self = .malformed(opcode: opcode, field: field, offset: error.offset,
                              reason: .trailingBytes(count: count))
        }
    }

    /// The malformed reason, if this is a `.malformed` error.
    public var malformedReason: MalformedReason? {
        if case .malformed(_, _, _, let reason) = self { return reason }
        return nil
    }

    public var description: String {
        switch self {
        case .malformed(let opcode, let field, let offset, let reason):
            return "malformed \(opcode) at offset \(offset) (\(field)): \(reason)"
        case .pduTooLarge(let opcode, let length, let mtu):
            return "\(opcode) of \(length) octets exceeds ATT_MTU \(mtu)"
        case .invalidParameters(let opcode, let reason):
            return "cannot encode \(opcode): \(reason)"
        case .timeout(let request):
            return "no answer to \(request) within 30 s"
        case .bearerClosed(let reason):
            return "ATT bearer closed: \(reason)"
        case .protocolError(let message):
            return "ATT protocol error: \(message)"
        case .peerError(let request, let handle, let code):
            return "\(request) on handle 0x\(hex4(handle)) failed: \(code)"
        case .requestInProgress:
            return "an ATT request is already in progress"
        case .unsupportedRequest(let opcode):
            return "\(opcode) is not supported here"
        }
    }
}

// MARK: Reader helpers

extension ByteReader {
    /// Reads a little-endian UInt16, reporting truncation as a malformed `opcode` PDU at `field`.
    mutating func readUInt16LE(_ opcode: ATTOpcode, _ field: String) throws(ATTError) -> UInt16 {
        do { return try readUInt16LE() } catch { throw ATTError(error, opcode: opcode, field: field) }
    }

    mutating func readUInt32LE(_ opcode: ATTOpcode, _ field: String) throws(ATTError) -> UInt32 {
        do { return try readUInt32LE() } catch { throw ATTError(error, opcode: opcode, field: field) }
    }

    mutating func readUInt64LE(_ opcode: ATTOpcode, _ field: String) throws(ATTError) -> UInt64 {
        do { return try readUInt64LE() } catch { throw ATTError(error, opcode: opcode, field: field) }
    }

    mutating func readUInt8(_ opcode: ATTOpcode, _ field: String) throws(ATTError) -> UInt8 {
        do { return try readUInt8() } catch { throw ATTError(error, opcode: opcode, field: field) }
    }

    mutating func readBytes(_ count: Int, _ opcode: ATTOpcode, _ field: String) throws(ATTError) -> ArraySlice<UInt8> {
        do { return try readBytes(count) } catch { throw ATTError(error, opcode: opcode, field: field) }
    }

    /// Reads a handle that must not be 0x0000.
    mutating func readNonZeroHandle(_ opcode: ATTOpcode, _ field: String) throws(ATTError) -> UInt16 {
        let at = offset
        let handle = try readUInt16LE(opcode, field)
        guard handle != 0 else { throw ATTError.malformed(opcode: opcode, field: field, offset: at, reason: .zeroHandle) }
        return handle
    }

    /// Reads the opcode octet and checks it is `opcode`.
    mutating func readOpcode(_ opcode: ATTOpcode) throws(ATTError) {
        let at = offset
        guard let byte = try? readUInt8() else {
            throw ATTError.malformed(opcode: opcode, field: "Opcode", offset: at, reason: .empty)
        }
        guard byte == opcode.rawValue else {
            throw ATTError.malformed(opcode: opcode, field: "Opcode", offset: at, reason: .wrongOpcode(byte))
        }
    }

    /// The tuples of a list of length-prefixed tuples in what remains (each `headerLength`
    /// octets, with the little-endian Length of its value at `lengthOffset`, then the value): a
    /// capacity for the decoded list, so it is allocated once. Counts a last tuple cut short;
    /// the decode that follows reports any damage.
    func lengthPrefixedTupleCount(headerLength: Int, lengthOffset: Int) -> Int {
        let bytes = remaining
        var index = bytes.startIndex
        var count = 0
        while index < bytes.endIndex {
            count += 1
            guard bytes.endIndex - index >= headerLength else { break }
            let length = Int(bytes[index + lengthOffset]) | Int(bytes[index + lengthOffset + 1]) << 8
            index += headerLength + length
        }
        return count
    }

    /// Throws `trailingBytes` when octets remain.
    func expectEnd(_ opcode: ATTOpcode, _ field: String) throws(ATTError) {
        do { try expectEnd() } catch { throw ATTError(error, opcode: opcode, field: field) }
    }
}
