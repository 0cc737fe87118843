import Bluetooth

/// ATT_FIND_INFORMATION_REQ: handles and types of the attributes in a handle range.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.3.1
public struct FindInformationRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.findInformationRequest

    /// Starting Handle. A server answers Invalid Handle for 0x0000 (see `ATTPDU.validate()`).
    public var startingHandle: UInt16
    /// Ending Handle. A server answers Invalid Handle when it is below `startingHandle`.
    public var endingHandle: UInt16

    public init(startingHandle: UInt16, endingHandle: UInt16) {
        self.startingHandle = startingHandle
        self.endingHandle = endingHandle
    }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        startingHandle = try reader.readUInt16LE(op, "Starting Handle")
        endingHandle = try reader.readUInt16LE(op, "Ending Handle")
        try reader.expectEnd(op, "Ending Handle")
    }

    public var encodedLength: Int { 5 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(startingHandle)
        writer.writeUInt16LE(endingHandle)
    }
}

/// ATT_FIND_INFORMATION_RSP: handle–type pairs, all 16-bit (format 0x01) or all 128-bit (0x02).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.3.2
public struct FindInformationResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.findInformationResponse

    /// The Format field: the width of every UUID in the Information Data.
    public struct Format: RawRepresentable, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// 0x01: handles with 16-bit Bluetooth UUIDs.
        public static let uuid16 = Format(rawValue: 0x01)
        /// 0x02: handles with 128-bit UUIDs.
        public static let uuid128 = Format(rawValue: 0x02)

        /// Octets of one UUID in this format, `nil` for a format the spec does not define.
        public var uuidWidth: Int? {
            switch rawValue {
            case 0x01: return 2
            case 0x02: return 16
            default: return nil
            }
        }
    }

    /// One handle–type pair of the Information Data.
    public struct Information: Hashable, Sendable {
        /// The attribute handle (never 0x0000).
        public var handle: UInt16
        /// The attribute type.
        public var uuid: BluetoothUUID

        public init(handle: UInt16, uuid: BluetoothUUID) {
            self.handle = handle
            self.uuid = uuid
        }
    }

    /// Format: 16-bit or 128-bit UUIDs.
    public var format: Format
    /// Information Data: at least one pair.
    public var entries: [Information]

    /// A response in `format`; `encode(mtu:)` checks every UUID fits the format.
    public init(format: Format, entries: [Information]) {
        self.format = format
        self.entries = entries
    }

    /// A response in the format the entries need: 16-bit when every UUID has a 16-bit alias.
    public init(entries: [Information]) {
        let all16 = entries.allSatisfy { $0.uuid.uuid16 != nil }
        self.init(format: all16 ? .uuid16 : .uuid128, entries: entries)
    }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        let formatOffset = reader.offset
        format = Format(rawValue: try reader.readUInt8(op, "Format"))
        guard let width = format.uuidWidth else {
            throw ATTError.malformed(opcode: op, field: "Format", offset: formatOffset,
                                     reason: .invalidFormat(format.rawValue))
        }
        try ListLayout.check(reader, entrySize: 2 + width, opcode: op, field: "Information Data")
        var entries: [Information] = []
        entries.reserveCapacity(reader.remainingCount / (2 + width))
        while !reader.isAtEnd {
            let handle = try reader.readNonZeroHandle(op, "Handle")
            let uuid: BluetoothUUID
            if width == 2 {
                uuid = .bit16(try reader.readUInt16LE(op, "UUID"))
            } else {
                let low = try reader.readUInt64LE(op, "UUID")
                let high = try reader.readUInt64LE(op, "UUID")
                uuid = .bit128(UInt128(high) << 64 | UInt128(low))
            }
            entries.append(Information(handle: handle, uuid: uuid))
        }
        self.entries = entries
    }

    public var encodedLength: Int { 2 + entries.count * (2 + (format.uuidWidth ?? 16)) }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt8(format.rawValue)
        for entry in entries {
            writer.writeUInt16LE(entry.handle)
            if format == .uuid16 {
                writer.writeUInt16LE(UInt16(truncatingIfNeeded: entry.uuid.uuid128 >> 96))
            } else {
                writer.writeUInt128LE(entry.uuid.uuid128)
            }
        }
    }

    public func checkEncodable() throws(ATTError) {
        guard format.uuidWidth != nil else {
            throw ATTError.invalidParameters(opcode: Self.opcode, reason: "format 0x\(hex2(format.rawValue)) is not defined")
        }
        guard !entries.isEmpty else { throw ATTError.invalidParameters(opcode: Self.opcode, reason: "no entry") }
        if format == .uuid16, let bad = entries.first(where: { $0.uuid.uuid16 == nil }) {
            throw ATTError.invalidParameters(opcode: Self.opcode, reason: "UUID \(bad.uuid) has no 16-bit form")
        }
    }
}

