import Bluetooth

extension ByteReader {
    /// Reads the rest as an attribute type: 2 or 16 octets (Core 5.4 Vol 3 Part F §3.4.4.1).
    mutating func readAttributeType(_ opcode: ATTOpcode, _ field: String) throws(ATTError) -> BluetoothUUID {
        let at = offset
        switch remainingCount {
        case 0, 1:
            throw ATTError.malformed(opcode: opcode, field: field, offset: at,
                                     reason: .truncated(needed: 2, available: remainingCount))
        case 2:
            return .bit16(try readUInt16LE(opcode, field))
        case 16:
            let low = try readUInt64LE(opcode, field)
            let high = try readUInt64LE(opcode, field)
            return .bit128(UInt128(high) << 64 | UInt128(low))
        case let count:
            throw ATTError.malformed(opcode: opcode, field: field, offset: at, reason: .invalidLength(count))
        }
    }
}

extension ByteWriter {
    /// Writes an attribute type as ATT carries it: 16-bit form, or 128-bit for any other
    /// (a 32-bit UUID is sent in its 128-bit form, ATT has no 32-bit type field).
    mutating func writeAttributeType(_ uuid: BluetoothUUID) {
        switch uuid {
        case .bit16(let v): writeUInt16LE(v)
        case .bit32, .bit128: writeUInt128LE(uuid.uuid128)
        }
    }
}

/// Octets an attribute type takes on the wire (see `writeAttributeType`).
func attributeTypeWidth(_ uuid: BluetoothUUID) -> Int {
    if case .bit16 = uuid { return 2 }
    return 16
}

/// ATT_READ_BY_TYPE_REQ: values of the attributes of a type in a handle range.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.1
public struct ReadByTypeRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.readByTypeRequest

    /// Starting Handle. A server answers Invalid Handle for 0x0000.
    public var startingHandle: UInt16
    /// Ending Handle. A server answers Invalid Handle when it is below `startingHandle`.
    public var endingHandle: UInt16
    /// Attribute Type: a 16-bit or 128-bit UUID (a 32-bit one is sent as 128-bit).
    public var attributeType: BluetoothUUID

    public init(startingHandle: UInt16, endingHandle: UInt16, attributeType: BluetoothUUID) {
        self.startingHandle = startingHandle
        self.endingHandle = endingHandle
        self.attributeType = attributeType
    }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        startingHandle = try reader.readUInt16LE(op, "Starting Handle")
        endingHandle = try reader.readUInt16LE(op, "Ending Handle")
        attributeType = try reader.readAttributeType(op, "Attribute Type")
    }

    public var encodedLength: Int { 5 + attributeTypeWidth(attributeType) }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(startingHandle)
        writer.writeUInt16LE(endingHandle)
        writer.writeAttributeType(attributeType)
    }
}

/// ATT_READ_BY_TYPE_RSP: handle–value pairs, all of the same length.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.2
public struct ReadByTypeResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.readByTypeResponse

    /// One handle–value pair of the Attribute Data List.
    public struct AttributeData: Hashable, Sendable {
        /// Attribute Handle (never 0x0000).
        public var handle: UInt16
        /// Attribute Value (possibly truncated by the server to fit; at most 253 octets).
        public var value: [UInt8]

        public init(handle: UInt16, value: [UInt8]) {
            self.handle = handle
            self.value = value
        }
    }

    /// Attribute Data List: at least one entry; every value has the same length.
    public var entries: [AttributeData]

    public init(entries: [AttributeData]) { self.entries = entries }

    /// The Length field: octets of each handle–value pair.
    public var length: Int { 2 + (entries.first?.value.count ?? 0) }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        let lengthOffset = reader.offset
        let length = Int(try reader.readUInt8(op, "Length"))
        guard length >= 2 else {
            throw ATTError.malformed(opcode: op, field: "Length", offset: lengthOffset, reason: .invalidLength(length))
        }
        try ListLayout.check(reader, entrySize: length, opcode: op, field: "Attribute Data List")
        var entries: [AttributeData] = []
        entries.reserveCapacity(reader.remainingCount / length)
        while !reader.isAtEnd {
            let handle = try reader.readNonZeroHandle(op, "Attribute Handle")
            let value = Array(try reader.readBytes(length - 2, op, "Attribute Value"))
            entries.append(AttributeData(handle: handle, value: value))
        }
        self.entries = entries
    }

    public var encodedLength: Int { 2 + entries.count * length }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt8(UInt8(truncatingIfNeeded: length))
        for entry in entries {
            writer.writeUInt16LE(entry.handle)
            writer.writeBytes(entry.value)
        }
    }

    public func checkEncodable() throws(ATTError) {
        try checkUniformEntries(opcode: Self.opcode, counts: entries.lazy.map(\.value.count), fixed: 2)
    }
}

