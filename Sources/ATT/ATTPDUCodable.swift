import Bluetooth

/// One ATT PDU type: its opcode, a strict parser and an encoder.
///
/// `init(parsing:)` reads one whole PDU, opcode included, and requires the reader to end with
/// it (PDUs are datagrams: a short one is malformed, never "need more"). Error offsets count
/// from the opcode octet.
///
/// Values (`[UInt8]` properties) are stored as arrays created once from the received bytes:
/// one copy of the value's own octets, indices from 0, and the received SDU is not retained.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.3
public protocol ATTPDUCodable: Hashable, Sendable {
    /// The opcode of this PDU type.
    static var opcode: ATTOpcode { get }
    /// Parses one whole PDU (opcode first); the reader must end with it.
    init(parsing reader: inout ByteReader) throws(ATTError)
    /// Octets `write(to:)` produces, opcode included.
    var encodedLength: Int { get }
    /// Appends the PDU, opcode first. Writes what is stored; `encode(mtu:)` checks first.
    func write(to writer: inout ByteWriter)
    /// Throws `invalidParameters` when the stored fields cannot be encoded as they are
    /// (an empty list, entries of different lengths, a value too long for its Length field).
    func checkEncodable() throws(ATTError)
}

extension ATTPDUCodable {
    /// The opcode of this PDU.
    @inlinable public var opcode: ATTOpcode { Self.opcode }

    public func checkEncodable() throws(ATTError) {}

    /// Decodes one whole PDU. With `mtu`, a PDU longer than ATT_MTU is malformed.
    public init(decoding bytes: ArraySlice<UInt8>, mtu: Int? = nil) throws(ATTError) {
        try ATTPDU.checkMTU(bytes, mtu: mtu)
        var reader = ByteReader(bytes)
        try self.init(parsing: &reader)
    }

    /// Decodes one whole PDU. With `mtu`, a PDU longer than ATT_MTU is malformed.
    public init(decoding bytes: [UInt8], mtu: Int? = nil) throws(ATTError) {
        try self.init(decoding: bytes[...], mtu: mtu)
    }

    /// The PDU's octets; throws `pduTooLarge` when longer than `mtu` (never truncates) and
    /// `invalidParameters` when the fields cannot be encoded faithfully.
    public func encode(mtu: Int) throws(ATTError) -> [UInt8] {
        try checkEncodable()
        let length = encodedLength
        guard length <= mtu else { throw ATTError.pduTooLarge(opcode: Self.opcode, length: length, mtu: mtu) }
        var writer = ByteWriter(capacity: length)
        write(to: &writer)
        return writer.bytes
    }

    /// The PDU's octets without an MTU check (for tests, captures and logs).
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: encodedLength)
        write(to: &writer)
        return writer.bytes
    }
}

/// Helpers shared by the PDU parsers.
extension ByteReader {
    /// Reads the rest as a value: one copy into its own array.
    mutating func readValue() -> [UInt8] {
        Array(readRemaining())
    }
}

/// Parsing of the list responses: `count` octets per entry, at least one entry, no partial entry.
enum ListLayout {
    /// Throws unless `reader.remainingCount` is a positive whole multiple of `entrySize`.
    static func check(_ reader: ByteReader, entrySize: Int, opcode: ATTOpcode, field: String) throws(ATTError) {
        let remaining = reader.remainingCount
        guard remaining > 0 else {
            throw ATTError.malformed(opcode: opcode, field: field, offset: reader.offset, reason: .emptyList)
        }
        let partial = remaining % entrySize
        guard partial == 0 else {
            throw ATTError.malformed(opcode: opcode, field: field, offset: reader.offset + remaining - partial,
                                     reason: .truncated(needed: entrySize, available: partial))
        }
    }
}