/// ATT_FIND_BY_TYPE_VALUE_REQ: handles of attributes with a 16-bit type and a given value.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.3.3
public struct FindByTypeValueRequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.findByTypeValueRequest

    /// Starting Handle. A server answers Invalid Handle for 0x0000.
    public var startingHandle: UInt16
    /// Ending Handle. A server answers Invalid Handle when it is below `startingHandle`.
    public var endingHandle: UInt16
    /// Attribute Type: always a 16-bit UUID in this PDU.
    public var attributeType: UInt16
    /// Attribute Value to find (0 to ATT_MTU − 7 octets).
    public var attributeValue: [UInt8]

    public init(startingHandle: UInt16, endingHandle: UInt16, attributeType: UInt16, attributeValue: [UInt8]) {
        self.startingHandle = startingHandle
        self.endingHandle = endingHandle
        self.attributeType = attributeType
        self.attributeValue = attributeValue
    }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        startingHandle = try reader.readUInt16LE(op, "Starting Handle")
        endingHandle = try reader.readUInt16LE(op, "Ending Handle")
        attributeType = try reader.readUInt16LE(op, "Attribute Type")
        attributeValue = reader.readValue()
    }

    public var encodedLength: Int { 7 + attributeValue.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(startingHandle)
        writer.writeUInt16LE(endingHandle)
        writer.writeUInt16LE(attributeType)
        writer.writeBytes(attributeValue)
    }
}

/// ATT_FIND_BY_TYPE_VALUE_RSP: found attribute handles with the end of their groups.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.3.4
public struct FindByTypeValueResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.findByTypeValueResponse

    /// One entry of the Handles Information List.
    public struct HandlesInformation: Hashable, Sendable {
        /// Found Attribute Handle (never 0x0000).
        public var foundAttributeHandle: UInt16
        /// Group End Handle (≥ the found handle; equal to it for a non-grouping attribute).
        public var groupEndHandle: UInt16

        public init(foundAttributeHandle: UInt16, groupEndHandle: UInt16) {
            self.foundAttributeHandle = foundAttributeHandle
            self.groupEndHandle = groupEndHandle
        }
    }

    /// Handles Information List: at least one entry.
    public var entries: [HandlesInformation]

    public init(entries: [HandlesInformation]) { self.entries = entries }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        try ListLayout.check(reader, entrySize: 4, opcode: op, field: "Handles Information List")
        var entries: [HandlesInformation] = []
        entries.reserveCapacity(reader.remainingCount / 4)
        while !reader.isAtEnd {
            let at = reader.offset
            let found = try reader.readNonZeroHandle(op, "Found Attribute Handle")
            let end = try reader.readUInt16LE(op, "Group End Handle")
            guard found <= end else {
                throw ATTError.malformed(opcode: op, field: "Group End Handle", offset: at,
                                         reason: .invalidRange(start: found, end: end))
            }
            entries.append(HandlesInformation(foundAttributeHandle: found, groupEndHandle: end))
        }
        self.entries = entries
    }

    public var encodedLength: Int { 1 + 4 * entries.count }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        for entry in entries {
            writer.writeUInt16LE(entry.foundAttributeHandle)
            writer.writeUInt16LE(entry.groupEndHandle)
        }
    }

    public func checkEncodable() throws(ATTError) {
        guard !entries.isEmpty else { throw ATTError.invalidParameters(opcode: Self.opcode, reason: "no entry") }
    }
}
