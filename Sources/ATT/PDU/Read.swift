import Bluetooth

/// ATT_READ_REQ: the value of one attribute.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.3
public struct ReadRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.readRequest

    /// Attribute Handle. A server answers Invalid Handle for 0x0000.
    public var handle: UInt16

    public init(handle: UInt16) { self.handle = handle }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        handle = try reader.readUInt16LE(op, "Attribute Handle")
        try reader.expectEnd(op, "Attribute Handle")
    }

    public var encodedLength: Int { 3 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(handle)
    }
}

/// ATT_READ_RSP: the value read (at most ATT_MTU − 1 octets).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.4
public struct ReadResponse: ValuePDU {
    public static let opcode = ATTOpcode.readResponse

    /// Attribute Value.
    public var value: [UInt8]

    public init(value: [UInt8]) { self.value = value }
}

/// ATT_READ_BLOB_REQ: part of a long attribute value, from an offset.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.5
public struct ReadBlobRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.readBlobRequest

    /// Attribute Handle. A server answers Invalid Handle for 0x0000.
    public var handle: UInt16
    /// Value Offset: the first octet to read.
    public var offset: UInt16

    public init(handle: UInt16, offset: UInt16) {
        self.handle = handle
        self.offset = offset
    }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        handle = try reader.readUInt16LE(op, "Attribute Handle")
        offset = try reader.readUInt16LE(op, "Value Offset")
        try reader.expectEnd(op, "Value Offset")
    }

    public var encodedLength: Int { 5 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(handle)
        writer.writeUInt16LE(offset)
    }
}

/// ATT_READ_BLOB_RSP: part of a value, from the requested offset.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.6
public struct ReadBlobResponse: ValuePDU {
    public static let opcode = ATTOpcode.readBlobResponse

    /// Part Attribute Value.
    public var value: [UInt8]

    public init(value: [UInt8]) { self.value = value }
}

extension ByteReader {
    /// Reads the rest as a Set Of Handles (a whole number of 16-bit handles).
    mutating func readHandleList(_ opcode: ATTOpcode) throws(ATTError) -> [UInt16] {
        var handles: [UInt16] = []
        handles.reserveCapacity(remainingCount / 2)
        while !isAtEnd {
            handles.append(try readUInt16LE(opcode, "Set Of Handles"))
        }
        return handles
    }
}

/// ATT_READ_MULTIPLE_REQ: the values of two or more attributes of known length.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.7
public struct ReadMultipleRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.readMultipleRequest

    /// Set Of Handles. The spec asks for two or more; a server answers Invalid PDU otherwise
    /// and Invalid Handle for 0x0000 (see `ATTPDU.validate()`).
    public var handles: [UInt16]

    public init(handles: [UInt16]) { self.handles = handles }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        try reader.readOpcode(Self.opcode)
        handles = try reader.readHandleList(Self.opcode)
    }

    public var encodedLength: Int { 1 + 2 * handles.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        for handle in handles { writer.writeUInt16LE(handle) }
    }

    public func checkEncodable() throws(ATTError) {
        guard handles.count >= 2 else {
            throw ATTError.invalidParameters(opcode: Self.opcode, reason: "needs two or more handles")
        }
    }
}

/// ATT_READ_MULTIPLE_RSP: the values concatenated, without lengths (at most ATT_MTU − 1 octets).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.8
public struct ReadMultipleResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.readMultipleResponse

    /// Set Of Values: the values in request order, concatenated (the last may be truncated).
    public var values: [UInt8]

    public init(values: [UInt8]) { self.values = values }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        try reader.readOpcode(Self.opcode)
        values = reader.readValue()
    }

    public var encodedLength: Int { 1 + values.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeBytes(values)
    }
}

/// ATT_READ_MULTIPLE_VARIABLE_REQ: the values of two or more attributes, each with its length.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.11
public struct ReadMultipleVariableRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.readMultipleVariableRequest

    /// Set Of Handles. The spec asks for two or more; a server answers Invalid PDU otherwise.
    public var handles: [UInt16]

    public init(handles: [UInt16]) { self.handles = handles }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        try reader.readOpcode(Self.opcode)
        handles = try reader.readHandleList(Self.opcode)
    }

    public var encodedLength: Int { 1 + 2 * handles.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        for handle in handles { writer.writeUInt16LE(handle) }
    }

    public func checkEncodable() throws(ATTError) {
        guard handles.count >= 2 else {
            throw ATTError.invalidParameters(opcode: Self.opcode, reason: "needs two or more handles")
        }
    }
}

/// ATT_READ_MULTIPLE_VARIABLE_RSP: a Length Value Tuple per requested handle.
///
/// When the tuples do not fit in ATT_MTU − 1 octets the server stops there, so the last value
/// may be shorter than its Length field says (`isTruncated`); only the last one.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.12
public struct ReadMultipleVariableResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.readMultipleVariableResponse

    /// One Length Value Tuple.
    public struct LengthValue: Hashable, Sendable {
        /// Value Length: the length of the whole attribute value.
        public var length: UInt16
        /// Attribute Value: `length` octets, fewer when truncated (last tuple only).
        public var value: [UInt8]

        /// A tuple with the whole value.
        public init(value: [UInt8]) {
            self.length = UInt16(truncatingIfNeeded: value.count)
            self.value = value
        }

        /// A tuple whose value may be truncated (`value.count < length`).
        public init(length: UInt16, value: [UInt8]) {
            self.length = length
            self.value = value
        }

        /// Whether the value is shorter than its Length field.
        public var isTruncated: Bool { value.count < Int(length) }
    }

    /// Length Value Tuple List: at least one tuple.
    public var entries: [LengthValue]

    public init(entries: [LengthValue]) { self.entries = entries }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        guard !reader.isAtEnd else {
            throw ATTError.malformed(opcode: op, field: "Length Value Tuple List", offset: reader.offset, reason: .emptyList)
        }
        var entries: [LengthValue] = []
        entries.reserveCapacity(reader.lengthPrefixedTupleCount(headerLength: 2, lengthOffset: 0))
        while !reader.isAtEnd {
            let length = try reader.readUInt16LE(op, "Value Length")
            // The last tuple may be cut at ATT_MTU − 1 octets (§3.4.4.12).
            let count = min(Int(length), reader.remainingCount)
            let value = Array(try reader.readBytes(count, op, "Attribute Value"))
            entries.append(LengthValue(length: length, value: value))
        }
        self.entries = entries
    }

    public var encodedLength: Int { entries.reduce(1) { $0 + 2 + $1.value.count } }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        for entry in entries {
            writer.writeUInt16LE(entry.length)
            writer.writeBytes(entry.value)
        }
    }

    public func checkEncodable() throws(ATTError) {
        guard !entries.isEmpty else { throw ATTError.invalidParameters(opcode: Self.opcode, reason: "no entry") }
        for (index, entry) in entries.enumerated() {
            guard entry.value.count <= Int(entry.length) else {
                throw ATTError.invalidParameters(opcode: Self.opcode, reason: "value \(index) longer than its Length")
            }
            guard !entry.isTruncated || index == entries.count - 1 else {
                throw ATTError.invalidParameters(opcode: Self.opcode, reason: "only the last value may be truncated")
            }
        }
    }
}
