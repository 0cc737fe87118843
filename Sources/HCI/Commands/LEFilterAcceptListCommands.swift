import Bluetooth

/// Address_Type of a Filter Accept List entry.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.16
public enum LEFilterAcceptListAddressType: UInt8, Hashable, Sendable, CustomStringConvertible {
    case `public` = 0x00
    case random = 0x01
    /// Devices sending anonymous advertisements (the address is ignored).
    case anonymous = 0xFF

    public var description: String {
        switch self {
        case .public: return "public"
        case .random: return "random"
        case .anonymous: return "anonymous"
        }
    }
}

/// HCI_LE_Read_Filter_Accept_List_Size.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.14
public struct LEReadFilterAcceptListSizeCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leReadFilterAcceptListSize
    public init() {}

    /// Status, Filter_Accept_List_Size.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var filterAcceptListSize: UInt8

        public init(status: HCIStatus = .success, filterAcceptListSize: UInt8) {
            self.status = status
            self.filterAcceptListSize = filterAcceptListSize
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(LEReadFilterAcceptListSizeCommand.opcode) return parameters")
            status = try r.status()
            filterAcceptListSize = try r.uint8()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt8(filterAcceptListSize)
        }

        public var description: String { "\(status), \(filterAcceptListSize) entries" }
    }
}

/// HCI_LE_Clear_Filter_Accept_List.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.15
public struct LEClearFilterAcceptListCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leClearFilterAcceptList
    public init() {}
}

/// HCI_LE_Add_Device_To_Filter_Accept_List.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.16
public struct LEAddDeviceToFilterAcceptListCommand: HCICommand {
    public static let opcode = HCIOpcode.leAddDeviceToFilterAcceptList
    public var addressType: LEFilterAcceptListAddressType
    public var address: BluetoothAddress

    public init(addressType: LEFilterAcceptListAddressType, address: BluetoothAddress) {
        self.addressType = addressType
        self.address = address
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        addressType = try r.enumeration(LEFilterAcceptListAddressType.self, "Address_Type")
        address = try r.address()
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(addressType.rawValue)
        address.write(littleEndian: &writer)
    }

    public var description: String {
        addressType == .anonymous
            ? "\(Self.opcode.displayName): anonymous advertisers"
            : "\(Self.opcode.displayName): \(address) (\(addressType))"
    }
}

/// HCI_LE_Remove_Device_From_Filter_Accept_List.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.17
public struct LERemoveDeviceFromFilterAcceptListCommand: HCICommand {
    public static let opcode = HCIOpcode.leRemoveDeviceFromFilterAcceptList
    public var addressType: LEFilterAcceptListAddressType
    public var address: BluetoothAddress

    public init(addressType: LEFilterAcceptListAddressType, address: BluetoothAddress) {
        self.addressType = addressType
        self.address = address
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        addressType = try r.enumeration(LEFilterAcceptListAddressType.self, "Address_Type")
        address = try r.address()
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(addressType.rawValue)
        address.write(littleEndian: &writer)
    }

    public var description: String {
        addressType == .anonymous
            ? "\(Self.opcode.displayName): anonymous advertisers"
            : "\(Self.opcode.displayName): \(address) (\(addressType))"
    }
}
