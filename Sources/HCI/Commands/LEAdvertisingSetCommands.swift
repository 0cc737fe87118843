import Bluetooth

/// HCI_LE_Set_Advertising_Set_Random_Address: the random address of one advertising set.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.52
public struct LESetAdvertisingSetRandomAddressCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetAdvertisingSetRandomAddress
    public var advertisingHandle: UInt8
    public var randomAddress: BluetoothAddress

    public init(advertisingHandle: UInt8, randomAddress: BluetoothAddress) {
        self.advertisingHandle = advertisingHandle
        self.randomAddress = randomAddress
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        advertisingHandle = try LEAdvertisingHandleLimit.read(&r)
        randomAddress = try r.address()
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try LEAdvertisingHandleLimit.check(advertisingHandle, in: Self.opcode, offset: 0)
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(advertisingHandle)
        randomAddress.write(littleEndian: &writer)
    }

    public var description: String {
        "\(Self.opcode.displayName): handle \(advertisingHandle), \(randomAddress) (\(randomAddress.randomAddressKind.rawValue))"
    }
}

/// HCI_LE_Set_Extended_Scan_Response_Data: one fragment (or all) of a set's scan response.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.55
public struct LESetExtendedScanResponseDataCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedScanResponseData
    /// The most Scan_Response_Data one command carries (255 − 4 header octets).
    public static let maximumDataLength = 251

    public var advertisingHandle: UInt8
    public var operation: LEAdvertisingDataOperation
    /// Fragment_Preference: `true` when the controller should not fragment the data.
    public var shouldNotFragment: Bool
    public var scanResponseData: [UInt8]

    public init(
        advertisingHandle: UInt8, operation: LEAdvertisingDataOperation = .complete, shouldNotFragment: Bool = false,
        scanResponseData: [UInt8]
    ) {
        self.advertisingHandle = advertisingHandle
        self.operation = operation
        self.shouldNotFragment = shouldNotFragment
        self.scanResponseData = scanResponseData
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        advertisingHandle = try LEAdvertisingHandleLimit.read(&r)
        operation = try r.enumeration(LEAdvertisingDataOperation.self, "Operation")
        shouldNotFragment = try r.bool("Fragment_Preference")
        let at = r.offset
        let length = Int(try r.uint8())
        guard length <= Self.maximumDataLength else {
            throw r.invalidLength("Scan_Response_Data_Length", length, at: at)
        }
        scanResponseData = try r.bytes(length)
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try LEAdvertisingHandleLimit.check(advertisingHandle, in: Self.opcode, offset: 0)
        guard scanResponseData.count <= Self.maximumDataLength else {
            throw .malformed(
                context: Self.opcode.description,
                reason: .invalidLength(field: "Scan_Response_Data_Length", value: scanResponseData.count), offset: 3)
        }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(advertisingHandle)
        writer.writeUInt8(operation.rawValue)
        writer.writeUInt8(shouldNotFragment ? 1 : 0)
        writer.writeUInt8(UInt8(truncatingIfNeeded: scanResponseData.count))
        writer.writeBytes(scanResponseData)
    }

    public var description: String {
        "\(Self.opcode.displayName): handle \(advertisingHandle), \(operation), "
            + (shouldNotFragment ? "do not fragment, " : "") + CommandFormat.data(scanResponseData)
    }
}

/// HCI_LE_Read_Maximum_Advertising_Data_Length.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.57
public struct LEReadMaximumAdvertisingDataLengthCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leReadMaximumAdvertisingDataLength
    public init() {}

    /// Status, Max_Advertising_Data_Length.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var maxAdvertisingDataLength: UInt16

        public init(status: HCIStatus = .success, maxAdvertisingDataLength: UInt16) {
            self.status = status
            self.maxAdvertisingDataLength = maxAdvertisingDataLength
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(LEReadMaximumAdvertisingDataLengthCommand.opcode) return parameters")
            status = try r.status()
            maxAdvertisingDataLength = try r.uint16()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt16LE(maxAdvertisingDataLength)
        }

        public var description: String { "\(status), \(maxAdvertisingDataLength) octets" }
    }
}

/// HCI_LE_Read_Number_of_Supported_Advertising_Sets.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.58
public struct LEReadNumberOfSupportedAdvertisingSetsCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leReadNumberOfSupportedAdvertisingSets
    public init() {}

    /// Status, Num_Supported_Advertising_Sets.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var numSupportedAdvertisingSets: UInt8

        public init(status: HCIStatus = .success, numSupportedAdvertisingSets: UInt8) {
            self.status = status
            self.numSupportedAdvertisingSets = numSupportedAdvertisingSets
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(LEReadNumberOfSupportedAdvertisingSetsCommand.opcode) return parameters")
            status = try r.status()
            numSupportedAdvertisingSets = try r.uint8()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt8(numSupportedAdvertisingSets)
        }

        public var description: String { "\(status), \(numSupportedAdvertisingSets) sets" }
    }
}

/// HCI_LE_Remove_Advertising_Set.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.59
public struct LERemoveAdvertisingSetCommand: HCICommand {
    public static let opcode = HCIOpcode.leRemoveAdvertisingSet
    public var advertisingHandle: UInt8

    public init(advertisingHandle: UInt8) { self.advertisingHandle = advertisingHandle }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        advertisingHandle = try LEAdvertisingHandleLimit.read(&r)
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        try LEAdvertisingHandleLimit.check(advertisingHandle, in: Self.opcode, offset: 0)
    }

    public func writeParameters(to writer: inout ByteWriter) { writer.writeUInt8(advertisingHandle) }

    public var description: String { "\(Self.opcode.displayName): handle \(advertisingHandle)" }
}

/// HCI_LE_Clear_Advertising_Sets.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.60
public struct LEClearAdvertisingSetsCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leClearAdvertisingSets
    public init() {}
}
