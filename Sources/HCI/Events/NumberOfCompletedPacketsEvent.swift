import Bluetooth

/// HCI_Number_Of_Completed_Packets: ACL/ISO buffer credits returned per connection.
/// Entries are sent one after the other: Connection_Handle[i], Num_Completed_Packets[i].
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.19
public struct NumberOfCompletedPacketsEvent: Hashable, Sendable, CustomStringConvertible {
    public static let eventCode = HCIEventCode.numberOfCompletedPackets
    static let context = "HCI_Number_Of_Completed_Packets"

    public struct Entry: Hashable, Sendable {
        /// Connection_Handle (0x0000–0x0EFF).
        public var connectionHandle: UInt16
        /// Num_Completed_Packets since the previous event for this handle.
        public var numCompletedPackets: UInt16

        public init(connectionHandle: UInt16, numCompletedPackets: UInt16) {
            self.connectionHandle = connectionHandle
            self.numCompletedPackets = numCompletedPackets
        }
    }

    /// `entries.count` is Num_Handles.
    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        let start = reader.offset
        let count = Int(try reader.hciUInt8(c))
        guard reader.remainingCount == count * 4 else {
            throw HCIError.malformed(context: c, reason: .invalidLength(field: "Num_Handles", value: count), offset: start)
        }
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let handle = try reader.hciConnectionHandle(c)
            let packets = try reader.hciUInt16(c)
            entries.append(Entry(connectionHandle: handle, numCompletedPackets: packets))
        }
        self.entries = entries
    }

    public var encodedLength: Int { 1 + entries.count * 4 }

    /// Throws when there are more than 255 entries (Num_Handles is one octet).
    public func write(to writer: inout ByteWriter) throws(HCIError) {
        guard entries.count <= 0xFF else {
            throw HCIError.invalidArgument(context: Self.context, reason: "\(entries.count) entries, at most 255")
        }
        writer.writeUInt8(UInt8(entries.count))
        for entry in entries {
            writer.writeUInt16LE(entry.connectionHandle)
            writer.writeUInt16LE(entry.numCompletedPackets)
        }
    }

    public var description: String {
        "Number of Completed Packets: "
            + entries.map { "handle \($0.connectionHandle) count \($0.numCompletedPackets)" }.joined(separator: ", ")
    }
}