/// Throws unless there is at least one entry, every entry has the same value length, and the
/// Length field (`fixed` + value length) fits in one octet.
func checkUniformEntries<C: Collection>(opcode: ATTOpcode, counts: C, fixed: Int) throws(ATTError) where C.Element == Int {
    guard let first = counts.first else { throw ATTError.invalidParameters(opcode: opcode, reason: "no entry") }
    guard counts.allSatisfy({ $0 == first }) else {
        throw ATTError.invalidParameters(opcode: opcode, reason: "entries have values of different lengths")
    }
    guard fixed + first <= 255 else {
        throw ATTError.invalidParameters(opcode: opcode, reason: "entry length \(fixed + first) exceeds 255")
    }
}

/// ATT_READ_BY_GROUP_TYPE_REQ: grouping attributes (services) of a type in a handle range.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.9
public struct ReadByGroupTypeRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.readByGroupTypeRequest

    /// Starting Handle. A server answers Invalid Handle for 0x0000.
    public var startingHandle: UInt16
    /// Ending Handle. A server answers Invalid Handle when it is below `startingHandle`.
    public var endingHandle: UInt16
    /// Attribute Group Type: a 16-bit or 128-bit UUID.
    public var attributeGroupType: BluetoothUUID

    public init(startingHandle: UInt16, endingHandle: UInt16, attributeGroupType: BluetoothUUID) {
        self.startingHandle = startingHandle
        self.endingHandle = endingHandle
        self.attributeGroupType = attributeGroupType
    }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        startingHandle = try reader.readUInt16LE(op, "Starting Handle")
        endingHandle = try reader.readUInt16LE(op, "Ending Handle")
        attributeGroupType = try reader.readAttributeType(op, "Attribute Group Type")
    }

    public var encodedLength: Int { 5 + attributeTypeWidth(attributeGroupType) }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(startingHandle)
        writer.writeUInt16LE(endingHandle)
        writer.writeAttributeType(attributeGroupType)
    }
}

/// ATT_READ_BY_GROUP_TYPE_RSP: handle, end group handle and value of each group found.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.4.10
public struct ReadByGroupTypeResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.readByGroupTypeResponse

    /// One entry of the Attribute Data List.
    public struct AttributeData: Hashable, Sendable {
        /// Attribute Handle (never 0x0000).
        public var handle: UInt16
        /// End Group Handle (≥ `handle`).
        public var endGroupHandle: UInt16
        /// Attribute Value (for a service declaration, the service UUID).
        public var value: [UInt8]

        public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
            self.handle = handle
            self.endGroupHandle = endGroupHandle
            self.value = value
        }
    }

    /// Attribute Data List: at least one entry; every value has the same length.
    public var entries: [AttributeData]

    public init(entries: [AttributeData]) { self.entries = entries }

    /// The Length field: octets of each entry.
    public var length: Int { 4 + (entries.first?.value.count ?? 0) }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        let lengthOffset = reader.offset
        let length = Int(try reader.readUInt8(op, "Length"))
        guard length >= 4 else {
            throw ATTError.malformed(opcode: op, field: "Length", offset: lengthOffset, reason: .invalidLength(length))
        }
        try ListLayout.check(reader, entrySize: length, opcode: op, field: "Attribute Data List")
        var entries: [AttributeData] = []
        entries.reserveCapacity(reader.remainingCount / length)
        while !reader.isAtEnd {
            let at = reader.offset
            let handle = try reader.readNonZeroHandle(op, "Attribute Handle")
            let end = try reader.readUInt16LE(op, "End Group Handle")
            guard handle <= end else {
                throw ATTError.malformed(opcode: op, field: "End Group Handle", offset: at,
                                         reason: .invalidRange(start: handle, end: end))
            }
            let value = Array(try reader.readBytes(length - 4, op, "Attribute Value"))
            entries.append(AttributeData(handle: handle, endGroupHandle: end, value: value))
        }
        self.entries = entries
    }

    public var encodedLength: Int { 2 + entries.count * length }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt8(UInt8(truncatingIfNeeded: length))
        for entry in entries {
            writer.writeUInt16LE(entry.handle)
            writer.writeUInt16LE(entry.endGroupHandle)
            writer.writeBytes(entry.value)
        }
    }

    public func checkEncodable() throws(ATTError) {
        try checkUniformEntries(opcode: Self.opcode, counts: entries.lazy.map(\.value.count), fixed: 4)
    }
}
