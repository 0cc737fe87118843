import Bluetooth

/// ATT_HANDLE_VALUE_NTF: an attribute value sent by the server, unacknowledged.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.7.1
public struct HandleValueNotification: HandleValuePDU {
    public static let opcode = ATTOpcode.handleValueNotification

    /// Attribute Handle (never 0x0000).
    public var handle: UInt16
    /// Attribute Value (0 to ATT_MTU − 3 octets).
    public var value: [UInt8]

    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }

    public static var rejectsZeroHandle: Bool { true }
}

/// ATT_HANDLE_VALUE_IND: an attribute value sent by the server, to be confirmed.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.7.2
public struct HandleValueIndication: HandleValuePDU {
    public static let opcode = ATTOpcode.handleValueIndication

    /// Attribute Handle (never 0x0000).
    public var handle: UInt16
    /// Attribute Value (0 to ATT_MTU − 3 octets).
    public var value: [UInt8]

    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }

    public static var rejectsZeroHandle: Bool { true }
}

/// ATT_HANDLE_VALUE_CFM: the client received an indication. No parameters.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.7.3
public struct HandleValueConfirmation: ATTPDUCodable {
    public static let opcode = ATTOpcode.handleValueConfirmation

    public init() {}

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        try reader.readOpcode(Self.opcode)
        try reader.expectEnd(Self.opcode, "Opcode")
    }

    public var encodedLength: Int { 1 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
    }
}

/// ATT_MULTIPLE_HANDLE_VALUE_NTF: several attribute values in one unacknowledged PDU.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.7.4
public struct MultipleHandleValueNotification: ATTPDUCodable {
    public static let opcode = ATTOpcode.multipleHandleValueNotification

    /// One Handle Length Value Tuple (the Length field is `value.count`).
    public struct HandleLengthValue: Hashable, Sendable {
        /// Attribute Handle (never 0x0000).
        public var handle: UInt16
        /// Attribute Value.
        public var value: [UInt8]

        public init(handle: UInt16, value: [UInt8]) {
            self.handle = handle
            self.value = value
        }
    }

    /// Handle Length Value Tuple List: at least one tuple (the spec's sender puts two or more).
    public var entries: [HandleLengthValue]

    public init(entries: [HandleLengthValue]) { self.entries = entries }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        guard !reader.isAtEnd else {
            throw ATTError.malformed(opcode: op, field: "Handle Length Value Tuple List", offset: reader.offset,
                                     reason: .emptyList)
        }
        var entries: [HandleLengthValue] = []
        entries.reserveCapacity(reader.lengthPrefixedTupleCount(headerLength: 4, lengthOffset: 2))
        while !reader.isAtEnd {
            let handle = try reader.readNonZeroHandle(op, "Attribute Handle")
            let length = try reader.readUInt16LE(op, "Value Length")
            let value = Array(try reader.readBytes(Int(length), op, "Attribute Value"))
            entries.append(HandleLengthValue(handle: handle, value: value))
        }
        self.entries = entries
    }

    public var encodedLength: Int { entries.reduce(1) { $0 + 4 + $1.value.count } }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        for entry in entries {
            writer.writeUInt16LE(entry.handle)
            writer.writeUInt16LE(UInt16(truncatingIfNeeded: entry.value.count))
            writer.writeBytes(entry.value)
        }
    }

    public func checkEncodable() throws(ATTError) {
        guard !entries.isEmpty else { throw ATTError.invalidParameters(opcode: Self.opcode, reason: "no entry") }
        guard entries.allSatisfy({ $0.value.count <= Int(UInt16.max) }) else {
            throw ATTError.invalidParameters(opcode: Self.opcode, reason: "value longer than 65535 octets")
        }
    }
}
