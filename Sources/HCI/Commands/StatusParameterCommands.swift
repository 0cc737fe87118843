import Bluetooth

/// HCI_Read_RSSI: the received signal strength on a connection.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.5.4
public struct ReadRSSICommand: HCICommand {
    public static let opcode = HCIOpcode.readRSSI
    /// Handle: the connection handle.
    public var handle: UInt16

    public init(handle: UInt16) { self.handle = handle }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        handle = try r.connectionHandle("Handle")
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try HCIConnectionHandleLimit.check(handle, field: "Handle", in: Self.opcode, offset: 0)
    }

    public func writeParameters(to writer: inout ByteWriter) { writer.writeUInt16LE(handle) }

    public var description: String { "\(Self.opcode.displayName): \(CommandFormat.handle(handle))" }

    /// Status, Handle, RSSI (signed dBm; for LE the absolute receiver signal strength).
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var handle: UInt16
        public var rssi: Int8

        public init(status: HCIStatus = .success, handle: UInt16, rssi: Int8) {
            self.status = status
            self.handle = handle
            self.rssi = rssi
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(reader, context: "\(ReadRSSICommand.opcode) return parameters")
            status = try r.status()
            handle = try r.connectionHandle("Handle")
            rssi = try r.int8()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt16LE(handle)
            writer.writeInt8(rssi)
        }

        public var description: String { "\(status), \(CommandFormat.handle(handle)), RSSI \(rssi) dBm" }
    }
}
