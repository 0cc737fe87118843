import Bluetooth

/// HCI_Hardware_Error: the controller hit a hardware failure; the code is vendor-defined.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.16
public struct HardwareErrorEvent: Hashable, Sendable, CustomStringConvertible {
    public static let eventCode = HCIEventCode.hardwareError

    /// Hardware_Code (implementation-specific).
    public var hardwareCode: UInt8

    public init(hardwareCode: UInt8) { self.hardwareCode = hardwareCode }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        hardwareCode = try reader.hciUInt8("HCI_Hardware_Error")
        try reader.hciExpectEnd("HCI_Hardware_Error")
    }

    public static let encodedLength = 1

    public func write(to writer: inout ByteWriter) { writer.writeUInt8(hardwareCode) }

    public var description: String { "Hardware Error: code \(hciHexString(hardwareCode, 2))" }
}

/// HCI_Data_Buffer_Overflow: the host sent more packets than the controller has buffers for.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.26
public struct DataBufferOverflowEvent: Hashable, Sendable, CustomStringConvertible {
    public static let eventCode = HCIEventCode.dataBufferOverflow

    /// Link_Type: 0x00 synchronous (SCO), 0x01 ACL (also LE ACL), 0x02 ISO.
    public var linkType: UInt8

    public init(linkType: UInt8) { self.linkType = linkType }

    public init(parsing reader: inout ByteReader) throws(HCIError) {
        linkType = try reader.hciUInt8("HCI_Data_Buffer_Overflow")
        try reader.hciExpectEnd("HCI_Data_Buffer_Overflow")
    }

    public static let encodedLength = 1

    public func write(to writer: inout ByteWriter) { writer.writeUInt8(linkType) }

    public var description: String {
        let name: String
        switch linkType {
        case 0x00: name = "synchronous"
        case 0x01: name = "ACL"
        case 0x02: name = "ISO"
        default: name = hciHexString(linkType, 2)
        }
        return "Data Buffer Overflow: \(name) buffers"
    }
}
