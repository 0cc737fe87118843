import Bluetooth

/// The value of one kind of GATT attribute (a declaration or a descriptor): a strict parser
/// and an encoder. The value is whole: `init(parsing:)` must consume the reader to its end.
public protocol AttributeValueCodable: Hashable, Sendable {
    /// The attribute type whose value this is (0x2803 for a characteristic declaration ...).
    static var attributeType: BluetoothUUID { get }
    /// Parses the whole value; errors carry `handle: nil` (see `init(decoding:handle:)`).
    init(parsing reader: inout ByteReader) throws(GATTError)
    /// Octets `write(to:)` produces.
    var encodedLength: Int { get }
    func write(to writer: inout ByteWriter)
}

extension AttributeValueCodable {
    /// Decodes a whole value; `handle`, when known, is named in the error.
    public init<C: Collection>(decoding bytes: C, handle: UInt16? = nil) throws(GATTError) where C.Element == UInt8 {
        var reader = ByteReader(Array(bytes))
        do {
            try self.init(parsing: &reader)
        } catch {
            throw handle.map { error.at(handle: $0) } ?? error
        }
    }

    /// The value's octets.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: encodedLength)
        write(to: &writer)
        return writer.bytes
    }

    /// Throws `invalidLength` unless the reader holds exactly one of `allowed` octets.
    static func checkLength(_ reader: ByteReader, _ allowed: [Int]) throws(GATTError) {
        guard allowed.contains(reader.remainingCount) else {
            throw GATTError.invalidAttributeValue(
                type: attributeType, handle: nil, reason: .invalidLength(reader.remainingCount, allowed: allowed))
        }
    }

    /// Reads a handle that must not be 0x0000 (the length was checked first).
    static func readHandle(_ reader: inout ByteReader, field: String) throws(GATTError) -> UInt16 {
        let handle = (try? reader.readUInt16LE()) ?? 0
        guard handle != 0 else {
            throw GATTError.invalidAttributeValue(type: attributeType, handle: nil, reason: .zeroHandle(field: field))
        }
        return handle
    }

    /// Reads a UUID filling the rest of the reader (2 or 16 octets, checked first).
    static func readUUID(_ reader: inout ByteReader) throws(GATTError) -> BluetoothUUID {
        let width = reader.remainingCount
        guard width == 2 || width == 16, let uuid = try? BluetoothUUID(parsing: &reader, width: width) else {
            throw GATTError.invalidAttributeValue(
                type: attributeType, handle: nil, reason: .invalidLength(width, allowed: [2, 16]))
        }
        return uuid
    }
}

/// Writes a UUID as an attribute value carries it: 2 octets when it has a 16-bit alias, else
/// 16 (ATT has no 32-bit UUIDs; Vol 3 Part F §3.2.1).
func writeAttributeUUID(_ uuid: BluetoothUUID, to writer: inout ByteWriter) {
    if let short = uuid.uuid16 {
        writer.writeUInt16LE(short)
    } else {
        writer.writeUInt128LE(uuid.uuid128)
    }
}

/// Octets `writeAttributeUUID` writes.
func attributeUUIDWidth(_ uuid: BluetoothUUID) -> Int { uuid.uuid16 == nil ? 16 : 2 }
